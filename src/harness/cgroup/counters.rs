//! What a run cgroup's counters say: CPU time, memory by kind, reads, OOM kills.

/// Counters of one run cgroup; cumulative since it was created except where noted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgroupCounters {
    pub cpu_usage_ns: u64,
    /// The part of `cpu_usage_ns` spent in the kernel on the cgroup's behalf (system time:
    /// page faults, reads, reclaim); `None` where it cannot be told apart.
    pub cpu_system_ns: Option<u64>,
    pub throttled_ns: u64,
    /// Current memory charged (anonymous + page cache + kernel).
    pub memory_usage_bytes: u64,
    /// Current anonymous (resident) memory.
    pub anon_bytes: u64,
    /// Current shared memory (tmpfs, `/dev/shm`, memfd: how PyTorch's loader workers hand
    /// batches over). Counted as page cache by the kernel, yet without swap it cannot be
    /// reclaimed: it belongs with the job's own memory, not with its cache.
    pub shmem_bytes: u64,
    /// Current page cache.
    pub page_cache_bytes: u64,
    pub oom_kills: u64,
    pub read_bytes: u64,
    /// Total time some task of the cgroup waited for a CPU (`cpu.pressure`, `some`),
    /// microseconds: cgroup v2 with PSI only.
    pub cpu_pressure_some_us: Option<u64>,
}

impl CgroupCounters {
    /// Anonymous plus shared memory: what the job holds that the kernel cannot reclaim
    /// without swap.
    pub fn held_bytes(&self) -> u64 {
        self.anon_bytes + self.shmem_bytes
    }
}
