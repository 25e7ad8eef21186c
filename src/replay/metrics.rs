//! Per-job records and the summary of one replay.

use super::engine::{EngineOutput, RoundRow};
use super::profile::ProfileSet;

#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    pub id: u64,
    pub model: String,
    pub gpus: u32,
    pub arrival_s: f64,
    pub start_s: Option<f64>,
    pub finish_s: Option<f64>,
    pub jct_s: Option<f64>,
    /// First start - arrival.
    pub queue_s: Option<f64>,
    /// Run time alone at the proportional share, and at the best case.
    pub alone_proportional_s: f64,
    pub alone_best_s: f64,
    /// Finish-time fairness: JCT / (run time alone at the proportional share x the mean
    /// contention while the job was active). > 1: worse than a fair 1/N share.
    pub ftf_rho: Option<f64>,
    pub rounds_run: u32,
    pub gpu_s: f64,
    pub cpu_request: Option<f64>,
    pub mem_request_gb: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    pub policy: String,
    pub mechanism: String,
    pub jobs_admitted: usize,
    /// Jobs the metrics are over (the window, or all finished jobs).
    pub jobs_measured: usize,
    pub unfinished: usize,
    pub mean_jct_s: f64,
    pub median_jct_s: f64,
    pub p99_jct_s: f64,
    pub makespan_s: f64,
    pub mean_queue_s: f64,
    pub mean_ftf_rho: f64,
    pub max_ftf_rho: f64,
    pub frac_ftf_rho_above_1: f64,
    /// Time-averaged fractions of the cluster allocated / used, over the measured span.
    pub gpu_alloc: f64,
    pub cpu_alloc: f64,
    pub mem_alloc: f64,
    pub gpu_use: f64,
    pub cpu_use: f64,
    pub mem_use: f64,
    pub rounds: usize,
    pub mean_decision_ms: f64,
    pub max_decision_ms: f64,
    /// Opt only: mean over rounds of rounded objective / LP bound.
    pub lp_rounding_ratio: Option<f64>,
    pub lp_failures: u64,
    pub wall_s: f64,
}

/// Linear-interpolation percentile (numpy's default) of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub fn job_records(out: &EngineOutput, _profiles: &ProfileSet) -> Vec<JobRecord> {
    out.jobs
        .iter()
        .map(|j| {
            let jct = j.finish.map(|f| f - j.spec.arrival_s);
            let alone = j.spec.work_samples / j.prop_rate;
            let contention = if j.rounds_active > 0 {
                j.contention_sum / j.rounds_active as f64
            } else {
                1.0
            };
            JobRecord {
                id: j.spec.id,
                model: j.spec.model.clone(),
                gpus: j.spec.gpus,
                arrival_s: j.spec.arrival_s,
                start_s: j.first_start,
                finish_s: j.finish,
                jct_s: jct,
                queue_s: j.first_start.map(|s| s - j.spec.arrival_s),
                alone_proportional_s: alone,
                alone_best_s: j.spec.work_samples / j.best_rate,
                ftf_rho: jct.map(|x| x / (alone * contention)),
                rounds_run: j.rounds_run,
                gpu_s: j.attained_gpu_s,
                cpu_request: j.spec.cpu_request,
                mem_request_gb: j.spec.mem_request_gb,
            }
        })
        .collect()
}

pub fn summarize(
    policy: &str,
    mechanism: &str,
    records: &[JobRecord],
    rounds: &[RoundRow],
    window: Option<(u64, u64)>,
    cluster: &super::cluster::Cluster,
) -> Summary {
    let measured: Vec<&JobRecord> = records
        .iter()
        .filter(|r| window.is_none_or(|(a, b)| (a..=b).contains(&r.id)))
        .filter(|r| r.finish_s.is_some())
        .collect();
    let mut jct: Vec<f64> = measured.iter().filter_map(|r| r.jct_s).collect();
    jct.sort_by(f64::total_cmp);
    let n = measured.len().max(1) as f64;
    let first = measured
        .iter()
        .map(|r| r.arrival_s)
        .fold(f64::INFINITY, f64::min);
    let last = measured
        .iter()
        .filter_map(|r| r.finish_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let rhos: Vec<f64> = measured.iter().filter_map(|r| r.ftf_rho).collect();
    let span: Vec<&RoundRow> = rounds
        .iter()
        .filter(|r| r.t + 1e-9 >= first.floor() - 1e-9 && r.t < last)
        .collect();
    let avg = |f: &dyn Fn(&RoundRow) -> f64| {
        if span.is_empty() {
            0.0
        } else {
            span.iter().map(|r| f(r)).sum::<f64>() / span.len() as f64
        }
    };
    let lp: Vec<f64> = rounds
        .iter()
        .filter_map(|r| match (r.lp_bound, r.lp_rounded) {
            (Some(b), Some(x)) if b > 0.0 => Some(x / b),
            _ => None,
        })
        .collect();
    Summary {
        policy: policy.into(),
        mechanism: mechanism.into(),
        jobs_admitted: records.len(),
        jobs_measured: measured.len(),
        unfinished: records.iter().filter(|r| r.finish_s.is_none()).count(),
        mean_jct_s: jct.iter().sum::<f64>() / n,
        median_jct_s: percentile(&jct, 50.0),
        p99_jct_s: percentile(&jct, 99.0),
        makespan_s: if measured.is_empty() {
            0.0
        } else {
            last - first
        },
        mean_queue_s: measured.iter().filter_map(|r| r.queue_s).sum::<f64>() / n,
        mean_ftf_rho: rhos.iter().sum::<f64>() / n,
        max_ftf_rho: rhos.iter().copied().fold(0.0, f64::max),
        frac_ftf_rho_above_1: rhos.iter().filter(|&&x| x > 1.0).count() as f64 / n,
        gpu_alloc: avg(&|r| r.gpus as f64 / cluster.total_gpus as f64),
        cpu_alloc: avg(&|r| r.cpus / cluster.total_cpus),
        mem_alloc: avg(&|r| r.mem_gb / cluster.total_mem_gb),
        gpu_use: avg(&|r| r.gpu_use / cluster.total_gpus as f64),
        cpu_use: avg(&|r| r.cpu_use / cluster.total_cpus),
        mem_use: avg(&|r| r.mem_use / cluster.total_mem_gb),
        rounds: rounds.len(),
        mean_decision_ms: if rounds.is_empty() {
            0.0
        } else {
            rounds.iter().map(|r| r.decision_s).sum::<f64>() * 1e3 / rounds.len() as f64
        },
        max_decision_ms: rounds
            .iter()
            .map(|r| r.decision_s * 1e3)
            .fold(0.0, f64::max),
        lp_rounding_ratio: if lp.is_empty() {
            None
        } else {
            Some(lp.iter().sum::<f64>() / lp.len() as f64)
        },
        lp_failures: 0,
        wall_s: 0.0,
    }
}
