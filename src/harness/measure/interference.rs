//! What else used the machine while a job was measured.
//!
//! [`HostCpu`] reads the kernel's per-CPU time counters (`/proc/stat`, in USER_HZ ticks) for the
//! CPUs the job is pinned to, and the host's CPU pressure (`/proc/pressure/cpu`, where the
//! kernel has it). Two snapshots and the job's own cgroup counters over the same window give a
//! [`WindowLoad`] ([`judge`]): the cores the job used, the cores other processes used on its
//! CPUs (their busy time minus the job's own and the profiler's), the cores left idle, and whether the window was
//! disturbed. [`InterferenceTracker`] collects a cell's windows, says which to discard and
//! measure again (a bounded number), and summarises them for the cell.
//!
//! # The rule
//!
//! With `cap` the job's CPU cap (at most the number of CPUs it is pinned to), a window is
//! **disturbed** when all of these hold:
//!
//! 1. the job ran clearly below its cap: `shortfall = cap - job_cores` exceeds
//!    `max(0.1, 10% of cap)` cores;
//! 2. the CFS quota did not hold it back: it was throttled for less than 0.1 s per second;
//! 3. the idle time on its CPUs cannot explain the shortfall: `idle_cores < shortfall`. A job
//!    that waits on storage or on a GPU leaves its CPUs idle and runs below its cap on its own;
//! 4. other processes took the rest: `other_cores` exceeds `0.1 + 10% of shortfall` cores,
//!    plus the counters' resolution (two ticks per CPU per window).
//!
//! A window is also disturbed when rules 1 and 2 hold, its CPUs were not left idle for it (rule
//! 3), something other than the job ran on them (more than 0.1 cores), and the job's own tasks
//! waited on a run queue ([`run_wait`]; the job cgroup's CPU pressure on cgroup v2 where the
//! kernel keeps no per-task statistics) for more than `0.1 + 25% of shortfall` cores. That is the
//! job's own account of being kept off its CPUs, whatever the per-CPU counters attribute to whom.
//! It is judged only while the profiler runs on other CPUs than the job's (it moves there
//! whenever the job does not have them all): on the job's CPUs the profiler's own sampling makes
//! the job's threads wait, and that is part of every measurement, not interference. A job with more threads
//! than its cap waits behind its own threads: at its cap (rule 1), throttled (rule 2), or, when
//! its threads run in bursts below the cap, on CPUs nothing else uses, so it is never disturbed.
//!
//! So a job at its cap is never disturbed (a hog beside a job capped at 0.5 of a core takes
//! only the half the job may not use), nor is one throttled by its own quota, nor one that
//! leaves its CPUs idle. A job capped at 1 core that gets 0.4 of it beside a hog is.
//!
//! Other processes busy on the rest of the machine slow a job without taking any of its CPU
//! time: they share its caches and memory bandwidth (and, where CPUs are hyperthreads of one
//! core or a hypervisor's virtual CPUs, its execution units). A job at its cap beside a memory
//! copy on every other core runs 15-20% slower on a small VM and nothing on its own CPUs shows
//! it. So a window is also disturbed, whatever the job's own counters say, when other processes
//! used more than `max(0.5, 25% of those CPUs)` cores of the profiler's CPUs the job is not
//! pinned to (plus the counters' resolution), the profiler's own time taken off.
//!
//! A window is not judged at all ([`judge`] gives `None`, and the window is kept) when it is
//! shorter than [`MIN_WINDOW`], when the two snapshots cover different CPUs (the job was
//! re-capped in between), or when a counter went backwards or grew by more than the CPUs could
//! have run (a wrapped or reset counter, a CPU taken offline).
//!
//! Steal time (a hypervisor running other guests) counts as other processes' time. The host's
//! CPU pressure is recorded for the reader, not used by the rule.

pub use crate::harness::cgroup::pinned_cpus;
use crate::matrix::Interference;
use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod run_wait;
#[cfg(test)]
mod tests;

/// Where the kernel's process file system is mounted.
pub const PROC_ROOT: &str = "/proc";
/// Per-CPU time counters, relative to the proc root.
pub const PROC_STAT: &str = "stat";
/// Host CPU pressure (PSI), relative to the proc root; absent on kernels without PSI.
pub const PROC_PRESSURE_CPU: &str = "pressure/cpu";

