//! What the user sees while work runs: progress bars and warnings.

pub mod progress;
pub mod replay_progress;
