//! The rules a replay's rounds follow besides the policy's order and the mechanism's placement:
//! how a placed job progresses, which jobs the mechanism is offered, what a job carries from
//! round to round, and the demand it asks for. [`Semantics`] picks them; the engine calls them
//! through [`RoundRules`] and knows none of them.

mod exact;
mod synergy;

use super::cluster::{Cluster, Server};
use super::job::JobState;
use super::mechanism::Mechanism;
use super::policy::Policy;
use super::profile::{Profile, Semantics};

pub use synergy::STARVATION_S;

/// A job's best-case demand in all (cores, GB) and its speed-up there over the proportional
/// share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Demand {
    pub cpus: f64,
    pub mem_gb: f64,
    pub speedup: f64,
}

/// The rules of one [`Semantics`].
pub trait RoundRules: Sync {
    /// The demand a job of `gpus` GPUs asks for, given its profile's `best` case.
    fn demand(&self, profile: &Profile, best: Demand, gpus: u32, cluster: &Cluster) -> Demand;

    /// Whether starting a job costs the start-up its profile states (exact time only).
    fn start_costs(&self) -> bool;

    /// Whether the policy's order puts starved jobs first ([`JobState::starvation_priority`]).
    fn prioritizes(&self, policy: &dyn Policy) -> bool;

    /// Whether the mechanism sees only the jobs [`RoundRules::select`] keeps.
    fn selects(&self, policy: &dyn Policy) -> bool;

    /// Narrows the round's order (slots into `jobs`) to the jobs the mechanism is offered.
    fn select(
        &self,
        order: &mut Vec<usize>,
        jobs: &[JobState],
        total_gpus: u32,
        mech: &dyn Mechanism,
    );

    /// After the round's order is made, at `t`: marks the jobs that starved.
    fn after_order(&self, t: f64, jobs: &mut [JobState]);

    /// Whether a job's place in the order may move when it starts or stops running.
    fn runners_move(&self) -> bool;

    /// A job that ran last round and was not placed in this one.
    fn stopped(&self, job: &mut JobState);

    /// Whether the policies' remaining-time keys leave out the speed-up under `mech` (Synergy's
    /// `+fair` mode, which its proportional mechanism runs in), under every semantics.
    fn keys_ignore_speedups(&self, mech: &dyn Mechanism) -> bool {
        mech.synergy_fair()
    }

    /// The job runs the round `[t, t + round_s)` at `rate`; returns the seconds it held its
    /// allocation, setting its remaining work and its finish when it ends.
    fn progress(&self, job: &mut JobState, rate: f64, t: f64, round_s: f64) -> f64;
}

/// The rules `semantics` names.
pub fn rules(semantics: Semantics) -> &'static dyn RoundRules {
    match semantics {
        Semantics::Exact => &exact::Exact,
        Semantics::Synergy => &synergy::Synergy,
    }
}

/// The server shape a demand is bound to: the cluster's first (its reference kind).
fn reference_server(cluster: &Cluster) -> &Server {
    &cluster.servers[0]
}
