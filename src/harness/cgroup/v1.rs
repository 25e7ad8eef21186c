//! cgroup v1: one hierarchy per controller (cpu, cpuacct, cpuset, memory, blkio).

use super::{CFS_PERIOD_US, CapsError, CgroupCounters, ControllerDirs, Controls, read_keyed};
use super::{
    Located, controller_path, cpuset_list, quota_us, read_text, read_u64, wait_frozen, write_file,
};
use std::path::{Path, PathBuf};

pub const CPUSET_CPUS: &str = "cpuset.cpus";
pub const CPUSET_MEMS: &str = "cpuset.mems";
pub const CFS_PERIOD: &str = "cpu.cfs_period_us";
pub const CFS_QUOTA: &str = "cpu.cfs_quota_us";
pub const CPU_STAT: &str = "cpu.stat";
pub const CPU_SHARES: &str = "cpu.shares";
/// Linux 5.15 and later.
pub const CPU_IDLE: &str = "cpu.idle";
pub const CPUACCT_USAGE: &str = "cpuacct.usage";
pub const CPUACCT_USAGE_SYS: &str = "cpuacct.usage_sys";
pub const MEMORY_LIMIT: &str = "memory.limit_in_bytes";
/// Memory + swap; present only where the kernel accounts swap.
pub const MEMSW_LIMIT: &str = "memory.memsw.limit_in_bytes";
pub const MEMORY_USAGE: &str = "memory.usage_in_bytes";
pub const MEMORY_STAT: &str = "memory.stat";
pub const OOM_CONTROL: &str = "memory.oom_control";
pub const READ_BPS: &str = "blkio.throttle.read_bps_device";
pub const SERVICE_BYTES: &str = "blkio.throttle.io_service_bytes";
pub const FREEZER_STATE: &str = "freezer.state";
pub const FROZEN: &str = "FROZEN";
pub const THAWED: &str = "THAWED";

/// "No limit" for the memory files.
const UNLIMITED: &str = "-1";
/// Limits at or above this read as the kernel's "unlimited" (it writes 2^63 rounded to a page).
const UNLIMITED_BYTES: u64 = 1 << 62;

pub struct V1;

impl Controls for V1 {
    fn prepare(&self, dirs: &ControllerDirs, mems: &str) -> Result<(), CapsError> {
        // A task cannot join a cpuset without memory nodes; v1 copies them from the parent
        // only when the parent has them.
        write_file(&dirs.cpuset, CPUSET_MEMS, mems)
    }

    fn set_cpu(&self, dirs: &ControllerDirs, cpus: &[u32], cores: f64) -> Result<(), CapsError> {
        write_file(&dirs.cpuset, CPUSET_CPUS, &cpuset_list(cpus, cores))?;
        write_file(&dirs.cpu, CFS_PERIOD, &CFS_PERIOD_US.to_string())?;
        write_file(&dirs.cpu, CFS_QUOTA, &quota_us(cores).to_string())
    }

    /// Where swap is accounted, memory + swap gets the same limit, so the job cannot swap.
    fn set_memory_limit(&self, dirs: &ControllerDirs, bytes: Option<u64>) -> Result<(), CapsError> {
        let value = bytes.map_or(UNLIMITED.to_string(), |b| b.to_string());
        let dir = &dirs.memory;
        if !dir.join(MEMSW_LIMIT).exists() {
            return write_file(dir, MEMORY_LIMIT, &value);
        }
        // The kernel keeps memsw >= the memory limit: lower memory first, raise memsw first.
        let current = read_u64(dir, MEMORY_LIMIT).unwrap_or(u64::MAX);
        if bytes.is_some_and(|b| b <= current) {
            write_file(dir, MEMORY_LIMIT, &value)?;
            write_file(dir, MEMSW_LIMIT, &value)
        } else {
            write_file(dir, MEMSW_LIMIT, &value)?;
            write_file(dir, MEMORY_LIMIT, &value)
        }
    }

    fn set_read_bps(
        &self,
        dirs: &ControllerDirs,
        (major, minor): (u64, u64),
        bytes_per_s: Option<u64>,
    ) -> Result<(), CapsError> {
        // 0 removes the device's rule.
        let value = format!("{major}:{minor} {}", bytes_per_s.unwrap_or(0));
        write_file(&dirs.io, READ_BPS, &value)
    }

