//! A launched job: its process, its cgroup (or the Slurm step it runs in), the files its
//! progress is read from, and what it holds.

use crate::harness::cgroup::effective::EffectiveCaps;
use crate::harness::cgroup::{CgroupCounters, RunCgroup};
use crate::harness::measure::job_output::{ProgressTail, Report};
use crate::harness::memory::resident::tree_resident_bytes;
use crate::harness::process::launch::RunningJob;
use crate::harness::process::tree::{TreeUsage, descendants, tree_usage};

/// A launched job and what it has reported so far.
pub(super) struct Run {
    pub(super) job: RunningJob,
    pub(super) cgroup: Option<RunCgroup>,
    pub(super) tail: ProgressTail,
    /// In a Slurm step, whose cgroups Slurm owns: the caps of the step's cgroup, which the
    /// job shares with the profiler, for its OOM kills.
    step: Option<EffectiveCaps>,
    oom_base: u64,
    /// The most anonymous and shared memory the job's cgroup was seen holding since its first
    /// report, bytes: what the kernel cannot reclaim without swap.
    pub(super) held_peak: u64,
}

impl Run {
    /// `job`, just started in `cgroup` (or in the Slurm step whose cgroup has `step`'s caps),
    /// its progress read by `tail`; OOM kills count from now.
    pub(super) fn started(
        job: RunningJob,
        cgroup: Option<RunCgroup>,
        tail: ProgressTail,
        step: Option<EffectiveCaps>,
    ) -> Run {
        let oom_base = oom_kills(cgroup.as_ref(), step.as_ref());
        Run {
            job,
            cgroup,
            tail,
            step,
            oom_base,
            held_peak: 0,
        }
    }

    pub(super) fn poll(&mut self) -> Vec<Report> {
        self.tail.poll()
    }

    pub(super) fn oom_killed(&self) -> bool {
        oom_kills(self.cgroup.as_ref(), self.step.as_ref()) > self.oom_base
    }

    /// The job's processes: its cgroup's, else its first process and all that descend from
    /// it (a Slurm step's cgroup holds the profiler too).
    pub(super) fn pids(&self) -> Vec<u32> {
        match &self.cgroup {
            Some(cg) => cg.pids(),
            None => descendants(self.job.pid()),
        }
    }

    /// Resident memory of the job's processes right now, shared pages counted once.
    pub(super) fn resident_bytes(&self) -> u64 {
        tree_resident_bytes(&self.pids())
    }

    /// The job's counters: its own cgroup's, or in a Slurm step the step's with the job's CPU
    /// time and reads taken from its process tree ([`EffectiveCaps::counters`]); `None`
    /// without caps, where only the process tree counts ([`Run::tree_usage`]).
    pub(super) fn counters(&self) -> Option<CgroupCounters> {
        self.counters_with(|| self.tree_usage())
    }

    /// [`Run::counters`] for their memory figures only, read at every poll: in a Slurm step
    /// the process tree is not scanned, and CPU time and reads are zero.
    pub(super) fn memory_counters(&self) -> Option<CgroupCounters> {
        self.counters_with(TreeUsage::default)
    }

    fn counters_with(&self, tree: impl FnOnce() -> TreeUsage) -> Option<CgroupCounters> {
        match (&self.cgroup, &self.step) {
            (Some(cg), _) => Some(cg.counters()),
            (None, Some(caps)) => Some(caps.counters(tree())),
            (None, None) => None,
        }
    }

    /// CPU time and storage reads of the job's process tree so far.
    pub(super) fn tree_usage(&self) -> TreeUsage {
        tree_usage(&descendants(self.job.pid()))
    }
}

/// OOM kills so far in the launch's cgroup, or in a Slurm step in the step's.
fn oom_kills(cgroup: Option<&RunCgroup>, step: Option<&EffectiveCaps>) -> u64 {
    match (cgroup, step) {
        (Some(cg), _) => cg.counters().oom_kills,
        (None, Some(caps)) => caps.oom_kills().unwrap_or(0),
        (None, None) => 0,
    }
}
