#!/usr/bin/env python3
"""A plain PyTorch training loop with a tqdm bar over the DataLoader, as most scripts have one:

    for epoch in range(args.epochs):
        for images, labels in tqdm(loader, desc=f"Epoch {epoch}"):
            ...

tqdm's defaults: the bar on stderr, redrawn with \\r at most every 0.1 s, `Epoch 3:  45%|...|
29/64 [00:05<00:06,  5.41it/s, loss=2.31]`. The data are torchvision's FakeData (random images
made on the fly, nothing to download), --image-size pixels, fed by --workers loader processes to
a torchvision resnet18 on the CPU with PyTorch's default threads.

    python tqdm_loop.py --image-size 32 --batch-size 8 --workers 2

When $TRUTH_FILE is set, every optimizer step appends "<unix time> <cumulative samples>" to it
(flushed): the job's own record of its throughput. SIGTERM stops it cleanly.
"""

import argparse
import os
import signal
import sys
import time

import torch
import torch.nn.functional as F
import torchvision
from torchvision import transforms
from tqdm import tqdm

MAIN_PID = os.getpid()


def on_sigterm(signum, frame):
    # The loader's workers get the signal too; their deaths are not errors now.
    signal.signal(signal.SIGCHLD, lambda *_: None)
    if os.getpid() == MAIN_PID:
        print("SIGTERM: stopping", file=sys.stderr, flush=True)
    raise SystemExit(0)


class Truth:
    """Appends "<unix time> <cumulative samples>" per optimizer step to $TRUTH_FILE."""

    def __init__(self):
        path = os.environ.get("TRUTH_FILE")
        self.file = open(path, "a") if path else None
        self.samples = 0

    def step(self, samples):
        self.samples += samples
        if self.file:
            self.file.write("%.6f %d\n" % (time.time(), self.samples))
            self.file.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--samples", type=int, default=512, help="images per epoch")
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)

    data = torchvision.datasets.FakeData(
        size=args.samples, image_size=(3, args.image_size, args.image_size), num_classes=10,
        transform=transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor()]))
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers, drop_last=True)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    truth = Truth()

    model.train()
    for epoch in range(args.epochs):
        pbar = tqdm(loader, desc=f"Epoch {epoch}")
        for images, labels in pbar:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            truth.step(images.size(0))
            pbar.set_postfix(loss=f"{loss.item():.3f}")


if __name__ == "__main__":
    main()
