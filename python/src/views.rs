//! What a Python policy or mechanism sees: read-only views of the engine's round. [`JobView`]
//! is a copy of a job's state; [`RoundView`] (the round a key is asked in), [`MechanismView`]
//! (the round's cluster and jobs, with helpers that place the way the built-ins do, [`FreePool`])
//! and [`OrderView`] (the policy order, pulled lazily) point into the engine's state for the
//! length of one call only: they check a flag the call clears when it returns, so a view kept
//! past its call raises instead of reading freed memory.

use profiler::replay::job::JobState;
use profiler::replay::mechanism::{self, Free, Home, MechCtx, Placement};
use profiler::replay::policy::PolicyCtx;
use profiler::replay::profile::Semantics;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a round view's call is still running.
#[derive(Clone)]
pub(crate) struct Alive(Arc<AtomicBool>);

impl Alive {
    pub(crate) fn new() -> Self {
        Alive(Arc::new(AtomicBool::new(true)))
    }
    pub(crate) fn end(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
    pub(crate) fn check(&self, what: &str) -> PyResult<()> {
        if self.0.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "this {what} belongs to a call that has returned; keep the values you need, not the view"
            )))
        }
    }
}

fn semantics_name(s: Semantics) -> &'static str {
    match s {
        Semantics::Exact => "exact",
        Semantics::Synergy => "synergy",
    }
}

/// A job as a policy or mechanism sees it: a copy of its state in the round.
#[pyclass(frozen, module = "jobprofiler._native")]
pub struct JobView {
    pub(crate) state: JobState,
    /// Its index in the round's jobs (what a placement names).
    pub(crate) index: usize,
}

#[pymethods]
impl JobView {
    /// The job's id in the trace.
    #[getter]
    fn id(&self) -> u64 {
        self.state.spec.id
    }
    /// Index of the job in the round (what a placement names).
    #[getter]
    fn index(&self) -> usize {
        self.index
    }
    #[getter]
    fn model(&self) -> &str {
        &self.state.spec.model
    }
    #[getter]
    fn arrival_s(&self) -> f64 {
        self.state.spec.arrival_s
    }
    #[getter]
    fn gpus(&self) -> u32 {
        self.state.spec.gpus
    }
    /// All of its work, samples.
    #[getter]
    fn work_samples(&self) -> f64 {
        self.state.spec.work_samples
    }
    /// Work left, samples.
    #[getter]
    fn remaining_samples(&self) -> f64 {
        self.state.remaining
    }
    /// Samples/s at the proportional share of the reference server.
    #[getter]
    fn prop_rate(&self) -> f64 {
        self.state.prop_rate
    }
    /// Samples/s at its best case (the matrix's maximum).
    #[getter]
    fn best_rate(&self) -> f64 {
        self.state.best_rate
    }
    /// Best-case demand of the whole job: cores.
    #[getter]
    fn best_cpus(&self) -> f64 {
        self.state.best_cpu
    }
    /// Best-case demand of the whole job: GB.
    #[getter]
    fn best_mem_gb(&self) -> f64 {
        self.state.best_mem
    }
    /// GPU-seconds received so far.
    #[getter]
    fn attained_gpu_s(&self) -> f64 {
        self.state.attained_gpu_s
    }
    /// Dominant-share-seconds received so far (DRF).
    #[getter]
    fn attained_dominant_s(&self) -> f64 {
        self.state.attained_dominant_s
    }
    /// When it first ran, seconds; None before.
    #[getter]
    fn first_start_s(&self) -> Option<f64> {
        self.state.first_start
    }
    #[getter]
    fn rounds_run(&self) -> u32 {
        self.state.rounds_run
    }
    /// CPU cores and GB the trace requested (Alibaba), where it did.
    #[getter]
    fn requests(&self) -> (Option<f64>, Option<f64>) {
        (self.state.spec.cpu_request, self.state.spec.mem_request_gb)
    }
    /// Synergy's starvation priority (1 once it waited 1000 h without running).
    #[getter]
    fn synergy_priority(&self) -> u8 {
        self.state.synergy.priority
    }
    /// Synergy's remaining time: remaining iterations x iteration time at the proportional
    /// share, divided by the speed-up it ran at last unless `fair`.
    fn synergy_remaining_s(&self, fair: bool) -> f64 {
        self.state.synergy.remaining_s(fair)
    }
    fn __repr__(&self) -> String {
        format!(
            "JobView(id={}, model={:?}, gpus={}, arrival_s={}, remaining_samples={:.6e})",
            self.state.spec.id,
            self.state.spec.model,
            self.state.spec.gpus,
            self.state.spec.arrival_s,
            self.state.remaining
        )
    }
}

