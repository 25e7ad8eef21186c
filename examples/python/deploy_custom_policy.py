"""The Python SRTF of custom_policy.py, unchanged, deploying real jobs: a short trace of the
shipped deploy workload (workloads/deploy/) run on this machine under the policy with Tune,
each job in a cgroup of its own, and the replay of the same trace beside it.

    sudo python examples/python/deploy_custom_policy.py

Needs root (cgroups) and the profiler's `input-pipeline` binary (`cargo build --release`).
"""

import os
import sys
import tempfile
from pathlib import Path

import jobprofiler as jp
from custom_policy import Srtf

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "workloads" / "deploy"

# Three jobs of a few seconds each: a long one first, then two short ones that SRTF runs
# before it once they arrive.
TRACE = """\
0,decode,0.0,400,1
1,light,0.0,150,1
2,decode,3.0,60,1
3,light,3.0,60,1
4,decode,4.0,60,1
"""

if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: a deploy runs jobs in cgroups, which needs root")
        sys.exit(0)
    # The jobs' command is the input-pipeline binary built beside the profiler.
    built = [ROOT / "target" / p for p in ("release", "debug")]
    built = [d for d in built if (d / "input-pipeline").exists()]
    if not built:
        sys.exit("build the profiler first: cargo build --release")
    os.environ["PATH"] = f"{built[0]}:{os.environ['PATH']}"
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.csv"
        trace.write_text(TRACE)
        result = jp.deploy(
            trace=str(trace),
            policy=Srtf(),
            mechanism="tune",
            jobs=str(DEPLOY / "jobs"),
            profiles=str(DEPLOY / "matrices"),
            cluster=str(DEPLOY / "cluster.toml"),
            round_s=2,
            out=str(Path(tmp) / "out"),
            # The shipped matrices were measured on the machine that wrote them. This example is
            # about the policy's order, which holds at any machine's rates, so it goes on without
            # checking them here; a real deploy leaves these two out (or passes profile=True).
            allow_other_machine=True,
            no_spot_check=True,
        )
        jobs = result.runs["py-srtf+tune"].jobs
        print(jobs.select("job_id", "model", "start_s", "finish_s", "failure"))
        print(result.compare)
        assert jobs["finish_s"].null_count() == 0, "every job finished"
        # The short jobs arrived after the long one and finished before it.
        finish = dict(zip(jobs["job_id"], jobs["finish_s"]))
        assert max(finish[2], finish[3], finish[4]) < finish[0], finish
