//! A deploy's rounds: the replay engine decides each round, and [`DeployWork`] makes its
//! progress on real jobs. It suspends the jobs the round leaves out, starts or re-caps the
//! ones it places, lets them run until the round ends, and reads from their own output how far
//! they got. A job whose output reaches its work is stopped at once and finishes at the
//! instant it got there; a job that exits first fails, with the reason.

use super::backend::{Backend, DeployJob, Exit, Grant, Regranted, Reported};
use super::clock::Clock;
use super::error::{DeployError, RoundFailure};
use super::grants::{ServerSlice, round_grants};
use super::journal::{JobOutcome, Journal, RoundRecord};
use crate::replay::ReplayError;
use crate::replay::engine::{JobState, Round, RoundWork};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

/// How often the jobs' output is read within a round, seconds.
pub const POLL_S: f64 = 0.5;

/// What the screen shows after every round.
pub trait DeployObserver {
    /// The round at `t` ended: of the `active` jobs (arrived, not over), those `placed` in
    /// it and those `suspended` (started before, not placed); jobs `over` so far (finished or
    /// failed).
    fn round_done(&self, _t: f64, _active: usize, _placed: usize, _suspended: usize, _over: usize) {
    }
}

/// What the deploy knows of a job it started.
#[derive(Debug, Clone)]
struct Tracked {
    job: DeployJob,
    grant: Grant,
    suspended: bool,
    /// Whether the backend started it again for this round's grant.
    restarted: bool,
    /// Its last report.
    last: Option<Reported>,
    /// The instant its work ran out, or why it cannot go on and when that was seen.
    finish: Option<f64>,
    failure: Option<(f64, String)>,
}

impl Tracked {
    fn over(&self) -> bool {
        self.finish.is_some() || self.failure.is_some()
    }

    fn samples(&self) -> f64 {
        self.last.map_or(0.0, |r| r.samples)
    }

    /// How far it got in the round from `t0`, `round_s` long, with `work` samples in all: its
    /// finish, else its failure, ends the time it ran.
    fn outcome(&self, id: u64, work: f64, t0: f64, round_s: f64) -> JobOutcome {
        let failure = self.failure.as_ref().filter(|_| self.finish.is_none());
        let end = self.finish.or(failure.map(|(at, _)| *at));
        JobOutcome {
            id,
            remaining: match self.finish {
                Some(_) => 0.0,
                None => (work - self.samples()).max(0.0),
            },
            ran_s: end.map_or(round_s, |e| (e - t0).clamp(0.0, round_s)),
            finish: self.finish.map(|f| f.max(t0)),
            failure: failure.map(|(_, why)| why.clone()),
            cpus: Some(self.grant.cpus),
            mem_bytes: Some(self.grant.mem_bytes),
            restarted: self.restarted,
        }
    }
}

/// The instant cumulative samples reached `work`, between the reports `before` and `at`
/// (linear in between; at `at` when there is nothing before).
pub fn crossing(before: Option<Reported>, at: Reported, work: f64) -> f64 {
    match before {
        Some(b) if at.samples > b.samples && at.t > b.t && b.samples < work => {
            b.t + (work - b.samples) / (at.samples - b.samples) * (at.t - b.t)
        }
        _ => at.t,
    }
}

/// Makes a deploy's rounds on `backend`.
pub struct DeployWork<'a> {
    backend: &'a mut dyn Backend,
    clock: &'a mut dyn Clock,
    cancel: &'a AtomicBool,
    observer: &'a dyn DeployObserver,
    slices: Vec<ServerSlice>,
    /// The job each trace model runs as, by model.
    catalog: &'a dyn Fn(&JobState) -> Result<DeployJob, DeployError>,
    tracked: HashMap<u64, Tracked>,
    reports: Vec<Reported>,
    finished: usize,
    /// Why each failed job failed, by id (for the jobs table).
    failures: HashMap<u64, String>,
    /// Where finished rounds go, and the rounds a resume goes over first.
    journal: Option<Journal>,
}

