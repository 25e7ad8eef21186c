//! CPU and memory caps through cgroups (v1 and v2).
//!
//! Every run gets its own cgroup under one profiler-owned parent (`/profiler` by default). Names
//! are checked so nothing from a spec can address a cgroup outside that parent. cgroups-rs
//! creates the cgroups and moves tasks; what differs between the versions (the files that set
//! caps and hold counters) is behind [`Controls`], one file per version (`v1.rs`, `v2.rs`),
//! tested against fixture directories without root.

use cgroups_rs::CgroupPid;
use cgroups_rs::fs::hierarchies;
use cgroups_rs::fs::{Cgroup, Hierarchy};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod cleanup;
mod counters;
pub mod effective;
mod mounts;
mod v1;

pub use cleanup::kill_live_runs;
use cleanup::{LIVE_RUNS, kill_procs, lock_dir, procs_in, remove_dirs, try_lock};
pub use counters::CgroupCounters;
pub use mounts::parent_dirs_of;
use mounts::{ControllerDirs, controllers, mounts};
mod v2;

/// CFS period used for quotas (100 ms, the kernel default).
const CFS_PERIOD_US: u64 = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum CapsError {
    #[error(
        "applying CPU and memory caps needs root (cgroup directories are root-owned); run as root, or pass --no-caps to run the spec once uncapped"
    )]
    NotRoot,
    #[error(
        "cgroup controller `{0}` is not available on this machine (needed for {1}); mount it (cgroup v1) or enable it in cgroup.subtree_control (v2), or pass --no-caps"
    )]
    MissingController(&'static str, &'static str),
    #[error("cgroup name {0:?} is not allowed: expected [A-Za-z0-9_.-], no path separators")]
    BadName(String),
    #[error(
        "--cgroup-parent {0:?} is not allowed: the profiler only creates and removes cgroups under a parent of its own, named `profiler` or `profiler-<something>` ([A-Za-z0-9_.-])"
    )]
    BadParent(String),
    #[error("cgroup {path}: {action}: {message}")]
    Cgroup {
        path: String,
        action: &'static str,
        message: String,
    },
    #[error("{}: writing {value:?}: {source}", path.display())]
    Write {
        path: PathBuf,
        value: String,
        source: std::io::Error,
    },
}

impl CapsError {
    /// The kernel refused a write because it could not comply now: on a lowered memory limit,
    /// it could not reclaim down to it.
    pub fn is_busy(&self) -> bool {
        matches!(self, CapsError::Write { source, .. } if source.raw_os_error() == Some(libc::EBUSY))
    }
}

/// What differs between cgroup v1 and v2 for one cgroup whose controller directories are
/// `dirs` (a single directory on v2).
trait Controls: Sync {
    /// What a fresh cgroup needs before a task joins it.
    fn prepare(&self, dirs: &ControllerDirs, mems: &str) -> Result<(), CapsError>;
    /// Caps CPU at `cores` (CFS quota, fractional), pinned to the first ceil(cores) of `cpus`.
    fn set_cpu(&self, dirs: &ControllerDirs, cpus: &[u32], cores: f64) -> Result<(), CapsError>;
    /// Sets the memory limit (anonymous memory and page cache together, and no swap beyond
    /// it); `None` removes it.
    fn set_memory_limit(&self, dirs: &ControllerDirs, bytes: Option<u64>) -> Result<(), CapsError>;
    /// Caps read bandwidth from block device `major:minor`; `None` removes the cap.
    fn set_read_bps(
        &self,
        dirs: &ControllerDirs,
        device: (u64, u64),
        bytes_per_s: Option<u64>,
    ) -> Result<(), CapsError>;
    fn counters(&self, dirs: &ControllerDirs) -> CgroupCounters;
    /// Freezes every task of the cgroup (they keep their memory and make no progress) or
    /// thaws them; returns once the kernel says they are frozen (or thawed).
    fn set_frozen(&self, dirs: &ControllerDirs, frozen: bool) -> Result<(), CapsError>;
    /// Gives the cgroup the least CPU weight and, where the kernel has `cpu.idle` (5.15 and
    /// later), marks it idle: beside busy tasks its own get the least share of a CPU (a task
    /// that sleeps between short bursts still gets its bursts).
    fn make_idle(&self, dirs: &ControllerDirs) -> Result<(), CapsError>;

