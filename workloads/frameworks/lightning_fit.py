#!/usr/bin/env python3
"""A PyTorch Lightning script as people write one: a LightningModule, a DataLoader with worker
processes, `Trainer(max_epochs=...).fit(model, loader)` with Lightning's defaults.

Lightning's default progress bar is Rich's when `rich` is installed (Transformers pulls it in):
`Epoch 3/999 ━━━━━━━╸━━━━ 29/64 0:00:05 • 0:00:06 5.41it/s v_num: 0 train_loss: 2.31`, drawn
only on a terminal. `--bar tqdm` gives the `TQDMProgressBar` Lightning uses without rich:
`Epoch 3:  45%|████▌ | 29/64 [00:05<00:06,  5.41it/s, v_num=0, train_loss=2.31]`. The data are
torchvision's FakeData (random images made on the fly), --image-size pixels, fed to a torchvision
resnet18 on the CPU with PyTorch's default threads.

    python lightning_fit.py --image-size 32 --batch-size 8 --workers 2

When $TRUTH_FILE is set, every optimizer step appends "<unix time> <cumulative samples>" to it
(flushed): the job's own record of its throughput. SIGTERM stops it cleanly.
"""

import argparse
import os
import signal
import sys
import time

import lightning as L
import torch
import torch.nn.functional as F
import torchvision
from torchvision import transforms

MAIN_PID = os.getpid()


def on_sigterm(signum, frame):
    signal.signal(signal.SIGCHLD, lambda *_: None)
    if os.getpid() == MAIN_PID:
        print("SIGTERM: stopping", file=sys.stderr, flush=True)
    os._exit(0)


class Truth(L.Callback):
    """Appends "<unix time> <cumulative samples>" per optimizer step to $TRUTH_FILE."""

    def __init__(self):
        path = os.environ.get("TRUTH_FILE")
        self.file = open(path, "a") if path else None
        self.samples = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.samples += batch[0].size(0)
        if self.file:
            self.file.write("%.6f %d\n" % (time.time(), self.samples))
            self.file.flush()


class Classifier(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.model = torchvision.models.resnet18(num_classes=10)
        self.lr = lr

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = F.cross_entropy(self.model(images), labels)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--samples", type=int, default=512, help="images per epoch")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--bar", choices=["default", "tqdm"], default="default")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)

    data = torchvision.datasets.FakeData(
        size=args.samples, image_size=(3, args.image_size, args.image_size), num_classes=10,
        transform=transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor()]))
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers, drop_last=True,
                                         persistent_workers=args.workers > 0)
    callbacks = [Truth()]
    if args.bar == "tqdm":
        callbacks.append(L.pytorch.callbacks.TQDMProgressBar())
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", callbacks=callbacks,
                        logger=False, enable_checkpointing=False)
    trainer.fit(Classifier(args.lr), loader)


if __name__ == "__main__":
    main()
