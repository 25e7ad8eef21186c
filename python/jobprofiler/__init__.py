"""Sensitivity matrices as DataFrames, and cluster-schedule replays with policies and
mechanisms of your own, on the same library as the ``profiler`` command.

    >>> import jobprofiler as jp
    >>> zoo = jp.load("matrices/zoo")                  # a folder, or matrix files
    >>> zoo.cells.select("job_model", "cpu", "memory_bytes", "samples_per_s")
    >>> r = jp.replay(window=(4000, 4999), policy=MyPolicy(), mechanism="tune")
    >>> r.summary, r.jobs, r.rounds                     # polars DataFrames

Keyword arguments of :func:`load`, :func:`export` and :func:`replay` are the options of
``profiler export`` and ``profiler replay`` (``--round-s 60`` is ``round_s=60``); see
docs/PYTHON.md.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

import polars as pl

from . import _native
from ._native import (
    DecisionView,
    ElasticAllocation,
    ElasticJobView,
    FreePool,
    JobView,
    MechanismView,
    OrderView,
    Placement,
    ProfilerError,
    RoundView,
)
from .plugins import ElasticPolicy, Mechanism, Policy, mechanisms, policies

__all__ = [
    "DecisionView",
    "DeployResult",
    "ElasticAllocation",
    "ElasticJobView",
    "ElasticPolicy",
    "ElasticResult",
    "FreePool",
    "JobView",
    "Matrices",
    "Mechanism",
    "MechanismView",
    "OrderView",
    "Placement",
    "Policy",
    "ProfilerError",
    "ReplayResult",
    "RoundView",
    "Run",
    "deploy",
    "export",
    "load",
    "mechanisms",
    "policies",
    "replay",
    "replay_elastic",
]

PathLike = Union[str, "os.PathLike[str]"]

MATRIX_SUFFIX = ".matrix.jsonl"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _value(name: str, value: Any) -> str:
    if name == "window" and isinstance(value, (tuple, list)) and len(value) == 2:
        return f"{value[0]}..{value[1]}"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _argv(options: Mapping[str, Any]) -> list[str]:
    """Command-line arguments from keyword arguments: ``round_s=60`` is ``--round-s 60``,
    ``True`` a bare flag, ``None`` and ``False`` left out, a pair ``window=(a, b)`` is
    ``--window a..b`` and other sequences are joined with commas."""
    argv: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        argv.append(_flag(name))
        if value is not True:
            argv.append(_value(name, value))
    return argv


def _scheme_argv(options: Mapping[str, Any], policy: Any, mechanism: Any) -> tuple:
    """Command-line arguments for ``options`` with the built-in policy or mechanism named by a
    string among them; a plug-in object is handed on instead (``None`` for a name)."""
    argv_options = dict(options)
    if isinstance(policy, str):
        argv_options["policy"], policy = policy, None
    if isinstance(mechanism, str):
        argv_options["mechanism"], mechanism = mechanism, None
    return _argv(argv_options), policy, mechanism


def _matrix_files(paths: Iterable[PathLike]) -> list[str]:
    """Matrix files: each path itself, or a folder's ``*.matrix.jsonl`` files, sorted."""
    files: list[str] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(str(f) for f in p.iterdir() if f.name.endswith(MATRIX_SUFFIX))
            if not found:
                raise ProfilerError(f"{p}: no *{MATRIX_SUFFIX} file in this folder")
            files.extend(found)
        else:
            files.append(str(p))
    if not files:
        raise ProfilerError("no matrix given")
    return files


def _frame(parquet: bytes) -> pl.DataFrame:
    return pl.read_parquet(io.BytesIO(parquet))


@dataclass(frozen=True)
class Matrices:
    """Matrices read from files: their headers, best-case demands and one table of cells.

    ``cells`` has the rows and columns of ``profiler export --format csv``: one row per cell
    of every matrix, the job and machine, the cell's measurement, and the matrix's best-case
    demand (docs/EXPORT.md)."""

    paths: list[str]
    #: Each matrix's header (job, machine, axes, spread, validation) as a dict.
    headers: list[dict]
    #: Each matrix's best-case demand per GPU (cpus_per_gpu, mem_gb_per_gpu, speed-up, and
    #: alike: the allocations its blocks cannot tell apart from it, ...).
    demands: list[dict]
    #: One row per cell of every matrix (polars).
    cells: pl.DataFrame
    options: dict = field(default_factory=dict)

    def to_pandas(self):
        """The cells as a pandas DataFrame (needs pandas and pyarrow)."""
        return self.cells.to_pandas()

    def export(self, format: str, out: PathLike | None = None, **options: Any) -> list[str] | str:
        """Writes the matrices as ``profiler export --format FORMAT -o OUT`` does; returns the
        files written (without ``out``, a text format's text)."""
        return export(self.paths, format=format, out=out, **{**self.options, **options})

    def __len__(self) -> int:
        return len(self.paths)


