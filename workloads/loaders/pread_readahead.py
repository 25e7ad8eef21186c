#!/usr/bin/env python3
"""What storage reads for each sample a job takes with `pread` from one large file, with a given
share of the samples already in the page cache and no memory pressure: caches a random share of
the samples exactly (POSIX_FADV_WILLNEED of each), then reads uncached samples in a random order
from a fresh file handle and counts the bytes read from storage (/proc/self/io). Run as root on
the file's own disk; it drops the file from the page cache first.

    python3 pread_readahead.py ../data/loader-hdf5/images.h5 --h5-dataset images
"""

import argparse
import os
import random
import time


def storage_read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    raise RuntimeError("no read_bytes in /proc/self/io")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--h5-dataset", help="take the sample layout from this HDF5 dataset (contiguous)")
    ap.add_argument("--offset", type=int, default=0, help="byte offset of the first sample")
    ap.add_argument("--sample-bytes", type=int, help="bytes of a sample")
    ap.add_argument("--samples", type=int, help="samples in the file")
    ap.add_argument("--reads", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    offset, size, n = a.offset, a.sample_bytes, a.samples
    if a.h5_dataset:
        import h5py
        with h5py.File(a.file, "r") as f:
            d = f[a.h5_dataset]
            offset, n = d.id.get_offset(), len(d)
            size = d.dtype.itemsize * int(d[0].size)
    if not (size and n):
        ap.error("give --sample-bytes and --samples, or --h5-dataset")
    fd = os.open(a.file, os.O_RDONLY)
    for share in (0.0, 0.25, 0.5, 0.75):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        order = list(range(n))
        random.Random(a.seed).shuffle(order)
        cached = int(share * n)
        for i in order[:cached]:
            os.posix_fadvise(fd, offset + i * size, size, os.POSIX_FADV_WILLNEED)
        time.sleep(1)
        reader = os.open(a.file, os.O_RDONLY)  # no read-ahead state of its own yet
        taken = order[cached:cached + a.reads]
        before = storage_read_bytes()
        for i in taken:
            os.pread(reader, size, offset + i * size)
        read = (storage_read_bytes() - before) / len(taken) / size
        os.close(reader)
        print(f"{share:.0%} of samples cached: storage read {read:.2f} samples' worth for each "
              f"uncached sample taken", flush=True)
    os.close(fd)


if __name__ == "__main__":
    main()
