#!/usr/bin/env python3
"""Writes the datasets of the loaders in this folder, each in its library's own format, with the
library's own writer. Deterministic for a given --seed; idempotent (DIR/.complete, written last,
records the parameters: a rerun with the same ones does nothing, anything else is rewritten).

    make_loader_data.py arrow DIR --samples 12000   # Hugging Face datasets: save_to_disk, Arrow shards of JPEGs
    make_loader_data.py wds DIR --samples 12000     # WebDataset: ShardWriter tar shards (jpg + cls)
    make_loader_data.py lmdb DIR --samples 110000   # LMDB: 32x32x3 uint8 images + label, 3 KiB values
    make_loader_data.py npy DIR --samples 450       # numpy: one .npy of 1 MiB uint8 samples (512x512x4)
    make_loader_data.py litdata DIR --samples 2500  # LitData: optimize() chunks of 8 MB, 126 KiB uint8 arrays
    make_loader_data.py parquet DIR --samples 24000 # Hugging Face datasets: to_parquet() shards of 4096-token rows
    make_loader_data.py hdf5 DIR --samples 4500     # h5py: one .h5 of 60 KiB uint8 images (3x128x160) + labels
    make_loader_data.py zarr DIR --samples 6000     # zarr: a v3 array of 48 KiB uint8 images (3x128x128), a chunk file each
    make_loader_data.py files DIR --samples 6000    # one JPEG file per sample, a folder per class (torchdata.nodes reads them)

The JPEGs are the synthetic ImageFolder's (workloads/pytorch/make_synthetic_imagefolder.py, 20
classes, 320x320, about 39 KB each), written by one process per CPU.
"""

import argparse
import io
import multiprocessing
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
from complete_marker import is_complete, mark_complete  # noqa: E402
MARKER = ".complete"
CLASSES = 20


def jpeg(args):
    """JPEG bytes of synthetic image `index` (the ImageFolder generator's image)."""
    from make_synthetic_imagefolder import synth
    seed, index = args
    buf = io.BytesIO()
    synth(seed, index, CLASSES, 320, 320, 90).save(buf, "JPEG", quality=90)
    return index, buf.getvalue()


def jpegs(samples, seed):
    """(index, label, JPEG bytes) in index order."""
    with multiprocessing.Pool(len(os.sched_getaffinity(0))) as pool:
        for index, data in pool.imap(jpeg, ((seed, i) for i in range(samples)), chunksize=16):
            yield index, index % CLASSES, data


def write_arrow(out, samples, seed):
    import datasets
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(num_classes=CLASSES)})
    rows = {"image": [], "label": []}
    for _, label, data in jpegs(samples, seed):
        rows["image"].append({"bytes": data, "path": None})
        rows["label"].append(label)
    ds = datasets.Dataset.from_dict(rows, features=features)
    ds.save_to_disk(out, max_shard_size="128MB")


def write_wds(out, samples, seed):
    import webdataset as wds
    with wds.ShardWriter(os.path.join(out, "shard-%04d.tar"), maxsize=8e6, verbose=0) as sink:
        for index, label, data in jpegs(samples, seed):
            sink.write({"__key__": "%06d" % index, "jpg": data, "cls": label})


def write_lmdb(out, samples, seed):
    import lmdb
    import numpy as np
    rng = np.random.default_rng(seed)
    env = lmdb.open(out, map_size=4 << 30, subdir=True)
    batch = 5000
    for start in range(0, samples, batch):
        with env.begin(write=True) as txn:
            for i in range(start, min(samples, start + batch)):
                label = i % CLASSES
                pixels = rng.integers(0, 256, size=32 * 32 * 3, dtype=np.uint8)
                txn.put(b"%08d" % i, bytes([label]) + pixels.tobytes())
    with env.begin(write=True) as txn:
        txn.put(b"__len__", str(samples).encode())
    env.close()


