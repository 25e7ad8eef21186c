//! How long the job's own tasks waited for a CPU: the kernel's per-task scheduler statistics,
//! `/proc/PID/task/TID/schedstat` (`<ns on a CPU> <ns runnable on a run queue> <timeslices>`),
//! the same under cgroup v1 and v2. A job that runs below its cap while its tasks wait on a
//! run queue was kept off its CPUs by something else, whatever the per-CPU counters make of
//! who that was.

use std::collections::BTreeMap;
use std::path::Path;

/// A process's threads, relative to its directory under the proc root.
pub const TASK_DIR: &str = "task";
/// A task's scheduler statistics, relative to its directory.
pub const SCHEDSTAT: &str = "schedstat";

/// Run-queue wait of each of a job's tasks at one moment, nanoseconds by thread id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunWait {
    by_task: BTreeMap<u32, u64>,
}

impl RunWait {
    /// Reads every thread of `pids` under `proc_root`. Tasks that end while being read are
    /// left out. `None` when not one task's statistics could be read (a kernel without
    /// scheduler statistics, or no process left).
    pub fn read(proc_root: &Path, pids: &[u32]) -> Option<RunWait> {
        let mut by_task = BTreeMap::new();
        for pid in pids {
            let tasks = proc_root.join(pid.to_string()).join(TASK_DIR);
            let Ok(entries) = std::fs::read_dir(&tasks) else {
                continue;
            };
            for entry in entries.flatten() {
                let Some(tid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                let wait = std::fs::read_to_string(entry.path().join(SCHEDSTAT))
                    .ok()
                    .and_then(|t| parse_schedstat(&t));
                if let Some((_, wait, _)) = wait {
                    by_task.insert(tid, wait);
                }
            }
        }
        (!by_task.is_empty()).then_some(RunWait { by_task })
    }

    /// Wait accrued since `before`, nanoseconds: by each task seen both times, and all of a
    /// task's wait where it started since (its counter began at zero). A task that ended in
    /// between takes its last stretch of wait with it.
    pub fn since(&self, before: &RunWait) -> u64 {
        self.by_task
            .iter()
            .map(|(tid, &now)| match before.by_task.get(tid) {
                Some(&then) => now.saturating_sub(then),
                None => now,
            })
            .fold(0u64, u64::saturating_add)
    }

    /// Tasks read.
    pub fn tasks(&self) -> usize {
        self.by_task.len()
    }
}

/// The three counters of a schedstat file; `None` unless it is three unsigned integers.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let on_cpu = fields.next()?.ok()?;
    let waiting = fields.next()?.ok()?;
    let slices = fields.next()?.ok()?;
    fields.next().is_none().then_some((on_cpu, waiting, slices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn task(root: &Path, pid: u32, tid: u32, text: &str) {
        let dir = root
            .join(pid.to_string())
            .join(TASK_DIR)
            .join(tid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SCHEDSTAT), text).unwrap();
    }

    #[test]
    fn wait_since_counts_every_thread_of_every_process() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        task(root, 10, 10, "500 1000 3\n");
        task(root, 10, 11, "500 2000 3\n");
        task(root, 20, 20, "500 0 1\n");
        let before = RunWait::read(root, &[10, 20]).unwrap();
        assert_eq!(before.tasks(), 3);
        task(root, 10, 10, "900 1500 5\n");
        task(root, 10, 11, "900 2100 5\n");
        task(root, 20, 20, "900 300 2\n");
        // A thread born in between, and one that is not the job's (pid 30) to ignore.
        task(root, 10, 12, "100 400 1\n");
        task(root, 30, 30, "100 99999 1\n");
        let after = RunWait::read(root, &[10, 20]).unwrap();
        assert_eq!(after.since(&before), 500 + 100 + 300 + 400);
    }

    #[test]
    fn no_statistics_is_none_and_malformed_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(RunWait::read(dir.path(), &[1, 2]), None);
        task(dir.path(), 1, 1, "garbage\n");
        assert_eq!(RunWait::read(dir.path(), &[1]), None);
        task(dir.path(), 1, 2, "1 2 3\n");
        assert_eq!(RunWait::read(dir.path(), &[1]).unwrap().tasks(), 1);
    }

    /// The real thing: this test's own thread, spinning, is seen with a schedstat line.
    #[test]
    fn reads_this_process_from_the_real_proc() {
        let me = std::process::id();
        match RunWait::read(Path::new("/proc"), &[me]) {
            Some(w) => assert!(w.tasks() >= 1),
            None => eprintln!("SKIPPED: this kernel has no per-task schedstat"),
        }
    }

    proptest! {
        /// Whatever the file holds, parsing never panics, and three integers parse.
        #[test]
        fn parse_never_panics(text in ".{0,60}", a: u64, b: u64, c: u64) {
            let _ = parse_schedstat(&text);
            prop_assert_eq!(parse_schedstat(&format!("{a} {b} {c}\n")), Some((a, b, c)));
        }
    }
}
