//! Synergy's simulator's rules: progress in whole iterations credited at the start of a round
//! and a finish at the round's end, a starvation priority, the speed-up a job carries between
//! rounds, the per-round selection of its LAS, and the demand bound to one server's shape.

use super::{Demand, RoundRules, reference_server};
use crate::replay::cluster::{Cluster, Server};
use crate::replay::job::JobState;
use crate::replay::mechanism::Mechanism;
use crate::replay::policy::Policy;
use crate::replay::profile::Profile;

/// Starvation guard of Synergy's schedulers: a job that has not run for this long sorts before
/// all others from then on (priority 1).
pub const STARVATION_S: f64 = 1000.0 * 3600.0;

pub struct Synergy;

impl RoundRules for Synergy {
    /// The demand the profile declares (its best case where it declares none), bound to the
    /// reference server's shape.
    fn demand(&self, p: &Profile, best: Demand, gpus: u32, cluster: &Cluster) -> Demand {
        let g = gpus as f64;
        let (bc, bm) = p.declared_best.unwrap_or((p.best_cpu, p.best_mem));
        let declared = Demand {
            cpus: g * bc,
            mem_gb: g * bm,
            speedup: best.speedup,
        };
        capped(declared, gpus, reference_server(cluster))
    }

    fn start_costs(&self) -> bool {
        false
    }

    fn prioritizes(&self, policy: &dyn Policy) -> bool {
        policy.uses_priority()
    }

    fn selects(&self, policy: &dyn Policy) -> bool {
        policy.synergy_selected_only()
    }

    /// `jobs_this_round`: the jobs, in order, whose GPUs still fit the cluster's count; under
    /// Tune, largest GPU demand first.
    fn select(
        &self,
        order: &mut Vec<usize>,
        jobs: &[JobState],
        total_gpus: u32,
        mech: &dyn Mechanism,
    ) {
        let mut free = total_gpus;
        order.retain(|&i| {
            let g = jobs[i].spec.gpus;
            let take = g <= free;
            if take {
                free -= g;
            }
            take
        });
        if mech.synergy_tune() {
            order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].spec.gpus));
        }
    }

    /// After the sort, as Synergy's schedulers do: the bump counts from the next round.
    fn after_order(&self, t: f64, jobs: &mut [JobState]) {
        for j in jobs {
            let since = t - j.synergy.last_run_end.unwrap_or(j.spec.arrival_s);
            if since > STARVATION_S {
                j.synergy.priority = 1;
            }
        }
    }

    fn runners_move(&self) -> bool {
        true
    }

    /// A job that did not run carries its best-case speed-up again.
    fn stopped(&self, j: &mut JobState) {
        j.synergy.speedup = j.synergy.speedup_orig;
    }

    /// The job is credited `floor(round / (iteration time / speed-up))` whole iterations at the
    /// start of the round (speed-up = rate over the proportional rate) and, once they reach its
    /// total, finishes at the end of the round. It holds the whole round either way.
    fn progress(&self, j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
        let sc = &mut j.synergy;
        let speedup = if rate == j.prop_rate {
            1.0
        } else if rate == j.prop_rate * sc.speedup_orig {
            sc.speedup_orig
        } else {
            rate / j.prop_rate
        };
        sc.done_iters = (sc.done_iters + sc.iters_in_round(r, speedup)).min(sc.total_iters);
        sc.speedup = speedup;
        sc.last_run_end = Some(t + r);
        j.remaining = (sc.total_iters - sc.done_iters) as f64 * sc.samples_per_iter;
        if sc.done_iters >= sc.total_iters {
            j.finish = Some(t + r);
        }
        r
    }
}

/// Synergy's binding of a job's demand to a server shape (`add_synergy_profile`): a dimension
/// above one server is capped at the server, and the speed-up of a job capped in CPUs falls on
/// the straight line from 1 at the proportional share to the best case; a job wider than a
/// server asks for its proportional share in every capped dimension and runs at speed-up 1 (its
/// storage demand, a server's share per GPU, always exceeds a server).
fn capped(want: Demand, gpus: u32, server: &Server) -> Demand {
    let g = gpus as f64;
    let wide = gpus > server.gpus;
    let per_gpu = |whole: f64| g * (whole / server.gpus as f64);
    // A demand above the server's `whole`: the server, or the proportional share when wide.
    let cap =
        |asked: f64, whole: f64| (asked > whole).then(|| if wide { per_gpu(whole) } else { whole });
    let mut d = want;
    let mut interpolate = false;
    if let Some(c) = cap(d.cpus, server.cpus) {
        d.cpus = c;
        interpolate = !wide;
    }
    if let Some(m) = cap(d.mem_gb, server.mem_gb) {
        d.mem_gb = m;
        interpolate = !wide;
    }
    if wide {
        d.speedup = 1.0;
    } else if interpolate {
        let fair = per_gpu(server.cpus);
        let span = want.cpus - fair;
        if span != 0.0 {
            d.speedup = 1.0 + (want.speedup - 1.0) / span * (d.cpus - fair);
        }
    }
    d
}