    /// Where the cgroups of a process are, from the text of its `/proc/<pid>/cgroup`, with
    /// the hierarchies mounted under `root`. `Ok(None)`: the text names none of this
    /// version's; `Err(controller)`: it names some, but not `controller`'s.
    fn locate(&self, proc_cgroup: &str, root: &Path) -> Result<Option<Located>, &'static str>;
    /// The file listing the CPUs the cgroup at `dir` may use.
    fn cpus_file(&self, dir: &Path) -> PathBuf;
    /// The memory limit set at `dir` itself, bytes (`None`: none there).
    fn memory_limit_at(&self, dir: &Path) -> Option<u64>;
    /// The CFS quota set at `dir` itself, cores (`None`: none there).
    fn quota_cores_at(&self, dir: &Path) -> Option<f64>;
    /// The file whose `oom_kill` line counts the OOM killer's kills in the memory cgroup at
    /// `dir`.
    fn oom_events_file(&self, dir: &Path) -> PathBuf;
}

/// Where a process's cgroups are ([`Controls::locate`]).
struct Located {
    /// Its cgroup's path as `/proc` names it (its memory cgroup's, on v1), for messages.
    pub name: String,
    pub cpuset: PathBuf,
    /// Its memory cgroup, and the root of that hierarchy (limits are the tightest up to it).
    pub memory: PathBuf,
    pub memory_root: PathBuf,
    /// Its cpu cgroup, and the root of that hierarchy.
    pub cpu: PathBuf,
    pub cpu_root: PathBuf,
    /// Whether the cpu cgroup is one of its own, not the hierarchy's root.
    pub cpu_own: bool,
}

/// The path `proc_cgroup` (a `/proc/<pid>/cgroup` text) gives for a v1 `controller`,
/// relative to its hierarchy's root.
fn controller_path(proc_cgroup: &str, controller: &str) -> Option<String> {
    proc_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| path.trim_start_matches('/').to_string())
    })
}

/// The trimmed text of `dir/file`, `None` where it cannot be read.
fn read_text(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file))
        .ok()
        .map(|s| s.trim().to_string())
}

/// How long freezing may take (a task in uninterruptible sleep is frozen when it wakes).
const FREEZE_TIMEOUT: Duration = Duration::from_secs(5);

