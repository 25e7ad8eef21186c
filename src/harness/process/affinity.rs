//! Keeping the profiler's own work off the job's CPUs. The profiler samples the job (its
//! processes' memory, its cgroup, its output) while it runs; on the job's CPUs that work would
//! take CPU from the job and look like other load. Where the job is pinned to fewer CPUs than
//! the profiler may use, every thread of the profiler is moved to the others while a cell is
//! measured, and moved back afterwards (processes it starts, and the library's callers, keep
//! the affinity they had).

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The profiler's threads moved off the job's CPUs; dropping it moves them back.
#[derive(Debug)]
pub struct OffJobCpus {
    /// Each thread moved, with the CPUs it was allowed before.
    moved: Vec<(Pid, CpuSet)>,
    /// Every thread was moved.
    complete: bool,
}

impl OffJobCpus {
    /// Moves every thread of this process to the CPUs of `all` that are not in `job`. Nothing
    /// moves where there are none (the job has every CPU). Threads started while it holds
    /// inherit the setting from the thread that starts them.
    pub fn move_off(job: &[u32], all: &[u32]) -> OffJobCpus {
        let mut off = OffJobCpus {
            moved: Vec::new(),
            complete: false,
        };
        let free: Vec<u32> = all.iter().copied().filter(|c| !job.contains(c)).collect();
        let mut set = CpuSet::new();
        if free.is_empty() || free.iter().any(|&c| set.set(c as usize).is_err()) {
            return off;
        }
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return off;
        };
        off.complete = true;
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let tid = Pid::from_raw(tid);
            match sched_getaffinity(tid) {
                Ok(before) if sched_setaffinity(tid, &set).is_ok() => off.moved.push((tid, before)),
                _ => off.complete = false,
            }
        }
        off
    }

    /// Whether the profiler runs off the job's CPUs: every thread was moved.
    pub fn is_off(&self) -> bool {
        self.complete && !self.moved.is_empty()
    }
}

impl Drop for OffJobCpus {
    fn drop(&mut self) {
        for (tid, before) in &self.moved {
            // A thread that has ended since cannot be moved back, nor needs to be.
            let _ = sched_setaffinity(*tid, before);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<u32> {
        let set = sched_getaffinity(Pid::from_raw(0)).unwrap();
        (0..CpuSet::count() as u32)
            .filter(|&c| set.is_set(c as usize).unwrap_or(false))
            .collect()
    }

    /// With more than one CPU, the profiler leaves the job's first CPU while the guard holds,
    /// and has its CPUs back after; a job with every CPU moves nothing.
    #[test]
    fn the_profiler_moves_off_the_jobs_cpus_and_back() {
        let all = allowed();
        if all.len() < 2 {
            eprintln!("SKIPPED: one CPU, nowhere to move to");
            return;
        }
        let off = OffJobCpus::move_off(&all[..1], &all);
        assert!(off.is_off());
        assert!(!allowed().contains(&all[0]));
        drop(off);
        assert_eq!(allowed(), all);
        assert!(!OffJobCpus::move_off(&all, &all).is_off());
        assert_eq!(allowed(), all);
    }
}
