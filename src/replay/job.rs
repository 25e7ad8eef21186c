//! A job as the replay sees it.

/// One job of a workload. Work is in samples (iterations x batch per GPU x GPUs).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub id: u64,
    /// Model name as given by the trace (aliases resolved when the job is bound to a profile).
    pub model: String,
    pub arrival_s: f64,
    pub gpus: u32,
    pub work_samples: f64,
    /// CPU cores requested by the trace (Alibaba), informational.
    pub cpu_request: Option<f64>,
    /// Memory requested by the trace (Alibaba), GB, informational.
    pub mem_request_gb: Option<f64>,
}

/// A job during the replay: its spec, its profile and what it has received so far. Policies
/// and mechanisms read it; only the engine changes it.
#[derive(Debug, Clone)]
pub struct JobState {
    pub spec: JobSpec,
    /// Index of its profile in the replay's profile set (u32: the job state stays small, and
    /// a replay moves it often).
    pub profile: u32,
    /// Samples of work left.
    pub remaining: f64,
    /// Samples/s at the proportional share of the reference server.
    pub prop_rate: f64,
    /// Samples/s at the best case (profile maximum).
    pub best_rate: f64,
    /// Best-case demand in all, cores and GB.
    pub best_cpu: f64,
    pub best_mem: f64,
    pub attained_gpu_s: f64,
    pub attained_dominant_s: f64,
    pub first_start: Option<f64>,
    pub finish: Option<f64>,
    pub contention_sum: f64,
    pub rounds_active: u32,
    pub rounds_run: u32,
    /// The job stopped before its work ran out (a deployed job that failed; the deploy keeps
    /// why): it leaves the replay unfinished.
    pub failed: bool,
    /// The counters Synergy's simulator keeps (used under `--semantics synergy`).
    pub synergy: SynergyCounters,
    /// On a cluster of several machine kinds, its profile on each and the order placement
    /// tries them in (`None` where the cluster names no kinds: `profile` holds everywhere).
    pub kinds: Option<Box<JobKinds>>,
}

impl JobState {
    /// 1 once the rules found it starved (it then sorts before the others), else 0.
    pub fn starvation_priority(&self) -> u8 {
        self.synergy.priority
    }
}

/// A job's profiles on a heterogeneous cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct JobKinds {
    /// Per cluster kind (as [`crate::replay::cluster::Cluster::kinds`] orders them), the
    /// index of its model's profile of that kind.
    pub profiles: Vec<u32>,
    /// The kinds by the job's comparative advantage, most first.
    pub order: Vec<u16>,
}

/// Synergy's per-job bookkeeping: progress in whole iterations, the speed-up the job carries
/// between rounds, and the starvation priority.
#[derive(Debug, Clone, PartialEq)]
pub struct SynergyCounters {
    /// Seconds per iteration at the proportional share (Synergy's `job_iteration_time`).
    pub iter_s: f64,
    /// Samples one iteration processes (batch per GPU x GPUs; 1 when the profile has no batch).
    pub samples_per_iter: f64,
    pub total_iters: u64,
    pub done_iters: u64,
    /// Best-case speed-up over the proportional share (`synergy_speedup_orig`).
    pub speedup_orig: f64,
    /// The speed-up the job ran at in its last round, or `speedup_orig` when it did not run
    /// (`synergy_speedup` as the next round's sort sees it).
    pub speedup: f64,
    /// 1 once the job went 1000 h without running; sorts before every priority-0 job.
    pub priority: u8,
    /// End of the last round the job ran (Synergy's `job_last_execution_time`).
    pub last_run_end: Option<f64>,
}

impl SynergyCounters {
    /// Synergy's `remaining_duration(fair)`: seconds of the remaining iterations at the
    /// proportional share, divided by the carried speed-up unless the mechanism is `fair`.
    pub fn remaining_s(&self, fair: bool) -> f64 {
        let left = self.iter_s * (self.total_iters - self.done_iters) as f64;
        if fair { left } else { left / self.speedup }
    }

    /// Iterations one round of `round_s` seconds completes at `speedup`: Synergy's
    /// `floor(round / (iteration time / speed-up))`, in that float order.
    pub fn iters_in_round(&self, round_s: f64, speedup: f64) -> u64 {
        if speedup.is_nan() || speedup <= 0.0 {
            return 0;
        }
        let e = if speedup == 1.0 {
            self.iter_s
        } else {
            self.iter_s / speedup
        };
        (round_s / e).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    /// The replay moves job states between its lists every round: keep them as small as
    /// they were (280 bytes on 64-bit targets: 272, and the pointer to its kinds on a
    /// heterogeneous cluster).
    #[test]
    fn a_job_state_stays_small() {
        assert!(
            std::mem::size_of::<super::JobState>() <= 280,
            "{}",
            std::mem::size_of::<super::JobState>()
        );
    }
}
