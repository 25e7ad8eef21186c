//! Launching the job for a point: its cgroup and caps, its command and environment, and the
//! files its progress is read from.

use super::{Sweep, SweepError};
use crate::harness::cgroup::effective::EffectiveCaps;
use crate::harness::cgroup::{CgroupCounters, RunCgroup};
use crate::harness::measure::job_output::{ProgressTail, Report};
use crate::harness::memory::resident::tree_resident_bytes;
use crate::harness::process::job_launch::{cpu_vars, job_launch};
use crate::harness::process::launch::RunningJob;
use crate::harness::process::tree::{TreeUsage, descendants, tree_usage};
use crate::harness::sweep::plan::{Point, label};
use crate::spec::Vars;

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

impl Sweep<'_> {
    pub(super) fn vars_for(&self, p: &Point) -> Vars {
        let mut vars = cpu_vars(&self.opts.spec, p.cpu);
        vars.extend(p.params.clone());
        vars
    }

    /// In a Slurm step: an error unless the step's cgroup has the point's caps.
    pub(super) fn check_step_caps(&self, p: &Point) -> Result<(), SweepError> {
        let Some((_, caps)) = &self.step else {
            return Ok(());
        };
        let memory = self.mem.levels.bytes().map(|b| b[p.mem]);
        caps.check(p.cpu, memory).map_err(|e| {
            SweepError::Plan(format!(
                "in the Slurm step: refusing to measure {}: {e} (ask for more with \
                 `profiler sweep --slurm --slurm-mem MB`)",
                label(p)
            ))
        })
    }

    pub(super) fn launch(
        &mut self,
        first: &Point,
        memory_limit: Option<u64>,
    ) -> Result<Run, SweepError> {
        self.check_step_caps(first)?;
        let spec = &self.opts.spec;
        self.launches.started += 1;
        // Start every launch with a cold cache, charged to the job's own cgroup (or the Slurm
        // step's), so its reads and cache are its own.
        if (self.root.is_some() || self.step.is_some())
            && let Some(ds) = &self.mem.dataset
        {
            ds.evict();
        }
        let cgroup = match &self.root {
            Some(root) => {
                let cg = root.create_launch(&spec.spec.name, self.launches.started)?;
                cg.set_cpu(first.cpu)?;
                cg.set_memory_limit(memory_limit)?;
                if let Some((dev, bps)) = self.mem.storage_throttle {
                    cg.set_read_bps(dev, Some(bps))?;
                }
                Some(cg)
            }
            None => None,
        };
        let tag = match &cgroup {
            Some(cg) => cg.name().to_string(),
            None => format!(
                "{}-{}-{}",
                spec.spec.name,
                std::process::id(),
                self.launches.started
            ),
        };
        let vars = self.vars_for(first);
        let procs = cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default();
        let (launch, progress_paths) = job_launch(spec, &vars, &self.out.log_dir, &tag, procs, &[])
            .map_err(|source| SweepError::Template {
                spec: spec.path.clone(),
                source,
            })?;
        let job = launch.spawn()?;
        let step = self.step.as_ref().map(|(_, caps)| caps.clone());
        let oom_base = oom_kills(cgroup.as_ref(), step.as_ref());
        Ok(Run {
            job,
            cgroup,
            tail: ProgressTail::new(&spec.spec, progress_paths),
            step,
            oom_base,
            held_peak: 0,
        })
    }
}