def load(*paths: PathLike, **options: Any) -> Matrices:
    """Reads matrices: files, or folders of ``*.matrix.jsonl`` (the model zoo).

    Options are those of ``profiler export`` that shape the demand: ``server="24:8:500"``,
    ``eps=0.05``, ``cpu_weight``, ``mem_weight``, ``cell``."""
    files = _matrix_files(paths)
    argv = files + ["--format", "csv"] + _argv(options)
    summaries = _native.matrix_summaries(argv)
    import json

    return Matrices(
        paths=[s[0] for s in summaries],
        headers=[json.loads(s[1]) for s in summaries],
        demands=[s[2] for s in summaries],
        cells=_frame(_native.cells_table(argv)),
        options=dict(options),
    )


def export(
    paths: PathLike | Sequence[PathLike],
    format: str,
    out: PathLike | None = None,
    **options: Any,
) -> list[str] | str:
    """``profiler export PATHS --format FORMAT -o OUT [options]``; returns the files written.
    Without ``out``, a text format (csv, json, gavel, kubernetes) is returned as one string
    instead, what the CLI prints. Notes (values snapped to a grid, disturbed cells) are
    warnings."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    argv = _matrix_files(paths) + ["--format", format] + _argv({"output": out, **options})
    written, notes, text = _native.export_matrices(argv)
    _warn(notes)
    return text if out is None else written


def _warn(notes: Iterable[str]) -> None:
    import warnings

    for note in notes:
        warnings.warn(note, stacklevel=3)


@dataclass(frozen=True)
class Run:
    """One scheme's results."""

    #: ``policy+mechanism``.
    label: str
    #: One row per job: arrival, start, finish, JCT, ... (``<label>.jobs.csv`` of ``--out``).
    jobs: pl.DataFrame
    #: One row per round: time, active, running, allocated shares (``<label>.rounds.csv``).
    rounds: pl.DataFrame


@dataclass(frozen=True)
class ReplayResult:
    """A replay's results: per scheme its tables, and the summary (one row per scheme)."""

    runs: dict[str, Run]
    summary: pl.DataFrame
    cluster: str
    profiles: str
    workload: str

    @property
    def jobs(self) -> pl.DataFrame:
        """The per-job table of the only scheme (use ``runs`` when several ran)."""
        return self._only().jobs

    @property
    def rounds(self) -> pl.DataFrame:
        """The per-round table of the only scheme."""
        return self._only().rounds

    def _only(self) -> Run:
        if len(self.runs) != 1:
            raise ValueError(f"{len(self.runs)} schemes ran: pick one from .runs ({', '.join(self.runs)})")
        return next(iter(self.runs.values()))


def replay(
    *,
    policy: str | Policy | Any = "fifo",
    mechanism: str | Mechanism | Any = "proportional",
    decision_timeout: float | None = None,
    **options: Any,
) -> ReplayResult:
    """Replays a cluster schedule, as ``profiler replay`` does.

    ``policy`` and ``mechanism`` are built-in names (``"srtf"``, ``"tune"``) or objects: a
    policy has ``key(job, round) -> float`` (lower runs first), a mechanism
    ``allocate(round, order) -> list of placements`` (see :class:`Policy`,
    :class:`Mechanism`). The other options are those of ``profiler replay``: ``cluster``,
    ``trace``, ``profiles``, ``window=(4000, 4999)``, ``semantics="synergy"``, ``round_s``,
    ``first_round_s``, ``jobs``, ``seed``, ``compare=["fifo+tune", "fifo+opt"]``,
    ``out="results/"`` (the same files as the CLI's ``--out``), ...

    A plug-in that raises, returns the wrong type or places jobs that do not fit stops the
    replay with :class:`ProfilerError` naming the round (and the job and server); so does one
    call that takes longer than ``decision_timeout`` seconds. No table is written then."""
    argv, policy, mechanism = _scheme_argv(options, policy, mechanism)
    runs, summary, (cluster, profiles, workload) = _native.replay_run(
        argv, policy, mechanism, decision_timeout
    )
    return ReplayResult(
        runs={label: Run(label, _frame(jobs), _frame(rounds)) for label, jobs, rounds in runs},
        summary=_frame(summary),
        cluster=cluster,
        profiles=profiles,
        workload=workload,
    )


