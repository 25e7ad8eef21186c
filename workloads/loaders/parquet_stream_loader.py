#!/usr/bin/env python3
"""A Hugging Face `datasets` streaming pipeline as its documentation writes it for pre-training
on local Parquet shards: `load_dataset("parquet", data_files=..., streaming=True)`, `shuffle`
(the shard order every epoch and a sample buffer), `set_epoch` at each epoch, torch format, and
a `DataLoader` with N workers (each streams its own shards), feeding an emulated accelerator
(accelerator.py).

    python parquet_stream_loader.py PARQUET_DIR --workers 2 --batch 32 --step-ms 10
    python make_loader_data.py parquet PARQUET_DIR --samples 24000   # the shards, once
"""

import argparse
import glob
import os

from datasets import load_dataset
from torch.utils.data import DataLoader

from accelerator import feed, stop_on_sigterm


class Epochs:
    """Iterates the loader once per epoch, telling the dataset which epoch it is (its shuffle)."""

    def __init__(self, dataset, loader):
        self.dataset, self.loader, self.epoch = dataset, loader, 0

    def __iter__(self):
        self.dataset.set_epoch(self.epoch)
        self.epoch += 1
        return iter(self.loader)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--buffer", type=int, default=1000, help="shuffle buffer, samples")
    ap.add_argument("--step-ms", type=float, default=50.0)
    args = ap.parse_args()
    stop_on_sigterm()
    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    ds = load_dataset("parquet", data_files=files, split="train", streaming=True)
    ds = ds.shuffle(seed=42, buffer_size=args.buffer).with_format("torch")
    loader = DataLoader(ds, batch_size=args.batch, num_workers=args.workers)
    print(f"{len(files)} shards, {args.workers} workers", flush=True)
    feed(Epochs(ds, loader), args.step_ms, batch_size=lambda batch: len(batch["input_ids"]))


if __name__ == "__main__":
    main()
