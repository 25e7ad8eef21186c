#!/usr/bin/env python3
"""A torchvision input pipeline as people write it: an ImageFolder of JPEGs decoded by PIL,
RandomResizedCrop + flip + ToTensor, a DataLoader with shuffle=True, N worker processes and a
prefetch factor, feeding an accelerator that is emulated by a fixed step time (so the job is
bound by CPU, storage or the accelerator, as a GPU job's input pipeline is).

    python imagefolder_loader.py DATA --workers 2 --prefetch 2 --batch 32 --step-ms 40

Progress goes to $PROFILER_PROGRESS_FILE (the profiler's progress-file protocol, one JSON line
per batch) through workloads/pytorch/progress.py. SIGTERM stops it cleanly.
"""

import argparse
import os
import signal
import sys
import time

import torch
import torchvision
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
from progress import ProgressReporter  # noqa: E402

MAIN_PID = os.getpid()


def on_sigterm(signum, frame):
    signal.signal(signal.SIGCHLD, lambda *_: None)
    raise SystemExit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--prefetch", type=int, default=2, help="DataLoader prefetch_factor")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--crop", type=int, default=64)
    ap.add_argument("--step-ms", type=float, default=40.0, help="emulated accelerator step")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)

    data = torchvision.datasets.ImageFolder(
        args.data,
        transforms.Compose([
            transforms.RandomResizedCrop(args.crop),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
        ]))
    loader = torch.utils.data.DataLoader(
        data, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        prefetch_factor=args.prefetch if args.workers > 0 else None,
        persistent_workers=args.workers > 0, drop_last=True)
    progress = ProgressReporter()
    step_s = args.step_ms / 1000.0
    print(f"{len(data)} images, {args.workers} workers, prefetch {args.prefetch}", flush=True)
    next_free = time.monotonic()
    while True:
        for images, _ in loader:
            # The accelerator takes a batch when it is free and is busy for step_s.
            now = time.monotonic()
            if now < next_free:
                time.sleep(next_free - now)
            next_free = max(now, next_free) + step_s
            progress.step(images.size(0))


if __name__ == "__main__":
    main()