/// USER_HZ where `sysconf` cannot tell (every Linux architecture uses 100).
const DEFAULT_TICKS_PER_S: u64 = 100;

/// Windows shorter than this are not judged: a few ticks of the counters would decide them.
pub const MIN_WINDOW: Duration = Duration::from_millis(100);
/// Rule 1: the job's shortfall below its cap must exceed this many cores...
pub const BELOW_CAP_CORES: f64 = 0.1;
/// ... and this share of the cap.
pub const BELOW_CAP_SHARE: f64 = 0.1;
/// Rule 2: throttled seconds per second at or above which the quota, not other processes,
/// held the job back.
pub const THROTTLED_S_PER_S: f64 = 0.1;
/// Rule 4: other processes must use more than this many cores...
pub const OTHER_CORES: f64 = 0.1;
/// ... plus this share of the job's shortfall.
pub const OTHER_SHORTFALL_SHARE: f64 = 0.1;
/// Busy plus idle time may exceed what the CPUs could run by this share before the window's
/// counters are taken as inconsistent.
const CAPACITY_SLACK: f64 = 0.1;
/// Run-queue wait of the job's tasks, beyond the profiler's own CPU time, above which a window
/// below the cap is disturbed: this many cores...
pub const RUN_WAIT_CORES: f64 = 0.1;
/// ... plus this share of the job's shortfall.
pub const RUN_WAIT_SHORTFALL_SHARE: f64 = 0.25;
/// Other processes on the CPUs the job is not pinned to disturb a window above this many
/// cores...
pub const ELSEWHERE_CORES: f64 = 0.5;
/// ... or this share of those CPUs, whichever is more.
pub const ELSEWHERE_SHARE: f64 = 0.25;
/// Disturbed windows a cell may discard, per window its estimate uses.
pub const REMEASURE_PER_STEADY_WINDOW: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum HostCpuError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}:{line}: {message}: {text:?}", path.display())]
    Malformed {
        path: PathBuf,
        /// 1-based.
        line: usize,
        message: String,
        /// The line, shortened.
        text: String,
    },
    #[error("{}: no line for CPU {cpu} (offline, or not on this machine)", path.display())]
    MissingCpu { path: PathBuf, cpu: u32 },
    #[error("{}: no `some` line", path.display())]
    NoSomeLine { path: PathBuf },
}

/// Samples the time counters of a set of CPUs (the job's) and, where set, of the rest of the
/// CPUs the profiler may use.
#[derive(Debug, Clone)]
pub struct HostCpu {
    proc_root: PathBuf,
    cpus: Vec<u32>,
    /// Every CPU the profiler may use; those not in `cpus` are the rest.
    all: Vec<u32>,
    tick_ns: u64,
}

/// Busy time on the CPUs the job is not pinned to, at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct RestSnapshot {
    /// user + nice + system + irq + softirq, summed over `cpus`: this machine's own work there.
    /// Steal (other guests of a hypervisor on those CPUs) is left out: it is not a process
    /// beside the job.
    pub busy_ns: u64,
    /// The CPUs summed, ascending; never empty.
    pub cpus: Vec<u32>,
}

/// The counters of a set of CPUs at one moment, summed over the CPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSnapshot {
    pub at: Instant,
    /// user + nice + system + irq + softirq + steal.
    pub busy_ns: u64,
    /// idle + iowait.
    pub idle_ns: u64,
    /// steal (part of `busy_ns`): time a hypervisor gave the CPUs to other guests.
    pub steal_ns: u64,
    /// The host's `some` CPU pressure stall total, microseconds; `None` without PSI.
    pub pressure_some_us: Option<u64>,
    /// The CPUs summed, ascending.
    pub cpus: Vec<u32>,
    /// Resolution of the counters: nanoseconds per tick.
    pub tick_ns: u64,
    /// The rest of the profiler's CPUs; `None` when the job has them all.
    pub rest: Option<RestSnapshot>,
}

impl HostCpu {
    /// Samples `cpus` (duplicates ignored) from the files under `proc_root` (normally
    /// [`PROC_ROOT`]), converting ticks at the kernel's USER_HZ.
    pub fn new(proc_root: impl Into<PathBuf>, cpus: &[u32]) -> Self {
        HostCpu::with_ticks_per_s(proc_root, cpus, ticks_per_s())
    }

