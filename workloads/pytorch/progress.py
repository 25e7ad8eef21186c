"""Progress reporting for the profiler (the "progress-file" protocol).

When the environment variable ``PROFILER_PROGRESS_FILE`` is set, every call to
:meth:`ProgressReporter.step` appends one JSON line to that file::

    {"samples": <cumulative samples, int>, "iterations": <cumulative iterations, int>, "t": <unix time, float>}

The file is opened in append mode and each line is written with a single
``os.write`` call.  Independently, about every ``interval`` seconds a human
line such as ``iter 120 samples 3840 rate 512.3 samples/s`` is printed to
stdout.  Without the variable only the stdout lines are produced.
"""

import os
import sys
import time

PROGRESS_ENV = "PROFILER_PROGRESS_FILE"


def protocol_line(samples, iterations, t):
    """One protocol line, newline included."""
    return '{"samples": %d, "iterations": %d, "t": %.6f}\n' % (int(samples), int(iterations), float(t))


class ProgressReporter:
    def __init__(self, path=None, interval=2.0, stream=None):
        if path is None:
            path = os.environ.get(PROGRESS_ENV) or None
        self._fd = None
        if path:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.samples = 0
        self.iterations = 0
        self.interval = interval
        self._stream = stream if stream is not None else sys.stdout
        self._last_print = time.monotonic()
        self._last_samples = 0

    def step(self, n_samples):
        """Record one finished iteration of ``n_samples`` samples."""
        self.samples += int(n_samples)
        self.iterations += 1
        if self._fd is not None:
            data = protocol_line(self.samples, self.iterations, time.time()).encode()
            written = os.write(self._fd, data)
            if written != len(data):  # practically never for regular files
                os.write(self._fd, data[written:])
        now = time.monotonic()
        dt = now - self._last_print
        if dt >= self.interval:
            rate = (self.samples - self._last_samples) / dt
            print("iter %d samples %d rate %.1f samples/s" % (self.iterations, self.samples, rate),
                  file=self._stream, flush=True)
            self._last_print = now
            self._last_samples = self.samples

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


if __name__ == "__main__":  # tiny self-test: python3 progress.py
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "progress.jsonl")
        with ProgressReporter(p, interval=0.0) as r:
            r.step(32)
            r.step(32)
        lines = [json.loads(line) for line in open(p)]
        assert lines[-1] == {"samples": 64, "iterations": 2, "t": lines[-1]["t"]}, lines
        assert isinstance(lines[-1]["samples"], int) and isinstance(lines[-1]["t"], float)
    print("progress.py self-test ok")
