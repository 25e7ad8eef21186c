#!/usr/bin/env python3
"""Generate multigpu100.csv: a 100-job multi-GPU workload in Synergy's replay-trace format.

Format (no header, as simulator/jobs/workload.py:populate_from_trace reads it):
    job_id,model_name,arrival_s,total_iterations,gpu_demand

- arrivals: Poisson process, mean inter-arrival 900 s (4 jobs/hour; offered load about 1.2x the 32-GPU cluster), integer seconds, strictly
  increasing (gap >= 1 s), first arrival >= 1 s;
- model: uniform over Synergy's 10-model zoo (names as the simulator spells them);
- duration at GPU-proportional share: log-uniform in [0.5 h, 6 h];
  total_iterations = int(duration_s / iter_time_s) with the zoo's per-GPU iteration time at the
  proportional share (3 CPUs, 62.5 GB per GPU), so the duration is the same whatever the GPU count;
- GPU demand: 1 (40%), 2 (20%), 4 (15%), 8 (15%), 16 (10%).
Deterministic: Python's random.Random(SEED); no other dependency.
Usage: python3 make_multigpu_trace.py > multigpu100.csv
"""
import math
import random
import sys

SEED = 20240601
NUM_JOBS = 100
MEAN_INTERARRIVAL_S = 900.0
MIN_H, MAX_H = 0.5, 6.0

# seconds per iteration at the proportional share (Synergy simulator/models/<name>_1.py iter_time)
ITER_TIME_S = {
    "alexnet": 0.6, "res18": 0.64, "res50": 0.78, "mobilenet": 0.71, "shufflenet": 0.615,
    "gnmt": 0.12, "transformer": 0.67, "lstm": 0.011, "m5": 0.6, "deepspeech": 0.757,
}
MODELS = list(ITER_TIME_S)
GPU_CHOICES = [(1, 0.40), (2, 0.20), (4, 0.15), (8, 0.15), (16, 0.10)]


def main(out=sys.stdout):
    rng = random.Random(SEED)
    t = 0
    for job_id in range(NUM_JOBS):
        gap = max(1, int(math.ceil(rng.expovariate(1.0 / MEAN_INTERARRIVAL_S))))
        t += gap
        model = rng.choice(MODELS)
        dur_h = 10 ** rng.uniform(math.log10(MIN_H), math.log10(MAX_H))
        iters = int(dur_h * 3600.0 / ITER_TIME_S[model])
        u = rng.random()
        acc = 0.0
        gpus = GPU_CHOICES[-1][0]
        for g, p in GPU_CHOICES:
            acc += p
            if u < acc:
                gpus = g
                break
        out.write(f"{job_id},{model},{t},{iters},{gpus}\n")


if __name__ == "__main__":
    main()
