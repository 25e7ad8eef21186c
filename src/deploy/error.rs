//! Errors of a deploy. Each names the job, the file or the cgroup it is about.

use crate::harness::cgroup::CapsError;
use crate::replay::ReplayError;
use crate::spec::SpecError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Caps(#[from] CapsError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A job of the trace whose model no job spec in the jobs directory runs.
    #[error(
        "no job spec in {dir} runs model {model:?} (job {job_id}); the specs there run: {known}"
    )]
    NoSpec {
        dir: PathBuf,
        model: String,
        job_id: u64,
        known: String,
    },
    /// Starting, re-capping or suspending one job failed.
    #[error("job {job_id} ({model}): {message}")]
    Job {
        job_id: u64,
        model: String,
        message: String,
    },
    /// The cluster does not fit on the machine that is to run it.
    #[error("the cluster does not fit this machine: {0}")]
    Machine(String),
    #[error("options: {0}")]
    Options(String),
    /// Matrices measured on another kind of machine than the one the deploy runs on.
    #[error(
        "the matrices were measured on another kind of machine than this one:\n{matrices}\n\
         this machine: {here}\n\
         their rates need not hold here: `profiler deploy --profile` sweeps the jobs here first \
         (or --allow-other-machine goes on with these, and the spot check says how far off \
         they are)"
    )]
    OtherMachine { matrices: String, here: String },
    /// The spot check measured a job kind outside its matrix's interval.
    #[error(
        "the spot check measured {} job kind(s) outside their matrices' intervals:\n{report}\n\
         bring the matrices up to date with:\n{commands}\n\
         (or --no-spot-check to deploy with them as they are)", .report.lines().count()
    )]
    SpotCheck { report: String, commands: String },
    /// A sweep `--profile` ran for a job spec failed.
    #[error("profiling {spec} for the deploy: {source}")]
    Profile {
        spec: PathBuf,
        source: Box<crate::harness::sweep::SweepError>,
    },
    /// Predicting again a matrix the deploy measured some predicted cells of.
    #[error("feeding the deploy's rates back into {path}: {source}")]
    Feedback {
        path: PathBuf,
        source: Box<crate::predict::PredictError>,
    },
    /// A journal whose rounds this deploy does not decide as it did.
    #[error("{path}: {message}")]
    JournalMismatch { path: PathBuf, message: String },
    /// A journal `--resume` cannot go on from.
    #[error("{path}:{line}: {message}")]
    Journal {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// Ctrl-C or SIGTERM: the jobs were stopped and the tables of those that finished written.
    #[error(
        "interrupted at t={t:.0} s: {finished} job(s) finished, their rows are in {out}; \
         --resume goes on from the last round finished"
    )]
    Interrupted {
        t: f64,
        finished: usize,
        out: String,
    },
    /// Ctrl-C or SIGTERM during a co-location measurement: its jobs were stopped.
    #[error("interrupted: the jobs were stopped; the windows measured so far are in {csv}")]
    ColocationInterrupted { csv: String },
}

impl DeployError {
    /// Whether it was a Ctrl-C or SIGTERM.
    pub fn interrupted(&self) -> bool {
        matches!(
            self,
            DeployError::Interrupted { .. } | DeployError::ColocationInterrupted { .. }
        )
    }

    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> DeployError + '_ {
        move |source| DeployError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// What a round's work failed with, carried through the replay engine and back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RoundFailure {
    #[error(transparent)]
    Deploy(#[from] DeployError),
    /// Ctrl-C or SIGTERM between two polls.
    #[error("interrupted")]
    Interrupted,
}

impl RoundFailure {
    /// For the engine, which hands it back unchanged in [`ReplayError::RoundWork`].
    pub(crate) fn into_replay(self, t: f64) -> ReplayError {
        ReplayError::RoundWork {
            t,
            source: Box::new(self),
        }
    }
}
