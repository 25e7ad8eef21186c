//! Errors of scenario grids: the replay's own (grid files name file and line), plus what can go
//! wrong running a grid as a Slurm job array or merging its parts.

use super::super::error::ReplayError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GridError {
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A scenario's replay failed; names the scenario.
    #[error("scenario {index} ({id}): {source}")]
    Scenario {
        index: usize,
        id: String,
        source: ReplayError,
    },
    /// A part file written by one array task is missing or does not hold its scenarios.
    #[error("{path}: {message}")]
    Part { path: PathBuf, message: String },
    /// Submitting, waiting for or cancelling the Slurm jobs failed.
    #[error("slurm: {0}")]
    Slurm(String),
    /// Ctrl-C (or SIGTERM) while waiting for the Slurm jobs; they were cancelled.
    #[error("interrupted: cancelled Slurm jobs {0}")]
    Interrupted(String),
}
