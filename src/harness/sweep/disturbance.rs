//! Interference while a cell is measured: at every rate window the measurement closes, what
//! else used the job's CPUs over it; a disturbed window is discarded so that another is
//! measured in its place (a bounded number of times). While it measures, the profiler keeps its
//! own threads off the job's CPUs where the job does not have them all.

use crate::harness::cgroup::{CgroupCounters, RunCgroup};
use crate::harness::measure::interference::run_wait::RunWait;
use crate::harness::measure::interference::{
    HostCpu, HostSnapshot, InterferenceTracker, JobWindow, PROC_ROOT, judge, pinned_cpus,
    profiler_cpu_ns,
};
use crate::harness::process::affinity::OffJobCpus;
use crate::matrix::Interference;
use std::path::Path;

/// Judges the windows of one cell.
pub(super) struct WindowJudge {
    host: HostCpu,
    cap_cores: f64,
    tracker: InterferenceTracker,
    /// The profiler's threads, moved off the job's CPUs while the cell is measured where the
    /// job does not have them all: none of its time is then on the job's CPUs.
    profiler: OffJobCpus,
    /// The host, the job's cgroup and tasks, and the profiler's CPU time at the end of the
    /// last window.
    last: Option<Snapshot>,
}

/// Everything a window's judgement compares, at one moment.
struct Snapshot {
    host: HostSnapshot,
    cgroup: CgroupCounters,
    run_wait: Option<RunWait>,
    profiler_ns: u64,
}

impl Snapshot {
    fn take(host: &HostCpu, cgroup: &RunCgroup) -> Option<Self> {
        Some(Snapshot {
            host: host.snapshot().ok()?,
            cgroup: cgroup.counters(),
            run_wait: RunWait::read(Path::new(PROC_ROOT), &cgroup.pids()),
            profiler_ns: profiler_cpu_ns().unwrap_or(0),
        })
    }
}

impl WindowJudge {
    /// For a job capped at `cap_cores` on the first of `cpus` it is pinned to, starting now.
    /// `None` without a cgroup (uncapped runs) or where the host's counters cannot be read.
    pub fn start(
        cgroup: Option<&RunCgroup>,
        cpus: &[u32],
        cap_cores: f64,
        steady_windows: usize,
    ) -> Option<Self> {
        let cgroup = cgroup?;
        let job_cpus = pinned_cpus(cpus, cap_cores);
        let profiler = OffJobCpus::move_off(&job_cpus, cpus);
        let host = HostCpu::new(PROC_ROOT, &job_cpus).with_rest_of(cpus);
        let snapshot = Snapshot::take(&host, cgroup)?;
        Some(WindowJudge {
            host,
            cap_cores,
            profiler,
            tracker: InterferenceTracker::new(steady_windows),
            last: Some(snapshot),
        })
    }

    /// A window just closed: whether to discard it (it was disturbed and re-measurements are
    /// left).
    pub fn window_closed(&mut self, cgroup: &RunCgroup) -> bool {
        let now = Snapshot::take(&self.host, cgroup);
        let load = match (&self.last, &now) {
            (Some(a), Some(b)) => judge(
                &a.host,
                &b.host,
                JobWindow {
                    cpu_ns: b.cgroup.cpu_usage_ns.saturating_sub(a.cgroup.cpu_usage_ns),
                    throttled_ns: b.cgroup.throttled_ns.saturating_sub(a.cgroup.throttled_ns),
                    cap_cores: self.cap_cores,
                    profiler_ns: match self.profiler.is_off() {
                        true => 0,
                        false => b.profiler_ns.saturating_sub(a.profiler_ns),
                    },
                    profiler_total_ns: b.profiler_ns.saturating_sub(a.profiler_ns),
                    run_wait_ns: match (&a.run_wait, &b.run_wait) {
                        (Some(x), Some(y)) => Some(y.since(x)),
                        _ => None,
                    },
                    pressure_ns: match (
                        a.cgroup.cpu_pressure_some_us,
                        b.cgroup.cpu_pressure_some_us,
                    ) {
                        (Some(x), Some(y)) => y.checked_sub(x).map(|d| d.saturating_mul(1000)),
                        _ => None,
                    },
                },
            ),
            _ => None,
        };
        self.last = now;
        self.tracker.push(load)
    }

    pub fn summary(&self) -> Option<Interference> {
        self.tracker.summary()
    }

    /// What to say of a cell that stayed disturbed.
    pub fn note(&self) -> Option<String> {
        self.tracker.note()
    }
}
