//! `jobprofiler._native`: the profiler library as a Python extension module. A thin skin: every
//! entry point parses the same command-line arguments as the CLI (the Python package turns
//! keyword arguments into them) and calls the same library steps; tables cross as Parquet bytes
//! that polars reads without copying row by row.

#![warn(clippy::too_many_lines)]

mod deadline;
mod deploy;
mod elastic;
mod matrices;
mod plugins;
mod replay;
mod views;

use polars::prelude::{DataFrame, ParquetWriter};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    ProfilerError,
    pyo3::exceptions::PyException,
    "An error of the profiler library: a bad option, an unreadable file, a replay that failed."
);

/// The library's error as a Python exception, its message whole.
pub(crate) fn error(e: impl std::fmt::Display) -> PyErr {
    ProfilerError::new_err(e.to_string())
}

/// Command-line arguments for `command` (the part after `profiler`), parsed by clap as the CLI
/// parses them; a parse error carries clap's own message (which option, what it expected).
pub(crate) fn parse_args<T: clap::Args>(command: &str, argv: Vec<String>) -> PyResult<T> {
    #[derive(clap::Parser)]
    struct Cli<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    let line = std::iter::once(command.to_string()).chain(argv);
    <Cli<T> as clap::Parser>::try_parse_from(line)
        .map(|c| c.args)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.render().to_string()))
}

/// A table as Parquet bytes (uncompressed: it is read back at once).
pub(crate) fn parquet(mut df: DataFrame) -> PyResult<Vec<u8>> {
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes)
        .with_compression(polars::prelude::ParquetCompression::Uncompressed)
        .finish(&mut df)
        .map_err(error)?;
    Ok(bytes)
}

/// Formats a Python exception with its traceback, as Python prints it.
pub(crate) fn traceback(py: Python<'_>, err: &PyErr) -> String {
    let formatted = py
        .import("traceback")
        .and_then(|m| {
            m.call_method1(
                "format_exception",
                (err.get_type(py), err.value(py), err.traceback(py)),
            )
        })
        .and_then(|lines| lines.extract::<Vec<String>>());
    match formatted {
        Ok(lines) => lines.concat().trim_end().to_string(),
        Err(_) => err.to_string(),
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ProfilerError", m.py().get_type::<ProfilerError>())?;
    matrices::register(m)?;
    replay::register(m)?;
    deploy::register(m)?;
    views::register(m)?;
    plugins::register(m)?;
    elastic::register(m)?;
    Ok(())
}