/// Waits until `done()` or [`FREEZE_TIMEOUT`]; the error names the cgroup and what it shows.
fn wait_frozen(
    dir: &Path,
    action: &'static str,
    done: impl Fn() -> bool,
    shows: impl Fn() -> String,
) -> Result<(), CapsError> {
    let deadline = Instant::now() + FREEZE_TIMEOUT;
    while !done() {
        if Instant::now() > deadline {
            return Err(CapsError::Cgroup {
                path: dir.display().to_string(),
                action,
                message: format!("still {} after {FREEZE_TIMEOUT:?}", shows()),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn controls(version: CgroupVersion) -> &'static dyn Controls {
    match version {
        CgroupVersion::V1 => &v1::V1,
        CgroupVersion::V2 => &v2::V2,
    }
}

/// Writes a control file. Never creates it: a file the kernel does not offer is an error, as
/// it would be on a cgroup file system. The error keeps the `io::Error` (EBUSY matters).
fn write_file(dir: &Path, file: &str, value: &str) -> Result<(), CapsError> {
    use std::io::Write;
    let path = dir.join(file);
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|source| CapsError::Write {
            path,
            value: value.to_string(),
            source,
        })
}

fn read_u64(dir: &Path, file: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join(file))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn read_keyed(dir: &Path, file: &str) -> HashMap<String, u64> {
    keyed(&std::fs::read_to_string(dir.join(file)).unwrap_or_default())
}

/// The CPUs a run capped at `cores` is pinned to: the first ceil(cores) of `cpus`, at least one.
pub fn pinned_cpus(cpus: &[u32], cores: f64) -> Vec<u32> {
    let whole = if cores.is_finite() && cores > 0.0 {
        cores.ceil().min(cpus.len() as f64) as usize
    } else {
        cpus.len()
    };
    cpus.iter().take(whole.max(1)).copied().collect()
}

/// [`pinned_cpus`] as a cpuset list (`0,1`).
fn cpuset_list(cpus: &[u32], cores: f64) -> String {
    let list: Vec<String> = pinned_cpus(cpus, cores)
        .iter()
        .map(|c| c.to_string())
        .collect();
    list.join(",")
}

/// CFS quota per period for `cores`, at least the kernel's least (1 ms).
fn quota_us(cores: f64) -> u64 {
    ((cores * CFS_PERIOD_US as f64).round() as u64).max(1000)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

impl CgroupVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        }
    }
}

/// The profiler-owned parent cgroup. Removed on drop when empty.
pub struct CgroupRoot {
    version: CgroupVersion,
    parent: String,
    /// Controller mount points (v1) or the unified root (v2).
    mounts: ControllerDirs,
    /// Created through cgroups-rs (which sets up cpuset); removed by `Drop`, never recursively.
    _parent_cg: Cgroup,
    /// CPUs the parent may use, in order; a cap of N cores pins to the first ceil(N).
    cpus: Vec<u32>,
    mems: String,
    /// Unique per root (`<pid>.<n>`), in every run's name: whose run it is.
    token: String,
    /// Held (flock) while this root lives: a run whose token's lock nobody holds is stale,
    /// whatever became of the pid (reused, or in another pid namespace).
    lock: Option<(std::fs::File, PathBuf)>,
    /// Why a memory cap might not bound swap here, if it might not.
    swap_note: Option<String>,
}

/// Whether the host has swap a memory cap could be dodged with.
fn host_has_swap() -> bool {
    std::fs::read_to_string("/proc/swaps")
        .is_ok_and(|t| t.lines().skip(1).any(|l| !l.trim().is_empty()))
}

/// Accepts `profiler` and `profiler-...`/`profiler_...`/`profiler....` (one safe component).
fn check_parent(parent: &str) -> Result<(), CapsError> {
    let ours = parent == "profiler"
        || ["profiler-", "profiler_", "profiler."]
            .iter()
            .any(|p| parent.strip_prefix(p).is_some_and(|rest| !rest.is_empty()));
    if ours && crate::spec::is_safe_name(parent) {
        Ok(())
    } else {
        Err(CapsError::BadParent(parent.to_string()))
    }
}

fn hierarchy() -> Box<dyn Hierarchy> {
    hierarchies::auto()
}

fn check_name(name: &str) -> Result<(), CapsError> {
    if crate::spec::is_safe_name(name) {
        Ok(())
    } else {
        Err(CapsError::BadName(name.to_string()))
    }
}

impl CgroupRoot {
    /// Opens (creating if needed) the parent cgroup `parent` directly under the hierarchy root.
    pub fn open(parent: &str) -> Result<Self, CapsError> {
        check_parent(parent)?;
        if !nix::unistd::geteuid().is_root() {
            return Err(CapsError::NotRoot);
        }
        let (version, mounts) = mounts()?;
        let parent_cg = Cgroup::new_with_specified_controllers(
            hierarchy(),
            parent,
            Some(controllers(version, &mounts)),
        )
        .map_err(|e| CapsError::Cgroup {
            path: parent.to_string(),
            action: "create",
            message: e.to_string(),
        })?;
        let pdirs = mounts.join(parent);
        let read = |p: PathBuf| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let read_cpuset = |name: &str| {
            let text = read(pdirs.cpuset.join(format!("{name}.effective")));
            if text.is_empty() {
                read(pdirs.cpuset.join(name))
            } else {
                text
            }
        };
        // A v1 cpuset cgroup starts empty: where another profiler (or thread) has just created
        // the parent, its CPUs and memory nodes are being copied in. Give it a moment.
        let (mut cpus_text, mut mems) = (read_cpuset("cpuset.cpus"), read_cpuset("cpuset.mems"));
        for _ in 0..100 {
            if !cpus_text.is_empty() && !mems.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            (cpus_text, mems) = (read_cpuset("cpuset.cpus"), read_cpuset("cpuset.mems"));
        }
        let cpus = parse_cpu_list(&cpus_text);
        if cpus.is_empty() {
            return Err(CapsError::Cgroup {
                path: parent.to_string(),
                action: "read cpuset.cpus",
                message: format!("no usable CPUs in {cpus_text:?}"),
            });
        }
        static ROOTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let token = format!(
            "{}.{}",
            std::process::id(),
            ROOTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let locks = lock_dir(parent);
        let _ = std::fs::create_dir_all(&locks);
        let lock_path = locks.join(format!("{token}.lock"));
        // A reaper may unlink a lock file between its creation and our flock: hold one that is
        // still the file at that path.
        let lock = (0..3)
            .find_map(|_| {
                use std::os::unix::fs::MetadataExt;
                let file = try_lock(&lock_path, true)?;
                let (held, named) = (file.metadata().ok()?, std::fs::metadata(&lock_path).ok()?);
                (held.ino() == named.ino() && held.dev() == named.dev()).then_some(file)
            })
            .map(|f| (f, lock_path));
        let swap_note = match (version, host_has_swap()) {
            (_, false) => None,
            (CgroupVersion::V1, true)
                if !pdirs.memory.join("memory.memsw.limit_in_bytes").exists() =>
            {
                Some("this host has swap and no swap accounting (boot with swapaccount=1): a capped job may swap instead of being OOM-killed".to_string())
            }
            (CgroupVersion::V2, true) if !pdirs.memory.join("memory.swap.max").exists() => {
                Some("this host has swap and cgroups without memory.swap.max: a capped job may swap instead of being OOM-killed".to_string())
            }
            _ => None,
        };
        let root = CgroupRoot {
            version,
            parent: parent.to_string(),
            mounts,
            _parent_cg: parent_cg,
            cpus,
            mems,
            token,
            lock,
            swap_note,
        };
        root.reap_stale_runs();
        Ok(root)
    }

    /// Why a memory cap might not bound swap on this host (for the matrix's provenance).
    pub fn swap_note(&self) -> Option<&str> {
        self.swap_note.as_deref()
    }

    /// The parent's directory in every hierarchy runs are created in.
    pub fn parent_dirs(&self) -> Vec<PathBuf> {
        self.mounts.join(&self.parent).all()
    }

    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// CPUs runs can be pinned to.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Handle on (creating if needed) the run cgroup `name`, a single safe path component.
    fn run_handle(&self, name: &str) -> Result<RunCgroup, CapsError> {
        check_name(name)?;
        let rel = format!("{}/{}", self.parent, name);
        let dirs = self.mounts.join(&rel);
        // Defence in depth: the directory must be a direct child of the parent.
        if dirs.memory.parent() != Some(self.mounts.memory.join(&self.parent).as_path()) {
            return Err(CapsError::BadName(name.to_string()));
        }
        let cg = Cgroup::new_with_specified_controllers(
            hierarchy(),
            &rel,
            Some(controllers(self.version, &self.mounts)),
        )
        .map_err(|e| CapsError::Cgroup {
            path: rel.clone(),
            action: "create",
            message: e.to_string(),
        })?;
        if let Ok(mut live) = LIVE_RUNS.lock() {
            live.push(dirs.all());
        }
        Ok(RunCgroup {
            cg,
            rel,
            dirs,
            version: self.version,
            cpus: self.cpus.clone(),
        })
    }

    /// Creates the cgroup `name` under the parent. `name` must be a single safe path component.
    pub fn create_run(&self, name: &str) -> Result<RunCgroup, CapsError> {
        let run = self.run_handle(name)?;
        // cpuset needs cpus and mems before a task can join.
        controls(self.version).prepare(&run.dirs, &self.mems)?;
        run.set_cpu(self.cpus.len() as f64)?;
        Ok(run)
    }

    /// Creates the cgroup for launch number `launch` of job `job`.
    pub fn create_launch(&self, job: &str, launch: u32) -> Result<RunCgroup, CapsError> {
        self.remove_own_leftovers(Duration::ZERO);
        let job: String = job.chars().take(40).collect();
        self.create_run(&format!("{job}-{}-{launch}", self.token))
    }

    /// Directory of the parent in the memory hierarchy (for tests and messages).
    pub fn parent_dir(&self) -> PathBuf {
        self.mounts.memory.join(&self.parent)
    }
}

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        self.remove_own_leftovers(Duration::from_secs(10));
        // Not recursive: fails harmlessly while another sweep still has runs under the parent.
        remove_dirs(&self.parent_dirs(), Duration::ZERO);
        if let Some((file, path)) = self.lock.take() {
            let _ = std::fs::remove_file(&path);
            drop(file);
        }
    }
}