/// The round a policy is asked a key in.
#[pyclass(frozen, unsendable, module = "jobprofiler._native")]
pub struct RoundView {
    pub(crate) ctx: *const PolicyCtx<'static>,
    pub(crate) alive: Alive,
}

impl RoundView {
    pub(crate) fn ctx(&self) -> PyResult<&PolicyCtx<'static>> {
        self.alive.check("RoundView")?;
        // SAFETY: the pointer is to the engine's context of the call that made this view,
        // which outlives the call; `alive` is cleared when the call returns.
        Ok(unsafe { &*self.ctx })
    }
}

#[pymethods]
impl RoundView {
    /// Simulated time of the round, seconds.
    #[getter]
    fn now(&self) -> PyResult<f64> {
        Ok(self.ctx()?.now)
    }
    /// max(1, GPUs the active jobs demand / the cluster's GPUs).
    #[getter]
    fn contention(&self) -> PyResult<f64> {
        Ok(self.ctx()?.contention)
    }
    /// Share of (GPUs, CPUs, memory) left unallocated in the previous round.
    #[getter]
    fn free_frac(&self) -> PyResult<(f64, f64, f64)> {
        let f = self.ctx()?.free_frac;
        Ok((f[0], f[1], f[2]))
    }
    /// `exact` or `synergy`.
    #[getter]
    fn semantics(&self) -> PyResult<&'static str> {
        Ok(semantics_name(self.ctx()?.semantics))
    }
    /// The mechanism ignores speed-ups (Synergy's `+fair` mode, proportional).
    #[getter]
    fn fair(&self) -> PyResult<bool> {
        Ok(self.ctx()?.fair)
    }
}

/// The round a mechanism decides: the cluster, the jobs, and how the built-ins place.
#[pyclass(frozen, unsendable, module = "jobprofiler._native")]
pub struct MechanismView {
    pub(crate) ctx: *const MechCtx<'static>,
    pub(crate) alive: Alive,
}

impl MechanismView {
    pub(crate) fn ctx(&self) -> PyResult<&MechCtx<'static>> {
        self.alive.check("MechanismView")?;
        // SAFETY: as RoundView's.
        Ok(unsafe { &*self.ctx })
    }
    fn job(&self, job: &JobView) -> PyResult<usize> {
        let n = self.ctx()?.jobs.len();
        if job.index < n {
            Ok(job.index)
        } else {
            Err(PyValueError::new_err(format!(
                "job {} is not a job of this round",
                job.state.spec.id
            )))
        }
    }
    fn server(&self, s: usize) -> PyResult<usize> {
        let n = self.ctx()?.cluster.servers.len();
        if s < n {
            Ok(s)
        } else {
            Err(PyValueError::new_err(format!(
                "server {s}: the cluster has servers 0..{}",
                n.saturating_sub(1)
            )))
        }
    }
}

