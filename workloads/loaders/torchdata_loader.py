#!/usr/bin/env python3
"""A torchdata.nodes input pipeline as its documentation shows one: the paths of a folder of
JPEG files (a folder per class), a RandomSampler over them wrapped in SamplerWrapper (a fresh
order every epoch), a ParallelMapper of N threads that reads each file (torchvision.io.read_file)
and decodes it (decode_jpeg), a random resized crop and flip, a Batcher, a collate Mapper and a
Loader, feeding an emulated accelerator (accelerator.py). Threads in one process, not worker
processes: one address space and one set of file handles read the dataset.

    python torchdata_loader.py DATA --threads 4 --batch 64 --step-ms 50
    python make_loader_data.py files DATA --samples 6000      # the dataset, once
"""

import argparse
import os

import torch
from torchdata.nodes import Batcher, Loader, Mapper, ParallelMapper, SamplerWrapper
from torchvision.io import decode_jpeg, read_file
from torchvision.transforms import v2

from accelerator import feed, stop_on_sigterm


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--crop", type=int, default=112)
    ap.add_argument("--step-ms", type=float, default=50.0)
    args = ap.parse_args()
    stop_on_sigterm()
    samples = sorted((os.path.join(root, f), int(os.path.basename(root)))
                     for root, _, files in os.walk(args.data) for f in files if f.endswith(".jpg"))
    augment = v2.Compose([v2.RandomResizedCrop(args.crop, antialias=True), v2.RandomHorizontalFlip(),
                          v2.ToDtype(torch.float32, scale=True)])

    def load(i):
        path, label = samples[i]
        return augment(decode_jpeg(read_file(path))), label

    def collate(batch):
        images, labels = zip(*batch)
        return torch.stack(images), torch.tensor(labels)

    node = SamplerWrapper(torch.utils.data.RandomSampler(range(len(samples))))
    node = ParallelMapper(node, map_fn=load, num_workers=args.threads, method="thread")
    node = Batcher(node, batch_size=args.batch, drop_last=True)
    node = Mapper(node, collate)
    loader = Loader(node)
    print(f"{len(samples)} JPEG files, torchdata.nodes with {args.threads} threads", flush=True)
    feed(loader, args.step_ms)


if __name__ == "__main__":
    main()
