#!/usr/bin/env python3
"""An HDF5 input pipeline as people write it with h5py: one `.h5` file holding a contiguous
uint8 image array and a label array, opened read-only once in each DataLoader worker (h5py
handles do not survive a fork), a map-style Dataset read in a fresh random order every epoch, a
random resized crop and flip on tensors, and a torch DataLoader with N workers (started afresh
every epoch, the default), feeding an emulated accelerator (accelerator.py).

    python hdf5_loader.py DATA --workers 3 --batch 64 --step-ms 60
    python make_loader_data.py hdf5 DATA --samples 4500      # the dataset, once
"""

import argparse
import os

import h5py
import torch
from torchvision.transforms import v2

from accelerator import feed, stop_on_sigterm


class H5Images(torch.utils.data.Dataset):
    def __init__(self, path, transform):
        self.path = path
        self.transform = transform
        self.file = None
        with h5py.File(path, "r") as f:
            self.length = len(f["labels"])

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.file is None:  # one handle per worker process, opened after the fork
            self.file = h5py.File(self.path, "r")
        image = torch.from_numpy(self.file["images"][i])
        return self.transform(image), int(self.file["labels"][i])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--crop", type=int, default=112)
    ap.add_argument("--step-ms", type=float, default=60.0)
    args = ap.parse_args()
    stop_on_sigterm()
    augment = v2.Compose([v2.RandomResizedCrop(args.crop, antialias=True), v2.RandomHorizontalFlip(),
                          v2.ToDtype(torch.float32, scale=True)])
    ds = H5Images(os.path.join(args.data, "images.h5"), augment)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers, drop_last=True)
    print(f"{len(ds)} images in HDF5, {args.workers} workers", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
