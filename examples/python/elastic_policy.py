"""An elastic policy written in Python: Tiresias as Pollux's simulator runs it (two queues
split at 16 GPU-hours of attained service, FIFO within a queue, gang at the requested GPUs),
compared job for job with the built-in on Pollux's workload 1.

    python examples/python/elastic_policy.py
"""

import jobprofiler as jp


class Tiresias(jp.ElasticPolicy):
    name = "py-tiresias"
    thresholds_gpu_s = [16 * 3600.0]

    def queue(self, attained_gpu_s):
        return sum(1 for t in self.thresholds_gpu_s if attained_gpu_s >= t)

    def decide(self, ctx):
        jobs = ctx.jobs
        order = sorted(
            range(len(jobs)),
            key=lambda i: (self.queue(jobs[i].attained_gpu_s), jobs[i].arrival_s, jobs[i].id),
        )
        counts, unclaimed = [0] * len(jobs), ctx.total_gpus
        for i in order:  # admit in that order while the job's GPUs are unclaimed
            gpus = ctx.gang_gpus(i)
            if gpus <= unclaimed:
                counts[i], unclaimed = gpus, unclaimed - gpus
        return ctx.place_most_free_keeping(counts, order)


WORKLOAD = "pollux:workloads/traces/pollux/workload-1.csv"

if __name__ == "__main__":
    r = jp.replay_elastic(policies=[Tiresias(), "tiresias"], elastic_trace=WORKLOAD, seeds=1)
    ours, theirs = r.jobs[("py-tiresias", 0)], r.jobs[("tiresias", 0)]
    print(r.summary.select("policy", "mean_jct_s", "makespan_s", "restarts_per_job"))
    same = ours.equals(theirs)
    print("py-tiresias job for job as tiresias:", same)
    assert same
