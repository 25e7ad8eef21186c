#!/usr/bin/env python3
"""A WebDataset input pipeline as its documentation writes it: `wds.WebDataset` over tar shards
(shards shuffled every epoch and split between workers), a shuffle buffer, `decode("pil")`,
RandomResizedCrop + flip + ToTensor, `batched`, and a `wds.WebLoader` with N workers, feeding
an emulated accelerator (accelerator.py).

    python wds_loader.py SHARD_DIR --workers 8 --batch 32 --step-ms 40
    python make_loader_data.py wds SHARD_DIR --samples 12000   # the shards, once
"""

import argparse
import glob
import os

import webdataset as wds
from torchvision import transforms

from accelerator import feed, stop_on_sigterm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--crop", type=int, default=64)
    ap.add_argument("--buffer", type=int, default=1000, help="shuffle buffer, samples")
    ap.add_argument("--step-ms", type=float, default=40.0)
    args = ap.parse_args()
    stop_on_sigterm()
    shards = sorted(glob.glob(os.path.join(args.data, "shard-*.tar")))
    tf = transforms.Compose([transforms.RandomResizedCrop(args.crop), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor()])
    ds = (wds.WebDataset(shards, shardshuffle=len(shards), workersplitter=wds.split_by_worker,
                         nodesplitter=wds.single_node_only)
          .shuffle(args.buffer)
          .decode("pil")
          .to_tuple("jpg", "cls")
          .map_tuple(tf, int)
          .batched(args.batch, partial=False))
    loader = wds.WebLoader(ds, batch_size=None, num_workers=args.workers,
                           persistent_workers=args.workers > 0)
    print(f"{len(shards)} shards, {args.workers} workers", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