    /// As [`HostCpu::new`], with `ticks_per_s` ticks per second (0 is taken as USER_HZ's
    /// usual 100).
    pub fn with_ticks_per_s(proc_root: impl Into<PathBuf>, cpus: &[u32], ticks_per_s: u64) -> Self {
        let hz = if ticks_per_s == 0 {
            DEFAULT_TICKS_PER_S
        } else {
            ticks_per_s
        };
        let mut h = HostCpu {
            proc_root: proc_root.into(),
            cpus: Vec::new(),
            all: Vec::new(),
            tick_ns: (1_000_000_000 / hz).max(1),
        };
        h.set_cpus(cpus);
        h
    }

    /// Also samples the CPUs of `all` (the profiler's) that the job is not pinned to.
    pub fn with_rest_of(mut self, all: &[u32]) -> Self {
        self.all = sorted_unique(all);
        self
    }

    /// Samples other CPUs from now on (the job was re-pinned). Snapshots taken before do not
    /// pair with later ones: [`judge`] leaves such a window unjudged.
    pub fn set_cpus(&mut self, cpus: &[u32]) {
        self.cpus = sorted_unique(cpus);
    }

    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Reads the counters now.
    pub fn snapshot(&self) -> Result<HostSnapshot, HostCpuError> {
        let at = Instant::now();
        let path = self.proc_root.join(PROC_STAT);
        let text = std::fs::read_to_string(&path).map_err(|source| HostCpuError::Read {
            path: path.clone(),
            source,
        })?;
        let (busy, idle, steal) = cpu_ticks(&text, &self.cpus, &path)?;
        let rest: Vec<u32> = self
            .all
            .iter()
            .filter(|c| !self.cpus.contains(c))
            .copied()
            .collect();
        let rest = match rest.is_empty() {
            true => None,
            false => {
                let (busy, _, steal) = cpu_ticks(&text, &rest, &path)?;
                Some(RestSnapshot {
                    busy_ns: busy.saturating_sub(steal).saturating_mul(self.tick_ns),
                    cpus: rest,
                })
            }
        };
        Ok(HostSnapshot {
            at,
            busy_ns: busy.saturating_mul(self.tick_ns),
            idle_ns: idle.saturating_mul(self.tick_ns),
            steal_ns: steal.saturating_mul(self.tick_ns),
            pressure_some_us: self.pressure()?,
            cpus: self.cpus.clone(),
            tick_ns: self.tick_ns,
            rest,
        })
    }

    /// The `some` total of the host's CPU pressure; `None` where the kernel has no PSI (no
    /// file) or has it disabled (reading fails with EOPNOTSUPP).
    fn pressure(&self) -> Result<Option<u64>, HostCpuError> {
        let path = self.proc_root.join(PROC_PRESSURE_CPU);
        match std::fs::read_to_string(&path) {
            Ok(text) => pressure_some_total(&text, &path).map(Some),
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::EOPNOTSUPP) =>
            {
                Ok(None)
            }
            Err(source) => Err(HostCpuError::Read { path, source }),
        }
    }
}

