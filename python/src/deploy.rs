//! Deploys for Python: the options parsed as `profiler deploy` parses them, a Python policy or
//! mechanism in place of a built-in where one is given, and the library's own deploy. Ctrl-C
//! stops the jobs and keeps the tables of those that finished, as on the command line.

use crate::deadline::Deadline;
use crate::replay::{RunTables, run_tables, schemes_with_plugins};
use crate::{error, parquet, parse_args};
use profiler::cli::deploy::DeployArgs;
use profiler::deploy::work::DeployObserver;
use profiler::deploy::{DeployProgress, compare, deploy_schemes};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

struct Quiet;
impl DeployObserver for Quiet {}
impl DeployProgress for Quiet {}

/// The process's cancel flag, set by Ctrl-C or SIGTERM (its handlers installed once).
fn cancel_flag() -> PyResult<Arc<AtomicBool>> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    if let Some(f) = FLAG.get() {
        f.store(false, std::sync::atomic::Ordering::SeqCst);
        return Ok(Arc::clone(f));
    }
    let flag = profiler::harness::process::signals::install_cancel_flag().map_err(error)?;
    Ok(Arc::clone(FLAG.get_or_init(|| flag)))
}

/// Deploys what `argv` describes (`profiler deploy` arguments), `policy` / `mechanism` in
/// place of the named built-in where given. Returns the deploy's runs, the replay's runs and
/// the comparison table.
#[pyfunction]
#[pyo3(signature = (argv, policy=None, mechanism=None, decision_timeout=None))]
fn deploy_run<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    policy: Option<Bound<'py, PyAny>>,
    mechanism: Option<Bound<'py, PyAny>>,
    decision_timeout: Option<f64>,
) -> PyResult<(
    Vec<RunTables<'py>>,
    Vec<RunTables<'py>>,
    Bound<'py, PyBytes>,
)> {
    let args = parse_args::<DeployArgs>("deploy", argv)?;
    let opts = args.to_options().map_err(error)?;
    let deadline = Deadline::new(decision_timeout)?;
    let schemes = schemes_with_plugins(&opts.replay.schemes, policy, mechanism, &deadline)?;
    let cancel = cancel_flag()?;
    let summary = py.detach(|| {
        let summary = deploy_schemes(&opts, &schemes, &Quiet, &cancel);
        deadline.stop();
        summary
    });
    let summary = summary.map_err(error)?;
    let tables = |runs: &[profiler::replay::RunResult]| {
        runs.iter()
            .map(|r| run_tables(py, r))
            .collect::<PyResult<Vec<_>>>()
    };
    let rows = summary.compare_rows();
    let table = parquet(compare::frame(&rows).map_err(error)?)?;
    Ok((
        tables(&summary.deployed.runs)?,
        tables(&summary.replayed.runs)?,
        PyBytes::new(py, &table),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(deploy_run, m)?)?;
    Ok(())
}
