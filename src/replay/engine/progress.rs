//! How a job placed for one round progresses: by the semantics' rules at its rate (plus the
//! start-up its profile states, where the rules count it), or as a
//! [`RoundWork`](super::RoundWork) makes it (a deploy's real jobs); and what the engine books
//! for it.

use super::super::cluster::Cluster;
use super::super::error::ReplayError;
use super::super::job::JobState;
use super::super::profile::StartCost;
use super::{Alloc, Replay, Round, Slot};

impl Replay<'_, '_> {
    /// The placed jobs progress for the round at `t`, at their rates or by `work`; returns
    /// the slots of those that finished or failed.
    pub(super) fn progress(&mut self, t: f64) -> Result<Vec<usize>, ReplayError> {
        let r = self.cfg.round_s;
        let round = self.clock.n_rounds as u32;
        let cluster = self.cfg.cluster;
        let Some(work) = self.streams.work.as_deref_mut() else {
            let (profiles, start_costs, rules) =
                (self.cfg.profiles, self.rules.start_costs, self.rules.of);
            let run = |a: &Alloc, j: &mut JobState, slot: &mut Slot| {
                if !start_costs {
                    return rules.progress(j, a.rate, t, r);
                }
                let starting = starting(a, profiles.get(j.profile as usize).start, slot, r);
                starting + rules.progress(j, a.rate, t + starting, r - starting)
            };
            let (allocs, slots, active) = (&self.buffers.allocs, &mut self.slots, &mut self.active);
            return Ok(book_round(allocs, slots, active, cluster, round, t, run));
        };
        let mut ran = std::mem::take(&mut self.buffers.ran);
        ran.clear();
        let placed = Round {
            t,
            round_s: r,
            allocs: &self.buffers.allocs,
            placements: &self.buffers.placements,
        };
        work.run_round(&placed, &mut self.active, &mut ran)?;
        if ran.len() != self.buffers.allocs.len() {
            return Err(ReplayError::Internal(format!(
                "round at t={t} s: {} jobs placed, progress for {}",
                self.buffers.allocs.len(),
                ran.len()
            )));
        }
        let mut next = ran.iter().copied();
        let run = |_: &Alloc, _: &mut JobState, _: &mut Slot| next.next().unwrap_or(0.0);
        let (allocs, slots, active) = (&self.buffers.allocs, &mut self.slots, &mut self.active);
        let finished = book_round(allocs, slots, active, cluster, round, t, run);
        self.buffers.ran = ran;
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