fn sorted_unique(cpus: &[u32]) -> Vec<u32> {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// CPU time this process (the profiler) has used, nanoseconds; `None` where `/proc/self/stat`
/// cannot be read.
pub fn profiler_cpu_ns() -> Option<u64> {
    let stat = procfs::process::Process::myself().ok()?.stat().ok()?;
    let ticks = stat.utime.checked_add(stat.stime)?;
    ticks.checked_mul(1_000_000_000 / ticks_per_s())
}

/// The kernel's USER_HZ, the unit of `/proc/stat`.
pub fn ticks_per_s() -> u64 {
    // SAFETY: sysconf reads a configuration value; it has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz)
        .ok()
        .filter(|&h| h > 0)
        .unwrap_or(DEFAULT_TICKS_PER_S)
}

fn malformed(path: &Path, index: usize, message: impl Into<String>, line: &str) -> HostCpuError {
    HostCpuError::Malformed {
        path: path.to_owned(),
        line: index + 1,
        message: message.into(),
        text: line.chars().take(120).collect(),
    }
}

/// Busy, idle and steal ticks summed over `cpus` from the `cpuN` lines of `/proc/stat`: `cpuN user
/// nice system idle [iowait irq softirq steal guest guest_nice]`. Older kernels print fewer
/// columns (the missing ones count 0); guest time is already part of user and nice.
fn cpu_ticks(text: &str, cpus: &[u32], path: &Path) -> Result<(u64, u64, u64), HostCpuError> {
    let mut seen = vec![false; cpus.len()];
    let (mut busy, mut idle, mut steal) = (0u64, 0u64, 0u64);
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(id) = fields.next().and_then(|name| name.strip_prefix("cpu")) else {
            continue;
        };
        // `cpu` alone is the total over all CPUs.
        if id.is_empty() {
            continue;
        }
        let id: u32 = id
            .parse()
            .map_err(|_| malformed(path, i, "expected `cpu<number>`", line))?;
        let Some(k) = cpus.iter().position(|&c| c == id) else {
            continue;
        };
        if seen[k] {
            return Err(malformed(path, i, format!("CPU {id} listed twice"), line));
        }
        seen[k] = true;
        let values = fields
            .map(str::parse::<u64>)
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| malformed(path, i, "expected tick counts", line))?;
        if values.len() < 4 {
            return Err(malformed(
                path,
                i,
                format!("expected at least 4 tick counts, got {}", values.len()),
                line,
            ));
        }
        let at = |k: usize| values.get(k).copied().unwrap_or(0);
        // user, nice, system, irq, softirq, steal.
        for k in [0, 1, 2, 5, 6, 7] {
            busy = busy.saturating_add(at(k));
        }
        // idle, iowait.
        idle = idle.saturating_add(at(3)).saturating_add(at(4));
        steal = steal.saturating_add(at(7));
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(HostCpuError::MissingCpu {
            path: path.to_owned(),
            cpu: cpus[k],
        });
    }
    Ok((busy, idle, steal))
}

/// `total=` of the `some` line of a pressure file:
/// `some avg10=0.00 avg60=0.00 avg300=0.00 total=12345`.
fn pressure_some_total(text: &str, path: &Path) -> Result<u64, HostCpuError> {
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        if fields.next() != Some("some") {
            continue;
        }
        let total = fields
            .find_map(|f| f.strip_prefix("total="))
            .ok_or_else(|| malformed(path, i, "no `total=`", line))?;
        return total
            .parse()
            .map_err(|_| malformed(path, i, "`total=` is not a count of microseconds", line));
    }
    Err(HostCpuError::NoSomeLine {
        path: path.to_owned(),
    })
}

/// The job's side of a window, from its cgroup's counters (differences over the window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobWindow {
    /// CPU time the job's cgroup used, nanoseconds.
    pub cpu_ns: u64,
    /// Time the CFS throttled the cgroup, nanoseconds.
    pub throttled_ns: u64,
    /// The job's CPU cap, cores.
    pub cap_cores: f64,
    /// CPU time the profiler's own process used, nanoseconds. Its sampling may run on the
    /// job's CPUs (always, when the job is given every core) and is part of every measurement,
    /// so it is not other load; it is taken off the busy time, at most all of what was not the
    /// job's (it may have run on other CPUs).
    pub profiler_ns: u64,
    /// CPU time the profiler's process used in all, nanoseconds: taken off the busy time of
    /// the rest of the CPUs, where it runs while the job does not have them all.
    pub profiler_total_ns: u64,
    /// Time the job's tasks waited on a run queue, nanoseconds summed over its tasks
    /// ([`run_wait::RunWait`]); `None` where it could not be read. Only judged when the
    /// profiler ran elsewhere (`profiler_ns` is then 0): its sampling on the job's CPUs makes
    /// several of the job's threads wait at once, by more than its own CPU time.
    pub run_wait_ns: Option<u64>,
    /// Time some task of the job's cgroup waited for a CPU (its own `cpu.pressure`, `some`,
    /// cgroup v2), nanoseconds; `None` on v1 or without PSI.
    pub pressure_ns: Option<u64>,
}