def write_npy(out, samples, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    arr = np.lib.format.open_memmap(os.path.join(out, "samples.npy"), mode="w+",
                                    dtype=np.uint8, shape=(samples, 512, 512, 4))
    for i in range(samples):
        arr[i] = rng.integers(0, 256, size=(512, 512, 4), dtype=np.uint8)
    arr.flush()
    del arr


def litdata_sample(args):
    """Sample `index`: a 3x192x224 uint8 array (a decoded image's size, 126 KiB, incompressible)."""
    import numpy as np
    seed, index = args
    rng = np.random.default_rng((seed, index))
    return {"image": rng.integers(0, 256, size=(3, 192, 224), dtype=np.uint8), "label": index % CLASSES}


def write_litdata(out, samples, seed):
    import litdata
    litdata.optimize(fn=litdata_sample, inputs=[(seed, i) for i in range(samples)], output_dir=out,
                     chunk_bytes="8MB", num_workers=len(os.sched_getaffinity(0)), verbose=False)


def write_parquet(out, samples, seed, shards=32, tokens=4096):
    """Pre-tokenized text as a language model's pre-training reads it: rows of 4096 int32 token
    ids (16 KiB) from a 50,257-token vocabulary, in `shards` Parquet files written by `datasets`."""
    import datasets
    import numpy as np
    rng = np.random.default_rng(seed)
    ds = datasets.Dataset.from_dict(
        {"input_ids": rng.integers(0, 50257, size=(samples, tokens), dtype=np.int32)},
        features=datasets.Features({"input_ids": datasets.Sequence(datasets.Value("int32"))}))
    for i in range(shards):
        ds.shard(shards, i, contiguous=True).to_parquet(
            os.path.join(out, f"train-{i:05d}-of-{shards:05d}.parquet"))


def write_hdf5(out, samples, seed, block=500):
    """Incompressible 3x128x160 uint8 images (60 KiB) in one contiguous dataset, labels beside."""
    import h5py
    import numpy as np
    rng = np.random.default_rng(seed)
    with h5py.File(os.path.join(out, "images.h5"), "w") as f:
        images = f.create_dataset("images", shape=(samples, 3, 128, 160), dtype=np.uint8)
        for start in range(0, samples, block):
            n = min(block, samples - start)
            images[start:start + n] = rng.integers(0, 256, size=(n, 3, 128, 160), dtype=np.uint8)
        f.create_dataset("labels", data=np.arange(samples, dtype=np.int64) % CLASSES)


def write_zarr(out, samples, seed, block=500):
    """Incompressible 3x128x128 uint8 images (48 KiB) in a zarr v3 array chunked one image to a
    chunk (a file each, zarr's default zstd codec), labels in a second array of one chunk."""
    import numpy as np
    import zarr
    rng = np.random.default_rng(seed)
    root = zarr.open_group(os.path.join(out, "images.zarr"), mode="w")
    images = root.create_array("images", shape=(samples, 3, 128, 128), chunks=(1, 3, 128, 128), dtype="uint8")
    for start in range(0, samples, block):
        n = min(block, samples - start)
        images[start:start + n] = rng.integers(0, 256, size=(n, 3, 128, 128), dtype=np.uint8)
    root.create_array("labels", data=np.arange(samples, dtype=np.int64) % CLASSES)


def write_files(out, samples, seed):
    """One JPEG file per sample, CLASS/INDEX.jpg, a folder per class."""
    for c in range(CLASSES):
        os.makedirs(os.path.join(out, f"{c:02d}"))
    for index, label, data in jpegs(samples, seed):
        with open(os.path.join(out, f"{label:02d}", f"{index:06d}.jpg"), "wb") as f:
            f.write(data)


WRITERS = {"files": write_files, "arrow": write_arrow, "hdf5": write_hdf5, "litdata": write_litdata, "parquet": write_parquet, "wds": write_wds, "lmdb": write_lmdb, "npy": write_npy, "zarr": write_zarr}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("format", choices=sorted(WRITERS))
    ap.add_argument("dir")
    ap.add_argument("--samples", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.samples < 1:
        ap.error("--samples must be >= 1")
    params = {"format": a.format, "samples": a.samples, "seed": a.seed, "version": 1}
    marker = os.path.join(a.dir, MARKER)
    if is_complete(marker, params):
        print(f"{a.dir}: complete dataset already present, nothing to do", file=sys.stderr)
        return 0
    # Rewrite from scratch: a half-written or different dataset is removed first.
    if os.path.isdir(a.dir):
        shutil.rmtree(a.dir)
    os.makedirs(a.dir)
    WRITERS[a.format](a.dir, a.samples, a.seed)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(a.dir) for f in fs)
    mark_complete(marker, params)
    print(f"wrote {a.dir}: {a.format}, {a.samples} samples, {size / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