/// One run's cgroup. Killing its processes and removing it happens on drop too.
pub struct RunCgroup {
    cg: Cgroup,
    rel: String,
    dirs: ControllerDirs,
    version: CgroupVersion,
    cpus: Vec<u32>,
}

impl RunCgroup {
    /// Caps CPU at `cores` (CFS quota, fractional) and pins to ceil(cores) whole CPUs.
    pub fn set_cpu(&self, cores: f64) -> Result<(), CapsError> {
        controls(self.version).set_cpu(&self.dirs, &self.cpus, cores)
    }

    /// Caps CPU at `cores` on the parent's CPUs `on` (the first ceil(cores) of them), so that
    /// jobs side by side spread their quotas over different CPUs. CPUs the parent does not
    /// have are left out; none left is an error.
    pub fn set_cpu_on(&self, cores: f64, on: &[u32]) -> Result<(), CapsError> {
        let cpus: Vec<u32> = on
            .iter()
            .copied()
            .filter(|c| self.cpus.contains(c))
            .collect();
        if cpus.is_empty() {
            return Err(CapsError::Cgroup {
                path: self.rel.clone(),
                action: "pin",
                message: format!("none of CPUs {on:?} is the parent's ({:?})", self.cpus),
            });
        }
        controls(self.version).set_cpu(&self.dirs, &cpus, cores)
    }

