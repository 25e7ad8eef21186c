//! Errors of the replay library. Every error about user input names the file and line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Writing an output table (CSV or Parquet) failed.
    #[error("{path}: {message}")]
    Table { path: PathBuf, message: String },
    /// A malformed row or field in a trace, cluster spec or profile.
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}: job {job_id}: unknown model {model:?}; known models: {known}")]
    UnknownModel {
        path: PathBuf,
        line: usize,
        job_id: u64,
        model: String,
        known: String,
    },
    #[error(
        "job {job_id} asks for {gpus} GPUs but the widest server has {max_gpus}; \
         a job runs on one server (use a cluster with wider servers)"
    )]
    JobTooWide {
        job_id: u64,
        gpus: u32,
        max_gpus: u32,
    },
    #[error("cluster spec: {0}")]
    Cluster(String),
    #[error("profiles: {0}")]
    Profile(String),
    #[error("options: {0}")]
    Options(String),
    #[error("plot: {0}")]
    Plot(#[from] crate::plot::PlotError),
    #[error("no progress: {0} (every waiting job gets no throughput; check profiles and cluster)")]
    NoProgress(String),
    /// An invariant of the engine broke; this is a bug.
    #[error("internal error (bug): {0}")]
    Internal(String),
}

impl ReplayError {
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ReplayError + '_ {
        move |source| ReplayError::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub fn parse(path: &std::path::Path, line: usize, message: impl Into<String>) -> Self {
        ReplayError::Parse {
            path: path.to_owned(),
            line,
            message: message.into(),
        }
    }
}
