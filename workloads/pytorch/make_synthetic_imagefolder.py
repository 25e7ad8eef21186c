#!/usr/bin/env python3
"""Write a synthetic ImageFolder dataset of random textured JPEGs (needs Pillow).

    python3 make_synthetic_imagefolder.py --dir data/imagenet-synth --samples 20000 --classes 100

Layout: DIR/class_KKK/img_IIIIII.jpg.  Deterministic for a given --seed.
Idempotent: DIR/.complete (written last) records the parameters; a rerun with
the same parameters does nothing, an interrupted or different dataset is
regenerated (files are written to a temp name and renamed).
"""

import argparse
import json
import os
import random
import shutil
import sys
import time

from PIL import Image, ImageDraw

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=320)
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.samples < 1 or a.classes < 1 or a.width < 8 or a.height < 8:
        ap.error("--samples/--classes must be >= 1 and --width/--height >= 8")

    params = {"generator": "make_synthetic_imagefolder", "version": VERSION, "samples": a.samples,
              "classes": a.classes, "width": a.width, "height": a.height, "quality": a.quality,
              "seed": a.seed}
    marker = os.path.join(a.dir, MARKER)
    try:
        with open(marker) as f:
            if json.load(f) == params:
                print(f"{a.dir}: complete dataset already present, nothing to do", file=sys.stderr)
                return 0
    except (OSError, ValueError):
        pass
    os.makedirs(a.dir, exist_ok=True)
    if os.path.exists(marker):
        os.remove(marker)
    # Remove what an earlier (interrupted or different) run left; only our own files.
    for name in os.listdir(a.dir):
        if name.startswith("class_") and os.path.isdir(os.path.join(a.dir, name)):
            shutil.rmtree(os.path.join(a.dir, name))

    start = time.time()
    total_bytes = 0
    every = max(1, a.samples // 20)
    for i in range(a.samples):
        d = os.path.join(a.dir, "class_%03d" % (i % a.classes))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "img_%06d.jpg" % i)
        tmp = os.path.join(d, ".img_%06d.jpg.tmp" % i)
        synth(a.seed, i, a.classes, a.width, a.height, a.quality).save(tmp, "JPEG", quality=a.quality)
        total_bytes += os.path.getsize(tmp)
        os.replace(tmp, path)
        if (i + 1) % every == 0 or i + 1 == a.samples:
            print(f"{i + 1}/{a.samples} images ({time.time() - start:.1f} s)", file=sys.stderr)
    tmp = marker + ".tmp"
    with open(tmp, "w") as f:
        json.dump(params, f)
        f.write("\n")
    os.replace(tmp, marker)
    print(f"wrote {a.dir}: {a.samples} images, {total_bytes / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
