#!/usr/bin/env python3
"""Keras 3 on its torch backend: `model.fit` of a small convolutional classifier on random
images held in NumPy arrays, with Keras' default progress bar (verbose="auto": the Progbar,
redrawn with \\b and \\r on stdout):

    Epoch 3/1000
     12/64 ━━━━━━━━━━━━━━━━━━━━ 1s 27ms/step - accuracy: 0.1051 - loss: 2.3013

    python keras_fit.py --batch-size 16

The backend is chosen the usual way, KERAS_BACKEND=torch (set here unless the environment sets
it). Default threads, no GPU.

When $TRUTH_FILE is set, every optimizer step appends "<unix time> <cumulative samples>" to it
(flushed): the job's own record of its throughput. SIGTERM stops it cleanly.
"""

import argparse
import os
import signal
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def on_sigterm(signum, frame):
    print("SIGTERM: stopping", file=sys.stderr, flush=True)
    raise SystemExit(0)


class Truth(keras.callbacks.Callback):
    """Appends "<unix time> <cumulative samples>" per optimizer step to $TRUTH_FILE."""

    def __init__(self, batch_size):
        super().__init__()
        path = os.environ.get("TRUTH_FILE")
        self.file = open(path, "a") if path else None
        self.batch_size = batch_size
        self.samples = 0

    def on_train_batch_end(self, batch, logs=None):
        self.samples += self.batch_size
        if self.file:
            self.file.write("%.6f %d\n" % (time.time(), self.samples))
            self.file.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--samples", type=int, default=1024, help="training examples (an epoch)")
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1000)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)

    rng = np.random.default_rng(0)
    s = args.image_size
    x = rng.random((args.samples, s, s, 3), dtype=np.float32)
    y = rng.integers(0, 10, args.samples)
    model = keras.Sequential([
        keras.Input((s, s, 3)),
        keras.layers.Conv2D(32, 3, activation="relu", padding="same"),
        keras.layers.Conv2D(32, 3, activation="relu", padding="same"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, activation="relu", padding="same"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    # The batch size divides the epoch, so every step is a full batch.
    n = args.samples - args.samples % args.batch_size
    model.fit(x[:n], y[:n], batch_size=args.batch_size, epochs=args.epochs,
              callbacks=[Truth(args.batch_size)])


if __name__ == "__main__":
    main()
