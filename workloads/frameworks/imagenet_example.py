#!/usr/bin/env python3
"""ImageNet-style training on the CPU, written as PyTorch's ImageNet example is
(github.com/pytorch/examples, imagenet/main.py): torchvision model, ImageFolder with
RandomResizedCrop, DataLoader with --workers processes, SGD, AverageMeter/ProgressMeter
printing every --print-freq iterations

    Epoch: [0][ 1/64]\tTime  0.512 ( 0.512)\tData  0.301 ( 0.301)\tLoss 2.3906e+00 (2.3906e+00)\tAcc@1 ...

and a validation pass after every epoch. Small, so that it runs on a laptop: images of
--image-size pixels and, with --synthetic N, a generated ImageFolder of N small JPEGs (made once,
with Pillow) under DIR/train and DIR/val.

    python imagenet_example.py DIR --synthetic 1024 --image-size 32 -b 8

Default threads (PyTorch's own choice); no GPU needed. When $TRUTH_FILE is set, every optimizer
step appends "<unix time> <cumulative samples>" to it (flushed): the job's own record of its
throughput, to check a profiler against. SIGTERM stops it cleanly.
"""

import argparse
import os
import random
import signal
import sys
import time
from enum import Enum

import torch
import torch.nn as nn
import torch.utils.data
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms

MAIN_PID = os.getpid()


def on_sigterm(signum, frame):
    """Stops at once, quietly. A SIGTERM to the process group (Ctrl-C in a shell sends SIGINT;
    schedulers and profilers send SIGTERM) also ends the DataLoader workers, whose deaths the
    loader would report as errors: that report is switched off first."""
    signal.signal(signal.SIGCHLD, lambda *_: None)
    if os.getpid() == MAIN_PID:
        print("=> SIGTERM: stopping", file=sys.stderr, flush=True)
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


parser = argparse.ArgumentParser(description="PyTorch ImageNet Training (CPU, small)")
parser.add_argument("data", metavar="DIR", help="path to dataset (DIR/train and DIR/val)")
parser.add_argument("-a", "--arch", metavar="ARCH", default="resnet18",
                    choices=sorted(n for n in models.__dict__
                                   if n.islower() and not n.startswith("__")
                                   and callable(models.__dict__[n])),
                    help="model architecture (default: resnet18)")
parser.add_argument("-j", "--workers", default=2, type=int, metavar="N",
                    help="number of data loading workers (default: 2)")
parser.add_argument("--epochs", default=90, type=int, metavar="N",
                    help="number of total epochs to run")
parser.add_argument("-b", "--batch-size", default=8, type=int, metavar="N", help="mini-batch size")
parser.add_argument("--lr", "--learning-rate", default=0.1, type=float, metavar="LR",
                    help="initial learning rate", dest="lr")
parser.add_argument("--momentum", default=0.9, type=float, metavar="M", help="momentum")
parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, metavar="W",
                    help="weight decay (default: 1e-4)", dest="weight_decay")
parser.add_argument("-p", "--print-freq", default=10, type=int, metavar="N",
                    help="print frequency (default: 10)")
parser.add_argument("--image-size", default=32, type=int, metavar="PX",
                    help="crop size fed to the model (the example's 224, smaller for the CPU)")
parser.add_argument("--synthetic", default=0, type=int, metavar="N",
                    help="generate N training JPEGs (and N/8 for validation) under DIR if missing")
parser.add_argument("--classes", default=10, type=int, help="classes of the synthetic dataset")
parser.add_argument("--seed", default=None, type=int, help="seed for initializing training")