/// Who used the job's CPUs over one window, in cores (CPU seconds per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowLoad {
    /// Length of the window.
    pub seconds: f64,
    pub job_cores: f64,
    /// Busy time on the job's CPUs that was not the job's; never negative.
    pub other_cores: f64,
    pub idle_cores: f64,
    /// Share of the window some task on the host waited for a CPU, percent; `None` without
    /// PSI.
    pub pressure_pct: Option<f64>,
    /// Of `other_cores`, time a hypervisor gave the job's CPUs to other guests.
    pub steal_cores: f64,
    /// The job's tasks' run-queue wait, in cores (summed over its tasks); `None` where it
    /// could not be read.
    pub run_wait_cores: Option<f64>,
    /// Share of the window some task of the job waited for a CPU, percent (cgroup v2).
    pub job_pressure_pct: Option<f64>,
    /// Busy time of other processes on the rest of the profiler's CPUs (not the job's, the
    /// profiler's own taken off), cores; `None` when the job has them all.
    pub elsewhere_cores: Option<f64>,
    /// What disturbed the window (the module's rule); `None`: undisturbed.
    pub disturbed_by: Option<DisturbedBy>,
}

/// Which part of the rule found a window disturbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisturbedBy {
    /// Other processes' time on the job's CPUs (steal included) took what the job lacked.
    OtherProcesses,
    /// The job's own tasks waited on a run queue while below their cap.
    RunQueueWait,
    /// Other processes kept the rest of the machine's CPUs busy: they share the job's caches,
    /// memory bandwidth and, on hyperthreads or virtual CPUs, its cores.
    BusyElsewhere,
}

impl DisturbedBy {
    pub fn describe(self) -> &'static str {
        match self {
            DisturbedBy::OtherProcesses => "other processes on the job's CPUs",
            DisturbedBy::RunQueueWait => "the job's tasks waiting for a CPU",
            DisturbedBy::BusyElsewhere => "other processes busy on the machine's other CPUs",
        }
    }
}

impl WindowLoad {
    pub fn disturbed(&self) -> bool {
        self.disturbed_by.is_some()
    }
}

/// Judges the window between two snapshots of the job's CPUs, given what the job's cgroup used
/// over the same window. `None` when the window cannot be judged (see the module doc).
pub fn judge(before: &HostSnapshot, after: &HostSnapshot, job: JobWindow) -> Option<WindowLoad> {
    if before.cpus.is_empty() || before.cpus != after.cpus {
        return None;
    }
    let wall = after.at.checked_duration_since(before.at)?;
    if wall < MIN_WINDOW {
        return None;
    }
    let wall_ns = wall.as_nanos() as f64;
    let n = before.cpus.len() as f64;
    let resolution = 2.0 * n * before.tick_ns.max(after.tick_ns) as f64 / wall_ns;
    let busy = after.busy_ns.checked_sub(before.busy_ns)? as f64 / wall_ns;
    let steal = after.steal_ns.saturating_sub(before.steal_ns) as f64 / wall_ns;
    let idle = after.idle_ns.checked_sub(before.idle_ns)? as f64 / wall_ns;
    if busy + idle > n * (1.0 + CAPACITY_SLACK) + resolution {
        return None;
    }
    let (busy, idle_cores) = (busy.min(n), idle.min(n));
    let job_cores = (job.cpu_ns as f64 / wall_ns).min(n);
    let not_job = (busy - job_cores).max(0.0);
    let other_cores = (not_job - job.profiler_ns as f64 / wall_ns).max(0.0);
    let cap = if job.cap_cores.is_finite() && job.cap_cores > 0.0 {
        job.cap_cores.min(n)
    } else {
        n
    };
    let shortfall = cap - job_cores;
    let below_cap = shortfall > BELOW_CAP_CORES.max(BELOW_CAP_SHARE * cap);
    let throttled = job.throttled_ns as f64 / wall_ns >= THROTTLED_S_PER_S;
    let idle_explains = idle_cores >= shortfall;
    let others_took =
        other_cores > OTHER_CORES + OTHER_SHORTFALL_SHARE * shortfall.max(0.0) + resolution;
    let pressure_pct = match (before.pressure_some_us, after.pressure_some_us) {
        (Some(a), Some(b)) => b
            .checked_sub(a)
            .map(|d| (d as f64 * 1e3 / wall_ns * 100.0).clamp(0.0, 100.0)),
        _ => None,
    };
    let job_pressure = job
        .pressure_ns
        .map(|p| (p as f64 / wall_ns).clamp(0.0, 1.0));
    let run_wait_cores = job.run_wait_ns.map(|w| w as f64 / wall_ns);
    let waited = job.profiler_ns == 0
        && run_wait_cores
            .or(job_pressure)
            .is_some_and(|w| w > RUN_WAIT_CORES + RUN_WAIT_SHORTFALL_SHARE * shortfall.max(0.0));
    let elsewhere = busy_elsewhere(before, after, &job, wall_ns);
    let disturbed_by = if below_cap && !throttled && !idle_explains && others_took {
        Some(DisturbedBy::OtherProcesses)
    } else if below_cap
        && !throttled
        && !idle_explains
        && waited
        && not_job > OTHER_CORES + resolution
    {
        Some(DisturbedBy::RunQueueWait)
    } else if elsewhere.is_some_and(|(cores, limit)| cores > limit) {
        Some(DisturbedBy::BusyElsewhere)
    } else {
        None
    };
    Some(WindowLoad {
        seconds: wall.as_secs_f64(),
        job_cores,
        other_cores,
        idle_cores,
        pressure_pct,
        steal_cores: steal.min(n),
        run_wait_cores,
        job_pressure_pct: job_pressure.map(|p| p * 100.0),
        elsewhere_cores: elsewhere.map(|(cores, _)| cores),
        disturbed_by,
    })
}

