//! The elastic replay: a stepped simulation shared by every elastic scheduler.
//!
//! Decisions fall on multiples of the interval (Pollux's scheduling interval, 60 s by default).
//! At each decision time `t`: jobs that finished during the previous interval release their
//! GPUs (leases are per interval); jobs that arrived by `t` join; the policy returns a whole
//! decision, which must pass [`check`] (a decision that does not is a bug of the policy, an
//! internal error naming it); the engine applies it. A job whose placement changes (start,
//! resize, move, resumption) restarts: it holds its new GPUs for `reconfiguration_s` without
//! progress (`rescale_s` for a running job resized or moved by a policy that rescales in
//! place), and the change is counted once. A preempted job releases its GPUs at once.
//! Changing only the global batch (AdaptDL re-tunes batch and gradient accumulation between
//! steps) or the CPU and memory per GPU is applied live.
//!
//! Between decisions progress is exact and piecewise constant: a running job's goodput is
//! [`AppModel::throughput_with`] at its allocation, times its noise factor, times the
//! statistical efficiency of its global batch at its progress at the start of the interval; it
//! finishes at the exact instant its remaining work runs out. Each job's noise factor is a
//! mean-one log-normal drawn from the replay seed and the job id alone, so every policy sees
//! the same jobs for a seed, and no policy sees the noise (it is the model's prediction error).
//!
//! When no job is active the engine jumps to the first decision time at or after the next
//! arrival, so idle stretches cost nothing.

use super::super::cluster::Cluster;
use super::super::error::{ReplayError, UnfinishedJob};
use super::allocation::Allocation;
use super::feasibility::check;
use super::job::{ElasticJob, ElasticJobSpec};
use super::model::AppModels;
use super::policy::{DecisionCtx, ElasticPolicy};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::time::Instant;

/// Pollux's scheduling interval, seconds.
pub const DEFAULT_INTERVAL_S: f64 = 60.0;
/// Pollux's simulator charges 30 s of no progress on every reallocation.
pub const DEFAULT_RECONFIGURATION_S: f64 = 30.0;
/// An in-place rescale (ONES: the workers pause, re-initialise NCCL at the new world size and
/// receive the parameters from rank 0) costs no process launch, dataset or model load: an
/// assumption of a few seconds, which the replay's tables vary.
pub const DEFAULT_RESCALE_S: f64 = 5.0;
/// Run-to-run spread of throughput: sigma of the log-normal noise factor. ONES's job history
/// shows the same configuration varying up to 2x between runs at the extremes; 0.1 (about
/// +-10% for one sd) is the typical spread of Pollux's repeated step-time measurements.
pub const DEFAULT_NOISE_SIGMA: f64 = 0.1;
/// Decisions in a row with jobs waiting, none running and no arrival to come, after which the
/// replay gives up (the policy will never start them).
const MAX_IDLE_DECISIONS: u64 = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    pub interval_s: f64,
    /// Start, resumption, and any change of GPUs under a checkpoint-restart policy.
    pub reconfiguration_s: f64,
    /// A running job's change of GPUs under a policy that rescales in place
    /// ([`ElasticPolicy::rescales_in_place`]).
    pub rescale_s: f64,
    /// Sigma of the per-job log-normal throughput factor; 0: no noise.
    pub noise_sigma: f64,
    /// Seeds the noise (and nothing else: policies get their own seed).
    pub seed: u64,
    /// Simulated-time limit: jobs unfinished then are an error naming them.
    pub horizon_s: f64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            interval_s: DEFAULT_INTERVAL_S,
            reconfiguration_s: DEFAULT_RECONFIGURATION_S,
            rescale_s: DEFAULT_RESCALE_S,
            noise_sigma: DEFAULT_NOISE_SIGMA,
            seed: 0,
            horizon_s: super::super::bounds::DEFAULT_HORIZON_S,
        }
    }
}

impl EngineConfig {
    pub fn validate(&self) -> Result<(), ReplayError> {
        use super::super::bounds;
        let opt = |r: Result<f64, String>| r.map(|_| ()).map_err(ReplayError::Options);
        opt(bounds::in_range(
            "decision interval (s)",
            self.interval_s,
            bounds::MIN_ROUND_S,
            bounds::MAX_ROUND_S,
        ))?;
        opt(bounds::in_range(
            "reconfiguration time (s)",
            self.reconfiguration_s,
            0.0,
            bounds::MAX_ROUND_S,
        ))?;
        opt(bounds::in_range(
            "rescale time (s)",
            self.rescale_s,
            0.0,
            bounds::MAX_ROUND_S,
        ))?;
        opt(bounds::in_range("noise sigma", self.noise_sigma, 0.0, 2.0))?;
        opt(bounds::positive(
            "horizon (s)",
            self.horizon_s,
            bounds::MAX_TIME_S,
        ))?;
        if self.horizon_s / self.interval_s > bounds::MAX_HORIZON_ROUNDS {
            return Err(ReplayError::Options(format!(
                "a horizon of {} s is more than {} decisions of {} s",
                self.horizon_s,
                bounds::MAX_HORIZON_ROUNDS,
                self.interval_s
            )));
        }
        Ok(())
    }
}

