//! Interference while a cell is measured: at every rate window the measurement closes, what
//! else used the job's CPUs over it; a disturbed window is discarded so that another is
//! measured in its place (a bounded number of times).

use crate::harness::cgroup::{CgroupCounters, RunCgroup};
use crate::harness::interference::{
    HostCpu, HostSnapshot, InterferenceTracker, JobWindow, PROC_ROOT, judge, pinned_cpus,
    profiler_cpu_ns,
};
use crate::matrix::Interference;

/// Judges the windows of one cell.
pub(super) struct WindowJudge {
    host: HostCpu,
    cap_cores: f64,
    tracker: InterferenceTracker,
    /// The host, the job's cgroup and the profiler's CPU time at the end of the last window.
    last: Option<(HostSnapshot, CgroupCounters, u64)>,
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
        let host = HostCpu::new(PROC_ROOT, &pinned_cpus(cpus, cap_cores));
        let snapshot = host.snapshot().ok()?;
        Some(WindowJudge {
            host,
            cap_cores,
            tracker: InterferenceTracker::new(steady_windows),
            last: Some((snapshot, cgroup.counters(), profiler_cpu_ns().unwrap_or(0))),
        })
    }

    /// A window just closed: whether to discard it (it was disturbed and re-measurements are
    /// left).
    pub fn window_closed(&mut self, cgroup: &RunCgroup) -> bool {
        let now = self
            .host
            .snapshot()
            .ok()
            .map(|s| (s, cgroup.counters(), profiler_cpu_ns().unwrap_or(0)));
        let load = match (&self.last, &now) {
            (Some((h0, c0, p0)), Some((h1, c1, p1))) => judge(
                h0,
                h1,
                JobWindow {
                    cpu_ns: c1.cpu_usage_ns.saturating_sub(c0.cpu_usage_ns),
                    throttled_ns: c1.throttled_ns.saturating_sub(c0.throttled_ns),
                    cap_cores: self.cap_cores,
                    profiler_ns: p1.saturating_sub(*p0),
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
