//! Matrices for Python: the export table of cells (the rows `profiler export --format csv`
//! writes), each matrix's header and best-case demand, and the exports themselves.

use crate::{error, parquet, parse_args};
use profiler::cli::export::ExportArgs;
use profiler::export::{self, cells_frame};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// Parquet bytes of the cells table of the matrices `argv` names (`profiler export` arguments;
/// the format is ignored).
#[pyfunction]
fn cells_table<'py>(py: Python<'py>, argv: Vec<String>) -> PyResult<Bound<'py, PyBytes>> {
    let opts = parse_args::<ExportArgs>("export", argv)?.into_options();
    let bytes = py.detach(|| {
        let prepared = export::prepare_all(&opts).map_err(error)?;
        parquet(cells_frame(&prepared, &opts).map_err(error)?)
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// Per matrix `argv` names: (path, header as JSON, best-case demand).
#[pyfunction]
fn matrix_summaries<'py>(
    py: Python<'py>,
    argv: Vec<String>,
) -> PyResult<Vec<(String, String, Bound<'py, PyDict>)>> {
    let opts = parse_args::<ExportArgs>("export", argv)?.into_options();
    let prepared = py.detach(|| export::prepare_all(&opts).map_err(error))?;
    prepared
        .iter()
        .map(|p| {
            let header = serde_json::to_string(&p.matrix.header).map_err(error)?;
            let d = &p.demand;
            let demand = PyDict::new(py);
            demand.set_item("cpus_per_gpu", d.cpus_per_gpu)?;
            demand.set_item("mem_gb_per_gpu", d.mem_gb_per_gpu)?;
            demand.set_item("samples_per_s_per_gpu", d.samples_per_s_per_gpu)?;
            demand.set_item("best_samples_per_s_per_gpu", d.best_samples_per_s_per_gpu)?;
            demand.set_item(
                "proportional_samples_per_s_per_gpu",
                d.proportional_samples_per_s_per_gpu,
            )?;
            demand.set_item("speedup_over_proportional", d.speedup_over_proportional)?;
            demand.set_item("eps", d.eps)?;
            demand.set_item("alike", d.alike.clone())?;
            Ok((p.path.display().to_string(), header, demand))
        })
        .collect()
}

/// Runs `profiler export` with `argv`; returns (files written, notes). Output to stdout is
/// returned as the third item instead.
#[pyfunction]
fn export_matrices(
    py: Python<'_>,
    argv: Vec<String>,
) -> PyResult<(Vec<String>, Vec<String>, String)> {
    let opts = parse_args::<ExportArgs>("export", argv)?.into_options();
    py.detach(|| {
        let mut stdout = Vec::new();
        let report = export::export(&opts, &mut stdout).map_err(error)?;
        Ok((
            report
                .written
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            report.notes,
            String::from_utf8_lossy(&stdout).into_owned(),
        ))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cells_table, m)?)?;
    m.add_function(wrap_pyfunction!(matrix_summaries, m)?)?;
    m.add_function(wrap_pyfunction!(export_matrices, m)?)?;
    Ok(())
}
