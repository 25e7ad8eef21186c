//! The caps of the cgroup this process already runs in (a Slurm step's, which Slurm owns): its
//! cpuset, CFS quota and memory limit, each the tightest along the path to the root; and the
//! counters of a job that runs in it beside this process.

use super::{CgroupCounters, CgroupVersion, ControllerDirs, controls, parse_cpu_list};
use crate::harness::process::tree::TreeUsage;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum EffectiveCapsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("/proc/self/cgroup names no {0} cgroup")]
    NoCgroup(&'static str),
}

/// Caps in force on this process, whoever set them.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveCaps {
    /// CPUs of the cpuset.
    pub cpus: Vec<u32>,
    /// CFS quota in cores, when one is set anywhere on the path.
    pub quota_cores: Option<f64>,
    /// Memory limit in bytes, when one is set anywhere on the path.
    pub memory_limit: Option<u64>,
    /// The memory cgroup's path (for messages).
    pub cgroup: String,
    /// The file of this process's memory cgroup whose `oom_kill` line counts the processes the
    /// OOM killer took in it (v1 `memory.oom_control`, v2 `memory.events`): a job this process
    /// started is in the same cgroup.
    pub oom_events: PathBuf,
    /// Where the step's counters are: its memory cgroup, and its cpu cgroup where it has one
    /// of its own (Slurm on v1 leaves `cpu` and `blkio` at the root).
    counted: Counted,
}

#[derive(Debug, Clone, PartialEq)]
struct Counted {
    version: CgroupVersion,
    memory: PathBuf,
    cpu: Option<PathBuf>,
}

impl EffectiveCaps {
    /// This process's caps, from /proc/self/cgroup and the hierarchies under /sys/fs/cgroup.
    pub fn of_self() -> Result<EffectiveCaps, EffectiveCapsError> {
        let path = Path::new("/proc/self/cgroup");
        let text = std::fs::read_to_string(path).map_err(|source| EffectiveCapsError::Read {
            path: path.into(),
            source,
        })?;
        EffectiveCaps::read(&text, Path::new("/sys/fs/cgroup"))
    }

    /// The caps of the cgroups `proc_cgroup` (the text of /proc/<pid>/cgroup) names, with the
    /// hierarchies mounted under `root`: v1 where a cpuset line names a controller, else v2.
    pub fn read(proc_cgroup: &str, root: &Path) -> Result<EffectiveCaps, EffectiveCapsError> {
        let mut found = None;
        for version in [CgroupVersion::V1, CgroupVersion::V2] {
            match controls(version).locate(proc_cgroup, root) {
                Ok(Some(at)) => {
                    found = Some((version, at));
                    break;
                }
                Ok(None) => {}
                Err(controller) => return Err(EffectiveCapsError::NoCgroup(controller)),
            }
        }
        let (version, at) = found.ok_or(EffectiveCapsError::NoCgroup("unified (v2)"))?;
        let c = controls(version);
        let cpus = parse_cpu_list(&read(&c.cpus_file(&at.cpuset))?);
        let memory_limit = tightest(&at.memory_root, &at.memory, |d| c.memory_limit_at(d));
        let quota_cores = tightest(&at.cpu_root, &at.cpu, |d| c.quota_cores_at(d));
        Ok(EffectiveCaps {
            cpus,
            quota_cores,
            memory_limit,
            oom_events: c.oom_events_file(&at.memory),
            counted: Counted {
                version,
                memory: at.memory,
                cpu: at.cpu_own.then_some(at.cpu),
            },
            cgroup: at.name,
        })
    }

    /// Processes the OOM killer took in this process's memory cgroup so far; `None` where the
    /// kernel does not say.
    pub fn oom_kills(&self) -> Option<u64> {
        let text = read_opt(&self.oom_events)?;
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
    }

    /// The counters of a job running in this cgroup beside this process: memory, shared
    /// memory, page cache and OOM kills from the memory cgroup, less this process's own
    /// anonymous memory; throttling from the cpu cgroup where the step has its own (with none,
    /// no quota applies to it and nothing is throttled); CPU time and storage reads from the
    /// job's process tree (`job`), which leaves this process out.
    pub fn counters(&self, job: TreeUsage) -> CgroupCounters {
        self.counters_beside(job, own_anon_bytes())
    }

    /// [`EffectiveCaps::counters`] beside a process holding `own_anon` bytes of anonymous memory.
    fn counters_beside(&self, job: TreeUsage, own_anon: u64) -> CgroupCounters {
        let c = &self.counted;
        // Controllers the step has no cgroup of point at its memory cgroup, which holds none
        // of their files: they read as zero.
        let cpu = c.cpu.clone().unwrap_or_else(|| c.memory.clone());
        let dirs = ControllerDirs {
            cpu: cpu.clone(),
            cpuacct: cpu,
            cpuset: c.memory.clone(),
            memory: c.memory.clone(),
            io: c.memory.clone(),
            freezer: None,
        };
        let mut counters = controls(c.version).counters(&dirs);
        counters.anon_bytes = counters.anon_bytes.saturating_sub(own_anon);
        counters.memory_usage_bytes = counters.memory_usage_bytes.saturating_sub(own_anon);
        counters.cpu_usage_ns = job.cpu_ns;
        // The step's cgroup holds the profiler as well: its system time is not the job's.
        counters.cpu_system_ns = None;
        counters.read_bytes = job.read_bytes;
        counters
    }

