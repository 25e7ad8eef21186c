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
        let r = self.cfg.round_s;
        let synergy = self.cfg.semantics == Semantics::Synergy;
        let mut finished = Vec::new();
        let Some(work) = self.work.as_deref_mut() else {
            for i in 0..self.allocs.len() {
                let a = self.allocs[i];
                let starting = if self.start_costs {
                    self.starting(i)
                } else {
                    0.0
                };
                let j = &mut self.active[a.slot];
                let ran = if synergy {
                    synergy_progress(j, a.rate, t, r)
                } else {
                    starting + exact_progress(j, a.rate, t + starting, r - starting)
                };
                self.book(i, t, ran, &mut finished);
            }
            return Ok(finished);
        };
        let mut ran = std::mem::take(&mut self.ran);
        ran.clear();
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
        for (i, &ran_s) in ran.iter().enumerate() {
            self.book(i, t, ran_s, &mut finished);
        }
        self.ran = ran;
        Ok(finished)
    }

    /// Seconds allocation `i`'s job spends starting this round: its start-up where it starts
    /// for the first time, or again because its whole CPUs changed and it sizes itself.
    fn starting(&mut self, i: usize) -> f64 {
        let a = self.allocs[i];
        let cost = self
            .cfg
            .profiles
            .get(self.active[a.slot].profile as usize)
            .start;
        let cpus = (a.cpus.max(0.0).ceil() as u32).max(1);
        let slot = &mut self.slots[a.slot];
        let starts = slot.started_on == 0 || (cost.restarts_to_resize && slot.started_on != cpus);
        if slot.started_on == 0 || cost.restarts_to_resize {
            slot.started_on = cpus;
        }
        if starts {
            cost.startup_s.min(self.cfg.round_s)
        } else {
            0.0
        }
    }

    /// Books allocation `i`'s round for its job, which ran `ran` seconds from `t`: rounds run,
    /// first start, GPU and dominant-share seconds; its slot joins `finished` if it is over.
    #[inline]
    fn book(&mut self, i: usize, t: f64, ran: f64, finished: &mut Vec<usize>) {
        let cl = self.cfg.cluster;
        let a = self.allocs[i];
        self.slots[a.slot].ran_round = self.n_rounds as u32;
        let j = &mut self.active[a.slot];
        j.rounds_run += 1;
        j.first_start.get_or_insert(t);
        let dom = (a.gpus as f64 / cl.total_gpus as f64)
            .max(a.cpus / cl.total_cpus)
            .max(a.mem_gb / cl.total_mem_gb);
        j.attained_gpu_s += a.gpus as f64 * ran;
        j.attained_dominant_s += dom * ran;
        if j.finish.is_some() || j.failed {
            finished.push(a.slot);
        }
    }
}