/// Cores other processes used on the rest of the profiler's CPUs over a window of `wall_ns`,
/// and the most they may use before the window is disturbed (the threshold plus the counters'
/// resolution); `None` when the job had every CPU or the counters do not pair.
fn busy_elsewhere(
    before: &HostSnapshot,
    after: &HostSnapshot,
    job: &JobWindow,
    wall_ns: f64,
) -> Option<(f64, f64)> {
    let (a, b) = (before.rest.as_ref()?, after.rest.as_ref()?);
    if a.cpus != b.cpus {
        return None;
    }
    let n = a.cpus.len() as f64;
    let busy = (b.busy_ns.checked_sub(a.busy_ns)? as f64 / wall_ns).min(n);
    let cores = (busy - job.profiler_total_ns as f64 / wall_ns).max(0.0);
    let resolution = 2.0 * n * before.tick_ns.max(after.tick_ns) as f64 / wall_ns;
    Some((cores, ELSEWHERE_CORES.max(ELSEWHERE_SHARE * n) + resolution))
}

/// Time-weighted mean of an optional per-window value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct OptionalMean {
    seconds: f64,
    sum: f64,
}

impl OptionalMean {
    fn add(&mut self, value: Option<f64>, seconds: f64) {
        if let Some(v) = value {
            self.seconds += seconds;
            self.sum += v * seconds;
        }
    }

    fn mean(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.sum / self.seconds)
    }
}

/// Weighted sums of the loads of some windows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sums {
    seconds: f64,
    other: f64,
    idle: f64,
    steal: f64,
    pressure: OptionalMean,
    run_wait: OptionalMean,
    job_pressure: OptionalMean,
    elsewhere: OptionalMean,
}

impl Sums {
    fn add(&mut self, l: &WindowLoad) {
        self.seconds += l.seconds;
        self.other += l.other_cores * l.seconds;
        self.idle += l.idle_cores * l.seconds;
        self.steal += l.steal_cores * l.seconds;
        self.pressure.add(l.pressure_pct, l.seconds);
        self.run_wait.add(l.run_wait_cores, l.seconds);
        self.job_pressure.add(l.job_pressure_pct, l.seconds);
        self.elsewhere.add(l.elsewhere_cores, l.seconds);
    }

    /// The cell's interference from these windows; `None` when they cover no time.
    fn summary(&self) -> Option<Interference> {
        (self.seconds > 0.0).then(|| Interference {
            other_cores: self.other / self.seconds,
            idle_cores: self.idle / self.seconds,
            cpu_pressure_pct: self.pressure.mean(),
            steal_cores: Some(self.steal / self.seconds).filter(|s| *s > 0.0),
            run_wait_cores: self.run_wait.mean(),
            job_cpu_pressure_pct: self.job_pressure.mean(),
            elsewhere_cores: self.elsewhere.mean(),
            ..Interference::default()
        })
    }
}

