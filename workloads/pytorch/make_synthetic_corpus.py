#!/usr/bin/env python3
"""Write a synthetic text corpus of about --mb megabytes (no dependencies).

    python3 make_synthetic_corpus.py --out data/corpus.txt --mb 200

Pseudo-English: words from a fixed random vocabulary with a Zipf-like
frequency, sentences and paragraphs.  Deterministic for a given --seed.
Idempotent: FILE.complete (written last) records the parameters; the text is
written to a temp file and renamed into place.
"""

import argparse
import bisect
import itertools
import os
import random
import sys
import time

from complete_marker import clear, is_complete, mark_complete

VERSION = 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mb", type=float, required=True, help="target size in MB (10^6 bytes)")
    ap.add_argument("--vocab", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.mb <= 0 or a.vocab < 10:
        ap.error("--mb must be > 0 and --vocab >= 10")

    params = {"generator": "make_synthetic_corpus", "version": VERSION, "mb": a.mb,
              "vocab": a.vocab, "seed": a.seed}
    marker = a.out + ".complete"
    if is_complete(marker, params) and os.path.isfile(a.out):
        print(f"{a.out}: complete corpus already present, nothing to do", file=sys.stderr)
        return 0
    clear(marker)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)

    rng = random.Random(a.seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    weights = [12, 9, 8, 7.5, 7, 6.7, 6.3, 6, 5.9, 4.3, 4, 2.8, 2.8, 2.4, 2.4, 2.2, 2, 2, 1.9, 1.5, 1, 0.8, 0.2, 0.2, 0.1, 0.1]
    vocab = ["".join(rng.choices(letters, weights, k=max(1, int(rng.expovariate(1 / 4.5)) + 1)))
             for _ in range(a.vocab)]
    cum = list(itertools.accumulate(1.0 / (r + 1) for r in range(a.vocab)))
    target = int(a.mb * 1e6)
    tmp = a.out + ".tmp"
    start = time.time()
    written = 0
    next_report = target // 10
    with open(tmp, "w", encoding="ascii") as f:
        while written < target:
            sentences = []
            for _ in range(rng.randint(2, 8)):
                n = rng.randint(4, 20)
                words = [vocab[bisect.bisect_left(cum, rng.random() * cum[-1])] for _ in range(n)]
                s = " ".join(words)
                sentences.append(s[0].upper() + s[1:] + rng.choice(".....?!"))
            para = " ".join(sentences) + "\n\n"
            f.write(para)
            written += len(para)
            if written >= next_report:
                print(f"{written / 1e6:.1f}/{a.mb:g} MB ({time.time() - start:.1f} s)", file=sys.stderr)
                next_report += target // 10
    os.replace(tmp, a.out)
    mark_complete(marker, params)
    print(f"wrote {a.out}: {written / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
