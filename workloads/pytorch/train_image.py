#!/usr/bin/env python3
"""Train a torchvision image classifier on an ImageFolder dataset.

    python3 train_image.py --arch resnet50 --data data/imagenet-synth --batch 256 --workers 8 --max-seconds 60

Input pipeline: torch DataLoader with --workers processes running
RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize (the
standard ImageNet recipe), so the job is CPU-bound when given few CPUs.
Progress: one line per iteration to $PROFILER_PROGRESS_FILE when set (see
progress.py), plus "iter N samples M rate R samples/s" on stdout every ~2 s.
Uses CUDA when available, otherwise the CPU (with a warning; for smoke tests).
"""

import argparse
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torchvision
from torchvision import datasets, transforms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from progress import ProgressReporter  # noqa: E402

ARCHS = ("resnet18", "resnet50", "mobilenet_v2")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=ARCHS, default="resnet18")
    ap.add_argument("--data", required=True, help="ImageFolder root (DIR/<class>/<image>)")
    ap.add_argument("--batch", type=int, default=256, help="batch size")
    ap.add_argument("--workers", type=int, default=4, help="DataLoader worker processes (0: load in the main process)")
    ap.add_argument("--iterations", type=int, default=None, help="stop after this many iterations")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--amp", action="store_true", help="mixed precision (CUDA only)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--crop", type=int, default=224)
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.batch < 1 or a.workers < 0:
        ap.error("--batch must be >= 1 and --workers >= 0")
    return a


def main(argv=None):
    a = parse_args(argv)
    if not os.path.isdir(a.data):
        sys.exit(f"train_image.py: dataset directory {a.data} does not exist; create one with "
                 f"`python3 make_synthetic_imagefolder.py --dir {a.data} --samples 20000` or point --data at ImageNet")
    torch.manual_seed(a.seed)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if not cuda:
        warnings.warn("CUDA is not available: training on the CPU (only useful as a smoke test)")
    if cuda:
        torch.backends.cudnn.benchmark = True

    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.crop),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(a.data, transform=tf)
    if len(ds) < a.batch:
        sys.exit(f"train_image.py: {a.data} holds {len(ds)} samples, fewer than one batch ({a.batch})")
    loader_kw = dict(batch_size=a.batch, shuffle=True, num_workers=a.workers, pin_memory=cuda, drop_last=True)
    if a.workers > 0:
        loader_kw.update(persistent_workers=True, prefetch_factor=a.prefetch_factor)
    loader = torch.utils.data.DataLoader(ds, **loader_kw)

    model = getattr(torchvision.models, a.arch)(num_classes=len(ds.classes)).to(device)
    memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    model.train()
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    use_amp = a.amp and cuda
    if a.amp and not cuda:
        warnings.warn("--amp ignored without CUDA")
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    else:  # torch < 2.3
        scaler = torch.cuda.amp.GradScaler(enabled=use_amp)

    print(f"train_image.py: {a.arch} on {device}, {len(ds)} samples / {len(ds.classes)} classes, "
          f"batch {a.batch}, workers {a.workers}, amp {use_amp}", file=sys.stderr, flush=True)
    reporter = ProgressReporter()
    start = time.monotonic()
    done = False
    epoch = 0
    while not done:
        for images, target in loader:
            images = images.to(device, non_blocking=True, memory_format=memory_format)
            target = target.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss = criterion(model(images), target)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            if cuda:
                torch.cuda.synchronize()  # count an iteration only once the GPU finished it
            reporter.step(images.shape[0])
            if (a.iterations is not None and reporter.iterations >= a.iterations) or \
                    (a.max_seconds is not None and time.monotonic() - start >= a.max_seconds):
                done = True
                break
        else:
            epoch += 1
    elapsed = time.monotonic() - start
    print(f"train_image.py: done: {reporter.iterations} iterations, {reporter.samples} samples in {elapsed:.1f} s "
          f"({reporter.samples / elapsed:.1f} samples/s), {epoch} full epochs, last loss {loss.item():.3f}",
          file=sys.stderr, flush=True)
    reporter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