/// The mean-one log-normal throughput factor of job `job_id` under `seed`.
pub fn noise_factor(seed: u64, job_id: u64, sigma: f64) -> f64 {
    if sigma <= 0.0 {
        return 1.0;
    }
    // One stream per (seed, job): the factor does not depend on which jobs a policy sees first.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ job_id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let unit = |r: &mut ChaCha8Rng| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u1, u2) = (unit(&mut rng), unit(&mut rng));
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (sigma * z - sigma * sigma / 2.0).exp()
}

/// One finished job.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticJobRecord {
    pub id: u64,
    pub name: String,
    pub app: String,
    pub requested_gpus: u32,
    pub arrival_s: f64,
    pub first_start_s: f64,
    pub finish_s: f64,
    pub jct_s: f64,
    /// Seconds holding an allocation (restarts included).
    pub run_s: f64,
    /// JCT minus run time: queued or preempted.
    pub wait_s: f64,
    pub gpu_s: f64,
    /// Allocation changes charged a restart, the first start included.
    pub reconfigurations: u32,
    pub preemptions: u32,
    /// The job's throughput noise factor.
    pub noise: f64,
}

/// What one decision did.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRow {
    pub t: f64,
    pub active: usize,
    pub running: usize,
    pub gpus: u32,
    /// Restarts charged at this decision.
    pub reconfigurations: u32,
    pub decision_wall_s: f64,
}

/// Whole-replay figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ElasticSummary {
    pub policy: String,
    pub seed: u64,
    pub jobs: usize,
    pub mean_jct_s: f64,
    pub median_jct_s: f64,
    pub p99_jct_s: f64,
    /// Last finish minus first arrival.
    pub makespan_s: f64,
    /// GPU-seconds held by jobs (until they finish) over cluster GPUs x makespan.
    pub gpu_utilization: f64,
    /// Mean restarts per job beyond its first start.
    pub restarts_per_job: f64,
    pub decisions: u64,
    /// Mean and largest wall time of one policy decision, seconds.
    pub decision_mean_s: f64,
    pub decision_max_s: f64,
}

/// The result of a replay.
#[derive(Debug, Clone)]
pub struct ElasticOutcome {
    pub summary: ElasticSummary,
    pub jobs: Vec<ElasticJobRecord>,
    pub decisions: Vec<DecisionRow>,
}

/// A stepped elastic replay of `jobs` on `cluster` under one policy.
pub struct ElasticReplay<'a> {
    cluster: &'a Cluster,
    models: &'a AppModels,
    policy: Box<dyn ElasticPolicy>,
    config: EngineConfig,
    /// Not yet arrived, by arrival time then id.
    pending: VecDeque<ElasticJobSpec>,
    /// Arrived and unfinished (or finished since the last decision), ascending by id.
    active: Vec<ElasticJob>,
    /// Noise factor and preemptions of each active job (same order as `active`).
    extra: Vec<(f64, u32)>,
    done: Vec<ElasticJobRecord>,
    rows: Vec<DecisionRow>,
    now: f64,
    first_arrival_s: f64,
    idle_decisions: u64,
}

