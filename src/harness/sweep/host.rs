//! The probe on the job's CPUs while a live sweep walks its blocks: started with the sweep
//! where the profiler has cgroups of its own, and read for each measurement, so that a visit
//! carries the host's speed over it and over each of its windows (`matrix/relative/host.rs`
//! takes that speed out of the visit's ratio).

use super::Sweep;
use crate::harness::cgroup::pinned_cpus;
use crate::harness::measure::host_probe::{HostProbe, speed_over};
use crate::harness::measure::steady::RateWindows;
use crate::matrix::visits::HostSpeed;

impl Sweep<'_> {
    /// Starts the probe on every CPU runs may use, where the sweep walks blocks in live
    /// launches (the only measurements read as visits); says why not where it cannot start.
    pub(super) fn start_host_probe(&mut self) {
        let Some(root) = &self.root else {
            return;
        };
        if !self.blocks_per_launch() {
            return;
        }
        let started = root
            .create_launch("host-probe", 0)
            .map_err(|e| e.to_string())
            .and_then(|cg| HostProbe::start(cg, root.cpus()).map_err(|e| e.to_string()));
        match started {
            Ok(probe) => self.host_probe = Some(probe),
            Err(e) => self.observer.warn(&format!(
                "no probe of the host's speed on the job's CPUs ({e}): relative rates keep the \
                 host's spells"
            )),
        }
    }

    /// What the probe saw on the CPUs of a job at `cores` over `span` and each of `windows`
    /// inside it; `None` without a probe or where it got too little time to say.
    pub(super) fn host_speed_of(
        &self,
        cores: f64,
        span: [f64; 2],
        windows: &RateWindows,
    ) -> Option<HostSpeed> {
        let probe = self.host_probe.as_ref()?;
        let root = self.root.as_ref()?;
        let cpus = pinned_cpus(root.cpus(), cores);
        let bursts = probe.bursts_within(span);
        let speed = speed_over(&bursts, &cpus, span)?;
        let windows = (windows.kept_within(span).into_iter())
            .filter_map(|(w, rate)| Some([rate, speed_over(&bursts, &cpus, w)?]))
            .collect();
        Some(HostSpeed { speed, windows })
    }
}
