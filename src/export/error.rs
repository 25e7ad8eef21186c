//! Errors of `profiler export`. Each names the matrix file or output path it is about.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading a matrix failed (its message names the file and line).
    #[error("{0}")]
    Load(crate::matrix::MatrixError),
    #[error("{path}: {error}")]
    Surface {
        path: PathBuf,
        error: crate::matrix::SurfaceError,
    },
    #[error(
        "{path}: no cell with a positive throughput (every cell failed, is infeasible or \
         measured 0 samples/s); nothing to export"
    )]
    NoPositiveCell { path: PathBuf },
    /// The format needs something the matrix does not record.
    #[error("{path}: {message}")]
    Unsupported { path: PathBuf, message: String },
    // The underlying error is part of the message, not a `source`, so `{:#}` does not print
    // it twice.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Building or writing a table (CSV, Parquet) failed.
    #[error("{path}: {message}")]
    Table { path: PathBuf, message: String },
    /// Two matrices would write the same output file or key.
    #[error("{first} and {second} both export as {name:?}; export them separately")]
    Duplicate {
        name: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("--cell {given:?}: {message}")]
    Cell { given: String, message: String },
    /// Options that do not fit together (or with the format).
    #[error("{0}")]
    Options(String),
    /// A number that would have gone into a file is NaN or infinite: a bug, never written.
    #[error("internal error (bug): {what} of {path} is not a finite number ({value})")]
    NonFinite {
        path: PathBuf,
        what: String,
        value: f64,
    },
}

impl From<crate::matrix::MatrixError> for ExportError {
    fn from(e: crate::matrix::MatrixError) -> Self {
        ExportError::Load(e)
    }
}

impl ExportError {
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
        move |error| ExportError::Io {
            path: path.to_owned(),
            error,
        }
    }

    pub fn unsupported(path: &std::path::Path, message: impl Into<String>) -> Self {
        ExportError::Unsupported {
            path: path.to_owned(),
            message: message.into(),
        }
    }
}