    /// Sets the memory limit (which bounds anonymous memory and page cache together, and swap
    /// where the kernel accounts it); `None` removes it. Lowering it below current usage makes
    /// the kernel reclaim page cache first; [`CapsError::is_busy`] says it could not.
    pub fn set_memory_limit(&self, bytes: Option<u64>) -> Result<(), CapsError> {
        controls(self.version).set_memory_limit(&self.dirs, bytes)
    }

    /// Caps read bandwidth from block device `major:minor` (`None` removes the cap).
    pub fn set_read_bps(
        &self,
        device: (u64, u64),
        bytes_per_s: Option<u64>,
    ) -> Result<(), CapsError> {
        controls(self.version).set_read_bps(&self.dirs, device, bytes_per_s)
    }

    /// Moves a process into this cgroup. Children it forks afterwards inherit the cgroup.
    pub fn add_process(&self, pid: u32) -> Result<(), CapsError> {
        self.cg
            .add_task_by_tgid(CgroupPid::from(pid as u64))
            .map_err(|e| CapsError::Cgroup {
                path: self.rel.clone(),
                action: "add process",
                message: e.to_string(),
            })
    }

    /// The `cgroup.procs` file of every controller directory (one on v2), for a child to
    /// join before it executes the job.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        // Every hierarchy, the freezer's too: a task outside it could not be suspended.
        (self.dirs.all().iter())
            .map(|dir| dir.join("cgroup.procs"))
            .collect()
    }

    /// Process ids currently in the cgroup.
    pub fn pids(&self) -> Vec<u32> {
        procs_in(&self.dirs.memory)
    }

    /// SIGKILLs every process in the cgroup, in every hierarchy, until it is empty (new forks
    /// included).
    pub fn kill_all(&self, timeout: Duration) -> bool {
        kill_procs(&self.dirs.all(), timeout)
    }

    pub fn counters(&self) -> CgroupCounters {
        controls(self.version).counters(&self.dirs)
    }

    /// Makes the cgroup idle: the least CPU weight, and `cpu.idle` where the kernel has it.
    pub fn make_idle(&self) -> Result<(), CapsError> {
        controls(self.version).make_idle(&self.dirs)
    }

    /// Freezes the cgroup's tasks (suspended in place, memory kept) or thaws them.
    pub fn set_frozen(&self, frozen: bool) -> Result<(), CapsError> {
        controls(self.version).set_frozen(&self.dirs, frozen)
    }

    /// The run's own name (the last component of its path).
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }

    /// Path relative to the hierarchy root, e.g. `profiler/resnet18-1234-0`.
    pub fn rel_path(&self) -> &str {
        &self.rel
    }

    /// Directory in the memory hierarchy.
    pub fn memory_dir(&self) -> &Path {
        &self.dirs.memory
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        let dirs = self.dirs.all();
        kill_procs(&dirs, Duration::from_secs(5));
        // rmdir can race with the last exiting task for a moment.
        remove_dirs(&dirs, Duration::from_secs(1));
        if let Ok(mut live) = LIVE_RUNS.lock() {
            live.retain(|d| d != &dirs);
        }
    }
}

