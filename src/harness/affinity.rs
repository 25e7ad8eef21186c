//! Keeping the profiler's own work off the job's CPUs. The profiler samples the job (its
//! processes' memory, its cgroup, its output) while it runs; on the job's CPUs that work would
//! take CPU from the job and look like other load. Where the job is pinned to fewer CPUs than
//! the profiler may use, every thread of the profiler is moved to the others.

use nix::sched::{CpuSet, sched_setaffinity};
use nix::unistd::Pid;

/// Moves every thread of this process to the CPUs of `all` that are not in `job`; where there
/// are none (the job has every CPU), to all of `all`. Returns whether the profiler now runs off
/// the job's CPUs. Threads started later inherit the setting from the thread that starts them.
pub fn keep_profiler_off(job: &[u32], all: &[u32]) -> bool {
    let free: Vec<u32> = all.iter().copied().filter(|c| !job.contains(c)).collect();
    let (target, off) = if free.is_empty() {
        (all, false)
    } else {
        (&free[..], true)
    };
    let mut set = CpuSet::new();
    for &cpu in target {
        if set.set(cpu as usize).is_err() {
            return false;
        }
    }
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return false;
    };
    let mut all_moved = true;
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        all_moved &= sched_setaffinity(Pid::from_raw(tid), &set).is_ok();
    }
    off && all_moved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<u32> {
        let set = nix::sched::sched_getaffinity(Pid::from_raw(0)).unwrap();
        (0..CpuSet::count() as u32)
            .filter(|&c| set.is_set(c as usize).unwrap_or(false))
            .collect()
    }

    /// With more than one CPU, the profiler leaves the job's first CPU, and comes back to all
    /// of them when the job has every CPU.
    #[test]
    fn the_profiler_moves_off_the_jobs_cpus_and_back() {
        let all = allowed();
        if all.len() < 2 {
            eprintln!("SKIPPED: one CPU, nowhere to move to");
            return;
        }
        assert!(keep_profiler_off(&all[..1], &all));
        assert!(!allowed().contains(&all[0]));
        assert!(!keep_profiler_off(&all, &all));
        assert_eq!(allowed(), all);
    }
}
