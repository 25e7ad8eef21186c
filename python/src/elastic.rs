//! Elastic policies written in Python: `decide(ctx)` returns, per active job, its allocation
//! until the next decision (GPUs per server, global batch, CPUs and GB per GPU) or None. The
//! engine checks the whole decision; helpers place the way the built-ins do.

use crate::deadline::Deadline;
use crate::plugins::{Failure, plugin_name};
use crate::views::Alive;
use crate::{error, parse_args, traceback};
use profiler::cli::replay::ReplayArgs;
use profiler::replay::elastic::allocation::Allocation;
use profiler::replay::elastic::experiment::{ElasticExperiment, run_trace_with};
use profiler::replay::elastic::job::ElasticJob;
use profiler::replay::elastic::policy::{self, DecisionCtx, ElasticPolicy, support};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// An active job as an elastic policy sees it (a read-only copy).
#[pyclass(frozen, module = "jobprofiler._native")]
pub struct ElasticJobView {
    job: ElasticJob,
}

#[pymethods]
impl ElasticJobView {
    #[getter]
    fn id(&self) -> u64 {
        self.job.spec.id
    }
    /// The trace's name (Pollux: `cifar10-0`).
    #[getter]
    fn name(&self) -> &str {
        &self.job.spec.name
    }
    /// Its application (the model of step time and efficiency).
    #[getter]
    fn app(&self) -> &str {
        &self.job.spec.app
    }
    #[getter]
    fn arrival_s(&self) -> f64 {
        self.job.spec.arrival_s
    }
    /// GPUs the user asked for (what a non-elastic scheduler runs it on).
    #[getter]
    fn requested_gpus(&self) -> u32 {
        self.job.spec.requested_gpus
    }
    #[getter]
    fn base_batch(&self) -> u32 {
        self.job.spec.base_batch
    }
    /// Bounds of the global batch: (min, max).
    #[getter]
    fn batch_bounds(&self) -> (u32, u32) {
        (self.job.spec.min_batch, self.job.spec.max_batch)
    }
    /// Progress so far, base-batch samples.
    #[getter]
    fn progress(&self) -> f64 {
        self.job.progress
    }
    /// GPU-seconds held so far (Tiresias's attained service).
    #[getter]
    fn attained_gpu_s(&self) -> f64 {
        self.job.attained_gpu_s
    }
    /// Seconds holding an allocation.
    #[getter]
    fn run_s(&self) -> f64 {
        self.job.run_s
    }
    #[getter]
    fn first_start_s(&self) -> Option<f64> {
        self.job.first_start_s
    }
    #[getter]
    fn reconfigurations(&self) -> u32 {
        self.job.reconfigurations
    }
    /// What it holds now; None when queued or preempted.
    #[getter]
    fn allocation(&self) -> Option<ElasticAllocation> {
        self.job.allocation.clone().map(ElasticAllocation::from)
    }
}

/// A job's allocation until the next decision.
#[pyclass(frozen, get_all, module = "jobprofiler._native")]
#[derive(Clone)]
pub struct ElasticAllocation {
    /// (server, GPUs there), ascending by server.
    gpus_per_server: Vec<(usize, u32)>,
    global_batch: u32,
    cpus_per_gpu: f64,
    mem_gb_per_gpu: f64,
}

impl From<Allocation> for ElasticAllocation {
    fn from(a: Allocation) -> Self {
        ElasticAllocation {
            gpus_per_server: a.gpus_per_server,
            global_batch: a.global_batch,
            cpus_per_gpu: a.cpus_per_gpu,
            mem_gb_per_gpu: a.mem_gb_per_gpu,
        }
    }
}

impl From<ElasticAllocation> for Allocation {
    fn from(a: ElasticAllocation) -> Self {
        Allocation {
            gpus_per_server: a.gpus_per_server,
            global_batch: a.global_batch,
            cpus_per_gpu: a.cpus_per_gpu,
            mem_gb_per_gpu: a.mem_gb_per_gpu,
        }
    }
}

