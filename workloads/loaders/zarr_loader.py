#!/usr/bin/env python3
"""A zarr input pipeline as people write it: a zarr v3 array of uint8 images chunked one image to
a chunk (a file each) and a label array read whole, opened once in each DataLoader worker, a
map-style Dataset read in a fresh random order every epoch, a random resized crop and flip on
tensors, and a torch DataLoader with N workers, feeding an emulated accelerator (accelerator.py).

    python zarr_loader.py DATA --workers 4 --batch 64 --step-ms 50
    python make_loader_data.py zarr DATA --samples 6000      # the dataset, once
"""

import argparse
import os

import torch
import zarr
from torchvision.transforms import v2

from accelerator import feed, stop_on_sigterm


class ZarrImages(torch.utils.data.Dataset):
    def __init__(self, path, transform):
        self.path = path
        self.transform = transform
        self.images = None
        self.length = zarr.open_group(path, mode="r")["labels"].shape[0]

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.images is None:  # one handle per worker process, opened after the fork
            group = zarr.open_group(self.path, mode="r")
            self.images, self.labels = group["images"], group["labels"][:]
        image = torch.from_numpy(self.images[i])
        return self.transform(image), int(self.labels[i])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--crop", type=int, default=112)
    ap.add_argument("--step-ms", type=float, default=50.0)
    args = ap.parse_args()
    stop_on_sigterm()
    augment = v2.Compose([v2.RandomResizedCrop(args.crop, antialias=True), v2.RandomHorizontalFlip(),
                          v2.ToDtype(torch.float32, scale=True)])
    ds = ZarrImages(os.path.join(args.data, "images.zarr"), augment)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers, drop_last=True)
    print(f"{len(ds)} images in zarr, {args.workers} workers", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
