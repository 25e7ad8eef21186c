#!/usr/bin/env python3
"""A numpy memmap input pipeline for large samples: one .npy of 1 MiB uint8 samples
(512x512x4) opened with `np.load(mmap_mode="r")` in each DataLoader worker, a map-style Dataset
read in a fresh random order every epoch, a random 256x256 crop converted to float and
normalised, and a torch DataLoader with N workers, feeding an emulated accelerator
(accelerator.py).

    python npy_loader.py DATA --workers 2 --batch 8 --step-ms 40
    python make_loader_data.py npy DATA --samples 450          # the dataset, once
"""

import argparse
import os

import numpy as np
import torch

from accelerator import feed, stop_on_sigterm


class NpySamples(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path = os.path.join(path, "samples.npy")
        self.length = np.load(self.path, mmap_mode="r").shape[0]
        self.array = None

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.array is None:  # one mapping per worker process, made after the fork
            self.array = np.load(self.path, mmap_mode="r")
        sample = torch.from_numpy(np.array(self.array[i]))
        y, x = np.random.randint(0, 257, size=2)
        crop = sample[y:y + 256, x:x + 256].permute(2, 0, 1).float().div_(255)
        return (crop - crop.mean()) / (crop.std() + 1e-6), 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--step-ms", type=float, default=40.0)
    args = ap.parse_args()
    stop_on_sigterm()
    ds = NpySamples(args.data)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        persistent_workers=args.workers > 0, drop_last=True)
    print(f"{len(ds)} samples of 1 MiB in one .npy, {args.workers} workers", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