/// Parses `key value` lines.
fn keyed(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

/// Fixture cgroup directories in a temp dir: the control files a kernel would show, so the
/// version-specific code is tested without root or the hierarchy it targets.
#[cfg(test)]
mod fixture {
    use super::ControllerDirs;
    use std::path::Path;

    pub struct Fixture {
        _dir: tempfile::TempDir,
        pub dirs: ControllerDirs,
    }

    impl Fixture {
        /// One directory per v1 controller; `files` are (controller, file, content).
        pub fn v1(files: &[(&str, &str, &str)]) -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            let at = |c: &str| dir.path().join(c);
            for (controller, file, content) in files {
                std::fs::create_dir_all(at(controller)).expect("mkdir");
                std::fs::write(at(controller).join(file), content).expect("write");
            }
            let dirs = ControllerDirs {
                cpu: at("cpu"),
                cpuacct: at("cpuacct"),
                cpuset: at("cpuset"),
                memory: at("memory"),
                io: at("blkio"),
                freezer: Some(at("freezer")),
            };
            Fixture { _dir: dir, dirs }
        }

        /// One directory for every controller (v2); `files` are (file, content).
        pub fn v2(files: &[(&str, &str)]) -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            for (file, content) in files {
                std::fs::write(dir.path().join(file), content).expect("write");
            }
            let dirs = ControllerDirs::unified(dir.path().to_path_buf());
            Fixture { _dir: dir, dirs }
        }
    }

    pub fn read(dir: &Path, file: &str) -> String {
        std::fs::read_to_string(dir.join(file))
            .expect("control file")
            .trim()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_errors_keep_the_io_error_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_file(dir.path(), "memory.max", "1").unwrap_err();
        let CapsError::Write {
            ref path,
            ref source,
            ..
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!(path, &dir.path().join("memory.max"));
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert!(!dir.path().join("memory.max").exists(), "never created");
        assert!(
            !e.is_busy(),
            "a missing file is not a limit the kernel cannot meet"
        );
        let busy = CapsError::Write {
            path: path.clone(),
            value: "1".into(),
            source: std::io::Error::from_raw_os_error(libc::EBUSY),
        };
        assert!(busy.is_busy());
    }

    #[test]
    fn parses_cpu_lists_and_keyed_counters() {
        assert_eq!(parse_cpu_list("0-2,5,7-8\n"), vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
        assert_eq!(keyed("cache 12\nrss 3\n").get("rss"), Some(&3));
    }

    #[test]
    fn names_with_path_components_are_rejected() {
        for bad in ["../evil", "a/b", "..", "", "x y"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name("resnet18-12-0").is_ok());
    }

    #[test]
    fn only_profiler_parents_are_accepted() {
        for bad in [
            "system.slice",
            "user.slice",
            "",
            "..",
            "profiler/../x",
            "profilerx",
            "profiler-",
        ] {
            assert!(
                matches!(CgroupRoot::open(bad), Err(CapsError::BadParent(_))),
                "{bad:?} accepted"
            );
        }
        for good in ["profiler", "profiler-test", "profiler_ci", "profiler.a"] {
            assert!(check_parent(good).is_ok(), "{good}");
        }
    }
}
