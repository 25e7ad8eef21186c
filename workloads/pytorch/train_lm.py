#!/usr/bin/env python3
"""Train a small GPT-style language model on a text file, tokenised byte-level.

    python3 train_lm.py --data data/corpus.txt --batch 16 --seq-len 512 --workers 4 --max-seconds 60

Model: byte embedding (vocabulary 256) + learned positions + a stack of
torch.nn.TransformerEncoder layers (pre-norm, GELU) with a causal mask + a
linear head; nothing is downloaded.  The default size (--d-model 768
--layers 12 --heads 12) is GPT-2 "small"-like.
Input pipeline: a DataLoader with --workers processes; every sample is read
from the file with seek+read (so storage and the page cache matter).
Progress: one line per iteration to $PROFILER_PROGRESS_FILE when set (see
progress.py; "samples" counts sequences, i.e. tokens / --seq-len), plus
"iter N samples M rate R samples/s" on stdout every ~2 s.
"""

import argparse
import math
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from progress import ProgressReporter  # noqa: E402


class ByteWindows(torch.utils.data.Dataset):
    """Consecutive windows of seq_len+1 bytes (input and shifted target)."""

    def __init__(self, path, seq_len):
        self.path = path
        self.seq_len = seq_len
        self.size = os.path.getsize(path)
        self.n = (self.size - 1) // seq_len
        self._f = None  # opened lazily, once per worker process

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self._f is None:
            self._f = open(self.path, "rb", buffering=0)
        self._f.seek(i * self.seq_len)
        chunk = self._f.read(self.seq_len + 1)
        t = torch.frombuffer(bytearray(chunk), dtype=torch.uint8).long()
        return t[:-1], t[1:]


class GPT(nn.Module):
    def __init__(self, seq_len, d_model, layers, heads, dropout=0.0):
        super().__init__()
        self.tok = nn.Embedding(256, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 256, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq_len), persistent=False)

    def forward(self, x):
        n = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(n, device=x.device))
        h = self.blocks(h, mask=self.mask[:n, :n], is_causal=True)
        return self.head(self.norm(h))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="text (or any) file; bytes are the tokens")
    ap.add_argument("--batch", type=int, default=16, help="sequences per batch")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (0: main process)")
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--iterations", type=int, default=None, help="stop after this many iterations")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--amp", action="store_true", help="mixed precision (bf16 where supported, else fp16; CUDA only)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.batch < 1 or a.workers < 0 or a.seq_len < 2 or a.d_model % a.heads:
        ap.error("need --batch >= 1, --workers >= 0, --seq-len >= 2 and --d-model divisible by --heads")
    return a


def main(argv=None):
    a = parse_args(argv)
    if not os.path.isfile(a.data):
        sys.exit(f"train_lm.py: corpus {a.data} does not exist; create one with "
                 f"`python3 make_synthetic_corpus.py --out {a.data} --mb 200`")
    torch.manual_seed(a.seed)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if not cuda:
        warnings.warn("CUDA is not available: training on the CPU (only useful as a smoke test)")

    ds = ByteWindows(a.data, a.seq_len)
    if len(ds) < a.batch:
        sys.exit(f"train_lm.py: {a.data} holds {len(ds)} windows of {a.seq_len} bytes, fewer than one batch")
    loader_kw = dict(batch_size=a.batch, shuffle=True, num_workers=a.workers, pin_memory=cuda, drop_last=True)
    if a.workers > 0:
        loader_kw.update(persistent_workers=True)
    loader = torch.utils.data.DataLoader(ds, **loader_kw)

    model = GPT(a.seq_len, a.d_model, a.layers, a.heads).to(device)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.1)
    use_amp = a.amp and cuda
    if a.amp and not cuda:
        warnings.warn("--amp ignored without CUDA")
    amp_dtype = torch.bfloat16 if use_amp and torch.cuda.is_bf16_supported() else torch.float16
    need_scaler = use_amp and amp_dtype == torch.float16
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=need_scaler)
    else:  # torch < 2.3
        scaler = torch.cuda.amp.GradScaler(enabled=need_scaler)

    print(f"train_lm.py: {n_params / 1e6:.1f} M parameters on {device}, corpus {ds.size / 1e6:.1f} MB, "
          f"batch {a.batch} x {a.seq_len} tokens, workers {a.workers}, amp {use_amp}",
          file=sys.stderr, flush=True)
    reporter = ProgressReporter()
    start = time.monotonic()
    done = False
    loss = torch.tensor(math.nan)
    while not done:
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=use_amp):
                logits = model(x)
                loss = F.cross_entropy(logits.reshape(-1, 256).float(), y.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            if cuda:
                torch.cuda.synchronize()  # count an iteration only once the GPU finished it
            reporter.step(x.shape[0])
            if (a.iterations is not None and reporter.iterations >= a.iterations) or \
                    (a.max_seconds is not None and time.monotonic() - start >= a.max_seconds):
                done = True
                break
    elapsed = time.monotonic() - start
    print(f"train_lm.py: done: {reporter.iterations} iterations, {reporter.samples} sequences in {elapsed:.1f} s "
          f"({reporter.samples / elapsed:.1f} sequences/s, {reporter.samples * a.seq_len / elapsed:.0f} tokens/s), "
          f"last loss {loss.item():.3f}", file=sys.stderr, flush=True)
    reporter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
