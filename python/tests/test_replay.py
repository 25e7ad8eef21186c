import subprocess

import polars as pl
import pytest

import jobprofiler as jp
from custom_mechanism import Greedy
from custom_policy import Fifo, Las, Srtf

DEPLOY = {"cluster": "synergy-deploy"}
SCENARIOS = {
    "deploy-static": {**DEPLOY, "trace": "workloads/traces/synergy/deploy_static_100job.csv"},
    "deploy-dynamic": {**DEPLOY, "trace": "workloads/traces/synergy/deploy_dynamic_100job.csv"},
    # Synergy's default simulation: 128 GPUs, 9 jobs/h, metrics over jobs 4000..4999.
    "default": {"window": (4000, 4999)},
}


def same_jobs(a: jp.ReplayResult, b: jp.ReplayResult) -> bool:
    return a.jobs.equals(b.jobs)


@pytest.mark.parametrize("semantics", ["exact", "synergy"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("mine,builtin", [(Fifo, "fifo"), (Srtf, "srtf"), (Las, "las")])
def test_python_policies_give_the_builtins_results(scenario, semantics, mine, builtin):
    opts = {**SCENARIOS[scenario], "semantics": semantics, "mechanism": "greedy"}
    ours = jp.replay(policy=mine(), **opts)
    theirs = jp.replay(policy=builtin, **opts)
    assert ours.jobs.height > 0
    assert same_jobs(ours, theirs)


@pytest.mark.parametrize("semantics", ["exact", "synergy"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_python_greedy_gives_the_builtins_results(scenario, semantics):
    opts = {**SCENARIOS[scenario], "semantics": semantics, "policy": "srtf"}
    assert same_jobs(jp.replay(mechanism=Greedy(), **opts), jp.replay(mechanism="greedy", **opts))


def test_both_in_python_on_a_synthetic_workload():
    opts = {"jobs": 2000, "seed": 3}
    ours = jp.replay(policy=Fifo(), mechanism=Greedy(), **opts)
    assert same_jobs(ours, jp.replay(policy="fifo", mechanism="greedy", **opts))
    assert ours.jobs.height == 2000


def test_a_class_deriving_from_a_builtin_overrides_one_method():
    class LateFirst(jp.policies.Fifo):
        name = "late-first"

        def key(self, job, round):
            return -job.arrival_s

    class Tune(jp.mechanisms.Tune):
        pass

    opts = SCENARIOS["deploy-dynamic"]
    plain = jp.replay(policy=jp.policies.Fifo(), mechanism=Tune(), **opts)
    assert same_jobs(plain, jp.replay(policy="fifo", mechanism="tune", **opts))
    late = jp.replay(policy=LateFirst(), mechanism="tune", **opts)
    assert not same_jobs(late, plain)


def test_out_writes_the_clis_files(tmp_path, profiler_bin):
    trace = SCENARIOS["deploy-static"]["trace"]
    jp.replay(cluster="synergy-deploy", trace=trace, mechanism="greedy", out=tmp_path / "py")
    subprocess.run(
        [str(profiler_bin), "replay", "--cluster", "synergy-deploy", "--trace", trace,
         "--mechanism", "greedy", "--out", str(tmp_path / "cli")],
        check=True,
        capture_output=True,
    )
    py = sorted(p.name for p in (tmp_path / "py").iterdir())
    assert py == sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert "fifo-greedy.jobs.csv" in py
    name = "fifo-greedy.jobs.csv"
    assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    # Rounds carry the time each decision took: everything else is the same.
    rounds = [pl.read_csv(tmp_path / d / "fifo-greedy.rounds.csv").drop("decision_s") for d in ("py", "cli")]
    assert rounds[0].equals(rounds[1])


def test_compare_runs_every_scheme():
    r = jp.replay(compare=["fifo+proportional", "fifo+tune"], **SCENARIOS["deploy-static"])
    assert sorted(r.runs) == ["fifo+proportional", "fifo+tune"]
    assert r.summary.height == 2
    with pytest.raises(ValueError, match="2 schemes ran"):
        r.jobs


def test_bad_options_name_the_option():
    with pytest.raises(ValueError, match="--round-s"):
        jp.replay(round_s="soon", **SCENARIOS["deploy-static"])
    with pytest.raises(jp.ProfilerError, match="window"):
        jp.replay(window=(9, 3))
    with pytest.raises(jp.ProfilerError, match="unknown mechanism"):
        jp.replay(policy=Fifo(), mechanism="best-guess", **SCENARIOS["deploy-static"])
