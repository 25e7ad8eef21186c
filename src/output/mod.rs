//! What the user sees while work runs: progress bars and warnings.

pub mod deploy_progress;
pub mod grid_progress;
pub mod progress;
pub mod replay_progress;
