//! The probe on the job's CPUs while a sweep measures: started with the sweep where the
//! profiler has cgroups of its own, and read for each measurement, so that a visit (a live
//! launch's, or a fresh launch's one measurement of its point) carries the host's speed over
//! it and over each of its windows (the cell model reads every cell at one probe speed,
//! `matrix/cell_model/`).

use super::SweepObserver;
use crate::harness::cgroup::{CgroupRoot, pinned_cpus};
use crate::harness::measure::host_probe::{HostProbe, noise_over, speed_over};
use crate::harness::measure::steady::RateWindows;
use crate::matrix::visits::HostSpeed;

/// The probe of the host's speed on the job's CPUs, where it runs.
#[derive(Default)]
pub(super) struct HostWatch {
    probe: Option<HostProbe>,
}

impl HostWatch {
    /// Whether the probe runs.
    pub(super) fn runs(&self) -> bool {
        self.probe.is_some()
    }

    /// Starts the probe on every CPU runs may use under `root`, for live and relaunching
    /// sweeps alike; says why not where it cannot start.
    pub(super) fn start(&mut self, root: Option<&CgroupRoot>, observer: &mut dyn SweepObserver) {
        let Some(root) = root else {
            return;
        };
        let started = root
            .create_launch("host-probe", 0)
            .map_err(|e| e.to_string())
            .and_then(|cg| HostProbe::start(cg, root.cpus()).map_err(|e| e.to_string()));
        match started {
            Ok(probe) => self.probe = Some(probe),
            Err(e) => observer.warn(&format!(
                "no probe of the host's speed on the job's CPUs ({e}): relative rates keep the \
                 host's spells"
            )),
        }
    }

    /// What the probe saw on the CPUs of a job at `cores` over `span` and each of `windows`
    /// inside it; `None` without a probe or where it got too little time to say.
    pub(super) fn speed_of(
        &self,
        root: Option<&CgroupRoot>,
        cores: f64,
        span: [f64; 2],
        windows: &RateWindows,
    ) -> Option<HostSpeed> {
        let probe = self.probe.as_ref()?;
        let root = root?;
        let cpus = pinned_cpus(root.cpus(), cores);
        let bursts = probe.bursts_within(span);
        let speed = speed_over(&bursts, &cpus, span)?;
        let windows = (windows.kept_within(span).into_iter())
            .filter_map(|(w, rate)| Some([rate, speed_over(&bursts, &cpus, w)?]))
            .collect();
        Some(HostSpeed {
            speed,
            windows,
            log_variance: noise_over(&bursts, &cpus, span).unwrap_or(0.0),
        })
    }
}
