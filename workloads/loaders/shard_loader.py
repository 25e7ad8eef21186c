#!/usr/bin/env python3
"""A WebDataset-style input pipeline in plain Python: the dataset is a set of tar shards of
JPEGs, each worker process reads whole shards sequentially (a fresh random shard order every
epoch, split between workers), shuffles samples in a buffer, decodes them with PIL and crops
them, and the main process feeds an accelerator emulated by a fixed step time.

    python shard_loader.py SHARD_DIR --workers 2 --batch 32 --step-ms 40
    python shard_loader.py SHARD_DIR --make-from IMAGEFOLDER --shard-mb 8   # pack shards once

Progress goes to $PROFILER_PROGRESS_FILE through workloads/pytorch/progress.py. SIGTERM stops it.
"""

import argparse
import io
import multiprocessing as mp
import os
import random
import signal
import sys
import tarfile
import time

from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
from progress import ProgressReporter  # noqa: E402

MARKER = ".complete"


def make_shards(src, dst, shard_mb):
    """Packs every JPEG under src into dst/shard-NNNN.tar of about shard_mb MB (idempotent)."""
    marker = os.path.join(dst, MARKER)
    if os.path.exists(marker):
        return
    os.makedirs(dst, exist_ok=True)
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(src) for f in fs if f.endswith(".jpg"))
    random.Random(0).shuffle(files)
    shard, size, n = None, 0, 0
    for path in files:
        if shard is None or size >= shard_mb * 1e6:
            if shard:
                shard.close()
            shard = tarfile.open(os.path.join(dst, "shard-%04d.tar" % n), "w")
            size, n = 0, n + 1
        shard.add(path, arcname=os.path.basename(path))
        size += os.path.getsize(path)
    if shard:
        shard.close()
    with open(marker, "w") as f:
        f.write("%d shards\n" % n)


def worker(rank, workers, shards, crop, buffer, queue, seed):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    rng = random.Random(seed * 1000 + rank)
    epoch = 0
    while True:
        order = list(shards)
        random.Random(seed + epoch).shuffle(order)
        mine = order[rank::workers]
        pool = []
        for path in mine:
            with tarfile.open(path, "r|") as tar:
                for member in tar:
                    pool.append(tar.extractfile(member).read())
                    if len(pool) >= buffer:
                        queue.put(decode(pool.pop(rng.randrange(len(pool))), crop, rng))
        while pool:
            queue.put(decode(pool.pop(rng.randrange(len(pool))), crop, rng))
        epoch += 1


def decode(data, crop, rng):
    img = Image.open(io.BytesIO(data)).convert("RGB")
    w, h = img.size
    s = rng.randint(min(w, h) // 2, min(w, h))
    x, y = rng.randint(0, w - s), rng.randint(0, h - s)
    return len(img.crop((x, y, x + s, y + s)).resize((crop, crop)).tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shards")
    ap.add_argument("--make-from", help="pack this ImageFolder into shards first")
    ap.add_argument("--shard-mb", type=float, default=8.0)
    ap.add_argument("--samples", type=int, default=4000,
                    help="with --make-from: images to generate there first where it is missing")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--crop", type=int, default=64)
    ap.add_argument("--buffer", type=int, default=64, help="shuffle buffer per worker")
    ap.add_argument("--step-ms", type=float, default=40.0, help="emulated accelerator step")
    args = ap.parse_args()
    if args.make_from:
        import make_synthetic_imagefolder
        # Idempotent: returns at once where the ImageFolder is complete.
        make_synthetic_imagefolder.main(["--dir", args.make_from, "--samples", str(args.samples),
                                         "--classes", "20"])
        make_shards(args.make_from, args.shards, args.shard_mb)
        return
    shards = sorted(os.path.join(args.shards, f) for f in os.listdir(args.shards) if f.endswith(".tar"))
    if not shards:
        sys.exit(f"{args.shards}: no .tar shards")
    queue = mp.Queue(maxsize=args.batch * 2)
    procs = [mp.Process(target=worker, daemon=True,
                        args=(r, args.workers, shards, args.crop, args.buffer, queue, 1))
             for r in range(args.workers)]
    for p in procs:
        p.start()

    def stop(signum, frame):
        for p in procs:
            p.terminate()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    progress = ProgressReporter()
    step_s = args.step_ms / 1000.0
    print(f"{len(shards)} shards, {args.workers} workers", flush=True)
    next_free = time.monotonic()
    while True:
        for _ in range(args.batch):
            queue.get()
        now = time.monotonic()
        if now < next_free:
            time.sleep(next_free - now)
        next_free = max(now, next_free) + step_s
        progress.step(args.batch)


if __name__ == "__main__":
    main()
