#!/usr/bin/env python3
"""Write a synthetic ImageFolder dataset of random textured JPEGs (needs Pillow).

    python3 make_synthetic_imagefolder.py --dir data/imagenet-synth --samples 20000 --classes 100

Layout: DIR/class_KKK/img_IIIIII.jpg.  Deterministic for a given --seed, whatever --jobs
(each image depends on the seed and its index only), so images are written by --jobs processes
at once (default: every CPU this process may run on).
Idempotent: DIR/.complete (written last) records the parameters; a rerun with
the same parameters does nothing, an interrupted or different dataset is
regenerated (files are written to a temp name and renamed).
"""

import argparse
import multiprocessing
import os
import random
import shutil
import sys
import time

from PIL import Image, ImageDraw

from complete_marker import clear, is_complete, mark_complete

MARKER = ".complete"
VERSION = 1


def synth(seed, index, classes, width, height, quality):
    rng = random.Random(seed * 1_000_003 + index)
    cls = index % classes
    # Smooth class-tinted background: two-colour vertical gradient.
    c0 = [rng.randrange(256) for _ in range(3)]
    c1 = [(cls * 97 + 40 * k + rng.randrange(64)) % 256 for k in range(3)]
    grad = Image.linear_gradient("L").resize((width, height))
    img = Image.composite(Image.new("RGB", (width, height), tuple(c1)),
                          Image.new("RGB", (width, height), tuple(c0)), grad)
    draw = ImageDraw.Draw(img)
    for _ in range(8):
        x0, y0 = rng.randrange(width), rng.randrange(height)
        x1, y1 = x0 + rng.randrange(8, width // 2), y0 + rng.randrange(8, height // 2)
        colour = tuple(rng.randrange(256) for _ in range(3))
        if rng.random() < 0.5:
            draw.ellipse([x0, y0, x1, y1], fill=colour)
        else:
            draw.rectangle([x0, y0, x1, y1], fill=colour)
    # Per-pixel noise so that JPEG decoding is real work.
    noise = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    img = Image.blend(img, noise, 0.12 + 0.08 * rng.random())
    return img


def write_one(args):
    """Write image `index` under a temporary name, then rename it: a crash leaves no half image."""
    root, seed, index, classes, width, height, quality = args
    d = os.path.join(root, "class_%03d" % (index % classes))
    path = os.path.join(d, "img_%06d.jpg" % index)
    tmp = os.path.join(d, ".img_%06d.jpg.tmp" % index)
    synth(seed, index, classes, width, height, quality).save(tmp, "JPEG", quality=quality)
    size = os.path.getsize(tmp)
    os.replace(tmp, path)
    return size


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=320)
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                    help="processes writing images at once (default: the CPUs this process may use)")
    a = ap.parse_args(argv)
    # Each image gets shapes 8 to half its side across.
    if a.samples < 1 or a.classes < 1 or a.width < 18 or a.height < 18 or a.jobs < 1:
        ap.error("--samples/--classes/--jobs must be >= 1 and --width/--height >= 18")

    params = {"generator": "make_synthetic_imagefolder", "version": VERSION, "samples": a.samples,
              "classes": a.classes, "width": a.width, "height": a.height, "quality": a.quality,
              "seed": a.seed}
    marker = os.path.join(a.dir, MARKER)
    if is_complete(marker, params):
        print(f"{a.dir}: complete dataset already present, nothing to do", file=sys.stderr)
        return 0
    os.makedirs(a.dir, exist_ok=True)
    clear(marker)
    # Remove what an earlier (interrupted or different) run left; only our own files.
    for name in os.listdir(a.dir):
        if name.startswith("class_") and os.path.isdir(os.path.join(a.dir, name)):
            shutil.rmtree(os.path.join(a.dir, name))

    for k in range(min(a.classes, a.samples)):
        os.makedirs(os.path.join(a.dir, "class_%03d" % k), exist_ok=True)
    start = time.time()
    total_bytes = 0
    every = max(1, a.samples // 20)
    jobs = max(1, min(a.jobs, a.samples))
    work = [(a.dir, a.seed, i, a.classes, a.width, a.height, a.quality) for i in range(a.samples)]
    with multiprocessing.Pool(jobs) as pool:
        for done, size in enumerate(pool.imap_unordered(write_one, work, chunksize=16), 1):
            total_bytes += size
            if done % every == 0 or done == a.samples:
                print(f"{done}/{a.samples} images ({time.time() - start:.1f} s)", file=sys.stderr)
    mark_complete(marker, params)
    print(f"wrote {a.dir}: {a.samples} images, {total_bytes / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
