#!/usr/bin/env python3
"""An LMDB input pipeline as people write it for small samples: one LMDB environment of 3 KiB
records (a 32x32x3 uint8 image and its label), opened read-only without readahead in each
DataLoader worker, a map-style Dataset read in a fresh random order every epoch, random crop
with padding + flip + normalisation on tensors, and a torch DataLoader with N workers, feeding an
emulated accelerator (accelerator.py).

    python lmdb_loader.py DATA --workers 2 --batch 256 --step-ms 40
    python make_loader_data.py lmdb DATA --samples 110000      # the dataset, once
"""

import argparse

import lmdb
import numpy as np
import torch
import torch.nn.functional as F

from accelerator import feed, stop_on_sigterm


class LmdbImages(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path = path
        self.env = None
        with lmdb.open(path, readonly=True, lock=False) as env, env.begin() as txn:
            self.length = int(txn.get(b"__len__"))

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.env is None:  # one environment per worker process, opened after the fork
            self.env = lmdb.open(self.path, readonly=True, lock=False, readahead=False, meminit=False)
        with self.env.begin() as txn:
            value = txn.get(b"%08d" % i)
        image = torch.from_numpy(np.frombuffer(value, dtype=np.uint8, offset=1).reshape(32, 32, 3).copy())
        image = image.permute(2, 0, 1).float().div_(255)
        image = F.pad(image, (4, 4, 4, 4), mode="reflect")
        x, y = np.random.randint(0, 9, size=2)
        image = image[:, y:y + 32, x:x + 32]
        if np.random.rand() < 0.5:
            image = image.flip(2)
        image = (image - 0.5) / 0.25
        return image, value[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--step-ms", type=float, default=40.0)
    args = ap.parse_args()
    stop_on_sigterm()
    ds = LmdbImages(args.data)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        persistent_workers=args.workers > 0, drop_last=True)
    print(f"{len(ds)} records in LMDB, {args.workers} workers", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
