#!/usr/bin/env python3
"""A Hugging Face `datasets` input pipeline as people write it: `load_from_disk` of a dataset
saved with `save_to_disk` (memory-mapped Arrow shards holding the JPEGs), an `Image` feature
decoded by PIL in `with_transform`, RandomResizedCrop + flip + ToTensor, and a torch DataLoader
with shuffle=True and N workers, feeding an emulated accelerator (accelerator.py).

    python hf_arrow_loader.py DATA --workers 4 --batch 32 --step-ms 40
    python make_loader_data.py arrow DATA --samples 12000      # the dataset, once
"""

import argparse

import datasets
import torch
from torchvision import transforms

from accelerator import feed, stop_on_sigterm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--prefetch", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--crop", type=int, default=64)
    ap.add_argument("--step-ms", type=float, default=40.0)
    args = ap.parse_args()
    stop_on_sigterm()
    tf = transforms.Compose([transforms.RandomResizedCrop(args.crop), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor()])

    def apply(batch):
        batch["image"] = [tf(im.convert("RGB")) for im in batch["image"]]
        return batch

    ds = datasets.load_from_disk(args.data).with_transform(apply)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        prefetch_factor=args.prefetch if args.workers > 0 else None,
        persistent_workers=args.workers > 0, drop_last=True)
    print(f"{len(ds)} images in Arrow, {args.workers} workers", flush=True)
    feed(loader, args.step_ms, lambda b: b["image"].size(0))


if __name__ == "__main__":
    main()
