//! CPU and memory caps through cgroups (v1 and v2).
//!
//! Every run gets its own cgroup under one profiler-owned parent (`/profiler` by default). Names
//! are checked so nothing from a spec can address a cgroup outside that parent. cgroups-rs
//! creates the cgroups and moves tasks; what differs between the versions (the files that set
//! caps and hold counters) is behind [`Controls`], one file per version (`v1.rs`, `v2.rs`),
//! tested against fixture directories without root.

use cgroups_rs::CgroupPid;
use cgroups_rs::fs::hierarchies::{self, V1};
use cgroups_rs::fs::{Cgroup, Controllers, Hierarchy};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod counters;
pub mod effective;
mod v1;

pub use counters::CgroupCounters;
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

/// Where each controller's directory for a given cgroup lives.
#[derive(Debug, Clone)]
struct ControllerDirs {
    cpu: PathBuf,
    cpuacct: PathBuf,
    cpuset: PathBuf,
    memory: PathBuf,
    io: PathBuf,
}

impl ControllerDirs {
    /// Every distinct directory (v1 may mount several controllers together; v2 has one).
    fn all(&self) -> Vec<PathBuf> {
        let mut dirs = vec![
            self.cpu.clone(),
            self.cpuacct.clone(),
            self.cpuset.clone(),
            self.memory.clone(),
            self.io.clone(),
        ];
        dirs.sort();
        dirs.dedup();
        dirs
    }

