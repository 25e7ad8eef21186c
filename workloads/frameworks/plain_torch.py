#!/usr/bin/env python3
"""The plainest PyTorch image training loop: resnet18 on 64-pixel synthetic images (torchvision's
FakeData, nothing to download), a DataLoader with 2 worker processes, SGD on the CPU with
PyTorch's default threads (as many as the CPUs it sees at start), and one line every
--print-every iterations:

    step 40  samples 320  loss 2.3051  9.7 samples/s

    python plain_torch.py --print-every 5

PyTorch sizes its thread pool once, from the CPUs it sees when it starts; a job re-capped to
fewer CPUs while it runs keeps that many threads. This is the script the profiler's live check
is tested on.

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

MAIN_PID = os.getpid()


def on_sigterm(signum, frame):
    # The loader's workers get the signal too; their deaths are not errors now.
    signal.signal(signal.SIGCHLD, lambda *_: None)
    if os.getpid() == MAIN_PID:
        print("SIGTERM: stopping", flush=True)
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
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--print-every", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10**9)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)

    data = torchvision.datasets.FakeData(
        size=100_000, image_size=(3, args.image_size, args.image_size), num_classes=10,
        transform=transforms.ToTensor())
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    truth = Truth()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{args.workers} loader workers", flush=True)

    step, samples, start = 0, 0, time.time()
    model.train()
    while step < args.steps:
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            truth.step(images.size(0))
            step += 1
            samples += images.size(0)
            if step % args.print_every == 0:
                rate = samples / (time.time() - start)
                print(f"step {step}  samples {samples}  loss {loss.item():.4f}  {rate:.1f} samples/s")
            if step >= args.steps:
                break


if __name__ == "__main__":
    main()