@dataclass(frozen=True)
class DeployResult:
    """A deploy's results: per scheme the deploy's tables and the replay's, and the
    comparison (one row per scheme: makespan, mean and p99 JCT, deployed and replayed, and the
    gap in percent)."""

    runs: dict[str, Run]
    replayed: dict[str, Run]
    compare: pl.DataFrame


def deploy(
    *,
    trace: str,
    policy: str | Policy | Any = "fifo",
    mechanism: str | Mechanism | Any = "proportional",
    decision_timeout: float | None = None,
    **options: Any,
) -> DeployResult:
    """Runs a replay's schedule on real jobs of this machine, as ``profiler deploy`` does
    (root, cgroups), and replays the same trace beside it.

    ``policy`` and ``mechanism`` are built-in names or objects, as for :func:`replay`: the
    deploy calls them every round, as the replay does. The other options are those of
    ``profiler deploy``: ``jobs`` (the job specs' directory), ``profiles``, ``cluster``,
    ``round_s``, ``compare=["fifo+proportional", "fifo+tune"]``, ``out``, ``resume=True`` (go
    on from the journal of an interrupted deploy into the same ``out``). Ctrl-C stops every
    job and keeps the tables of those that finished."""
    argv, policy, mechanism = _scheme_argv({"trace": trace, **options}, policy, mechanism)
    runs, replayed, compare = _native.deploy_run(argv, policy, mechanism, decision_timeout)

    def tables(runs):
        return {label: Run(label, _frame(jobs), _frame(rounds)) for label, jobs, rounds in runs}

    return DeployResult(runs=tables(runs), replayed=tables(replayed), compare=_frame(compare))


@dataclass(frozen=True)
class ElasticResult:
    """An elastic replay's results: one summary row and one jobs table per (policy, seed)."""

    #: One row per (policy, seed): mean, median and p99 JCT, makespan, utilisation, restarts.
    summary: pl.DataFrame
    #: Per (policy, seed): one row per job (arrival, start, finish, JCT, GPU-seconds, restarts).
    jobs: dict
    cluster: str
    workload: str


def replay_elastic(
    *,
    policies: Sequence[str | Any],
    elastic_trace: str,
    decision_timeout: float | None = None,
    **options: Any,
) -> ElasticResult:
    """Replays elastic jobs (their GPUs and batch change while they run), as
    ``profiler replay --elastic POLICIES --elastic-trace TRACE`` does.

    ``policies`` are built-in names (``"tiresias"``, ``"pollux"``, ``"ones"``) or
    :class:`ElasticPolicy` objects, each run with every seed. ``elastic_trace`` is
    ``pollux:workloads/traces/pollux/workload-1.csv`` or ``ones:...``; other options are the
    CLI's: ``seeds``, ``seed``, ``noise``, ``interval``, ``first``, ``cluster``, ``versus``.
    A policy object is shared by its runs (one per seed). A decision that raises, returns
    something else than one allocation or None per job, does not fit the cluster, or takes
    longer than ``decision_timeout`` seconds stops the replay with :class:`ProfilerError`."""
    names, plugins = [], []
    for p in policies:
        if isinstance(p, str):
            names.append(p)
        else:
            plugins.append(p)
            names.append(getattr(p, "name", type(p).__name__))
    argv = _argv({"elastic": names, "elastic_trace": elastic_trace, **options})
    runs, cluster, workload = _native.elastic_run(argv, plugins, decision_timeout)
    return ElasticResult(
        summary=pl.DataFrame([summary for summary, _ in runs]),
        jobs={(s["policy"], s["seed"]): pl.DataFrame(jobs) for s, jobs in runs},
        cluster=cluster,
        workload=workload,
    )
