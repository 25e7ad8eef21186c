//! The caps of the cgroup this process already runs in (a Slurm step's, which Slurm owns): its
//! cpuset, CFS quota and memory limit, each the tightest along the path to the root.

use super::{parse_cpu_list, v1, v2};
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
}

/// Limits at or above this are the kernel's "unlimited" (v1 writes 2^63 rounded to a page).
const V1_UNLIMITED: u64 = 1 << 62;

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
        let path_of = |controller: &str| {
            proc_cgroup.lines().find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
                ctrls
                    .split(',')
                    .any(|c| c == controller)
                    .then(|| path.to_string())
            })
        };
        let rel = |p: &str| p.trim_start_matches('/').to_string();
        if let Some(cpuset) = path_of("cpuset") {
            let memory = path_of("memory").ok_or(EffectiveCapsError::NoCgroup("memory"))?;
            let cpu = path_of("cpu").ok_or(EffectiveCapsError::NoCgroup("cpu"))?;
            let cpu_root = ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
                .iter()
                .map(|d| root.join(d))
                .find(|d| d.is_dir())
                .unwrap_or_else(|| root.join("cpu"));
            let cpus_file = root.join("cpuset").join(rel(&cpuset)).join(v1::CPUSET_CPUS);
            let cpus = parse_cpu_list(&read(&cpus_file)?);
            let memory_limit = tightest(&root.join("memory"), &rel(&memory), |dir| {
                let v: u64 = read_opt(&dir.join(v1::MEMORY_LIMIT))?.parse().ok()?;
                (v < V1_UNLIMITED).then_some(v)
            });
            let quota_cores = tightest(&cpu_root, &rel(&cpu), |dir| {
                let quota: i64 = read_opt(&dir.join(v1::CFS_QUOTA))?.parse().ok()?;
                let period: i64 = read_opt(&dir.join(v1::CFS_PERIOD))?.parse().ok()?;
                (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
            });
            Ok(EffectiveCaps {
                cpus,
                quota_cores,
                memory_limit,
                oom_events: root.join("memory").join(rel(&memory)).join(v1::OOM_CONTROL),
                cgroup: memory,
            })
        } else {
            let path = proc_cgroup
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .ok_or(EffectiveCapsError::NoCgroup("unified (v2)"))?;
            let dir = root.join(rel(path));
            let cpus_file = dir.join(format!("{}.effective", v2::CPUSET_CPUS));
            let cpus = parse_cpu_list(&read(&cpus_file)?);
            let memory_limit = tightest(root, &rel(path), |d| {
                read_opt(&d.join(v2::MEMORY_MAX))?.parse().ok()
            });
            let quota_cores = tightest(root, &rel(path), |d| {
                let text = read_opt(&d.join(v2::CPU_MAX))?;
                let mut f = text.split_whitespace();
                let quota: f64 = f.next()?.parse().ok()?;
                let period: f64 = f.next()?.parse().ok()?;
                (period > 0.0).then(|| quota / period)
            });
            Ok(EffectiveCaps {
                cpus,
                quota_cores,
                memory_limit,
                oom_events: dir.join(v2::MEMORY_EVENTS),
                cgroup: path.to_string(),
            })
        }
    }

    /// Processes the OOM killer took in this process's memory cgroup so far; `None` where the
    /// kernel does not say.
    pub fn oom_kills(&self) -> Option<u64> {
        let text = read_opt(&self.oom_events)?;
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
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

/// The smallest value `limit` finds in `rel` and its ancestors under `root`.
fn tightest<T: PartialOrd + Copy>(
    root: &Path,
    rel: &str,
    limit: impl Fn(&Path) -> Option<T>,
) -> Option<T> {
    let mut dir = root.join(rel);
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
    }

    #[test]
    fn missing_cpuset_file_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = EffectiveCaps::read("0::/x\n", dir.path()).unwrap_err();
        assert!(e.to_string().contains("cpuset.cpus.effective"), "{e}");
    }
}
