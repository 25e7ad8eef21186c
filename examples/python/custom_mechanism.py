"""A mechanism written in Python: greedy (each job in policy order gets its best-case CPUs
and memory on the best-fitting server, or waits), placed with the pool the built-ins use, and
compared with the built-in greedy job for job.

    python examples/python/custom_mechanism.py
"""

import jobprofiler as jp


class Greedy(jp.Mechanism):
    name = "py-greedy"

    def allocate(self, round, order):
        pool, placements = round.free(), []
        for job in order:  # pulled lazily, in policy order
            if pool.total_gpus == 0:
                break  # pull no more than you consider: the engine reuses the decision
            # "best": the job's best-case demand, capped at each server's size.
            parts = pool.find(job, "best")
            if parts is not None:
                placements += pool.place(job, parts, "best")
        return placements


class HalfBest(jp.Mechanism):
    """An idea to try: half the best-case CPUs and memory, never below one core."""

    name = "half-best"

    def allocate(self, round, order):
        pool, placements = round.free(), []
        for job in order:
            if pool.total_gpus == 0:
                break

            def demand(server, job=job):
                cpus, mem = round.best_on(job, server)
                return max(1.0, cpus / 2), mem / 2

            parts = pool.find(job, demand)
            if parts is not None:
                placements += pool.place(job, parts, demand)
        return placements


TRACE = "workloads/traces/synergy/deploy_static_100job.csv"

if __name__ == "__main__":
    ours = jp.replay(cluster="synergy-deploy", trace=TRACE, mechanism=Greedy())
    theirs = jp.replay(cluster="synergy-deploy", trace=TRACE, mechanism="greedy")
    print("py-greedy job for job as greedy:", ours.jobs.equals(theirs.jobs))
    assert ours.jobs.equals(theirs.jobs)
    half = jp.replay(cluster="synergy-deploy", trace=TRACE, mechanism=HalfBest())
    for name, r in [("greedy", theirs), ("half-best", half)]:
        print(f"{name}: makespan {r.summary['makespan_s'][0] / 3600:.1f} h")
