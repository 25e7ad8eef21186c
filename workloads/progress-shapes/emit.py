#!/usr/bin/env python3
"""Prints progress exactly as well-known training loops do, at a known rate.

Standard library only. Each iteration ends at start + i / rate (absolute deadlines, so a late
wake-up is caught up and the long-run rate is exact); the job does no real work. Output is
written with plain print()/write() and no flush: a pipe or file buffers it unless
PYTHONUNBUFFERED=1 (which the profiler sets) or python -u.

    emit.py --format pytorch-imagenet --rate 20 --epoch-length 50
    emit.py --format tqdm --rate 20          # tqdm bar on stderr, redrawn with \\r
    emit.py --format hf-trainer --rate 20    # Trainer: bar on stderr, log dicts on stdout (transformers 5)
    emit.py --format keras --rate 20         # Progbar redrawn with \\b and \\r, per-epoch summary

Samples per second = rate x the batch size the spec gives (the output counts iterations).
"""

import argparse
import sys
import time


def clock(seconds):
    seconds = int(seconds)
    return "%02d:%02d" % (seconds // 60, seconds % 60)


def tqdm_bar(desc, n, total, elapsed, rate):
    """tqdm's default bar: '{l_bar}{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}it/s]'."""
    frac = n / total
    width = 10
    full = int(frac * width)
    bar = "█" * full + ("▌" if frac * width - full >= 0.5 else " ") + " " * (width - full - 1)
    bar = bar[:width]
    remaining = (total - n) / rate if rate > 0 else 0
    rate_fmt = "%5.2fit/s" % rate if rate >= 1 or rate == 0 else "%5.2fs/it" % (1 / rate)
    if n == 0:
        rate_fmt = "?it/s"
    prefix = desc + ": " if desc else ""
    return "%s%3d%%|%s| %d/%d [%s<%s, %s]" % (
        prefix, frac * 100, bar, n, total, clock(elapsed), clock(remaining), rate_fmt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", required=True,
                    choices=["pytorch-imagenet", "tqdm", "hf-trainer", "keras"])
    ap.add_argument("--rate", type=float, default=20.0, help="iterations per second")
    ap.add_argument("--epoch-length", type=int, default=50, help="iterations per epoch")
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--print-every", type=int, default=5,
                    help="pytorch-imagenet: print every N iterations (print_freq)")
    args = ap.parse_args()

    period = 1.0 / args.rate
    start = time.time()
    last_draw = 0.0
    step = 0
    out, err = sys.stdout, sys.stderr
    for epoch in range(args.epochs):
        epoch_start = time.time()
        if args.format == "keras":
            out.write("Epoch %d/%d\n" % (epoch + 1, args.epochs))
        for i in range(args.epoch_length):
            step += 1
            deadline = start + step * period
            delay = deadline - time.time()
            if delay > 0:
                time.sleep(delay)
            now = time.time()
            elapsed = now - start
            if args.format == "pytorch-imagenet":
                # As the example does since 2022: progress.display(i + 1), the batch number
                # padded to the width of the epoch's length.
                if i % args.print_every == 0:
                    width = len(str(args.epoch_length))
                    print("Epoch: [%d][%*d/%d]\tTime %6.3f (%6.3f)\tData %6.3f (%6.3f)\t"
                          "Loss 6.9078e+00 (6.9078e+00)\tAcc@1   0.00 (  0.10)"
                          % (epoch, width, i + 1, args.epoch_length, period, period, 0.001, 0.001))
            elif args.format == "tqdm":
                if now - last_draw >= 0.1 or i + 1 == args.epoch_length:
                    last_draw = now
                    err.write("\r" + tqdm_bar("", i + 1, args.epoch_length,
                                              now - epoch_start, (i + 1) / max(now - epoch_start, 1e-9)))
                if i + 1 == args.epoch_length:
                    err.write("\n")
            elif args.format == "hf-trainer":
                total = args.epochs * args.epoch_length
                if now - last_draw >= 0.1:
                    last_draw = now
                    err.write("\r" + tqdm_bar("", step, total, elapsed, step / max(elapsed, 1e-9)))
                if step % 10 == 0:
                    # transformers 5 prints every float as a string, f"{v:.4g}".
                    print("{'loss': '2.31', 'grad_norm': '1.52', 'learning_rate': '4e-05', "
                          "'epoch': '%.4g'}" % (step / args.epoch_length))
            elif args.format == "keras":
                n = i + 1
                width = 30
                done = int(width * n / args.epoch_length)
                bar = "[" + "=" * max(done - 1, 0) + (">" if done < width else "=") \
                    + "." * (width - done) + "]"
                if n == args.epoch_length:
                    ms = (now - epoch_start) * 1000 / n
                    line = "%d/%d %s - %ds %dms/step - loss: 0.3000" % (
                        n, args.epoch_length, bar, now - epoch_start, ms)
                    out.write("\b" * 80 + "\r" + line + "\n")
                elif now - last_draw >= 0.05:
                    last_draw = now
                    eta = (args.epoch_length - n) * period
                    line = "%4d/%d %s - ETA: %s - loss: 0.3000" % (
                        n, args.epoch_length, bar, clock(eta)[1:], )
                    out.write("\b" * 80 + "\r" + line)
    if args.format == "hf-trainer":
        runtime = time.time() - start
        print("{'train_runtime': '%.4g', 'train_samples_per_second': '%.4g', "
              "'train_steps_per_second': '%.4g', 'train_loss': '2.3', 'epoch': '%.4g'}"
              % (runtime, step / runtime, step / runtime, float(args.epochs)))


if __name__ == "__main__":
    main()