impl<'a> DeployWork<'a> {
    pub fn new(
        backend: &'a mut dyn Backend,
        clock: &'a mut dyn Clock,
        cancel: &'a AtomicBool,
        observer: &'a dyn DeployObserver,
        slices: Vec<ServerSlice>,
        catalog: &'a dyn Fn(&JobState) -> Result<DeployJob, DeployError>,
    ) -> Self {
        DeployWork {
            backend,
            clock,
            cancel,
            observer,
            slices,
            catalog,
            tracked: HashMap::new(),
            reports: Vec::new(),
            finished: 0,
            failures: HashMap::new(),
            journal: None,
        }
    }

    /// Keeps a journal of the rounds; its pending rounds (a resume) are gone over first, each
    /// job's progress taken from it.
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// The deploy's time now.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Why each job that failed did, by id.
    pub fn failures(&self) -> &HashMap<u64, String> {
        &self.failures
    }

    /// Stops every job still running or suspended (the deploy ends, or was interrupted).
    pub fn stop_all(&mut self) {
        for t in self.tracked.values_mut() {
            if !t.over() {
                self.backend.stop(&t.job);
                t.failure = Some((self.clock.now(), "the deploy ended before it".into()));
            }
        }
    }

    /// Suspends the started jobs the round does not place, then starts or re-grants those it
    /// does.
    fn apply(&mut self, round: &Round, jobs: &[JobState]) -> Result<(), DeployError> {
        let previous: HashMap<u64, Grant> = self
            .tracked
            .iter()
            .map(|(&id, t)| (id, t.grant.clone()))
            .collect();
        let grants = round_grants(round.placements, jobs, &self.slices, &previous);
        for t in self.tracked.values_mut() {
            if !t.over() && !t.suspended && !grants.contains_key(&t.job.id) {
                self.backend.suspend(&t.job)?;
                t.suspended = true;
            }
        }
        for a in round.allocs {
            let state = &jobs[a.slot];
            let grant = grants[&state.spec.id].clone();
            match self.tracked.get_mut(&state.spec.id) {
                None => {
                    let job = (self.catalog)(state)?;
                    // Started for the first time, or again after a resumed deploy.
                    let done = match job.resumes() {
                        true => (state.spec.work_samples - state.remaining).max(0.0),
                        false => 0.0,
                    };
                    self.backend.start(&job, &grant, done)?;
                    self.tracked.insert(
                        job.id,
                        Tracked {
                            job,
                            grant,
                            suspended: false,
                            restarted: false,
                            last: None,
                            finish: None,
                            failure: None,
                        },
                    );
                }
                Some(t) => {
                    t.restarted = (t.suspended || t.grant != grant)
                        && self.backend.regrant(&t.job, &grant)? == Regranted::Restarted;
                    t.suspended = false;
                    t.grant = grant;
                }
            }
        }
        Ok(())
    }

    /// Reads the placed jobs' output: stops those whose work ran out, fails those that exited.
    fn poll(&mut self, ids: &[u64]) -> Result<(), DeployError> {
        for id in ids {
            let Some(t) = self.tracked.get_mut(id) else {
                continue;
            };
            if t.over() {
                continue;
            }
            self.reports.clear();
            let exit = self.backend.poll(&t.job, &mut self.reports)?;
            for &r in &self.reports {
                if t.finish.is_none() && r.samples >= t.job.work_samples {
                    t.finish = Some(crossing(t.last, r, t.job.work_samples));
                }
                t.last = Some(r);
            }
            if t.finish.is_some() {
                self.backend.stop(&t.job);
                self.finished += 1;
            } else if let Exit::Exited { success, why } = exit {
                let what = if success { "exited" } else { "failed" };
                let message = format!(
                    "{what} after {:.0} of its {:.0} samples: {why}",
                    t.samples(),
                    t.job.work_samples
                );
                t.failure = Some((self.clock.now(), message));
                self.backend.stop(&t.job);
                self.finished += 1;
            }
        }
        Ok(())
    }