impl<'a> ElasticReplay<'a> {
    /// Checks every job (known application, sane numbers, no wider than the cluster) and sets
    /// the clock to the first decision time at or after the first arrival.
    pub fn new(
        jobs: Vec<ElasticJobSpec>,
        cluster: &'a Cluster,
        models: &'a AppModels,
        policy: Box<dyn ElasticPolicy>,
        config: EngineConfig,
    ) -> Result<ElasticReplay<'a>, ReplayError> {
        config.validate()?;
        let mut seen = std::collections::HashMap::new();
        for j in &jobs {
            let at = || match &j.origin {
                Some((p, l)) => format!("{}:{l}: ", p.display()),
                None => String::new(),
            };
            let bad = |m: String| ReplayError::Options(format!("{}job {}: {m}", at(), j.id));
            if let Some(first) = seen.insert(j.id, j.origin.clone()) {
                let (path, line) = j.origin.clone().unwrap_or_default();
                return Err(ReplayError::DuplicateJob {
                    path,
                    line,
                    first_line: first.map_or(0, |o| o.1),
                    job_id: j.id,
                });
            }
            if models.get(&j.app).is_none() {
                let (path, line) = j.origin.clone().unwrap_or_default();
                return Err(ReplayError::UnknownModel {
                    path,
                    line,
                    job_id: j.id,
                    model: j.app.clone(),
                    known: models.names(),
                });
            }
            if !(j.arrival_s.is_finite() && j.arrival_s >= 0.0) {
                return Err(bad(format!("arrival {} s is not a time", j.arrival_s)));
            }
            let w = j.work();
            if !(w.is_finite() && w > 0.0) {
                return Err(bad(format!("work {w} is not a positive number of samples")));
            }
            if j.requested_gpus == 0 || j.requested_gpus > cluster.total_gpus {
                return Err(bad(format!(
                    "asks for {} GPUs; the cluster has {}",
                    j.requested_gpus, cluster.total_gpus
                )));
            }
            if j.min_batch == 0 || j.min_batch > j.max_batch || j.base_batch == 0 {
                return Err(bad(format!(
                    "batch bounds [{}, {}] with base {} are not usable",
                    j.min_batch, j.max_batch, j.base_batch
                )));
            }
        }
        let mut pending: Vec<ElasticJobSpec> = jobs;
        pending.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
        let first_arrival_s = pending.first().map_or(0.0, |j| j.arrival_s);
        let mut r = ElasticReplay {
            cluster,
            models,
            policy,
            now: 0.0,
            config,
            pending: pending.into(),
            active: Vec::new(),
            extra: Vec::new(),
            done: Vec::new(),
            rows: Vec::new(),
            first_arrival_s,
            idle_decisions: 0,
        };
        r.now = r.next_decision_at(first_arrival_s);
        Ok(r)
    }

    /// The first decision time at or after `t`.
    fn next_decision_at(&self, t: f64) -> f64 {
        let i = self.config.interval_s;
        (t / i).ceil() * i
    }

    /// Time of the next decision.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Active jobs (arrived, not yet released), ascending by id.
    pub fn active(&self) -> &[ElasticJob] {
        &self.active
    }

    pub fn finished(&self) -> &[ElasticJobRecord] {
        &self.done
    }

    pub fn decisions(&self) -> &[DecisionRow] {
        &self.rows
    }

    /// Whether every job has finished and been released.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && self.active.is_empty()
    }

    /// Releases jobs that finished, admits arrivals up to now; skips idle time.
    fn admit(&mut self) {
        let mut k = 0;
        while k < self.active.len() {
            if let Some(finish) = self.active[k].finish_s {
                let j = self.active.remove(k);
                let (noise, preemptions) = self.extra.remove(k);
                let first = j.first_start_s.unwrap_or(finish);
                let jct = finish - j.spec.arrival_s;
                self.done.push(ElasticJobRecord {
                    id: j.spec.id,
                    name: j.spec.name.clone(),
                    app: j.spec.app.clone(),
                    requested_gpus: j.spec.requested_gpus,
                    arrival_s: j.spec.arrival_s,
                    first_start_s: first,
                    finish_s: finish,
                    jct_s: jct,
                    run_s: j.run_s,
                    wait_s: (jct - j.run_s).max(0.0),
                    gpu_s: j.attained_gpu_s,
                    reconfigurations: j.reconfigurations,
                    preemptions,
                    noise,
                });
            } else {
                k += 1;
            }
        }
        if self.active.is_empty()
            && let Some(next) = self.pending.front()
            && next.arrival_s > self.now
        {
            self.now = self.next_decision_at(next.arrival_s);
        }
        let mut arrived = false;
        while self
            .pending
            .front()
            .is_some_and(|j| j.arrival_s <= self.now)
        {
            let spec = self.pending.pop_front().expect("checked non-empty");
            let noise = noise_factor(self.config.seed, spec.id, self.config.noise_sigma);
            self.active.push(ElasticJob::new(spec));
            self.extra.push((noise, 0));
            arrived = true;
        }
        if arrived {
            let mut both: Vec<(ElasticJob, (f64, u32))> =
                self.active.drain(..).zip(self.extra.drain(..)).collect();
            both.sort_by_key(|(j, _)| j.spec.id);
            (self.active, self.extra) = both.into_iter().unzip();
        }
    }

    fn horizon_error(&self) -> ReplayError {
        let unfinished: Vec<&ElasticJob> = self
            .active
            .iter()
            .filter(|j| j.finish_s.is_none())
            .collect();
        ReplayError::Horizon {
            horizon_s: self.config.horizon_s,
            count: unfinished.len() + self.pending.len(),
            jobs: unfinished
                .iter()
                .take(5)
                .map(|j| UnfinishedJob {
                    job_id: j.spec.id,
                    remaining_samples: j.remaining(),
                    origin: j.spec.origin.clone(),
                })
                .collect(),
        }
    }

    /// One decision at [`Self::now`] and the interval after it. Returns `Ok(false)` when
    /// there was nothing left to do.
    pub fn step_decision(&mut self) -> Result<bool, ReplayError> {
        self.admit();
        if self.active.is_empty() {
            return Ok(!self.pending.is_empty());
        }
        if self.now >= self.config.horizon_s {
            return Err(self.horizon_error());
        }
        let t = self.now;
        let interval = self.config.interval_s;
        let ctx = DecisionCtx {
            now: t,
            jobs: &self.active,
            cluster: self.cluster,
            models: self.models,
            interval_s: interval,
            reconfiguration_s: self.config.reconfiguration_s,
        };
        let started = Instant::now();
        let decision = self.policy.decide(&ctx);
        let resize_s = if self.policy.rescales_in_place() {
            self.config.rescale_s
        } else {
            self.config.reconfiguration_s
        };
        let wall = started.elapsed().as_secs_f64();
        if let Some(message) = self.policy.failure() {
            return Err(ReplayError::Plugin {
                name: format!("elastic policy {}", self.policy.name()),
                t,
                message,
            });
        }
        check(&self.active, &decision, self.cluster).map_err(|e| ReplayError::Placement {
            by: format!("elastic policy {}", self.policy.name()),
            t,
            message: format!("an infeasible decision: {e}"),
        })?;
        let mut row = DecisionRow {
            t,
            active: self.active.len(),
            running: 0,
            gpus: 0,
            reconfigurations: 0,
            decision_wall_s: wall,
        };
        for ((job, extra), new) in self.active.iter_mut().zip(&mut self.extra).zip(decision) {
            match (&job.allocation, &new) {
                (Some(_), None) => extra.1 += 1,
                (None, Some(_)) => {
                    job.reconfigurations += 1;
                    row.reconfigurations += 1;
                    job.busy_until_s = t + self.config.reconfiguration_s;
                    job.samples_at_last_change = job.samples;
                    job.first_start_s.get_or_insert(t);
                }
                (Some(old), Some(a)) if !old.same_placement(a) => {
                    job.reconfigurations += 1;
                    row.reconfigurations += 1;
                    job.busy_until_s = t + resize_s;
                    job.samples_at_last_change = job.samples;
                }
                _ => {}
            }
            job.allocation = new;
            if let Some(a) = &job.allocation {
                row.running += 1;
                row.gpus += a.gpus();
            }
        }
        self.rows.push(row);
        let running = self.rows.last().map_or(0, |r| r.running);
        if running == 0 && self.pending.is_empty() {
            self.idle_decisions += 1;
            if self.idle_decisions >= MAX_IDLE_DECISIONS {
                let ids: Vec<String> = self.active.iter().map(|j| j.spec.id.to_string()).collect();
                return Err(ReplayError::NoProgress(format!(
                    "policy {} left jobs {} waiting on an idle cluster for {MAX_IDLE_DECISIONS} decisions",
                    self.policy.name(),
                    ids.join(", ")
                )));
            }
        } else {
            self.idle_decisions = 0;
        }
        self.advance(t, t + interval)?;
        self.now = t + interval;
        Ok(true)
    }

    /// Progress of every running job over [t0, t1]: piecewise constant, exact finish times.
    fn advance(&mut self, t0: f64, t1: f64) -> Result<(), ReplayError> {
        for (job, &(noise, _)) in self.active.iter_mut().zip(&self.extra) {
            let Some(a) = job.allocation.clone() else {
                continue;
            };
            if job.finish_s.is_some() {
                continue;
            }
            let model = self.models.get(&job.spec.app).ok_or_else(|| {
                ReplayError::Internal(format!("job {}: application vanished", job.spec.id))
            })?;
            let rate = rates(model, &job.spec, &a, job.progress_frac(), noise);
            let (raw, good) = rate.map_err(|what| {
                ReplayError::Internal(format!(
                    "job {} ({}{}): {what}",
                    job.spec.id,
                    job.spec.app,
                    job.spec
                        .origin
                        .as_ref()
                        .map(|(p, l)| format!(", {}:{l}", p.display()))
                        .unwrap_or_default()
                ))
            })?;
            let start = job.busy_until_s.clamp(t0, t1);
            let mut end = t1;
            let remaining = job.remaining();
            if good > 0.0 && start + remaining / good <= t1 {
                end = start + remaining / good;
                job.finish_s = Some(end);
            }
            let dt = end - start;
            if job.finish_s.is_some() {
                job.progress = job.spec.work();
            } else {
                job.progress = (job.progress + good * dt).min(job.spec.work());
            }
            job.samples += raw * dt;
            if dt > 0.0 {
                job.max_gpus_run = job.max_gpus_run.max(a.gpus());
            }
            let held = end - t0;
            job.run_s += held;
            job.attained_gpu_s += a.gpus() as f64 * held;
        }
        Ok(())
    }

    /// Steps decisions until the next one would be after `t` (or nothing is left).
    pub fn step_until(&mut self, t: f64) -> Result<(), ReplayError> {
        while self.now <= t && self.step_decision()? {}
        Ok(())
    }

    /// Runs to the last completion.
    pub fn run_to_end(&mut self) -> Result<(), ReplayError> {
        while self.step_decision()? {}
        Ok(())
    }

    /// Runs to the end and summarises.
    pub fn finish(mut self) -> Result<ElasticOutcome, ReplayError> {
        self.run_to_end()?;
        let summary = summarize(
            self.policy.name(),
            self.config.seed,
            &self.done,
            &self.rows,
            self.first_arrival_s,
            self.cluster.total_gpus,
        );
        let mut jobs = self.done;
        jobs.sort_by_key(|j| j.id);
        Ok(ElasticOutcome {
            summary,
            jobs,
            decisions: self.rows,
        })
    }
}

