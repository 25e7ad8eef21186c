//! A simulated backend and clock that drive the deploy's whole round loop without jobs or
//! time passing: each job runs at its matrix's rate for its grant, so a deploy on it must give
//! the replay's result, job for job.

use super::backend::{Backend, DeployJob, Exit, Grant, Regranted, Reported};
use super::catalog::restarts_to_resize;
use super::clock::Clock;
use super::error::DeployError;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A clock that jumps to where it is asked to sleep until.
#[derive(Clone, Default)]
pub struct JumpClock(pub Rc<Cell<f64>>);

impl Clock for JumpClock {
    fn now(&self) -> f64 {
        self.0.get()
    }

    fn sleep_until(&mut self, t: f64, cancel: &AtomicBool) -> bool {
        if cancel.load(Ordering::SeqCst) {
            return false;
        }
        self.0.set(self.0.get().max(t));
        true
    }
}

#[derive(Debug, Clone, Default)]
struct SimJob {
    samples: f64,
    rate: f64,
    since: f64,
    running: bool,
    /// When its current process is through its start-up, and the CPUs it started on.
    ready_at: f64,
    cpus: usize,
}

/// What the simulated backend was asked to do, for tests to check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calls {
    pub starts: usize,
    pub regrants: usize,
    pub suspends: usize,
    pub stops: usize,
}

/// Jobs that run at `rate(job, grant)` samples/s while placed, and not at all while suspended
/// or for their specs' `deploy.startup_s` after each start; one that sizes itself is started
/// again when its CPU count changes, as the local backend does.
pub struct SimBackend<'r> {
    clock: JumpClock,
    rate: &'r dyn Fn(&DeployJob, &Grant) -> f64,
    jobs: HashMap<u64, SimJob>,
    /// Jobs that exit with an error once they have done this many samples.
    pub fail_at: HashMap<u64, f64>,
    pub calls: Rc<RefCell<Calls>>,
}

impl<'r> SimBackend<'r> {
    pub fn new(clock: JumpClock, rate: &'r dyn Fn(&DeployJob, &Grant) -> f64) -> Self {
        SimBackend {
            clock,
            rate,
            jobs: HashMap::new(),
            fail_at: HashMap::new(),
            calls: Rc::default(),
        }
    }

    /// Brings a job's samples up to now.
    fn advance(j: &mut SimJob, now: f64) {
        if j.running {
            j.samples += j.rate * (now - j.since.max(j.ready_at)).max(0.0);
        }
        j.since = now;
    }
}

impl Backend for SimBackend<'_> {
    fn start(&mut self, job: &DeployJob, grant: &Grant, done: f64) -> Result<(), DeployError> {
        self.calls.borrow_mut().starts += 1;
        let now = self.clock.now();
        self.jobs.insert(
            job.id,
            SimJob {
                samples: done,
                rate: (self.rate)(job, grant),
                since: now,
                running: true,
                ready_at: now + job.spec.spec.deploy.startup_s,
                cpus: grant.cpu_ids.len(),
            },
        );
        Ok(())
    }

    fn regrant(&mut self, job: &DeployJob, grant: &Grant) -> Result<Regranted, DeployError> {
        self.calls.borrow_mut().regrants += 1;
        let now = self.clock.now();
        let j = self.jobs.get_mut(&job.id).expect("started");
        Self::advance(j, now);
        let restarts = restarts_to_resize(&job.spec) && grant.cpu_ids.len() != j.cpus;
        if restarts {
            j.ready_at = now + job.spec.spec.deploy.startup_s;
            j.cpus = grant.cpu_ids.len();
        }
        j.rate = (self.rate)(job, grant);
        j.running = true;
        Ok(match restarts {
            true => Regranted::Restarted,
            false => Regranted::InPlace,
        })
    }

    fn suspend(&mut self, job: &DeployJob) -> Result<(), DeployError> {
        self.calls.borrow_mut().suspends += 1;
        let now = self.clock.now();
        let j = self.jobs.get_mut(&job.id).expect("started");
        Self::advance(j, now);
        j.running = false;
        Ok(())
    }

    fn poll(&mut self, job: &DeployJob, out: &mut Vec<Reported>) -> Result<Exit, DeployError> {
        let now = self.clock.now();
        let j = self.jobs.get_mut(&job.id).expect("started");
        Self::advance(j, now);
        if let Some(&at) = self.fail_at.get(&job.id)
            && j.samples >= at
        {
            return Ok(Exit::Exited {
                success: false,
                why: "exited with status 1".into(),
            });
        }
        out.push(Reported {
            t: now,
            samples: j.samples,
        });
        Ok(Exit::Running)
    }

    fn stop(&mut self, job: &DeployJob) {
        self.calls.borrow_mut().stops += 1;
        if let Some(j) = self.jobs.get_mut(&job.id) {
            j.running = false;
        }
    }
}
