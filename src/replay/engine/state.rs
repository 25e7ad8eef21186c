//! What a [`Replay`](super::Replay) keeps besides its jobs, by what owns it: where jobs come
//! from and go, the round's reused memory, the clock, the running totals, and the rules.

use super::super::job::JobSpec;
use super::super::mechanism::Placement;
use super::super::policy::Policy;
use super::super::profile::ProfileSet;
use super::super::semantics::RoundRules;
use super::super::workload::canonical::Recorder;
use super::{Alloc, RoundWork, SinkFn, check};

/// Where jobs come from, where finished ones go, and what makes a round's progress.
pub(super) struct Streams<'c> {
    pub arrivals: std::iter::Peekable<&'c mut dyn Iterator<Item = JobSpec>>,
    pub recorder: Option<&'c mut Recorder>,
    pub sink: Option<&'c mut SinkFn<'c>>,
    /// Where rounds make progress; `None`: at the matrices' rates (the replay).
    pub work: Option<&'c mut dyn RoundWork>,
}

/// Memory each round reuses.
#[derive(Default)]
pub(super) struct RoundBuffers {
    /// Seconds each allocation of the round ran.
    pub ran: Vec<f64>,
    /// Memory the placement check reuses.
    pub scratch: check::Scratch,
    /// The order after the rules' per-round selection, when they make one.
    pub selected: Vec<usize>,
    pub placements: Vec<Placement>,
    pub allocs: Vec<Alloc>,
    /// Slots that ran in the last round (kept only where the runners may move in the order).
    pub running: Vec<usize>,
}

/// The replay's time.
pub(super) struct Clock {
    /// Start of the next round.
    pub t: f64,
    /// Time of the first round; rounds keep its phase.
    pub t0: f64,
    pub n_rounds: u64,
    /// Rounds in a row in which nothing progressed, with no arrival to come.
    pub idle_rounds: u32,
    pub ended: bool,
}

/// Running totals over the replay.
pub(super) struct Tally {
    /// Fraction of (GPU, CPU, memory) left unallocated in the last round.
    pub free_frac: [f64; 3],
    pub last_arrival: f64,
    /// Jobs of the window that finished.
    pub window_done: u64,
    pub lp_failures: u64,
    pub n_finished: u64,
    /// Every active job's contention, summed over rounds (each job's share settled as it
    /// leaves).
    pub contention_sum: f64,
    /// GPUs the active jobs ask for.
    pub active_gpus: u64,
}

/// The semantics' rules and what they decide once for the whole replay.
pub(super) struct Rules {
    pub of: &'static dyn RoundRules,
    /// Starved jobs sort first (the rules and the policy say so).
    pub prioritized: bool,
    /// The mechanism sees only the jobs the rules select.
    pub selects: bool,
    /// Starting a job costs time: some profile has a start-up and the rules count it.
    pub start_costs: bool,
}

impl Clock {
    pub fn starting_at(t0: f64) -> Clock {
        Clock {
            t: t0,
            t0,
            n_rounds: 0,
            idle_rounds: 0,
            ended: false,
        }
    }
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            free_frac: [1.0; 3],
            last_arrival: f64::NEG_INFINITY,
            window_done: 0,
            lp_failures: 0,
            n_finished: 0,
            contention_sum: 0.0,
            active_gpus: 0,
        }
    }
}

impl Rules {
    pub fn new(of: &'static dyn RoundRules, policy: &dyn Policy, profiles: &ProfileSet) -> Rules {
        Rules {
            of,
            prioritized: of.prioritizes(policy),
            selects: of.selects(policy),
            start_costs: of.start_costs() && profiles.any_start_cost(),
        }
    }
}
