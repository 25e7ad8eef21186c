"""What the loaders in this folder share: an accelerator emulated by a fixed step time (it takes
a batch when it is free and is busy for step_s, so a job is bound by CPU, storage or the
accelerator, as a GPU job's input pipeline is), progress to $PROFILER_PROGRESS_FILE through
workloads/pytorch/progress.py, and a clean stop on SIGTERM."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
from progress import ProgressReporter  # noqa: E402


def stop_on_sigterm():
    def on_sigterm(signum, frame):
        signal.signal(signal.SIGCHLD, lambda *_: None)
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, on_sigterm)


def feed(loader, step_ms, batch_size=lambda batch: len(batch[0])):
    """Feeds `loader`'s batches to the emulated accelerator, epoch after epoch, until stopped."""
    progress = ProgressReporter()
    step_s = step_ms / 1000.0
    next_free = time.monotonic()
    while True:
        for batch in loader:
            now = time.monotonic()
            if now < next_free:
                time.sleep(next_free - now)
            next_free = max(now, next_free) + step_s
            progress.step(batch_size(batch))
