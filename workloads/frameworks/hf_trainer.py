#!/usr/bin/env python3
"""Hugging Face Trainer fine-tuning a tiny BERT built from a config (no download) on random
token data held in a plain torch Dataset (no `datasets`), on the CPU:

    python hf_trainer.py --no-bar      # disable_tqdm=True: only the Trainer's log dicts, e.g.
                                       # {'loss': '2.314', 'grad_norm': '1.52', 'learning_rate': '4.99e-05', 'epoch': '0.25'}
    python hf_trainer.py               # with the Trainer's tqdm bar on stderr (global steps)

Log lines come every --logging-steps optimizer steps; an epoch is --samples / --batch-size
steps. Default threads, no GPU.

When $TRUTH_FILE is set, every optimizer step appends "<unix time> <cumulative samples>" to it
(flushed): the job's own record of its throughput. SIGTERM stops it cleanly.
"""

import argparse
import os
import signal
import sys
import tempfile
import time

import torch
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainerCallback,
                          TrainingArguments)


def on_sigterm(signum, frame):
    print("SIGTERM: stopping", file=sys.stderr, flush=True)
    raise SystemExit(0)


class Truth(TrainerCallback):
    """Appends "<unix time> <cumulative samples>" per optimizer step to $TRUTH_FILE."""

    def __init__(self, samples_per_step):
        path = os.environ.get("TRUTH_FILE")
        self.file = open(path, "a") if path else None
        self.samples_per_step = samples_per_step

    def on_step_end(self, args, state, control, **kwargs):
        if self.file:
            self.file.write("%.6f %d\n" % (time.time(), state.global_step * self.samples_per_step))
            self.file.flush()


class RandomTokens(torch.utils.data.Dataset):
    """Random token sequences with random binary labels."""

    def __init__(self, n, seq_len, vocab_size, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(1, vocab_size, (n, seq_len), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.input_ids[i],
                "attention_mask": torch.ones_like(self.input_ids[i]),
                "labels": self.labels[i]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-bar", action="store_true", help="disable_tqdm=True")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--samples", type=int, default=320, help="training examples (an epoch)")
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--epochs", type=float, default=1000)
    ap.add_argument("--logging-steps", type=int, default=5)
    ap.add_argument("--output-dir", default=None, help="default: a temporary directory")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)

    config = BertConfig(vocab_size=2000, hidden_size=args.hidden, num_hidden_layers=args.layers,
                        num_attention_heads=2, intermediate_size=4 * args.hidden,
                        max_position_embeddings=max(128, args.seq_len), num_labels=2)
    model = BertForSequenceClassification(config)
    train = RandomTokens(args.samples, args.seq_len, config.vocab_size)

    with tempfile.TemporaryDirectory() as tmp:
        training_args = TrainingArguments(
            output_dir=args.output_dir or tmp,
            per_device_train_batch_size=args.batch_size,
            num_train_epochs=args.epochs,
            learning_rate=5e-5,
            logging_steps=args.logging_steps,
            save_strategy="no",
            report_to="none",
            disable_tqdm=args.no_bar,
            use_cpu=True,
            dataloader_drop_last=True,
        )
        trainer = Trainer(model=model, args=training_args, train_dataset=train,
                          callbacks=[Truth(args.batch_size)])
        trainer.train()


if __name__ == "__main__":
    main()
