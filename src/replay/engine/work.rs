//! Where a round's progress is made. The replay advances each placed job by the rate its
//! allocation has in the job's matrix; a deploy runs the real jobs for the round and reads how
//! far they got. The engine decides, checks and accounts the same way for both.

use super::super::error::ReplayError;
use super::super::job::JobState;
use super::super::mechanism::Placement;
use super::Alloc;

/// The round a [`RoundWork`] runs.
#[derive(Debug, Clone, Copy)]
pub struct Round<'r> {
    /// Start of the round, seconds since the trace start.
    pub t: f64,
    pub round_s: f64,
    /// One allocation per placed job (`slot` indexes the active jobs), in placement order.
    pub allocs: &'r [Alloc],
    /// The parts the allocations sum: a job's share of each server it spans (`job` indexes the
    /// active jobs too).
    pub placements: &'r [Placement],
}

/// Makes a round's progress.
pub trait RoundWork {
    /// Runs `round`: for each allocation, in order, advances `jobs[alloc.slot]` (its
    /// `remaining`; `finish`, the instant its work ran out; or `failed`, when it cannot go on)
    /// and pushes the seconds it ran onto `ran`.
    fn run_round(
        &mut self,
        round: &Round,
        jobs: &mut [JobState],
        ran: &mut Vec<f64>,
    ) -> Result<(), ReplayError>;
}