/// (raw samples/s, progress/s) of `spec` on `a` at `progress_frac`, times `noise`; an error
/// when the model yields a non-finite or negative rate.
pub fn rates(
    model: &super::model::AppModel,
    spec: &ElasticJobSpec,
    a: &Allocation,
    progress_frac: f64,
    noise: f64,
) -> Result<(f64, f64), String> {
    let raw = model.throughput_with(
        a.gpus(),
        a.nodes(),
        a.local_batch(),
        a.cpus_per_gpu,
        a.mem_gb_per_gpu,
    ) * noise;
    let eff =
        model
            .efficiency
            .efficiency(a.global_batch as f64, spec.base_batch as f64, progress_frac);
    let good = raw * eff;
    if !(raw.is_finite() && raw >= 0.0 && good.is_finite() && good >= 0.0) {
        return Err(format!(
            "the model gives {raw} samples/s and efficiency {eff} on {} GPUs at batch {}",
            a.gpus(),
            a.global_batch
        ));
    }
    Ok((raw, good))
}

fn summarize(
    policy: &str,
    seed: u64,
    jobs: &[ElasticJobRecord],
    rows: &[DecisionRow],
    first_arrival_s: f64,
    total_gpus: u32,
) -> ElasticSummary {
    let mut jct: Vec<f64> = jobs.iter().map(|j| j.jct_s).collect();
    jct.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        if jct.is_empty() {
            0.0
        } else {
            crate::stats::interpolated_percentile(&jct, q)
        }
    };
    let n = jobs.len().max(1) as f64;
    let last = jobs
        .iter()
        .map(|j| j.finish_s)
        .fold(first_arrival_s, f64::max);
    let makespan = last - first_arrival_s;
    let gpu_s: f64 = jobs.iter().map(|j| j.gpu_s).sum();
    let walls: Vec<f64> = rows.iter().map(|r| r.decision_wall_s).collect();
    ElasticSummary {
        policy: policy.to_owned(),
        seed,
        jobs: jobs.len(),
        mean_jct_s: jct.iter().sum::<f64>() / n,
        median_jct_s: pct(50.0),
        p99_jct_s: pct(99.0),
        makespan_s: makespan,
        gpu_utilization: if makespan > 0.0 {
            gpu_s / (total_gpus.max(1) as f64 * makespan)
        } else {
            0.0
        },
        restarts_per_job: jobs
            .iter()
            .map(|j| j.reconfigurations.saturating_sub(1) as f64)
            .sum::<f64>()
            / n,
        decisions: rows.len() as u64,
        decision_mean_s: crate::stats::mean(&walls),
        decision_max_s: walls.iter().copied().fold(0.0, f64::max),
    }
}