#[pymethods]
impl MechanismView {
    /// Every server's capacity: (GPUs, cores, GB).
    #[getter]
    fn servers(&self) -> PyResult<Vec<(u32, f64, f64)>> {
        Ok(self.ctx()?.cluster.capacities())
    }
    /// `exact` or `synergy`.
    #[getter]
    fn semantics(&self) -> PyResult<&'static str> {
        Ok(semantics_name(self.ctx()?.semantics))
    }
    /// The job's best-case demand (cores, GB), capped at server `server`'s capacity when the
    /// job fits on one server.
    fn best_on(&self, job: &JobView, server: usize) -> PyResult<(f64, f64)> {
        let (j, s) = (self.job(job)?, self.server(server)?);
        Ok(mechanism::best_on(self.ctx()?, j, s))
    }
    /// The job's proportional share on server `server`: (cores, GB).
    fn proportional(&self, job: &JobView, server: usize) -> PyResult<(f64, f64)> {
        let (j, s) = (self.job(job)?, self.server(server)?);
        Ok(self.ctx()?.proportional(j, s))
    }
    /// Samples/s of the job given `cpus` cores and `mem_gb` GB (its matrix, interpolated).
    fn rate(&self, job: &JobView, cpus: f64, mem_gb: f64) -> PyResult<f64> {
        let j = self.job(job)?;
        Ok(self.ctx()?.rate(j, cpus, mem_gb))
    }
    /// Free GPUs, CPUs and memory of every server, to place jobs into one by one.
    fn free(&self) -> PyResult<FreePool> {
        let ctx = self.ctx()?;
        Ok(FreePool {
            free: Free::new(ctx.cluster),
            view: MechanismView {
                ctx: self.ctx,
                alive: self.alive.clone(),
            },
        })
    }
}

/// (cores, GB) a job wants on server `s`.
type Demand<'a> = Box<dyn Fn(usize) -> (f64, f64) + 'a>;

/// Demand (cores, GB) of job `j` on a server, from a Python argument: `"best"` (its best case
/// capped at the server, as greedy and Tune give), `"proportional"` (its GPUs' share of the
/// server), a pair for every server, or a callable `demand(server) -> (cores, GB)`. A callable
/// that fails is reported after the call.
fn demand_of<'a>(
    demand: &Bound<'a, PyAny>,
    ctx: &'a MechCtx<'static>,
    j: usize,
    failure: &'a std::cell::RefCell<Option<PyErr>>,
) -> PyResult<Demand<'a>> {
    if let Ok(name) = demand.extract::<String>() {
        return match name.as_str() {
            "best" => Ok(Box::new(move |s| mechanism::best_on(ctx, j, s))),
            "proportional" => Ok(Box::new(move |s| ctx.proportional(j, s))),
            other => Err(PyValueError::new_err(format!(
                "demand {other:?}: expected \"best\", \"proportional\", (cores, GB) or a callable"
            ))),
        };
    }
    if let Ok(d) = demand.extract::<(f64, f64)>() {
        return Ok(Box::new(move |_| d));
    }
    if !demand.is_callable() {
        return Err(PyTypeError::new_err(
            "demand: expected \"best\", \"proportional\", (cores, GB) or a callable demand(server) -> (cores, GB)",
        ));
    }
    let call = demand.clone();
    Ok(Box::new(move |s| {
        match call.call1((s,)).and_then(|v| v.extract::<(f64, f64)>()) {
            Ok(d) => d,
            Err(e) => {
                failure.borrow_mut().get_or_insert(e);
                (f64::INFINITY, f64::INFINITY)
            }
        }
    }))
}

