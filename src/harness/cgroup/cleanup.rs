//! What runs leave behind, and who removes it: killing a cgroup's processes (thawed first),
//! removing its directories, the runs alive in this process (killed by a second Ctrl-C), and
//! the runs of a profiler killed outright (SIGKILL, power loss), reaped by the next one to
//! open the same parent: a run is stale when nobody holds the lock of the token in its name.

use super::{CgroupRoot, check_name, v1, write_file};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the owners' lock files live: `/run` is a tmpfs, emptied at boot like the cgroups.
pub(super) fn lock_dir(parent: &str) -> PathBuf {
    let base = if Path::new("/run").is_dir() {
        PathBuf::from("/run/profiler")
    } else {
        std::env::temp_dir().join("profiler-run")
    };
    base.join(parent)
}

/// Tries to take the lock at `path` without waiting; `Some(file)` holds it.
pub(super) fn try_lock(path: &Path, create: bool) -> Option<std::fs::File> {
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

/// Run names are `<job>-<token>-<launch>`, the token `<pid>.<n>`: the token, if `name` is one.
pub(super) fn run_token(name: &str) -> Option<&str> {
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
pub(super) fn kill_procs(dirs: &[PathBuf], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    // A frozen v1 task takes no signal until it is thawed (v2 lets SIGKILL through).
    for dir in dirs {
        if dir.join(v1::FREEZER_STATE).exists() {
            let _ = write_file(dir, v1::FREEZER_STATE, v1::THAWED);
        }
    }
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

pub(super) fn procs_in(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Removes the cgroup directories `dirs`, never recursively (a cgroup with children, or
/// processes, stays); retries briefly while the last task exits.
pub(super) fn remove_dirs(dirs: &[PathBuf], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    for dir in dirs {
        while dir.exists() && std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Directories of the run cgroups alive in this process, for [`kill_live_runs`].
pub(super) static LIVE_RUNS: std::sync::Mutex<Vec<Vec<PathBuf>>> =
    std::sync::Mutex::new(Vec::new());

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

impl CgroupRoot {
    /// Removes run cgroups left by a profiler that was killed outright (SIGKILL, power loss),
    /// in every hierarchy: a run is stale when nobody holds the lock of the token in its name.
    /// Whatever still runs inside is killed first. Names that are not runs are left alone.
    pub(super) fn reap_stale_runs(&self) {
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
    pub(super) fn remove_own_leftovers(&self, timeout: Duration) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