def make_synthetic(root, n, classes, size):
    """Writes DIR/{train,val}/class_K/img_I.jpg once (DIR/.complete marks a finished set)."""
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker):
        return
    from PIL import Image, ImageDraw
    rng = random.Random(0)
    for split, count in (("train", n), ("val", max(n // 8, classes))):
        for i in range(count):
            cls = i % classes
            d = os.path.join(root, split, "class_%03d" % cls)
            os.makedirs(d, exist_ok=True)
            img = Image.new("RGB", (size, size), tuple((cls * 53 + 30 * k) % 256 for k in range(3)))
            draw = ImageDraw.Draw(img)
            for _ in range(4):
                x, y = rng.randrange(size), rng.randrange(size)
                draw.ellipse([x, y, x + rng.randrange(4, size), y + rng.randrange(4, size)],
                             fill=tuple(rng.randrange(256) for _ in range(3)))
            noise = Image.frombytes("RGB", (size, size), rng.randbytes(size * size * 3))
            Image.blend(img, noise, 0.15).save(os.path.join(d, "img_%06d.jpg" % i), quality=90)
    with open(marker, "w") as f:
        f.write("%d\n" % n)


def main():
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    if args.seed is not None:
        random.seed(args.seed)
        torch.manual_seed(args.seed)
    if args.synthetic:
        make_synthetic(args.data, args.synthetic, args.classes, args.image_size * 5 // 4)

    device = torch.device("cpu")
    print("=> creating model '{}'".format(args.arch))
    model = models.__dict__[args.arch](num_classes=args.classes).to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)

    traindir = os.path.join(args.data, "train")
    valdir = os.path.join(args.data, "val")
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(traindir, transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        normalize,
    ]))
    val_dataset = datasets.ImageFolder(valdir, transforms.Compose([
        transforms.Resize(args.image_size * 8 // 7),
        transforms.CenterCrop(args.image_size),
        transforms.ToTensor(),
        normalize,
    ]))
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False, num_workers=args.workers)

    truth = Truth()
    best_acc1 = 0
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, args, truth)
        acc1 = validate(val_loader, model, criterion, args)
        scheduler.step()
        best_acc1 = max(acc1, best_acc1)


def train(train_loader, model, criterion, optimizer, epoch, args, truth):
    batch_time = AverageMeter("Time", ":6.3f")
    data_time = AverageMeter("Data", ":6.3f")
    losses = AverageMeter("Loss", ":.4e")
    top1 = AverageMeter("Acc@1", ":6.2f")
    top5 = AverageMeter("Acc@5", ":6.2f")
    progress = ProgressMeter(len(train_loader), [batch_time, data_time, losses, top1, top5],
                             prefix="Epoch: [{}]".format(epoch))

    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        data_time.update(time.time() - end)

        output = model(images)
        loss = criterion(output, target)

        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        top5.update(acc5[0], images.size(0))

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        truth.step(images.size(0))

        batch_time.update(time.time() - end)
        end = time.time()

        if i % args.print_freq == 0:
            progress.display(i + 1)


def validate(val_loader, model, criterion, args):
    batch_time = AverageMeter("Time", ":6.3f", Summary.NONE)
    losses = AverageMeter("Loss", ":.4e", Summary.NONE)
    top1 = AverageMeter("Acc@1", ":6.2f", Summary.AVERAGE)
    top5 = AverageMeter("Acc@5", ":6.2f", Summary.AVERAGE)
    progress = ProgressMeter(len(val_loader), [batch_time, losses, top1, top5], prefix="Test: ")

    model.eval()
    with torch.no_grad():
        end = time.time()
        for i, (images, target) in enumerate(val_loader):
            output = model(images)
            loss = criterion(output, target)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0], images.size(0))
            top5.update(acc5[0], images.size(0))
            batch_time.update(time.time() - end)
            end = time.time()
            if i % args.print_freq == 0:
                progress.display(i + 1)
    progress.display_summary()
    return top1.avg


class Summary(Enum):
    NONE = 0
    AVERAGE = 1
    SUM = 2
    COUNT = 3


class AverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self, name, fmt=":f", summary_type=Summary.AVERAGE):
        self.name = name
        self.fmt = fmt
        self.summary_type = summary_type
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)

    def summary(self):
        if self.summary_type is Summary.NONE:
            return ""
        fmtstr = {Summary.AVERAGE: "{name} {avg:.3f}", Summary.SUM: "{name} {sum:.3f}",
                  Summary.COUNT: "{name} {count:.3f}"}[self.summary_type]
        return fmtstr.format(**self.__dict__)


class ProgressMeter(object):
    def __init__(self, num_batches, meters, prefix=""):
        self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
        self.meters = meters
        self.prefix = prefix

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        print("\t".join(entries))

    def display_summary(self):
        entries = [" *"]
        entries += [meter.summary() for meter in self.meters]
        print(" ".join(entries))

    def _get_batch_fmtstr(self, num_batches):
        num_digits = len(str(num_batches // 1))
        fmt = "{:" + str(num_digits) + "d}"
        return "[" + fmt + "/" + fmt.format(num_batches) + "]"


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


if __name__ == "__main__":
    main()