    /// Cores the process may use: its cpuset, or less under a quota.
    pub fn cores(&self) -> f64 {
        let n = self.cpus.len() as f64;
        self.quota_cores.map_or(n, |q| q.min(n))
    }

    /// Whether these caps are those of a point at `cpu` whole cores and at least `memory`
    /// bytes; if not, what differs.
    pub fn check(&self, cpu: f64, memory: Option<u64>) -> Result<(), String> {
        let cores = self.cores();
        if (cores - cpu).abs() > 1e-6 {
            return Err(format!(
                "the cgroup {} allows {cores} core(s) (cpuset of {} CPUs{}), the point asks for {cpu}",
                self.cgroup,
                self.cpus.len(),
                self.quota_cores
                    .map(|q| format!(", quota {q}"))
                    .unwrap_or_default()
            ));
        }
        match (memory, self.memory_limit) {
            (Some(want), None) => Err(format!(
                "the cgroup {} has no memory limit, the point asks for {want} bytes \
                 (Slurm needs ConstrainRAMSpace=yes)",
                self.cgroup
            )),
            (Some(want), Some(have)) if have < want => Err(format!(
                "the cgroup {} allows {have} bytes of memory, the point needs {want}",
                self.cgroup
            )),
            _ => Ok(()),
        }
    }
}

/// This process's anonymous resident memory (`RssAnon`), bytes.
fn own_anon_bytes() -> u64 {
    procfs::process::Process::myself()
        .and_then(|p| p.status())
        .ok()
        .and_then(|s| s.rssanon)
        .map_or(0, |kb| kb * 1024)
}

/// The smallest value `limit` finds in `dir` and its ancestors up to `root`.
fn tightest<T: PartialOrd + Copy>(
    root: &Path,
    dir: &Path,
    limit: impl Fn(&Path) -> Option<T>,
) -> Option<T> {
    let mut dir = dir.to_path_buf();
    let mut best: Option<T> = None;
    loop {
        if let Some(v) = limit(&dir) {
            best = Some(match best {
                Some(b) if b < v => b,
                _ => v,
            });
        }
        if dir == root || !dir.pop() || !dir.starts_with(root) {
            return best;
        }
    }
}

fn read(path: &Path) -> Result<String, EffectiveCapsError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|source| EffectiveCapsError::Read {
            path: path.into(),
            source,
        })
}