    /// Hands the engine how far each placed job got in `record`'s round.
    fn account(
        &mut self,
        record: &RoundRecord,
        round: &Round,
        jobs: &mut [JobState],
        ran: &mut Vec<f64>,
    ) {
        for (a, o) in round.allocs.iter().zip(&record.jobs) {
            let j = &mut jobs[a.slot];
            j.remaining = o.remaining;
            ran.push(o.ran_s);
            if let Some(f) = o.finish {
                j.finish = Some(f);
            }
            if let Some(why) = &o.failure {
                j.failed = true;
                self.failures.insert(j.spec.id, why.clone());
            }
        }
    }

    /// Goes over a round of a resumed deploy's journal: the engine must have placed the jobs
    /// the journal's round ran, in that order.
    fn go_over(
        &mut self,
        record: RoundRecord,
        round: &Round,
        jobs: &mut [JobState],
        ran: &mut Vec<f64>,
    ) -> Result<(), DeployError> {
        let placed: Vec<u64> = round.allocs.iter().map(|a| jobs[a.slot].spec.id).collect();
        let ran_then: Vec<u64> = record.jobs.iter().map(|o| o.id).collect();
        if (record.t - round.t).abs() > 1e-6 * round.t.abs().max(1.0) || placed != ran_then {
            let message = format!(
                "its round at t={} s ran jobs {ran_then:?}; this deploy places {placed:?} at \
                 t={} s",
                record.t, round.t
            );
            return Err(self.journal.as_ref().map_or_else(
                || DeployError::Options(message.clone()),
                |j| j.mismatch(message.clone()),
            ));
        }
        self.account(&record, round, jobs, ran);
        self.finished += record
            .jobs
            .iter()
            .filter(|o| o.finish.is_some() || o.failure.is_some())
            .count();
        Ok(())
    }

    fn run(
        &mut self,
        round: &Round,
        jobs: &mut [JobState],
        ran: &mut Vec<f64>,
    ) -> Result<(), RoundFailure> {
        if let Some(record) = self.journal.as_mut().and_then(|j| j.pending.pop_front()) {
            return Ok(self.go_over(record, round, jobs, ran)?);
        }
        let (t0, end) = (round.t, round.t + round.round_s);
        if !self.clock.sleep_until(t0, self.cancel) {
            return Err(RoundFailure::Interrupted);
        }
        self.apply(round, jobs)?;
        let ids: Vec<u64> = round.allocs.iter().map(|a| jobs[a.slot].spec.id).collect();
        loop {
            self.poll(&ids)?;
            let now = self.clock.now();
            // Once every placed job is over, the round's resources idle until it ends (leases
            // are per round), and the next round waits for its start.
            if now >= end || ids.iter().all(|id| self.tracked[id].over()) {
                break;
            }
            if !self.clock.sleep_until((now + POLL_S).min(end), self.cancel) {
                return Err(RoundFailure::Interrupted);
            }
        }
        let outcomes = (round.allocs.iter())
            .map(|a| {
                let spec = &jobs[a.slot].spec;
                self.tracked[&spec.id].outcome(spec.id, spec.work_samples, t0, round.round_s)
            })
            .collect();
        let record = RoundRecord {
            t: t0,
            round_s: round.round_s,
            jobs: outcomes,
        };
        self.account(&record, round, jobs, ran);
        if let Some(journal) = &mut self.journal {
            journal.append(&record)?;
        }
        let suspended = self
            .tracked
            .values()
            .filter(|t| t.suspended && !t.over())
            .count();
        self.observer
            .round_done(t0, jobs.len(), round.allocs.len(), suspended, self.finished);
        Ok(())
    }
}

impl RoundWork for DeployWork<'_> {
    fn run_round(
        &mut self,
        round: &Round,
        jobs: &mut [JobState],
        ran: &mut Vec<f64>,
    ) -> Result<(), ReplayError> {
        self.run(round, jobs, ran)
            .map_err(|e| e.into_replay(round.t))
    }
}