/// The first error a demand callable raised, if any.
fn demand_failed(failure: std::cell::RefCell<Option<PyErr>>) -> PyResult<()> {
    match failure.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Free resources of the round's servers, placing jobs the way the built-in mechanisms do.
#[pyclass(unsendable, module = "jobprofiler._native")]
pub struct FreePool {
    pub(crate) free: Free,
    pub(crate) view: MechanismView,
}

#[pymethods]
impl FreePool {
    /// Free GPUs left in the cluster.
    #[getter]
    fn total_gpus(&self) -> PyResult<u32> {
        self.view.ctx()?;
        Ok(self.free.total_gpus)
    }
    /// What server `server` has free: (GPUs, cores, GB).
    fn server(&self, server: usize) -> PyResult<(u32, f64, f64)> {
        let s = self.view.server(server)?;
        let r = self.free.server(s);
        Ok((r.gpus, r.cpus, r.mem_gb))
    }
    /// Where the job would go at `demand` (`"best"`, `"proportional"`, a (cores, GB) pair for
    /// the whole job, or a callable `demand(server) -> (cores, GB)`): a list of (server, GPUs), as the built-ins choose
    /// (Synergy's GPU walk under `synergy` semantics; else the best-fitting server, else the
    /// fewest servers); None when it does not fit.
    fn find(
        &self,
        job: &JobView,
        demand: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Vec<(usize, u32)>>> {
        let j = self.view.job(job)?;
        let ctx = self.view.ctx()?;
        let failure = std::cell::RefCell::new(None);
        let home = {
            let d = demand_of(demand, ctx, j, &failure)?;
            self.free.find(ctx.semantics, ctx.jobs[j].spec.gpus, d)
        };
        demand_failed(failure)?;
        Ok(home.map(|h| match h {
            Home::One(p) => vec![p],
            Home::Spread(parts) => parts,
        }))
    }
    /// Places the job on `parts` (what `find` gave), each part taking its GPUs' share of
    /// `demand`; returns the placements.
    fn place(
        &mut self,
        job: &JobView,
        parts: Vec<(usize, u32)>,
        demand: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<PlacementView>> {
        let j = self.view.job(job)?;
        for &(s, g) in &parts {
            self.view.server(s)?;
            let r = self.free.server(s);
            if g > r.gpus {
                return Err(PyValueError::new_err(format!(
                    "server {s} has {} free GPUs, not {g}",
                    r.gpus
                )));
            }
        }
        let ctx = self.view.ctx()?;
        let g = ctx.jobs[j].spec.gpus;
        let failure = std::cell::RefCell::new(None);
        let mut out = Vec::new();
        {
            let d = demand_of(demand, ctx, j, &failure)?;
            self.free.place_parts(&mut out, j, g, &parts, d);
        }
        demand_failed(failure)?;
        Ok(out.into_iter().map(PlacementView::from).collect())
    }
}

/// One part of a job's allocation: its GPUs on one server with their cores and GB.
#[pyclass(frozen, get_all, module = "jobprofiler._native")]
#[derive(Clone)]
pub struct PlacementView {
    /// Index of the job in the round.
    pub(crate) job: usize,
    pub(crate) server: usize,
    pub(crate) gpus: u32,
    pub(crate) cpus: f64,
    pub(crate) mem_gb: f64,
}

impl From<Placement> for PlacementView {
    fn from(p: Placement) -> Self {
        PlacementView {
            job: p.job,
            server: p.server,
            gpus: p.gpus,
            cpus: p.cpus,
            mem_gb: p.mem_gb,
        }
    }
}

#[pymethods]
impl PlacementView {
    #[new]
    pub(crate) fn new(
        job: &Bound<'_, PyAny>,
        server: usize,
        gpus: u32,
        cpus: f64,
        mem_gb: f64,
    ) -> PyResult<Self> {
        let job = match job.cast::<JobView>() {
            Ok(v) => v.get().index,
            Err(_) => job.extract::<usize>().map_err(|_| {
                PyTypeError::new_err(
                    "a placement's job is a JobView or the job's index in the round",
                )
            })?,
        };
        Ok(PlacementView {
            job,
            server,
            gpus,
            cpus,
            mem_gb,
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "Placement(job={}, server={}, gpus={}, cpus={}, mem_gb={})",
            self.job, self.server, self.gpus, self.cpus, self.mem_gb
        )
    }
}

/// The policy order of the round's jobs, pulled one at a time (pull only what you place: the
/// engine reuses a decision while the jobs pulled stay first in the order).
#[pyclass(unsendable, module = "jobprofiler._native")]
pub struct OrderView {
    pub(crate) order: *mut (dyn Iterator<Item = usize> + 'static),
    pub(crate) jobs: *const [JobState],
    pub(crate) alive: Alive,
}

#[pymethods]
impl OrderView {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__(&mut self) -> PyResult<Option<JobView>> {
        self.alive.check("order")?;
        // SAFETY: both point into the engine's round for the length of the call (`alive`).
        let (order, jobs) = unsafe { (&mut *self.order, &*self.jobs) };
        Ok(order.next().map(|i| JobView {
            state: jobs[i].clone(),
            index: i,
        }))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<JobView>()?;
    m.add_class::<RoundView>()?;
    m.add_class::<MechanismView>()?;
    m.add_class::<FreePool>()?;
    m.add_class::<OrderView>()?;
    m.add("Placement", m.py().get_type::<PlacementView>())?;
    Ok(())
}
