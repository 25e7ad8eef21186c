//! CPU time and storage reads of a job's process tree, for a job that has no cgroup of its own
//! to count them: inside a Slurm step on cgroup v1, where Slurm confines cpuset and memory but
//! leaves the job in the root `cpuacct` and `blkio` cgroups, and under `--no-caps`.
//!
//! A process's times in `/proc/PID/stat` include `cutime`/`cstime`, and its `/proc/PID/io` the
//! reads, of the children it has reaped, so summing the tree's live processes also counts the
//! workers that exited and were waited for. Only a process reaped by someone outside the tree
//! (an orphan adopted by init) is lost.

use std::collections::HashMap;

/// Cumulative usage of a set of processes; compare two readings for a rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeUsage {
    /// User and system CPU time, nanoseconds, reaped children's included.
    pub cpu_ns: u64,
    /// Bytes the processes made the block layer read (`read_bytes` of `/proc/PID/io`).
    pub read_bytes: u64,
}

/// `root` and every process descended from it, from one scan of `/proc`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            if let Ok(stat) = p.stat() {
                children
                    .entry(stat.ppid as u32)
                    .or_default()
                    .push(stat.pid as u32);
            }
        }
    }
    tree_of(root, &children)
}

/// `root` and its descendants in a parent -> children map.
fn tree_of(root: u32, children: &HashMap<u32, Vec<u32>>) -> Vec<u32> {
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        if let Some(kids) = children.get(&tree[next]) {
            tree.extend(
                kids.iter()
                    .filter(|k| !tree.contains(k))
                    .copied()
                    .collect::<Vec<_>>(),
            );
        }
        next += 1;
    }
    tree
}

/// The usage of `pids` so far; processes that are gone count nothing.
pub fn tree_usage(pids: &[u32]) -> TreeUsage {
    let ns_per_tick = 1e9 / procfs::ticks_per_second() as f64;
    pids.iter()
        .filter_map(|&pid| procfs::process::Process::new(pid as i32).ok())
        .map(|p| {
            let ticks = p.stat().map_or(0, |s| {
                s.utime + s.stime + s.cutime.max(0) as u64 + s.cstime.max(0) as u64
            });
            TreeUsage {
                cpu_ns: (ticks as f64 * ns_per_tick) as u64,
                read_bytes: p.io().map_or(0, |io| io.read_bytes),
            }
        })
        .fold(TreeUsage::default(), |a, b| TreeUsage {
            cpu_ns: a.cpu_ns + b.cpu_ns,
            read_bytes: a.read_bytes + b.read_bytes,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn tree_of_follows_every_generation_once() {
        let children: HashMap<u32, Vec<u32>> =
            [(1, vec![2, 3]), (2, vec![4]), (4, vec![5]), (9, vec![10])].into();
        let mut t = tree_of(1, &children);
        t.sort();
        assert_eq!(t, vec![1, 2, 3, 4, 5]);
        assert_eq!(tree_of(7, &children), vec![7]);
    }

    /// A shell whose child spins for a while: the tree holds the grandchild, and once the child
    /// is reaped its CPU time stays in the tree's total through the shell's `cutime`.
    #[test]
    fn counts_a_busy_child_while_it_runs_and_after_it_is_reaped() {
        let mut sh = Command::new("sh")
            .args(["-c", "timeout 0.6 sh -c 'while :; do :; done'; sleep 5"])
            .spawn()
            .expect("sh runs");
        let root = sh.id();
        let t0 = Instant::now();
        let mut seen_tree = 0;
        while t0.elapsed() < Duration::from_millis(400) {
            seen_tree = seen_tree.max(descendants(root).len());
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(800));
        let after = tree_usage(&descendants(root));
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(
            seen_tree >= 3,
            "sh, timeout and the spinning sh: {seen_tree}"
        );
        // The spinner ran 0.6 s on one core; ticks are 10 ms and it shares the machine.
        let cpu_s = after.cpu_ns as f64 / 1e9;
        assert!((0.2..=0.75).contains(&cpu_s), "{cpu_s} s of CPU");
    }

    /// Reads of a file evicted from the page cache, by a child the shell has reaped: the bytes
    /// reach the tree's total through the shell's own `/proc/PID/io`.
    #[test]
    fn counts_storage_reads_of_a_reaped_child() {
        // On the disk of the build tree: a tmpfs (/tmp) keeps every page whatever fadvise says.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let file = dir.path().join("data");
        let bytes = 8usize << 20;
        std::fs::write(&file, vec![7u8; bytes]).unwrap();
        std::fs::File::open(&file).unwrap().sync_all().unwrap();
        if crate::harness::memory::dataset::block_device_of(&file).is_none() {
            eprintln!("SKIP: the build tree is not on a block device: no storage reads to count");
            return;
        }
        crate::harness::memory::page_cache::evict(std::slice::from_ref(&file));
        let mut sh = Command::new("sh")
            .arg("-c")
            .arg(format!("cat '{}' >/dev/null; sleep 5", file.display()))
            .spawn()
            .expect("sh runs");
        let root = sh.id();
        std::thread::sleep(Duration::from_millis(700));
        let usage = tree_usage(&descendants(root));
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(
            usage.read_bytes >= bytes as u64 * 9 / 10,
            "{} bytes read of {bytes}",
            usage.read_bytes
        );
    }
}
