//! `profiler doctor`: one command that tells a user whether this machine can profile GPU jobs,
//! and what to do where it cannot.
//!
//! It is a subcommand of the binary rather than a script because a GPU server often has no
//! network and no Rust toolchain: the copied release binary (and `workloads/`) is all there is,
//! and the checks reuse the very code a sweep runs (NVML loading, GPM sampling, the cgroup
//! manager, the sweep itself), so what passes here is what a sweep will meet.
//!
//! Each check ends in a [`Verdict`] with what it saw and, where it did not pass, what to do.
//! A machine without a GPU is told so plainly, and every check that needs none still runs.

mod caps;
mod host_spell;
mod machine_kind;
mod nvml_facts;
mod python;
mod report;
mod short_sweep;

pub use nvml_facts::{DeviceFacts, GpuFacts, GpuInventory, NvmlInventory};
pub use report::render;

use crate::harness::sweep::SweepObserver;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Works, with a limitation the user should know about.
    Warn,
    /// Not run: something it needs is missing (said in the detail).
    Skip,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Skip => "SKIP",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: &'static str,
    pub verdict: Verdict,
    /// What was seen, one fact per line.
    pub facts: Vec<String>,
    /// What to do about a verdict other than PASS.
    pub fix: Option<String>,
}

impl Check {
    fn pass(name: &'static str, facts: Vec<String>) -> Check {
        Check {
            name,
            verdict: Verdict::Pass,
            facts,
            fix: None,
        }
    }

    fn with(name: &'static str, verdict: Verdict, facts: Vec<String>, fix: &str) -> Check {
        Check {
            name,
            verdict,
            facts,
            fix: Some(fix.to_string()),
        }
    }
}

/// What `profiler doctor` runs.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The GPU job swept briefly (`workloads/resnet18.toml`).
    pub job: PathBuf,
    /// Run the short GPU sweep (minutes) where a GPU and PyTorch with CUDA are there.
    pub sweep: bool,
    /// Where the short sweep's matrix and logs go.
    pub output_dir: PathBuf,
    /// The profiler's own parent cgroup (`profiler` or `profiler-<name>`).
    pub cgroup_parent: String,
}

/// Everything the doctor found, in the order checked.
#[derive(Debug, Clone)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether any check failed (the exit status is then 1).
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Fail)
    }
}

/// Runs every check; `gpus` is NVML here, a fake in tests. `observer` shows the short sweep's
/// progress; `cancel` (Ctrl-C) stops it.
pub fn run_doctor(
    opts: &DoctorOptions,
    gpus: &dyn GpuInventory,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Report {
    let mut checks = vec![machine_kind::check(&crate::machine::this_machine())];
    let facts = gpus.facts();
    checks.push(nvml_facts::driver_check(&facts));
    checks.push(nvml_facts::gpm_check(&facts, gpus));
    let cgroups = caps::checks(&opts.cgroup_parent);
    let caps_ok = cgroups.iter().all(|c| c.verdict != Verdict::Fail);
    checks.extend(cgroups);
    checks.push(host_spell::check(&opts.cgroup_parent, caps_ok));
    let spec = crate::spec::load_spec(&opts.job);
    let torch = python::torch_check(spec.as_ref().ok());
    checks.push(torch.check.clone());
    let gpu_count = facts.as_ref().map_or(0, |f| f.devices.len());
    checks.push(short_sweep::check(
        opts,
        spec,
        short_sweep::Readiness {
            gpus: gpu_count,
            gpm: facts
                .as_ref()
                .is_ok_and(|f| f.devices.first().is_some_and(|d| d.gpm_supported)),
            torch_cuda: torch.cuda_devices > 0,
            caps: caps_ok,
        },
        observer,
        cancel,
    ));
    Report { checks }
}

#[cfg(test)]
mod tests;