fn read_opt(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::cgroup::{v1, v2};

    fn write(root: &Path, rel: &str, file: &str, content: &str) {
        let d = root.join(rel);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(file), content).unwrap();
    }

    /// A Slurm step under cgroup v1: cpuset on the step, memory limit on the job, the task's
    /// own memory cgroup unlimited.
    #[test]
    fn v1_slurm_step_takes_the_tightest_limit_on_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let step = "slurm_n/uid_0/job_4/step_0";
        write(r, &format!("cpuset/{step}"), v1::CPUSET_CPUS, "1\n");
        write(r, "memory", v1::MEMORY_LIMIT, "9223372036854771712\n");
        write(
            r,
            "memory/slurm_n/uid_0/job_4",
            v1::MEMORY_LIMIT,
            "314572800\n",
        );
        write(
            r,
            &format!("memory/{step}"),
            v1::MEMORY_LIMIT,
            "419430400\n",
        );
        write(
            r,
            &format!("memory/{step}/task_0"),
            v1::MEMORY_LIMIT,
            "9223372036854771712\n",
        );
        write(r, "cpu,cpuacct", v1::CFS_QUOTA, "-1\n");
        write(r, "cpu,cpuacct", v1::CFS_PERIOD, "100000\n");
        let proc = format!(
            "6:freezer:/{step}\n4:memory:/{step}/task_0\n3:cpuset:/{step}\n1:cpu,cpuacct:/\n0::/\n"
        );
        let caps = EffectiveCaps::read(&proc, r).unwrap();
        assert_eq!(caps.cpus, vec![1]);
        assert_eq!(caps.memory_limit, Some(314572800));
        assert_eq!(caps.quota_cores, None);
        assert_eq!(caps.cores(), 1.0);
        assert!(caps.check(1.0, Some(300 << 20)).is_ok());
        let e = caps.check(2.0, None).unwrap_err();
        assert!(
            e.contains("allows 1 core(s)") && e.contains("asks for 2"),
            "{e}"
        );
        let e = caps.check(1.0, Some(400 << 20)).unwrap_err();
        assert!(e.contains("allows 314572800 bytes"), "{e}");
        // The OOM killer counts its kills in the memory cgroup of the process it took: the
        // task's, where this process and the job it starts run.
        assert_eq!(caps.oom_kills(), None, "no file yet");
        write(
            r,
            &format!("memory/{step}/task_0"),
            v1::OOM_CONTROL,
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        );
        assert_eq!(caps.oom_kills(), Some(2));
        // The task's memory cgroup counts the job and this process; Slurm left cpu and blkio
        // at the root, so CPU time and reads come from the job's process tree, and nothing is
        // throttled without a quota.
        write(
            r,
            &format!("memory/{step}/task_0"),
            v1::MEMORY_STAT,
            "cache 1\nrss 2\ntotal_cache 314572800\ntotal_rss 209715200\ntotal_shmem 1048576\n",
        );
        write(
            r,
            &format!("memory/{step}/task_0"),
            v1::MEMORY_USAGE,
            "524288000\n",
        );
        write(
            r,
            "cpu,cpuacct",
            v1::CPU_STAT,
            "nr_throttled 9\nthrottled_time 99\n",
        );
        write(r, "cpu,cpuacct", v1::CPUACCT_USAGE, "123456789\n");
        let job = TreeUsage {
            cpu_ns: 5_000_000_000,
            read_bytes: 4096,
        };
        let c = caps.counters_beside(job, 10 << 20);
        assert_eq!(c.cpu_usage_ns, job.cpu_ns);
        assert_eq!(c.read_bytes, 4096);
        assert_eq!(c.throttled_ns, 0, "the root's cpu.stat is not the step's");
        assert_eq!(c.anon_bytes, 190 << 20);
        assert_eq!(c.memory_usage_bytes, 490 << 20);
        assert_eq!((c.shmem_bytes, c.page_cache_bytes), (1 << 20, 300 << 20));
        assert_eq!(c.oom_kills, 2);
    }

    #[test]
    fn v1_quota_below_the_cpuset_counts() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "cpuset/a", v1::CPUSET_CPUS, "0-3\n");
        write(r, "cpu/a", v1::CFS_QUOTA, "150000\n");
        write(r, "cpu/a", v1::CFS_PERIOD, "100000\n");
        let proc = "3:cpuset:/a\n2:memory:/a\n1:cpu:/a\n";
        let caps = EffectiveCaps::read(proc, r).unwrap();
        assert_eq!(caps.cores(), 1.5);
        assert_eq!(caps.memory_limit, None);
        let e = caps.check(1.5, Some(1)).unwrap_err();
        assert!(e.contains("no memory limit"), "{e}");
    }

    #[test]
    fn v2_reads_effective_cpus_cpu_max_and_memory_max() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let step = "system.slice/slurmstepd.scope/job_7/step_0/user/task_0";
        write(r, step, "cpuset.cpus.effective", "2-3\n");
        write(r, step, v2::MEMORY_MAX, "max\n");
        write(
            r,
            "system.slice/slurmstepd.scope/job_7",
            v2::MEMORY_MAX,
            "1073741824\n",
        );
        write(r, step, v2::CPU_MAX, "max 100000\n");
        write(
            r,
            step,
            v2::MEMORY_EVENTS,
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        );
        let caps = EffectiveCaps::read(&format!("0::/{step}\n"), r).unwrap();
        assert_eq!(caps.cpus, vec![2, 3]);
        assert_eq!(caps.memory_limit, Some(1 << 30));
        assert_eq!(caps.quota_cores, None);
        assert!(caps.check(2.0, Some(1 << 30)).is_ok());
        assert_eq!(caps.oom_kills(), Some(1));
        // On v2 the step's one directory holds every counter; CPU time and reads still come
        // from the job's process tree, which leaves the profiler out.
        write(
            r,
            step,
            v2::MEMORY_STAT,
            "anon 20971520\nfile 8192\nshmem 4096\n",
        );
        write(
            r,
            step,
            v2::CPU_STAT,
            "usage_usec 999999999\nnr_throttled 3\nthrottled_usec 250\n",
        );
        let c = caps.counters_beside(
            TreeUsage {
                cpu_ns: 7,
                read_bytes: 8,
            },
            1 << 20,
        );
        assert_eq!((c.cpu_usage_ns, c.read_bytes), (7, 8));
        assert_eq!(c.throttled_ns, 250_000);
        assert_eq!(c.anon_bytes, 19 << 20);
        assert_eq!(
            (c.shmem_bytes, c.page_cache_bytes, c.oom_kills),
            (4096, 8192, 1)
        );
    }

    /// This test process holds anonymous memory of its own: the amount taken off a step's.
    #[test]
    fn own_anonymous_memory_is_read() {
        assert!(own_anon_bytes() > 1 << 20, "{}", own_anon_bytes());
    }

    #[test]
    fn missing_cpuset_file_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = EffectiveCaps::read("0::/x\n", dir.path()).unwrap_err();
        assert!(e.to_string().contains("cpuset.cpus.effective"), "{e}");
    }
}
