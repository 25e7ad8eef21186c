"""Policies written in Python: FIFO, SRTF and LAS as the built-ins define them, run on
Synergy's dynamic deployment trace and compared with the built-ins job for job.

    python examples/python/custom_policy.py
"""

import jobprofiler as jp


class Fifo(jp.Policy):
    """First in, first out."""

    name = "py-fifo"
    key_update = "static"  # the key is fixed at arrival
    uses_priority = False  # Synergy's FIFO ignores the starvation priority

    def key(self, job, round):
        return job.arrival_s


class Srtf(jp.Policy):
    """Shortest remaining time first, at the proportional share (Synergy's own estimate under
    its semantics)."""

    name = "py-srtf"
    key_update = "when_run"  # remaining work changes only when the job runs

    def key(self, job, round):
        if round.semantics == "synergy":
            return job.synergy_remaining_s(round.fair)
        return job.remaining_samples / job.prop_rate


class Las(jp.Policy):
    """Least attained service: GPU-seconds received so far."""

    name = "py-las"
    key_update = "when_run"
    synergy_selected_only = True  # Synergy's LAS offers the mechanism only the round's pick

    def key(self, job, round):
        return job.attained_gpu_s


TRACE = "workloads/traces/synergy/deploy_dynamic_100job.csv"

if __name__ == "__main__":
    for mine, builtin in [(Fifo(), "fifo"), (Srtf(), "srtf"), (Las(), "las")]:
        ours = jp.replay(cluster="synergy-deploy", trace=TRACE, policy=mine, mechanism="tune")
        theirs = jp.replay(cluster="synergy-deploy", trace=TRACE, policy=builtin, mechanism="tune")
        same = ours.jobs.drop("policy", strict=False).equals(theirs.jobs.drop("policy", strict=False))
        jct = ours.summary["mean_jct_s"][0] / 3600
        print(f"{mine.name}: mean JCT {jct:.2f} h, job for job as the built-in {builtin}: {same}")
        assert same
