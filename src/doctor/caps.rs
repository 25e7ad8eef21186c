//! The cgroup checks: which version and controllers the machine has, and that a CPU cap really
//! holds a CPU-bound process to it (what every cell of a sweep relies on).

use super::{Check, Verdict};
use crate::harness::cgroup::{CgroupRoot, RunCgroup};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The CPU cap tried, in cores: below one core, so the quota (not the pinning) is what binds.
const TRIAL_CORES: f64 = 0.5;
/// How long the capped process runs.
const TRIAL: Duration = Duration::from_secs(2);
/// Relative error allowed between the cap and the CPU time the process got.
const TRIAL_TOLERANCE: f64 = 0.2;
const TRIAL_MEMORY_BYTES: u64 = 256 << 20;

/// "cgroups" (version, controllers) and "cgroup caps" (a 0.5-CPU cap on a busy process).
pub fn checks(parent: &str) -> Vec<Check> {
    const HIERARCHY: &str = "cgroups";
    const CAPS: &str = "cgroup caps";
    let root = match CgroupRoot::open(parent) {
        Ok(root) => root,
        Err(e) => {
            return vec![
                Check::with(
                    HIERARCHY,
                    Verdict::Fail,
                    vec![e.to_string()],
                    "run `profiler doctor` (and sweeps) as root on the GPU server; on cgroup v2 \
                     the cpu, cpuset, memory and io controllers must be enabled in the root's \
                     cgroup.subtree_control",
                ),
                Check::with(
                    CAPS,
                    Verdict::Skip,
                    vec!["no cgroup the profiler may use".into()],
                    "fix the check above",
                ),
            ];
        }
    };
    let mut facts = vec![format!(
        "cgroup {}: cpu, cpuacct, cpuset, memory and {} usable; runs go under {}",
        root.version().as_str(),
        match root.version() {
            crate::harness::cgroup::CgroupVersion::V1 => "blkio",
            crate::harness::cgroup::CgroupVersion::V2 => "io",
        },
        root.parent_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )];
    facts.push(format!(
        "{} CPUs to pin to: {:?}",
        root.cpus().len(),
        root.cpus()
    ));
    let hierarchy = match root.swap_note() {
        Some(note) => Check::with(
            HIERARCHY,
            Verdict::Warn,
            facts,
            &format!("{note}; memory levels then bound resident memory only loosely"),
        ),
        None => Check::pass(HIERARCHY, facts),
    };
    vec![hierarchy, cap_trial(&root, CAPS)]
}

/// Runs `yes` (a CPU-bound process on any Linux) under a [`TRIAL_CORES`] cap for [`TRIAL`] and
/// compares the CPU time it got with the cap.
fn cap_trial(root: &CgroupRoot, name: &'static str) -> Check {
    let fail = |what: String| {
        Check::with(
            name,
            Verdict::Fail,
            vec![what],
            "the profiler could create its cgroup but not cap a process in it: check that \
             nothing else (a container runtime, systemd) manages /profiler, and the kernel log",
        )
    };
    let run = match root.create_launch("doctor", 0) {
        Ok(run) => run,
        Err(e) => return fail(format!("creating a run cgroup: {e}")),
    };
    if let Err(e) = run
        .set_cpu(TRIAL_CORES)
        .and_then(|()| run.set_memory_limit(Some(TRIAL_MEMORY_BYTES)))
    {
        return fail(format!("setting caps: {e}"));
    }
    let mut child = match Command::new("yes")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => KillOnDrop(child),
        Err(e) => return fail(format!("starting `yes` (coreutils): {e}")),
    };
    if let Err(e) = run.add_process(child.0.id()) {
        return fail(format!("moving a process into {}: {e}", run.rel_path()));
    }
    let used = used_cores(&run, TRIAL);
    let _ = child.0.kill();
    let _ = child.0.wait();
    let throttled = run.counters().throttled_ns;
    let facts = vec![format!(
        "a CPU-bound process capped at {TRIAL_CORES} CPU used {used:.2} CPUs over {} s \
         (throttled {:.2} s), memory limit {} MiB set",
        TRIAL.as_secs(),
        throttled as f64 / 1e9,
        TRIAL_MEMORY_BYTES >> 20
    )];
    if (used / TRIAL_CORES - 1.0).abs() <= TRIAL_TOLERANCE {
        Check::pass(name, facts)
    } else if used < TRIAL_CORES {
        Check::with(
            name,
            Verdict::Warn,
            facts,
            "the process got less than its cap: the machine is busy (other jobs on the first \
             core); profile on an idle machine, or the cells will be marked disturbed",
        )
    } else {
        Check::with(
            name,
            Verdict::Fail,
            facts,
            "the CPU quota does not bind: check that CFS bandwidth control is in the kernel \
             (CONFIG_CFS_BANDWIDTH) and that the cpu controller is attached",
        )
    }
}

/// Cores the cgroup used over `span`.
fn used_cores(run: &RunCgroup, span: Duration) -> f64 {
    let (t0, c0) = (Instant::now(), run.counters().cpu_usage_ns);
    std::thread::sleep(span);
    let c1 = run.counters().cpu_usage_ns;
    c1.saturating_sub(c0) as f64 / 1e9 / t0.elapsed().as_secs_f64()
}

/// The trial process never outlives the check, whatever returns early.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
