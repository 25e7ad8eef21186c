"""Plug-ins that misbehave stop the replay with an error that says what and where; nothing
panics and no table of the failed replay is written."""

import re

import pytest

import jobprofiler as jp

TRACE = {"cluster": "synergy-deploy", "trace": "workloads/traces/synergy/deploy_static_100job.csv"}


class DoubleBooker(jp.Mechanism):
    name = "double-booker"

    def allocate(self, round, order):
        # Every job on server 0's first GPUs, whatever is already there.
        return [jp.Placement(job, 0, job.gpus, 1.0, 1.0) for job in order]


class WrongType(jp.Mechanism):
    name = "wrong-type"

    def allocate(self, round, order):
        return 42


class WrongItems(jp.Mechanism):
    name = "wrong-items"

    def allocate(self, round, order):
        return ["server 0 please"]


class Raises(jp.Mechanism):
    name = "raises"

    def allocate(self, round, order):
        raise RuntimeError("my mechanism is not done yet")


class RaisingPolicy(jp.Policy):
    name = "raising-policy"

    def key(self, job, round):
        if job.id == 7:
            raise KeyError("job 7 has no key")
        return job.arrival_s


class NanPolicy(jp.Policy):
    name = "nan-policy"

    def key(self, job, round):
        return float("nan")


class StringPolicy(jp.Policy):
    name = "string-policy"

    def key(self, job, round):
        return "soon"


class Hoarder(jp.Mechanism):
    """Keeps the round view past its call."""

    name = "hoarder"
    kept = None

    def allocate(self, round, order):
        if Hoarder.kept is None:
            Hoarder.kept = round
        return []


def replay_fails(tmp_path, **kwargs) -> str:
    out = tmp_path / "out"
    with pytest.raises(jp.ProfilerError) as e:
        jp.replay(out=out, **TRACE, **kwargs)
    assert not out.exists() or not any(out.iterdir()), "no table of a failed replay"
    return str(e.value)


def test_a_double_booking_mechanism_names_the_round_job_and_server(tmp_path):
    message = replay_fails(tmp_path, mechanism=DoubleBooker())
    assert re.search(r"mechanism double-booker placed jobs wrongly in the round at t=\d+ s", message)
    assert "server 0 over-allocated" in message and "(jobs 0, 1, 2" in message and "more)" in message


def test_a_mechanism_returning_the_wrong_type_is_named(tmp_path):
    message = replay_fails(tmp_path, mechanism=WrongType())
    assert re.search(r"mechanism wrong-type failed in the round at t=\d+ s", message)
    assert "must return a list of placements, got int" in message
    message = replay_fails(tmp_path, mechanism=WrongItems())
    assert "expected a Placement or a tuple" in message and "'server 0 please'" in message


def test_an_exception_keeps_its_traceback_and_round(tmp_path):
    message = replay_fails(tmp_path, mechanism=Raises())
    assert re.search(r"mechanism raises failed in the round at t=\d+ s", message)
    assert "Traceback" in message and "RuntimeError: my mechanism is not done yet" in message
    message = replay_fails(tmp_path, policy=RaisingPolicy())
    assert "policy raising-policy failed" in message and "key() of job 7 raised" in message
    assert "KeyError: 'job 7 has no key'" in message


def test_keys_that_are_not_numbers_are_refused(tmp_path):
    assert "returned NaN" in replay_fails(tmp_path, policy=NanPolicy())
    assert "returned str, not a number" in replay_fails(tmp_path, policy=StringPolicy())


def test_a_view_kept_past_its_call_raises_instead_of_reading_freed_memory():
    try:
        jp.replay(mechanism=Hoarder(), **TRACE)
    except jp.ProfilerError:
        pass  # nothing is placed, so the replay cannot finish: not what this test is about
    with pytest.raises(RuntimeError, match="belongs to a call that has returned"):
        Hoarder.kept.servers


def test_objects_without_the_method_are_refused_before_the_replay():
    with pytest.raises(TypeError, match="key\\(job, round\\)"):
        jp.replay(policy=object(), **TRACE)
    with pytest.raises(TypeError, match="allocate\\(round, order\\)"):
        jp.replay(mechanism=object(), **TRACE)


class NeverReturns(jp.Mechanism):
    name = "never-returns"

    def allocate(self, round, order):
        while True:
            pass


class SlowKey(jp.Policy):
    name = "slow-key"

    def key(self, job, round):
        while True:
            pass


def test_a_plugin_that_never_returns_is_stopped_by_the_decision_timeout(tmp_path):
    import time

    start = time.monotonic()
    message = replay_fails(tmp_path, mechanism=NeverReturns(), decision_timeout=0.5)
    assert time.monotonic() - start < 30
    assert "allocate() did not return within the decision timeout of 0.5 s" in message
    assert "TimeoutError" in message
    message = replay_fails(tmp_path, policy=SlowKey(), decision_timeout=0.2)
    assert "did not return within the decision timeout of 0.2 s" in message
    # The replay after it runs normally: no exception is left pending.
    assert jp.replay(**TRACE).jobs.height == 100
    with pytest.raises(ValueError, match="decision_timeout"):
        jp.replay(mechanism=NeverReturns(), decision_timeout=0, **TRACE)
