#!/usr/bin/env python3
"""A LitData input pipeline as its documentation writes it: `litdata.StreamingDataset` over a
local directory of `optimize()` chunks (shuffled every epoch), a per-sample transform (random
resized crop and flip of a uint8 image array), and a `StreamingDataLoader` with N workers,
feeding an emulated accelerator (accelerator.py).

    python litdata_loader.py CHUNK_DIR --workers 4 --batch 32 --step-ms 60
    python make_loader_data.py litdata CHUNK_DIR --samples 2500   # the chunks, once
"""

import argparse

import litdata
import torch
from torchvision.transforms import v2

from accelerator import feed, stop_on_sigterm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--crop", type=int, default=160)
    ap.add_argument("--step-ms", type=float, default=60.0)
    args = ap.parse_args()
    stop_on_sigterm()
    augment = v2.Compose([v2.RandomResizedCrop(args.crop, antialias=True), v2.RandomHorizontalFlip(),
                          v2.ToDtype(torch.float32, scale=True)])

    def transform(sample):
        return augment(torch.from_numpy(sample["image"])), sample["label"]

    ds = litdata.StreamingDataset(args.data, shuffle=True, transform=transform)
    loader = litdata.StreamingDataLoader(ds, batch_size=args.batch, num_workers=args.workers)
    print(f"{len(ds)} samples, {args.workers} workers", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
