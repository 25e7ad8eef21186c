//! What runs a deploy's jobs: a [`Backend`] starts, re-caps, suspends and stops them and reads
//! their progress. The local backend runs them in cgroups of this machine; tests drive the
//! whole round loop with a simulated one.

use super::error::DeployError;
use crate::harness::measure::job_output::ProgressTail;
use crate::harness::process::launch::{RunningJob, describe_exit};
use crate::spec::LoadedSpec;
use std::sync::Arc;

/// Error output quoted when a job fails, bytes.
const STDERR_TAIL: u64 = 600;

/// A job of the trace as a deploy runs it.
#[derive(Debug, Clone)]
pub struct DeployJob {
    pub id: u64,
    pub model: String,
    /// Samples it must process; it is stopped once its own output reports them.
    pub work_samples: f64,
    /// The spec that runs it.
    pub spec: Arc<LoadedSpec>,
}

impl DeployJob {
    /// Whether it goes on from where it was when started again (its spec's `deploy.resumes`).
    pub fn resumes(&self) -> bool {
        self.spec.spec.deploy.resumes
    }
}

/// What a placed job holds for a round, on the machine that runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// The (first) server it is placed on.
    pub server: usize,
    /// Cores: the CPU quota.
    pub cpus: f64,
    /// The CPUs it may run on (the quota spreads over them): as many as its cores rounded
    /// up, the least loaded of its servers'.
    pub cpu_ids: Vec<u32>,
    pub mem_bytes: u64,
    pub gpus: u32,
    /// GPU devices it sees (`CUDA_VISIBLE_DEVICES`); empty where accelerators are emulated.
    pub gpu_ids: Vec<u32>,
}

/// One progress report of a job: its cumulative samples at `t`, deploy seconds (the trace's
/// clock).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reported {
    pub t: f64,
    pub samples: f64,
}

/// Whether a job's process still runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    Running,
    /// It ended; `why` says how (exit status and the end of its error output).
    Exited {
        success: bool,
        why: String,
    },
}

/// How a started job took a new grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regranted {
    /// Re-capped (or let run) where it was.
    InPlace,
    /// Stopped and started again on its new grant, its count going on.
    Restarted,
}

/// Runs a deploy's jobs.
pub trait Backend {
    /// Starts `job` with `grant`, its count going on from `done` samples (0 for a job that has
    /// not run yet; what it did before a resumed deploy, where it resumes).
    fn start(&mut self, job: &DeployJob, grant: &Grant, done: f64) -> Result<(), DeployError>;
    /// Gives a started job `grant` and lets it run if it was suspended; says whether it
    /// started the job again to do so.
    fn regrant(&mut self, job: &DeployJob, grant: &Grant) -> Result<Regranted, DeployError>;
    /// Suspends a running job in place: it keeps its memory and makes no progress.
    fn suspend(&mut self, job: &DeployJob) -> Result<(), DeployError>;
    /// Appends the job's reports since the last poll to `out`; says whether it still runs.
    fn poll(&mut self, job: &DeployJob, out: &mut Vec<Reported>) -> Result<Exit, DeployError>;
    /// Ends the job (its work ran out, or it failed) and releases what it held.
    fn stop(&mut self, job: &DeployJob);
}

/// One run of a job and its progress, its count going on from what its earlier runs did (a
/// job started again to resize): what both backends read a job's progress from.
pub(super) struct CountedRun {
    pub(super) run: RunningJob,
    pub(super) tail: ProgressTail,
    /// Samples its earlier runs did, and the last count this run reported.
    pub(super) offset: f64,
    pub(super) last_samples: f64,
}

impl CountedRun {
    pub(super) fn new(run: RunningJob, tail: ProgressTail, offset: f64) -> Self {
        CountedRun {
            run,
            tail,
            offset,
            last_samples: 0.0,
        }
    }

    /// Samples done by every run so far.
    pub(super) fn done(&self) -> f64 {
        self.offset + self.last_samples
    }

    /// Appends this run's reports since the last poll to `out`, on the deploy's clock (Unix
    /// time `epoch_unix_s` is its 0) and counted on from `offset`; says whether it still runs,
    /// and how it ended (`what` names the process: "srun " where srun wraps the job).
    pub(super) fn poll(&mut self, epoch_unix_s: f64, what: &str, out: &mut Vec<Reported>) -> Exit {
        for r in self.tail.poll() {
            self.last_samples = r.samples;
            out.push(Reported {
                t: r.t - epoch_unix_s,
                samples: self.offset + r.samples,
            });
        }
        let Some(status) = self.run.try_status() else {
            return Exit::Running;
        };
        let tail = self.run.stderr_tail(STDERR_TAIL);
        let ends = if tail.is_empty() {
            String::new()
        } else {
            format!("; its error output ends: {}", tail.trim())
        };
        Exit::Exited {
            success: status.success(),
            why: format!("{what}{}{ends}", describe_exit(status)),
        }
    }
}