    fn join(&self, rel: &str) -> ControllerDirs {
        ControllerDirs {
            cpu: self.cpu.join(rel),
            cpuacct: self.cpuacct.join(rel),
            cpuset: self.cpuset.join(rel),
            memory: self.memory.join(rel),
            io: self.io.join(rel),
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

/// Where the owners' lock files live: `/run` is a tmpfs, emptied at boot like the cgroups.
fn lock_dir(parent: &str) -> PathBuf {
    let base = if Path::new("/run").is_dir() {
        PathBuf::from("/run/profiler")
    } else {
        std::env::temp_dir().join("profiler-run")
    };
    base.join(parent)
}

/// Tries to take the lock at `path` without waiting; `Some(file)` holds it.
fn try_lock(path: &Path, create: bool) -> Option<std::fs::File> {
    use std::os::fd::AsRawFd;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .ok()?;
    // SAFETY: flock on a descriptor this function owns.
    let ok = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    ok.then_some(file)
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

/// Run names are `<job>-<token>-<launch>`, the token `<pid>.<n>`: the token, if `name` is one.
fn run_token(name: &str) -> Option<&str> {
    let mut parts = name.rsplitn(3, '-');
    let launch = parts.next()?;
    let token = parts.next()?;
    parts.next()?;
    let (pid, n) = token.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(launch) && digits(pid) && digits(n)).then_some(token)
}

/// SIGKILLs every process in the cgroup directories `dirs` until they are empty or `timeout`
/// passes; true when empty.
fn kill_procs(dirs: &[PathBuf], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let pids: Vec<u32> = dirs.iter().flat_map(|d| procs_in(d)).collect();
        if pids.is_empty() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        for pid in pids {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn procs_in(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Removes the cgroup directories `dirs`, never recursively (a cgroup with children, or
/// processes, stays); retries briefly while the last task exits.
fn remove_dirs(dirs: &[PathBuf], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    for dir in dirs {
        while dir.exists() && std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Directories of the run cgroups alive in this process, for [`kill_live_runs`].
static LIVE_RUNS: std::sync::Mutex<Vec<Vec<PathBuf>>> = std::sync::Mutex::new(Vec::new());

/// Kills every process in this process's run cgroups and removes them: what a second Ctrl-C
/// does before exiting, from the signal thread, while the sweep itself may be anywhere.
pub fn kill_live_runs(timeout: Duration) {
    let runs = match LIVE_RUNS.try_lock() {
        Ok(runs) => runs.clone(),
        // Held only for a push or a remove; if it is held now, take what is there anyway.
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => {
            std::thread::sleep(Duration::from_millis(10));
            LIVE_RUNS.lock().map(|r| r.clone()).unwrap_or_default()
        }
    };
    let all: Vec<PathBuf> = runs.iter().flatten().cloned().collect();
    kill_procs(&all, timeout);
    remove_dirs(&all, timeout);
    // The process exits next, without the parent's own clean-up: remove the parents too where
    // nothing else (another sweep's runs) is left in them.
    let mut parents: Vec<PathBuf> = all
        .iter()
        .filter_map(|d| d.parent())
        .map(PathBuf::from)
        .collect();
    parents.sort();
    parents.dedup();
    remove_dirs(&parents, Duration::ZERO);
}

/// The cgroup version and where each controller is mounted; checks the controllers exist.
fn mounts() -> Result<(CgroupVersion, ControllerDirs), CapsError> {
    Ok(if hierarchies::is_cgroup2_unified_mode() {
        let root = PathBuf::from(hierarchies::UNIFIED_MOUNTPOINT);
        let available =
            std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        // The same four as on v1 (where blkio plays io's part); cgroups-rs would refuse to
        // create the parent with an obscure error if one were missing.
        for (c, why) in [
            ("cpu", "CPU quota"),
            ("cpuset", "core pinning"),
            ("memory", "memory caps"),
            ("io", "storage read accounting"),
        ] {
            if !available.split_whitespace().any(|a| a == c) {
                return Err(CapsError::MissingController(c, why));
            }
        }
        let dirs = ControllerDirs {
            cpu: root.clone(),
            cpuacct: root.clone(),
            cpuset: root.clone(),
            memory: root.clone(),
            io: root,
        };
        (CgroupVersion::V2, dirs)
    } else {
        let v1 = V1::new();
        let mount = |c: Controllers, name: &'static str, why: &'static str| {
            v1.get_mount_point(c)
                .map(|(p, _)| p)
                .ok_or(CapsError::MissingController(name, why))
        };
        let dirs = ControllerDirs {
            cpu: mount(Controllers::Cpu, "cpu", "CPU quota")?,
            cpuacct: mount(Controllers::CpuAcct, "cpuacct", "CPU time accounting")?,
            cpuset: mount(Controllers::CpuSet, "cpuset", "core pinning")?,
            memory: mount(Controllers::Mem, "memory", "memory caps")?,
            io: mount(Controllers::BlkIo, "blkio", "storage read accounting")?,
        };
        (CgroupVersion::V1, dirs)
    })
}

/// The directories of parent cgroup `parent` in every hierarchy runs are created in (v2: one),
/// whether or not they exist: where to look for what a sweep may have left.
pub fn parent_dirs_of(parent: &str) -> Result<Vec<PathBuf>, CapsError> {
    Ok(mounts()?.1.join(parent).all())
}

fn controllers(version: CgroupVersion) -> Vec<String> {
    let names: &[&str] = match version {
        CgroupVersion::V1 => &["cpu", "cpuacct", "cpuset", "memory", "blkio"],
        CgroupVersion::V2 => &["cpu", "cpuset", "memory", "io"],
    };
    names.iter().map(|s| s.to_string()).collect()
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
        let parent_cg =
            Cgroup::new_with_specified_controllers(hierarchy(), parent, Some(controllers(version)))
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

    /// Removes run cgroups left by a profiler that was killed outright (SIGKILL, power loss),
    /// in every hierarchy: a run is stale when nobody holds the lock of the token in its name.
    /// Whatever still runs inside is killed first. Names that are not runs are left alone.
    fn reap_stale_runs(&self) {
        let parents = self.mounts.join(&self.parent).all();
        let mut names: Vec<String> = parents
            .iter()
            .filter_map(|p| std::fs::read_dir(p).ok())
            .flat_map(|d| d.flatten())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        let locks = lock_dir(&self.parent);
        for name in names {
            let Some(token) = run_token(&name) else {
                continue;
            };
            if token == self.token || check_name(&name).is_err() {
                continue;
            }
            let lock_path = locks.join(format!("{token}.lock"));
            let held_elsewhere = lock_path.exists() && try_lock(&lock_path, false).is_none();
            if held_elsewhere {
                continue;
            }
            let dirs: Vec<PathBuf> = parents.iter().map(|p| p.join(&name)).collect();
            kill_procs(&dirs, Duration::from_secs(2));
            remove_dirs(&dirs, Duration::from_secs(1));
            if dirs.iter().all(|d| !d.exists()) {
                let _ = std::fs::remove_file(&lock_path);
            }
        }
        // Lock files of profilers killed before their first run: nobody holds them.
        for entry in std::fs::read_dir(&locks).into_iter().flatten().flatten() {
            let path = entry.path();
            let mine = path.file_name() == Some(format!("{}.lock", self.token).as_ref());
            if !mine && try_lock(&path, false).is_some() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// Removes this profiler's own empty run cgroups that outlived their run: on cgroup v2 a
    /// cgroup stays busy until its last task is released, which for a process tearing down a
    /// CUDA context can take longer than the run's own removal waits. Never kills, and never
    /// touches a run whose handle is still alive.
    fn remove_own_leftovers(&self, timeout: Duration) {
        let live: Vec<PathBuf> = LIVE_RUNS
            .lock()
            .map(|runs| runs.iter().flatten().cloned().collect())
            .unwrap_or_default();
        let dirs: Vec<PathBuf> = self
            .parent_dirs()
            .iter()
            .filter_map(|p| std::fs::read_dir(p).ok())
            .flat_map(|d| d.flatten())
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                e.path().is_dir() && run_token(&name) == Some(self.token.as_str())
            })
            .map(|e| e.path())
            .filter(|d| !live.contains(d) && procs_in(d).is_empty())
            .collect();
        remove_dirs(&dirs, timeout);
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
            Some(controllers(self.version)),
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
        let d = &self.dirs;
        let mut files: Vec<PathBuf> = [&d.cpu, &d.cpuacct, &d.cpuset, &d.memory, &d.io]
            .iter()
            .map(|dir| dir.join("cgroup.procs"))
            .collect();
        files.sort();
        files.dedup();
        files
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
            };
            Fixture { _dir: dir, dirs }
        }

        /// One directory for every controller (v2); `files` are (file, content).
        pub fn v2(files: &[(&str, &str)]) -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            for (file, content) in files {
                std::fs::write(dir.path().join(file), content).expect("write");
            }
            let p = dir.path().to_path_buf();
            let dirs = ControllerDirs {
                cpu: p.clone(),
                cpuacct: p.clone(),
                cpuset: p.clone(),
                memory: p.clone(),
                io: p,
            };
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

    #[test]
    fn run_names_carry_their_owner_token() {
        assert_eq!(run_token("resnet-18-4242.3-7"), Some("4242.3"));
        assert_eq!(run_token("job-4242.0-1"), Some("4242.0"));
        for not_a_run in [
            "job-4242-1",
            "4242.3-7",
            "job-x.3-1",
            "job-4242.3-",
            "cgroup",
        ] {
            assert_eq!(run_token(not_a_run), None, "{not_a_run}");
        }
    }
}
