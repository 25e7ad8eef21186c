"""Base classes of policies and mechanisms written in Python, and the built-ins as classes to
derive from (override one method, keep the rest)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Iterable, Literal, Sequence, Union

from . import _native
from ._native import (
    DecisionView,
    ElasticAllocation,
    JobView,
    MechanismView,
    OrderView,
    Placement,
    RoundView,
)

KeyUpdate = Literal["static", "when_run", "every_round"]


class Policy:
    """Orders the runnable jobs each round: ``key(job, round)``, lower runs first (ties by
    arrival, then id).

    Class attributes tell the engine how often to ask:

    * ``key_update``: ``"static"`` (the key depends on the job as it arrived), ``"when_run"``
      (it changes only when the job runs: attained service, remaining work), or
      ``"every_round"`` (the default: every active job is asked every round).
    * ``uses_priority``: under ``semantics="synergy"``, Synergy's starvation priority sorts
      before the key (True, as every Synergy scheduler but FIFO).
    * ``synergy_selected_only``: under Synergy's semantics the mechanism sees only the jobs
      the round selects (Synergy's LAS).
    """

    name: str = "custom-policy"
    key_update: KeyUpdate = "every_round"
    uses_priority: bool = True
    synergy_selected_only: bool = False

    def key(self, job: JobView, round: RoundView) -> float:
        raise NotImplementedError("a policy defines key(job, round) -> float")


PlacementLike = Union[Placement, tuple]


class Mechanism:
    """Places the round's jobs, pulled in policy order from ``order``, on the servers' free
    GPUs, CPUs and memory: ``allocate(round, order)`` returns placements, each a
    :class:`Placement` or a tuple ``(job, server, gpus, cpus, mem_gb)``. A job spanning
    servers has one placement per server. The engine checks every placement: a GPU booked
    twice, a server over its CPUs or memory, or a job on the wrong number of GPUs stops the
    replay with an error naming the round, the job and the server.

    Pull only the jobs you consider: the engine reuses a round's decision while the jobs
    pulled stay first in the order. ``round.free()`` gives a pool that finds and places the
    way the built-ins do.

    ``synergy_fair`` (speed-ups ignored, as proportional) and ``synergy_tune`` (Synergy's LAS
    offers the largest jobs first) matter only under ``semantics="synergy"``.
    """

    name: str = "custom-mechanism"
    synergy_fair: bool = False
    synergy_tune: bool = False

    def allocate(self, round: MechanismView, order: OrderView) -> Sequence[PlacementLike]:
        raise NotImplementedError("a mechanism defines allocate(round, order) -> placements")


class ElasticPolicy:
    """Decides, every decision interval of an elastic replay, each active job's allocation:
    ``decide(ctx)`` returns one entry per job of ``ctx.jobs`` (same order): an
    :class:`ElasticAllocation` (GPUs per server, global batch, CPUs and GB per GPU) until the
    next decision, or None to leave the job queued (or preempt it). The engine checks the whole
    decision against the cluster and charges a restart to every job whose GPUs change.

    ``ctx`` (:class:`DecisionView`) has the helpers the built-ins place with:
    ``gang_gpus(i)``, ``own_batch(i, gpus)``, ``place_most_free_keeping(counts, order)`` and
    ``place_in_order(order, gpus, preemptive)``.

    ``rescales_in_place``: the policy resizes running jobs in place (charged the cheaper
    rescale time) rather than by checkpoint and restart.
    """

    name: str = "custom-elastic"
    rescales_in_place: bool = False

    def decide(self, ctx: DecisionView) -> Sequence[ElasticAllocation | None]:
        raise NotImplementedError("an elastic policy defines decide(ctx) -> allocations")


def _builtin_policy(name: str, cls_name: str, doc: str) -> type[Policy]:
    update, prioritized, selected = _native.builtin_policy_traits(name)

    def key(self, job: JobView, round: RoundView) -> float:
        return _native.builtin_key(name, job, round)

    key.__doc__ = f"The built-in {name} key."
    return type(
        cls_name,
        (Policy,),
        {
            "__doc__": doc,
            "__module__": __name__,
            "name": name,
            "key_update": update,
            "uses_priority": prioritized,
            "synergy_selected_only": selected,
            "key": key,
        },
    )


def _builtin_mechanism(name: str, cls_name: str, doc: str) -> type[Mechanism]:
    fair, tune = _native.builtin_mechanism_traits(name)

    def allocate(self, round: MechanismView, order: OrderView) -> list[Placement]:
        return _native.builtin_allocate(name, round, order)

    allocate.__doc__ = f"The built-in {name} placements."
    return type(
        cls_name,
        (Mechanism,),
        {
            "__doc__": doc,
            "__module__": __name__,
            "name": name,
            "synergy_fair": fair,
            "synergy_tune": tune,
            "allocate": allocate,
        },
    )


def _class_name(name: str) -> str:
    return name.capitalize()


_policies, _mechanisms = _native.builtins()

#: The built-in policies as classes: ``policies.Fifo``, ``policies.Srtf``, ``policies.Las``, ...
policies = SimpleNamespace(
    **{_class_name(n): _builtin_policy(n, _class_name(n), d) for n, d in _policies}
)
#: The built-in mechanisms as classes: ``mechanisms.Greedy``, ``mechanisms.Tune``, ...
mechanisms = SimpleNamespace(
    **{_class_name(n): _builtin_mechanism(n, _class_name(n), d) for n, d in _mechanisms}
)