#[pymethods]
impl ElasticAllocation {
    #[new]
    fn new(
        gpus_per_server: Vec<(usize, u32)>,
        global_batch: u32,
        cpus_per_gpu: f64,
        mem_gb_per_gpu: f64,
    ) -> Self {
        ElasticAllocation {
            gpus_per_server,
            global_batch,
            cpus_per_gpu,
            mem_gb_per_gpu,
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "ElasticAllocation(gpus_per_server={:?}, global_batch={}, cpus_per_gpu={}, mem_gb_per_gpu={})",
            self.gpus_per_server, self.global_batch, self.cpus_per_gpu, self.mem_gb_per_gpu
        )
    }
}

/// The decision an elastic policy makes: the cluster, the active jobs and the built-ins'
/// placement helpers. Valid during the call only.
#[pyclass(frozen, unsendable, module = "jobprofiler._native")]
pub struct DecisionView {
    ctx: *const DecisionCtx<'static>,
    alive: Alive,
}

impl DecisionView {
    fn ctx(&self) -> PyResult<&DecisionCtx<'static>> {
        self.alive.check("DecisionView")?;
        // SAFETY: the engine's context of the call that made this view, which outlives the
        // call; `alive` is cleared when it returns.
        Ok(unsafe { &*self.ctx })
    }
    fn index(&self, i: usize) -> PyResult<usize> {
        let n = self.ctx()?.jobs.len();
        if i < n {
            Ok(i)
        } else {
            Err(PyValueError::new_err(format!(
                "job index {i}: the decision has jobs 0..{}",
                n.saturating_sub(1)
            )))
        }
    }
}

fn allocations(decision: Vec<Option<Allocation>>) -> Vec<Option<ElasticAllocation>> {
    decision
        .into_iter()
        .map(|a| a.map(ElasticAllocation::from))
        .collect()
}

#[pymethods]
impl DecisionView {
    /// Simulated time, seconds.
    #[getter]
    fn now(&self) -> PyResult<f64> {
        Ok(self.ctx()?.now)
    }
    /// Seconds until the next decision.
    #[getter]
    fn interval_s(&self) -> PyResult<f64> {
        Ok(self.ctx()?.interval_s)
    }
    /// Seconds of no progress charged when a job's allocation changes.
    #[getter]
    fn reconfiguration_s(&self) -> PyResult<f64> {
        Ok(self.ctx()?.reconfiguration_s)
    }
    #[getter]
    fn total_gpus(&self) -> PyResult<u32> {
        Ok(self.ctx()?.cluster.total_gpus)
    }
    /// Every server's capacity: (GPUs, cores, GB).
    #[getter]
    fn servers(&self) -> PyResult<Vec<(u32, f64, f64)>> {
        Ok(self.ctx()?.cluster.capacities())
    }
    /// The active jobs, ascending by id (the decision lists one entry per job, in this order).
    #[getter]
    fn jobs(&self) -> PyResult<Vec<ElasticJobView>> {
        Ok(self
            .ctx()?
            .jobs
            .iter()
            .map(|j| ElasticJobView { job: j.clone() })
            .collect())
    }
    /// GPUs a gang (non-elastic) scheduler runs job `i` on: what it asked for, no more than its
    /// batch has samples.
    fn gang_gpus(&self, i: usize) -> PyResult<u32> {
        let i = self.index(i)?;
        Ok(support::gang_gpus(&self.ctx()?.jobs[i].spec))
    }
    /// Job `i`'s own global batch on `gpus` GPUs (its batch rule), at least one sample a GPU.
    fn own_batch(&self, i: usize, gpus: u32) -> PyResult<u32> {
        let i = self.index(i)?;
        Ok(support::own_batch(&self.ctx()?.jobs[i].spec, gpus).max(gpus))
    }
    /// Places GPU counts (one per job) as Pollux's simulator places Tiresias and Optimus: a
    /// running job whose count is unchanged keeps its servers, the others in `order` take GPUs
    /// from the servers with the most room; own batch, the proportional share of CPU and
    /// memory. Returns the decision (None: queued).
    fn place_most_free_keeping(
        &self,
        counts: Vec<u32>,
        order: Vec<usize>,
    ) -> PyResult<Vec<Option<ElasticAllocation>>> {
        let ctx = self.ctx()?;
        if counts.len() != ctx.jobs.len() {
            return Err(PyValueError::new_err(format!(
                "{} counts for {} jobs",
                counts.len(),
                ctx.jobs.len()
            )));
        }
        for &i in &order {
            self.index(i)?;
        }
        let batch = |i: usize, servers: &[(usize, u32)]| support::own_batch_on(ctx, i, servers);
        Ok(allocations(support::place_most_free_keeping(
            ctx, &counts, &order, &batch,
        )))
    }
    /// Places jobs at `gpus` (one count per job) in priority `order`; `preemptive`: a running
    /// job not placed is preempted, otherwise only queued jobs are placed (backfilling).
    fn place_in_order(
        &self,
        order: Vec<usize>,
        gpus: Vec<u32>,
        preemptive: bool,
    ) -> PyResult<Vec<Option<ElasticAllocation>>> {
        let ctx = self.ctx()?;
        if gpus.len() != ctx.jobs.len() {
            return Err(PyValueError::new_err(format!(
                "{} GPU counts for {} jobs",
                gpus.len(),
                ctx.jobs.len()
            )));
        }
        for &i in &order {
            self.index(i)?;
        }
        let count = |i: usize| gpus[i];
        Ok(allocations(support::place_in_order(
            ctx, &order, &count, preemptive,
        )))
    }
}

