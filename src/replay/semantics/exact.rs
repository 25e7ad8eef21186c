//! Exact time: a job finishes the instant its work runs out, and asks for its best case.

use super::{Demand, RoundRules};
use crate::replay::cluster::Cluster;
use crate::replay::job::JobState;
use crate::replay::mechanism::Mechanism;
use crate::replay::policy::Policy;
use crate::replay::profile::Profile;

pub struct Exact;

impl RoundRules for Exact {
    /// The best case; a job wider than a server asks for at most its proportional share.
    fn demand(&self, _: &Profile, best: Demand, gpus: u32, cluster: &Cluster) -> Demand {
        if gpus <= cluster.max_server_gpus {
            return best;
        }
        let (c, m) = cluster.reference_share();
        let g = gpus as f64;
        Demand {
            cpus: best.cpus.min(c * g),
            mem_gb: best.mem_gb.min(m * g),
            speedup: best.speedup,
        }
    }

    fn start_costs(&self) -> bool {
        true
    }

    fn prioritizes(&self, _: &dyn Policy) -> bool {
        false
    }

    fn selects(&self, _: &dyn Policy) -> bool {
        false
    }

    fn select(&self, _: &mut Vec<usize>, _: &[JobState], _: u32, _: &dyn Mechanism) {}

    fn after_order(&self, _: f64, _: &mut [JobState]) {}

    fn runners_move(&self) -> bool {
        false
    }

    fn stopped(&self, _: &mut JobState) {}

    fn progress(&self, j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
        let needed = if rate > 0.0 {
            j.remaining / rate
        } else {
            f64::INFINITY
        };
        if needed <= r * (1.0 + 1e-12) {
            j.remaining = 0.0;
            j.finish = Some(t + needed.min(r));
            needed.min(r)
        } else {
            j.remaining -= rate * r;
            r
        }
    }
}