/// A cell's windows as the sweep closes them: which to discard, and the cell's summary.
///
/// Push one entry per closed rate window, in order; the last `steady_windows` kept ones are
/// those the throughput estimate uses, and the summary describes them.
#[derive(Debug, Clone)]
pub struct InterferenceTracker {
    steady_windows: usize,
    max_discards: u32,
    discarded: u32,
    /// The last `steady_windows` kept windows (`None`: not judged).
    recent: VecDeque<Option<WindowLoad>>,
    /// Every judged window, discarded ones included: the fallback summary.
    all: Sums,
}

impl InterferenceTracker {
    /// For a cell whose estimate uses its last `steady_windows` windows: at most
    /// [`REMEASURE_PER_STEADY_WINDOW`] x `steady_windows` disturbed windows are discarded.
    pub fn new(steady_windows: usize) -> Self {
        let steady_windows = steady_windows.max(1);
        InterferenceTracker {
            steady_windows,
            max_discards: u32::try_from(steady_windows.saturating_mul(REMEASURE_PER_STEADY_WINDOW))
                .unwrap_or(u32::MAX),
            discarded: 0,
            recent: VecDeque::with_capacity(steady_windows),
            all: Sums::default(),
        }
    }

    /// Records the window just closed (`None`: not judged). Returns whether to discard it and
    /// measure another: it was disturbed and re-measurements are left.
    pub fn push(&mut self, load: Option<WindowLoad>) -> bool {
        if let Some(l) = &load {
            self.all.add(l);
            if l.disturbed() && self.discarded < self.max_discards {
                self.discarded += 1;
                return true;
            }
        }
        if self.recent.len() == self.steady_windows {
            self.recent.pop_front();
        }
        self.recent.push_back(load);
        false
    }

    /// Disturbed windows discarded so far.
    pub fn discarded(&self) -> u32 {
        self.discarded
    }

    /// What disturbed the kept windows, most windows first; empty when none was.
    fn causes(&self) -> Vec<(DisturbedBy, usize)> {
        let mut causes: Vec<(DisturbedBy, usize)> = Vec::new();
        for by in self.recent.iter().flatten().filter_map(|l| l.disturbed_by) {
            match causes.iter_mut().find(|(c, _)| *c == by) {
                Some((_, n)) => *n += 1,
                None => causes.push((by, 1)),
            }
        }
        causes.sort_by_key(|c| std::cmp::Reverse(c.1));
        causes
    }

    /// The cell's interference: means over the windows the estimate uses (over every judged
    /// window where none of those was judged); `None` when no window was judged.
    pub fn summary(&self) -> Option<Interference> {
        let mut used = Sums::default();
        for l in self.recent.iter().flatten() {
            used.add(l);
        }
        let mut summary = used.summary().or_else(|| self.all.summary())?;
        let causes = self.causes();
        summary.discarded_windows = self.discarded;
        summary.disturbed = !causes.is_empty();
        summary.disturbed_by = causes.first().map(|(by, _)| by.describe().to_string());
        Some(summary)
    }

    /// A note for a cell whose estimate still includes disturbed windows: what disturbed it.
    pub fn note(&self) -> Option<String> {
        let s = self.summary().filter(|s| s.disturbed)?;
        let causes = self.causes();
        let n: usize = causes.iter().map(|(_, n)| n).sum();
        let what = match (causes.first(), s.elsewhere_cores) {
            (Some((DisturbedBy::BusyElsewhere, _)), Some(e)) => format!(
                "other processes used {e:.2} cores of the machine's other CPUs, which share the \
                 job's caches and memory bandwidth"
            ),
            _ => {
                let mut what = format!(
                    "other processes used {:.2} cores of the job's CPUs",
                    s.other_cores
                );
                if let Some(steal) = s.steal_cores {
                    what.push_str(&format!(" ({steal:.2} of it stolen by the hypervisor)"));
                }
                if let Some(w) = s.run_wait_cores {
                    what.push_str(&format!(", its tasks waited {w:.2} cores for a CPU"));
                }
                what
            }
        };
        Some(format!(
            "disturbed by {}: {what} in {n} of the windows measured, after {} disturbed \
             windows were measured again; the rate is not the job's own, re-measure on a quiet \
             machine",
            s.disturbed_by.as_deref().unwrap_or("other load"),
            s.discarded_windows
        ))
    }
}