/// A Python object with `decide(ctx) -> [allocation or None, ...]` as an [`ElasticPolicy`].
struct PyElasticPolicy {
    obj: Arc<Py<PyAny>>,
    deadline: Arc<Deadline>,
    name: &'static str,
    in_place: bool,
    failure: Failure,
}

fn decision_of(value: &Bound<'_, PyAny>, jobs: usize) -> PyResult<Vec<Option<Allocation>>> {
    let items: Vec<Bound<'_, PyAny>> = value.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "decide() must return a list with one allocation or None per job, got {}",
            value
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    if items.len() != jobs {
        return Err(PyValueError::new_err(format!(
            "decide() returned {} entries for {jobs} jobs",
            items.len()
        )));
    }
    items
        .iter()
        .map(|item| {
            if item.is_none() {
                return Ok(None);
            }
            item.cast::<ElasticAllocation>()
                .map(|a| Some(a.get().clone().into()))
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "expected an ElasticAllocation or None, got {}",
                        item.repr().map(|r| r.to_string()).unwrap_or_default()
                    ))
                })
        })
        .collect()
}

impl ElasticPolicy for PyElasticPolicy {
    fn name(&self) -> &'static str {
        self.name
    }
    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let none = || vec![None; ctx.jobs.len()];
        if self.failure.failed() {
            return none();
        }
        Python::attach(|py| {
            let alive = Alive::new();
            let view = DecisionView {
                // SAFETY: only the lifetime is erased; the view checks `alive` before use.
                ctx: unsafe {
                    std::mem::transmute::<*const DecisionCtx<'_>, *const DecisionCtx<'static>>(ctx)
                },
                alive: alive.clone(),
            };
            let (result, late) = self
                .deadline
                .call(py, || self.obj.bind(py).call_method1("decide", (view,)));
            let decision = result.and_then(|v| decision_of(&v, ctx.jobs.len()));
            alive.end();
            decision.unwrap_or_else(|e| {
                let what = match late {
                    true => format!("did not return within {}", self.deadline.describe()),
                    false => "failed".into(),
                };
                self.failure
                    .set(format!("decide() {what}:\n{}", traceback(py, &e)));
                none()
            })
        })
    }
    fn rescales_in_place(&self) -> bool {
        self.in_place
    }
    fn failure(&self) -> Option<String> {
        self.failure.get()
    }
}

/// A Python elastic policy, checked once and shared by its runs (one per seed).
struct Plugin {
    name: &'static str,
    obj: Arc<Py<PyAny>>,
    in_place: bool,
}

/// One (policy, seed) run: its summary, and its jobs' columns.
type RunColumns<'py> = (Bound<'py, PyDict>, Bound<'py, PyDict>);

