//! Replays for Python: the options parsed as `profiler replay` parses them, the scenario loaded
//! and the schemes run by the library's own steps, with a Python policy or mechanism in place of
//! a built-in where one is given. Results come back as Parquet tables.

use crate::deadline::Deadline;
use crate::plugins::{PyMechanism, PyPolicy};
use crate::{error, parquet, parse_args};
use profiler::cli::replay::ReplayArgs;
use profiler::replay::{
    ReplayObserver, Scenario, Scheme, mechanism, policy, runner, schemes_by_name, tables,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

struct Unobserved;
impl ReplayObserver for Unobserved {}

/// The schemes to run: the named built-ins, or, where a Python `policy` or `mechanism` is
/// given, that object in place of the first scheme's named one.
pub(crate) fn schemes_with_plugins(
    named: &[(String, String)],
    policy: Option<Bound<'_, PyAny>>,
    mechanism: Option<Bound<'_, PyAny>>,
    deadline: &std::sync::Arc<Deadline>,
) -> PyResult<Vec<Scheme>> {
    if policy.is_none() && mechanism.is_none() {
        return schemes_by_name(named).map_err(error);
    }
    let (p, m) = named.first().cloned().unwrap_or_default();
    let policy: Box<dyn policy::Policy> = match policy {
        Some(obj) => Box::new(PyPolicy::new(&obj, deadline.clone())?),
        None => policy::by_name(&p).ok_or_else(|| error(format!("unknown policy {p:?}")))?,
    };
    let mechanism: Box<dyn mechanism::Mechanism> = match mechanism {
        Some(obj) => Box::new(PyMechanism::new(&obj, deadline.clone())?),
        None => mechanism::by_name(&m).ok_or_else(|| error(format!("unknown mechanism {m:?}")))?,
    };
    Ok(vec![(policy, mechanism)])
}

/// A run's tables as Parquet bytes: (policy+mechanism, per-job table, per-round table).
pub(crate) fn run_tables<'py>(
    py: Python<'py>,
    run: &profiler::replay::RunResult,
) -> PyResult<RunTables<'py>> {
    let label = format!("{}+{}", run.summary.policy, run.summary.mechanism);
    let jobs = parquet(tables::jobs_frame(&run.jobs).map_err(error)?)?;
    let rounds = parquet(tables::rounds_frame(&run.rounds).map_err(error)?)?;
    Ok((label, PyBytes::new(py, &jobs), PyBytes::new(py, &rounds)))
}

/// One scheme's results: (policy+mechanism, per-job table, per-round table).
pub(crate) type RunTables<'py> = (String, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// Runs the replay `argv` describes (`profiler replay` arguments). `policy` / `mechanism`, where
/// given, are Python objects that replace the named built-in; each call into them may take at
/// most `decision_timeout` seconds. Returns every scheme's tables, the
/// summary table, and the description of the scenario (cluster, profiles, workload).
#[pyfunction]
#[pyo3(signature = (argv, policy=None, mechanism=None, decision_timeout=None))]
fn replay_run<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    policy: Option<Bound<'py, PyAny>>,
    mechanism: Option<Bound<'py, PyAny>>,
    decision_timeout: Option<f64>,
) -> PyResult<(Vec<RunTables<'py>>, Bound<'py, PyBytes>, Vec<String>)> {
    let args = parse_args::<ReplayArgs>("replay", argv)?;
    if args.is_elastic() || args.grid.grid.is_some() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "elastic replays and grids run from the CLI (`profiler replay --elastic`, `--grid`)",
        ));
    }
    let opts = args.to_options().map_err(error)?;
    let deadline = Deadline::new(decision_timeout)?;
    let schemes = schemes_with_plugins(&opts.schemes, policy, mechanism, &deadline)?;
    // The replay runs with the interpreter released; a plug-in takes it back for each call.
    let summary = py.detach(|| {
        let summary = Scenario::load(&opts)
            .and_then(|scenario| runner::run_schemes(&opts, &scenario, &schemes, &Unobserved));
        deadline.stop();
        summary
    });
    let summary = summary.map_err(error)?;
    let runs = (summary.runs.iter())
        .map(|run| run_tables(py, run))
        .collect::<PyResult<Vec<_>>>()?;
    let table =
        parquet(tables::summary_frame(summary.runs.iter().map(|r| &r.summary)).map_err(error)?)?;
    let described = vec![
        summary.cluster.clone(),
        summary.profiles.clone(),
        summary.workload.clone(),
    ];
    Ok((runs, PyBytes::new(py, &table), described))
}

/// (name, one-line description) of each built-in.
type Described = Vec<(String, String)>;

/// Names and one-line descriptions of the built-in policies and mechanisms.
#[pyfunction]
fn builtins() -> (Described, Described) {
    let list = |all: &[(&str, &str)]| {
        all.iter()
            .map(|(n, d)| (n.to_string(), d.to_string()))
            .collect()
    };
    let policies: Vec<(&str, &str)> = policy::ALL.iter().map(|p| (p.0, p.1)).collect();
    let mechanisms: Vec<(&str, &str)> = mechanism::ALL.iter().map(|m| (m.0, m.1)).collect();
    (list(&policies), list(&mechanisms))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay_run, m)?)?;
    m.add_function(wrap_pyfunction!(builtins, m)?)?;
    Ok(())
}