    fn counters(&self, dirs: &ControllerDirs) -> CgroupCounters {
        let mem = read_keyed(&dirs.memory, MEMORY_STAT);
        let cpu = read_keyed(&dirs.cpu, CPU_STAT);
        let oom = read_keyed(&dirs.memory, OOM_CONTROL);
        let io = std::fs::read_to_string(dirs.io.join(SERVICE_BYTES)).unwrap_or_default();
        CgroupCounters {
            cpu_usage_ns: read_u64(&dirs.cpuacct, CPUACCT_USAGE).unwrap_or(0),
            cpu_system_ns: read_u64(&dirs.cpuacct, CPUACCT_USAGE_SYS),
            throttled_ns: cpu.get("throttled_time").copied().unwrap_or(0),
            memory_usage_bytes: read_u64(&dirs.memory, MEMORY_USAGE).unwrap_or(0),
            anon_bytes: mem.get("total_rss").copied().unwrap_or(0),
            shmem_bytes: mem.get("total_shmem").copied().unwrap_or(0),
            page_cache_bytes: mem.get("total_cache").copied().unwrap_or(0),
            oom_kills: oom.get("oom_kill").copied().unwrap_or(0),
            read_bytes: blkio_v1_read(&io),
            cpu_pressure_some_us: None,
        }
    }

    fn make_idle(&self, dirs: &ControllerDirs) -> Result<(), CapsError> {
        write_file(&dirs.cpu, CPU_SHARES, "2")?;
        match dirs.cpu.join(CPU_IDLE).exists() {
            true => write_file(&dirs.cpu, CPU_IDLE, "1"),
            false => Ok(()),
        }
    }

    fn set_frozen(&self, dirs: &ControllerDirs, frozen: bool) -> Result<(), CapsError> {
        let dir = V1::freezer_dir(dirs)?;
        let want = if frozen { FROZEN } else { THAWED };
        write_file(dir, FREEZER_STATE, want)?;
        let state = || {
            std::fs::read_to_string(dir.join(FREEZER_STATE))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        // FREEZING until every task has stopped.
        wait_frozen(dir, "freeze", || state() == want, state)
    }

    fn locate(&self, proc_cgroup: &str, root: &Path) -> Result<Option<Located>, &'static str> {
        let Some(cpuset) = controller_path(proc_cgroup, "cpuset") else {
            return Ok(None);
        };
        let memory = controller_path(proc_cgroup, "memory").ok_or("memory")?;
        let cpu = controller_path(proc_cgroup, "cpu").ok_or("cpu")?;
        let cpu_root = ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
            .iter()
            .map(|d| root.join(d))
            .find(|d| d.is_dir())
            .unwrap_or_else(|| root.join("cpu"));
        let memory_root = root.join("memory");
        Ok(Some(Located {
            name: format!("/{memory}"),
            cpuset: root.join("cpuset").join(cpuset),
            memory: memory_root.join(&memory),
            memory_root,
            cpu: cpu_root.join(&cpu),
            cpu_root,
            cpu_own: !cpu.is_empty(),
        }))
    }

    fn cpus_file(&self, dir: &Path) -> PathBuf {
        dir.join(CPUSET_CPUS)
    }

    fn memory_limit_at(&self, dir: &Path) -> Option<u64> {
        let v: u64 = read_text(dir, MEMORY_LIMIT)?.parse().ok()?;
        (v < UNLIMITED_BYTES).then_some(v)
    }

    fn quota_cores_at(&self, dir: &Path) -> Option<f64> {
        let quota: i64 = read_text(dir, CFS_QUOTA)?.parse().ok()?;
        let period: i64 = read_text(dir, CFS_PERIOD)?.parse().ok()?;
        (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
    }

    fn oom_events_file(&self, dir: &Path) -> PathBuf {
        dir.join(OOM_CONTROL)
    }
}

impl V1 {
    fn freezer_dir(dirs: &ControllerDirs) -> Result<&std::path::Path, CapsError> {
        dirs.freezer.as_deref().ok_or(CapsError::MissingController(
            "freezer",
            "suspending a job in place",
        ))
    }
}

/// Sums `MAJ:MIN Read N` lines of `blkio.throttle.io_service_bytes`.
fn blkio_v1_read(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[1] == "Read").then(|| f[2].parse::<u64>().ok())?
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::cgroup::fixture::{Fixture, read};

    /// A v1 cgroup: one directory per controller, holding the files the kernel would show.
    fn v1_cgroup(with_memsw: bool) -> Fixture {
        let mut files = vec![
            ("cpuset", CPUSET_CPUS, ""),
            ("cpuset", CPUSET_MEMS, ""),
            ("cpu", CFS_PERIOD, "100000"),
            ("cpu", CFS_QUOTA, "-1"),
            (
                "cpu",
                CPU_STAT,
                "nr_periods 10\nnr_throttled 4\nthrottled_time 123456\n",
            ),
            ("cpuacct", CPUACCT_USAGE, "987654321\n"),
            ("cpuacct", CPUACCT_USAGE_SYS, "87654321\n"),
            ("memory", MEMORY_LIMIT, "9223372036854771712\n"),
            ("memory", MEMORY_USAGE, "4096000\n"),
            (
                "memory",
                MEMORY_STAT,
                "cache 10\nrss 20\nshmem 5\ntotal_cache 3000\ntotal_rss 1000\ntotal_shmem 500\n",
            ),
            (
                "memory",
                OOM_CONTROL,
                "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
            ),
            ("blkio", READ_BPS, ""),
            (
                "blkio",
                SERVICE_BYTES,
                "8:0 Read 4096\n8:0 Write 1\n8:16 Read 100\nTotal 4197\n",
            ),
        ];
        if with_memsw {
            files.push(("memory", MEMSW_LIMIT, "9223372036854771712\n"));
        }
        Fixture::v1(&files)
    }