/// Runs the elastic replay `argv` describes (`profiler replay --elastic ...`), the policies
/// named by `plugins` (Python objects) beside the built-ins. Returns per (policy, seed) its
/// summary and its jobs' columns, and the cluster and workload in words.
#[pyfunction]
#[pyo3(signature = (argv, plugins, decision_timeout=None))]
fn elastic_run<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    plugins: Vec<Bound<'py, PyAny>>,
    decision_timeout: Option<f64>,
) -> PyResult<(Vec<RunColumns<'py>>, String, String)> {
    let plugins: Vec<Plugin> = plugins
        .iter()
        .map(|p| {
            if !p.hasattr("decide")? {
                return Err(PyTypeError::new_err(
                    "an elastic policy needs a method decide(ctx) -> list of allocations",
                ));
            }
            Ok(Plugin {
                name: plugin_name(p)?,
                obj: Arc::new(p.clone().unbind()),
                in_place: match p.getattr("rescales_in_place") {
                    Ok(v) => v.extract()?,
                    Err(_) => false,
                },
            })
        })
        .collect::<PyResult<_>>()?;
    let args = parse_args::<ReplayArgs>("replay", argv)?;
    let deadline = Deadline::new(decision_timeout)?;
    let make = |name: &str, seed: u64| -> Option<Box<dyn ElasticPolicy>> {
        match plugins.iter().find(|p| p.name == name) {
            Some(p) => Some(Box::new(PyElasticPolicy {
                obj: p.obj.clone(),
                deadline: deadline.clone(),
                name: p.name,
                in_place: p.in_place,
                failure: Failure::default(),
            })),
            None => policy::by_name(name, seed),
        }
    };
    let run = args.to_elastic_with(&make).map_err(error)?;
    let experiment: ElasticExperiment = py.detach(|| run_trace_with(&run, &make)).map_err(error)?;
    let mut out = Vec::new();
    for outcome in experiment.runs.iter().flatten() {
        let s = &outcome.summary;
        let summary = PyDict::new(py);
        summary.set_item("policy", &s.policy)?;
        summary.set_item("seed", s.seed)?;
        summary.set_item("jobs", s.jobs)?;
        summary.set_item("mean_jct_s", s.mean_jct_s)?;
        summary.set_item("median_jct_s", s.median_jct_s)?;
        summary.set_item("p99_jct_s", s.p99_jct_s)?;
        summary.set_item("makespan_s", s.makespan_s)?;
        summary.set_item("gpu_utilization", s.gpu_utilization)?;
        summary.set_item("restarts_per_job", s.restarts_per_job)?;
        summary.set_item("decisions", s.decisions)?;
        summary.set_item("decision_mean_s", s.decision_mean_s)?;
        let jobs = PyDict::new(py);
        let j = &outcome.jobs;
        jobs.set_item("id", j.iter().map(|r| r.id).collect::<Vec<_>>())?;
        jobs.set_item("name", j.iter().map(|r| r.name.clone()).collect::<Vec<_>>())?;
        jobs.set_item("app", j.iter().map(|r| r.app.clone()).collect::<Vec<_>>())?;
        jobs.set_item(
            "requested_gpus",
            j.iter().map(|r| r.requested_gpus).collect::<Vec<_>>(),
        )?;
        jobs.set_item(
            "arrival_s",
            j.iter().map(|r| r.arrival_s).collect::<Vec<_>>(),
        )?;
        jobs.set_item(
            "first_start_s",
            j.iter().map(|r| r.first_start_s).collect::<Vec<_>>(),
        )?;
        jobs.set_item("finish_s", j.iter().map(|r| r.finish_s).collect::<Vec<_>>())?;
        jobs.set_item("jct_s", j.iter().map(|r| r.jct_s).collect::<Vec<_>>())?;
        jobs.set_item("run_s", j.iter().map(|r| r.run_s).collect::<Vec<_>>())?;
        jobs.set_item("wait_s", j.iter().map(|r| r.wait_s).collect::<Vec<_>>())?;
        jobs.set_item("gpu_s", j.iter().map(|r| r.gpu_s).collect::<Vec<_>>())?;
        jobs.set_item(
            "reconfigurations",
            j.iter().map(|r| r.reconfigurations).collect::<Vec<_>>(),
        )?;
        jobs.set_item(
            "preemptions",
            j.iter().map(|r| r.preemptions).collect::<Vec<_>>(),
        )?;
        jobs.set_item("noise", j.iter().map(|r| r.noise).collect::<Vec<_>>())?;
        out.push((summary, jobs));
    }
    Ok((out, experiment.cluster, experiment.workload))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ElasticJobView>()?;
    m.add_class::<ElasticAllocation>()?;
    m.add_class::<DecisionView>()?;
    m.add_function(wrap_pyfunction!(elastic_run, m)?)?;
    Ok(())
}
