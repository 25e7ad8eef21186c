//! Per-job records and the summary of one replay.

use super::engine::{EngineOutput, JobState, RoundRow};
use crate::stats::interpolated_percentile;

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
    /// Why the job stopped before its work ran out (a deployed job that failed; the deploy
    /// fills it in).
    pub failure: Option<String>,
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

/// Everything the per-job table says of one job.
pub fn job_record(j: &JobState) -> JobRecord {
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
        failure: None,
    }
}

pub fn job_records(out: &EngineOutput) -> Vec<JobRecord> {
    out.jobs.iter().map(job_record).collect()
}

/// What the summary needs of the jobs, gathered one job at a time, so that a replay can hand
/// its jobs on as they finish ([`super::engine::simulate_into`]) and still be summarised.
#[derive(Debug, Clone)]
pub struct JobTally {
    window: Option<(u64, u64)>,
    admitted: usize,
    unfinished: usize,
    measured: usize,
    /// JCTs of the measured jobs, and of every finished job (the CDF plots all of them).
    jct: Vec<f64>,
    all_jct: Vec<f64>,
    first_arrival: f64,
    last_finish: f64,
    queue_sum: f64,
    rho_sum: f64,
    rho_max: f64,
    rho_above_1: usize,
}

impl JobTally {
    pub fn new(window: Option<(u64, u64)>) -> JobTally {
        JobTally {
            window,
            admitted: 0,
            unfinished: 0,
            measured: 0,
            jct: Vec::new(),
            all_jct: Vec::new(),
            first_arrival: f64::INFINITY,
            last_finish: f64::NEG_INFINITY,
            queue_sum: 0.0,
            rho_sum: 0.0,
            rho_max: 0.0,
            rho_above_1: 0,
        }
    }

    pub fn add(&mut self, r: &JobRecord) {
        self.admitted += 1;
        let Some(finish) = r.finish_s else {
            self.unfinished += 1;
            return;
        };
        if let Some(x) = r.jct_s {
            self.all_jct.push(x);
        }
        if self.window.is_some_and(|(a, b)| !(a..=b).contains(&r.id)) {
            return;
        }
        self.measured += 1;
        self.jct.extend(r.jct_s);
        self.first_arrival = self.first_arrival.min(r.arrival_s);
        self.last_finish = self.last_finish.max(finish);
        self.queue_sum += r.queue_s.unwrap_or(0.0);
        if let Some(rho) = r.ftf_rho {
            self.rho_sum += rho;
            self.rho_max = self.rho_max.max(rho);
            self.rho_above_1 += usize::from(rho > 1.0);
        }
    }

    /// JCTs of every finished job, ascending.
    pub fn finished_jcts(&self) -> Vec<f64> {
        let mut v = self.all_jct.clone();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The summary of these jobs over `rounds` on `cluster`.
    pub fn summary(
        &self,
        policy: &str,
        mechanism: &str,
        rounds: &[RoundRow],
        cluster: &super::cluster::Cluster,
    ) -> Summary {
        let mut jct = self.jct.clone();
        jct.sort_by(f64::total_cmp);
        let n = self.measured.max(1) as f64;
        let (first, last) = (self.first_arrival, self.last_finish);
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
            jobs_admitted: self.admitted,
            jobs_measured: self.measured,
            unfinished: self.unfinished,
            mean_jct_s: jct.iter().sum::<f64>() / n,
            median_jct_s: interpolated_percentile(&jct, 50.0),
            p99_jct_s: interpolated_percentile(&jct, 99.0),
            makespan_s: if self.measured == 0 {
                0.0
            } else {
                last - first
            },
            mean_queue_s: self.queue_sum / n,
            mean_ftf_rho: self.rho_sum / n,
            max_ftf_rho: self.rho_max,
            frac_ftf_rho_above_1: self.rho_above_1 as f64 / n,
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
}
