//! How a job placed for one round progresses: exactly (finishing the instant its work runs
//! out) or as Synergy's simulator counts it (whole iterations, finishing at the round's end),
//! or as a [`RoundWork`](super::RoundWork) makes it (a deploy's real jobs); and what the engine books for it.

use super::super::cluster::Cluster;
use super::super::error::ReplayError;
use super::super::job::JobState;
use super::super::profile::{Semantics, StartCost};
use super::{Alloc, Replay, Round, Slot};

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
        let round = self.n_rounds as u32;
        let cluster = self.cfg.cluster;
        let Some(work) = self.work.as_deref_mut() else {
            let synergy = self.cfg.semantics == Semantics::Synergy;
            let (profiles, start_costs) = (self.cfg.profiles, self.start_costs);
            let run = |a: &Alloc, j: &mut JobState, slot: &mut Slot| {
                if synergy {
                    return synergy_progress(j, a.rate, t, r);
                }
                let starting = if start_costs {
                    starting(a, profiles.get(j.profile as usize).start, slot, r)
                } else {
                    0.0
                };
                starting + exact_progress(j, a.rate, t + starting, r - starting)
            };
            let (allocs, slots, active) = (&self.allocs, &mut self.slots, &mut self.active);
            return Ok(book_round(allocs, slots, active, cluster, round, t, run));
        };
        let mut ran = std::mem::take(&mut self.ran);
        ran.clear();
        let placed = Round {
            t,
            round_s: r,
            allocs: &self.allocs,
            placements: &self.placements,
        };
        work.run_round(&placed, &mut self.active, &mut ran)?;
        if ran.len() != self.allocs.len() {
            return Err(ReplayError::Internal(format!(
                "round at t={t} s: {} jobs placed, progress for {}",
                self.allocs.len(),
                ran.len()
            )));
        }
        let mut next = ran.iter().copied();
        let run = |_: &Alloc, _: &mut JobState, _: &mut Slot| next.next().unwrap_or(0.0);
        let (allocs, slots, active) = (&self.allocs, &mut self.slots, &mut self.active);
        let finished = book_round(allocs, slots, active, cluster, round, t, run);
        self.ran = ran;
        Ok(finished)
    }
}

/// Seconds a job spends starting this round: its start-up where it starts for the first time,
/// or again because its whole CPUs changed and it sizes itself (`cost`); `slot` keeps the CPUs
/// it was started on.
fn starting(a: &Alloc, cost: StartCost, slot: &mut Slot, round_s: f64) -> f64 {
    let cpus = (a.cpus.max(0.0).ceil() as u32).max(1);
    let starts = slot.started_on == 0 || (cost.restarts_to_resize && slot.started_on != cpus);
    if slot.started_on == 0 || cost.restarts_to_resize {
        slot.started_on = cpus;
    }
    if starts {
        cost.startup_s.min(round_s)
    } else {
        0.0
    }
}

/// Runs each allocation's job for the round at `t` (`run` returns the seconds it ran) and books
/// it: rounds run, first start, GPU and dominant-share seconds. Returns the slots of the jobs
/// that are over. One loop over borrowed parts, generic in `run`, so that the replay's own
/// progress compiles to the tight loop it was before a round's work could come from elsewhere.
#[inline(always)]
fn book_round(
    allocs: &[Alloc],
    slots: &mut [Slot],
    active: &mut [JobState],
    cl: &Cluster,
    round: u32,
    t: f64,
    mut run: impl FnMut(&Alloc, &mut JobState, &mut Slot) -> f64,
) -> Vec<usize> {
    let (total_gpus, total_cpus, total_mem_gb) =
        (cl.total_gpus as f64, cl.total_cpus, cl.total_mem_gb);
    let mut finished = Vec::new();
    for a in allocs {
        let slot = &mut slots[a.slot];
        slot.ran_round = round;
        let j = &mut active[a.slot];
        j.rounds_run += 1;
        j.first_start.get_or_insert(t);
        let ran = run(a, j, slot);
        let dom = (a.gpus as f64 / total_gpus)
            .max(a.cpus / total_cpus)
            .max(a.mem_gb / total_mem_gb);
        j.attained_gpu_s += a.gpus as f64 * ran;
        j.attained_dominant_s += dom * ran;
        if j.finish.is_some() || j.failed {
            finished.push(a.slot);
        }
    }
    finished
}