    #[test]
    fn freezing_writes_the_freezer_state_of_the_freezer_hierarchy() {
        let mut files = vec![("freezer", FREEZER_STATE, "THAWED\n")];
        files.push(("memory", MEMORY_LIMIT, "-1"));
        let cg = Fixture::v1(&files);
        V1.set_frozen(&cg.dirs, true).unwrap();
        assert_eq!(
            read(cg.dirs.freezer.as_ref().unwrap(), FREEZER_STATE),
            FROZEN
        );
        V1.set_frozen(&cg.dirs, false).unwrap();
        assert_eq!(
            read(cg.dirs.freezer.as_ref().unwrap(), FREEZER_STATE),
            THAWED
        );
        // Without a freezer hierarchy, the error says what is missing and what for.
        let mut none = cg.dirs.clone();
        none.freezer = None;
        let e = V1.set_frozen(&none, true).unwrap_err();
        assert!(
            matches!(e, CapsError::MissingController("freezer", _)),
            "{e}"
        );
    }

    #[test]
    fn service_bytes_sum_the_reads_of_every_device() {
        assert_eq!(
            blkio_v1_read("254:0 Read 4096\n254:0 Write 10\n8:0 Read 100\nTotal 4206\n"),
            4196
        );
    }

    #[test]
    fn cpu_caps_are_a_quota_and_pinned_whole_cores() {
        let cg = v1_cgroup(true);
        V1.set_cpu(&cg.dirs, &[4, 5, 6, 7], 2.5).unwrap();
        assert_eq!(read(&cg.dirs.cpuset, CPUSET_CPUS), "4,5,6");
        assert_eq!(read(&cg.dirs.cpu, CFS_QUOTA), "250000");
        assert_eq!(read(&cg.dirs.cpu, CFS_PERIOD), "100000");
        V1.set_cpu(&cg.dirs, &[4, 5, 6, 7], 0.001).unwrap();
        assert_eq!(read(&cg.dirs.cpuset, CPUSET_CPUS), "4");
        assert_eq!(
            read(&cg.dirs.cpu, CFS_QUOTA),
            "1000",
            "the kernel's least quota"
        );
        V1.prepare(&cg.dirs, "0-1").unwrap();
        assert_eq!(read(&cg.dirs.cpuset, CPUSET_MEMS), "0-1");
    }

    #[test]
    fn memory_caps_bound_swap_where_it_is_accounted() {
        let cg = v1_cgroup(true);
        V1.set_memory_limit(&cg.dirs, Some(1 << 30)).unwrap();
        assert_eq!(read(&cg.dirs.memory, MEMORY_LIMIT), "1073741824");
        assert_eq!(read(&cg.dirs.memory, MEMSW_LIMIT), "1073741824");
        V1.set_memory_limit(&cg.dirs, None).unwrap();
        assert_eq!(read(&cg.dirs.memory, MEMORY_LIMIT), "-1");
        assert_eq!(read(&cg.dirs.memory, MEMSW_LIMIT), "-1");

        let no_swap_accounting = v1_cgroup(false);
        V1.set_memory_limit(&no_swap_accounting.dirs, Some(1 << 30))
            .unwrap();
        assert_eq!(
            read(&no_swap_accounting.dirs.memory, MEMORY_LIMIT),
            "1073741824"
        );
        assert!(!no_swap_accounting.dirs.memory.join(MEMSW_LIMIT).exists());
    }

    #[test]
    fn read_caps_and_counters_use_v1_files() {
        let cg = v1_cgroup(true);
        V1.set_read_bps(&cg.dirs, (8, 0), Some(20_000_000)).unwrap();
        assert_eq!(read(&cg.dirs.io, READ_BPS), "8:0 20000000");
        V1.set_read_bps(&cg.dirs, (8, 0), None).unwrap();
        assert_eq!(read(&cg.dirs.io, READ_BPS), "8:0 0");
        let c = V1.counters(&cg.dirs);
        assert_eq!(
            c,
            CgroupCounters {
                cpu_usage_ns: 987_654_321,
                cpu_system_ns: Some(87_654_321),
                throttled_ns: 123_456,
                memory_usage_bytes: 4_096_000,
                anon_bytes: 1000,
                shmem_bytes: 500,
                page_cache_bytes: 3000,
                oom_kills: 2,
                read_bytes: 4196,
                cpu_pressure_some_us: None,
            }
        );
    }
}
