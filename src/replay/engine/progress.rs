//! How a job placed for one round progresses: exactly (finishing the instant its work runs
//! out) or as Synergy's simulator counts it (whole iterations, finishing at the round's end),
//! or as a [`RoundWork`](super::RoundWork) makes it (a deploy's real jobs); and what the engine books for it.

use super::super::error::ReplayError;
use super::super::job::JobState;
use super::super::profile::Semantics;
use super::{Replay, Round};

/// Exact semantics: the job runs at `rate` and finishes the instant its work runs out.
/// Returns the seconds it ran.
pub fn exact_progress(j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
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

/// Synergy's semantics: the job is credited `floor(round / (iteration time / speed-up))` whole
/// iterations at the start of the round (speed-up = rate over the proportional rate) and, once
/// they reach its total, finishes at the end of the round. It holds the whole round either way.
pub fn synergy_progress(j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
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

impl Replay<'_, '_> {
    /// The placed jobs progress for the round at `t`, at their rates or by `work`; returns
    /// the slots of those that finished or failed.
    pub(super) fn progress(&mut self, t: f64) -> Result<Vec<usize>, ReplayError> {
        let cl = self.cfg.cluster;
        let r = self.cfg.round_s;
        let synergy = self.cfg.semantics == Semantics::Synergy;
        let mut ran = std::mem::take(&mut self.ran);
        ran.clear();
        match self.work.as_deref_mut() {
            None => {
                for a in &self.allocs {
                    let j = &mut self.active[a.slot];
                    ran.push(if synergy {
                        synergy_progress(j, a.rate, t, r)
                    } else {
                        exact_progress(j, a.rate, t, r)
                    });
                }
            }
            Some(work) => {
                let round = Round {
                    t,
                    round_s: r,
                    allocs: &self.allocs,
                    placements: &self.placements,
                };
                work.run_round(&round, &mut self.active, &mut ran)?;
                if ran.len() != self.allocs.len() {
                    return Err(ReplayError::Internal(format!(
                        "round at t={t} s: {} jobs placed, progress for {}",
                        self.allocs.len(),
                        ran.len()
                    )));
                }
            }
        }
        let mut finished = Vec::new();
        for (a, &ran_s) in self.allocs.iter().zip(&ran) {
            self.slots[a.slot].ran_round = self.n_rounds;
            let j = &mut self.active[a.slot];
            j.rounds_run += 1;
            j.first_start.get_or_insert(t);
            let dom = (a.gpus as f64 / cl.total_gpus as f64)
                .max(a.cpus / cl.total_cpus)
                .max(a.mem_gb / cl.total_mem_gb);
            j.attained_gpu_s += a.gpus as f64 * ran_s;
            j.attained_dominant_s += dom * ran_s;
            if j.finish.is_some() || j.failure.is_some() {
                finished.push(a.slot);
            }
        }
        self.ran = ran;
        Ok(finished)
    }
}
