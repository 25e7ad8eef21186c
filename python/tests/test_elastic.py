import pytest

import jobprofiler as jp
from elastic_policy import WORKLOAD, Tiresias


def test_a_python_tiresias_gives_the_builtins_results_on_pollux_workload_1():
    r = jp.replay_elastic(policies=[Tiresias(), "tiresias"], elastic_trace=WORKLOAD, seeds=2)
    assert r.summary.height == 4
    for seed in (0, 1):
        ours, theirs = r.jobs[("py-tiresias", seed)], r.jobs[("tiresias", seed)]
        assert ours.height == theirs.height > 100
        assert ours.equals(theirs)


class Overbooks(jp.ElasticPolicy):
    name = "overbooks"

    def decide(self, ctx):
        # Every job on all of server 0's GPUs.
        gpus = ctx.servers[0][0]
        return [jp.ElasticAllocation([(0, gpus)], ctx.own_batch(i, gpus), 1.0, 1.0) for i in range(len(ctx.jobs))]


class ShortList(jp.ElasticPolicy):
    name = "short-list"

    def decide(self, ctx):
        return []


class Raises(jp.ElasticPolicy):
    name = "raises"

    def decide(self, ctx):
        raise ValueError("no idea yet")


@pytest.mark.parametrize(
    "policy,expected",
    [
        (Overbooks(), "elastic policy overbooks placed jobs wrongly in the round at t="),
        (ShortList(), "decide() returned 0 entries for"),
        (Raises(), "ValueError: no idea yet"),
    ],
)
def test_bad_decisions_stop_the_replay_with_the_reason(policy, expected):
    with pytest.raises(jp.ProfilerError) as e:
        jp.replay_elastic(policies=[policy], elastic_trace=WORKLOAD, seeds=1, first=20)
    assert expected in str(e.value)
