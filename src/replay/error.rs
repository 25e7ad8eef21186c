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
        "job {job_id} asks for {gpus} GPUs but the cluster has {max_gpus} in all \
         (use a larger cluster)"
    )]
    JobTooWide {
        job_id: u64,
        gpus: u32,
        max_gpus: u32,
    },
    /// A trace job wider than the whole cluster, named by its row.
    #[error(
        "{path}:{line}: job {job_id} asks for {gpus} GPUs but the cluster has {max_gpus} in all \
         (use a larger cluster, or --wide-jobs skip)"
    )]
    WideJob {
        path: PathBuf,
        line: usize,
        job_id: u64,
        gpus: u32,
        max_gpus: u32,
    },
    #[error("{path}:{line}: job id {job_id} appears twice (first at line {first_line})")]
    DuplicateJob {
        path: PathBuf,
        line: usize,
        first_line: usize,
        job_id: u64,
    },
    /// Jobs still unfinished when simulated time reached the horizon.
    #[error(
        "{count} job(s) could not finish within the horizon of {horizon_s} s simulated \
         ({days:.1} days): {listed}{more}; raise --horizon if the workload really runs this long, \
         or check these jobs' work",
        days = horizon_s / 86400.0,
        listed = jobs.iter().map(|j| j.to_string()).collect::<Vec<_>>().join(", "),
        more = if *count > jobs.len() { ", ..." } else { "" }
    )]
    Horizon {
        horizon_s: f64,
        /// Jobs active at the horizon (not counting arrivals after it).
        count: usize,
        /// The first few of them.
        jobs: Vec<UnfinishedJob>,
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
    /// A mechanism's placements break the cluster (a GPU booked twice, a server over its
    /// CPUs or memory, a job on the wrong number of GPUs).
    #[error("{by} placed jobs wrongly in the round at t={t} s: {message}")]
    Placement {
        /// `mechanism NAME` or `elastic policy NAME`.
        by: String,
        t: f64,
        message: String,
    },
    /// A policy or mechanism written outside the crate (a Python plug-in) failed.
    #[error("{name} failed in the round at t={t} s: {message}")]
    Plugin {
        /// `policy NAME` or `mechanism NAME`.
        name: String,
        t: f64,
        message: String,
    },
    /// The rounds' progress could not be made (a deploy's jobs could not be run).
    #[error("round at t={t} s: {source}")]
    RoundWork {
        t: f64,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An invariant of the engine broke; this is a bug.
    #[error("internal error (bug): {0}")]
    Internal(String),
}

/// A job that did not finish, and the trace row it came from (where it came from a trace).
#[derive(Debug, Clone, PartialEq)]
pub struct UnfinishedJob {
    pub job_id: u64,
    pub remaining_samples: f64,
    pub origin: Option<(PathBuf, usize)>,
}

impl std::fmt::Display for UnfinishedJob {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "job {} ({:.3e} samples left",
            self.job_id, self.remaining_samples
        )?;
        if let Some((path, line)) = &self.origin {
            write!(f, ", {}:{line}", path.display())?;
        }
        f.write_str(")")
    }
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
