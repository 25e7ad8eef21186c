//! The replay engine: scheduling rounds with one-round leases, plus exact events within a round.
//!
//! At each round boundary `t` (multiples of the round length from 0): jobs that arrived by `t`
//! join; the policy orders the active jobs; the mechanism places some of them (each on one
//! server, every dimension checked); the engine re-checks that no server is over-allocated;
//! each placed job progresses for the round at the throughput of the allocation it got. Under
//! [`Semantics::Exact`] a job finishes at the exact instant its work runs out (its resources
//! stay idle until the round ends: leases are per round); under [`Semantics::Synergy`] it
//! finishes at the end of that round, as in Synergy's simulator. When no job is active the
//! engine jumps to the first round boundary at or after the next arrival.

use super::cluster::Cluster;
use super::error::ReplayError;
use super::job::JobSpec;
use super::mechanism::{EPS, MechCtx, MechStats, Mechanism, Placement};
use super::policy::{Policy, PolicyCtx};
use super::profile::{ProfileSet, Semantics};
use super::workload::canonical::Recorder;
use std::time::Instant;

/// A job during the replay.
#[derive(Debug, Clone)]
pub struct JobState {
    pub spec: JobSpec,
    pub profile: usize,
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
}

/// One scheduling round of the time series.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRow {
    pub t: f64,
    pub active: usize,
    pub running: usize,
    /// Allocated GPUs, cores, GB.
    pub gpus: u32,
    pub cpus: f64,
    pub mem_gb: f64,
    /// Used: GPUs weighted by throughput / best-case throughput; cores and GB up to best case.
    pub gpu_use: f64,
    pub cpu_use: f64,
    pub mem_use: f64,
    /// Wall seconds the policy and mechanism took.
    pub decision_s: f64,
    pub lp_bound: Option<f64>,
    pub lp_rounded: Option<f64>,
}

/// Audit hook: (round start, active jobs, placements).
pub type AuditFn<'a> = dyn Fn(f64, &[JobState], &[Placement]) + Sync + 'a;

/// Progress hook: jobs finished so far (of the window, when there is one), after each round in
/// which some finished.
pub type ProgressFn<'a> = dyn Fn(u64) + Sync + 'a;

pub struct EngineConfig<'a> {
    pub cluster: &'a Cluster,
    pub profiles: &'a ProfileSet,
    pub policy: &'a dyn Policy,
    pub mechanism: &'a dyn Mechanism,
    pub semantics: Semantics,
    pub round_s: f64,
    /// Stop once every job with an id in this inclusive range has finished.
    pub window: Option<(u64, u64)>,
    /// Simulated time limit, seconds: jobs still active when a round would start at or after it
    /// are an error ([`ReplayError::Horizon`]) naming them.
    pub horizon_s: f64,
    pub max_rounds: u64,
    /// Called after every round with the placements (tests use it to audit invariants).
    pub audit: Option<&'a AuditFn<'a>>,
    /// Called with the number of jobs finished when it changes (progress bars).
    pub progress: Option<&'a ProgressFn<'a>>,
}

#[derive(Debug, Clone)]
pub struct EngineOutput {
    /// Every job admitted, finished or not, ordered by id.
    pub jobs: Vec<JobState>,
    pub rounds: Vec<RoundRow>,
    pub end_s: f64,
    pub lp_failures: u64,
}

/// Binds a trace job to its profile.
pub fn bind(
    job: JobSpec,
    cluster: &Cluster,
    profiles: &ProfileSet,
    sem: Semantics,
) -> Result<JobState, ReplayError> {
    let pi = profiles
        .lookup(&job.model)
        .ok_or_else(|| ReplayError::UnknownModel {
            path: "<workload>".into(),
            line: 0,
            job_id: job.id,
            model: job.model.clone(),
            known: profiles.known(),
        })?;
    if job.gpus > cluster.max_server_gpus {
        return Err(ReplayError::JobTooWide {
            job_id: job.id,
            gpus: job.gpus,
            max_gpus: cluster.max_server_gpus,
        });
    }
    let p = profiles.get(pi);
    let g = job.gpus as f64;
    let (c, m) = cluster.reference_share();
    let prop_rate = p.rate(job.gpus, c * g, m * g, sem);
    if prop_rate.is_nan() || prop_rate <= 0.0 {
        return Err(ReplayError::Profile(format!(
            "model {} has no throughput at the proportional share ({c} cores, {m} GB per GPU)",
            p.model
        )));
    }
    Ok(JobState {
        profile: pi,
        remaining: job.work_samples,
        prop_rate,
        best_rate: g * p.best_tput,
        best_cpu: g * p.best_cpu,
        best_mem: g * p.best_mem,
        spec: job,
        attained_gpu_s: 0.0,
        attained_dominant_s: 0.0,
        first_start: None,
        finish: None,
        contention_sum: 0.0,
        rounds_active: 0,
        rounds_run: 0,
    })
}

/// The error for jobs still active at the horizon (the first few named).
fn horizon_reached(horizon_s: f64, active: &[JobState]) -> ReplayError {
    ReplayError::Horizon {
        horizon_s,
        count: active.len(),
        jobs: active
            .iter()
            .take(5)
            .map(|j| super::error::UnfinishedJob {
                job_id: j.spec.id,
                remaining_samples: j.remaining,
                origin: None,
            })
            .collect(),
    }
}

/// Runs the replay over `arrivals` (sorted by arrival time).
pub fn simulate(
    cfg: &EngineConfig,
    arrivals: &mut dyn Iterator<Item = JobSpec>,
    mut recorder: Option<&mut Recorder>,
) -> Result<EngineOutput, ReplayError> {
    let cl = cfg.cluster;
    let r = cfg.round_s;
    if !(r.is_finite() && r > 0.0) {
        return Err(ReplayError::Options("round length must be positive".into()));
    }
    let mut arrivals = arrivals.peekable();
    let mut active: Vec<JobState> = Vec::new();
    let mut done: Vec<JobState> = Vec::new();
    let mut rounds = Vec::new();
    let mut placements: Vec<Placement> = Vec::new();
    let mut keyed: Vec<(f64, f64, u64, usize)> = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    let mut rates: Vec<f64> = Vec::new();
    let mut placed_of: Vec<Option<usize>> = Vec::new();
    let mut free_frac = [1.0; 3];
    let mut last_arrival = f64::NEG_INFINITY;
    let window_len = cfg.window.map_or(0, |(a, b)| b - a + 1);
    let mut window_done = 0u64;
    let mut lp_failures = 0;
    let mut idle_rounds = 0u32;
    let mut t = 0.0f64;
    let mut n_rounds = 0u64;

    loop {
        // Admit arrivals up to t.
        while let Some(next) = arrivals.peek() {
            if next.arrival_s > t {
                break;
            }
            let job = arrivals.next().expect("peeked");
            if job.arrival_s < last_arrival {
                return Err(ReplayError::Options(format!(
                    "workload is not sorted by arrival: job {} arrives at {} after a job at {}",
                    job.id, job.arrival_s, last_arrival
                )));
            }
            last_arrival = job.arrival_s;
            if let Some(rec) = recorder.as_deref_mut() {
                rec.write(&job)?;
            }
            active.push(bind(job, cl, cfg.profiles, cfg.semantics)?);
        }
        if cfg.window.is_some() && window_done == window_len {
            break;
        }
        if active.is_empty() {
            match arrivals.peek() {
                None => break,
                Some(next) => {
                    t = t.max((next.arrival_s / r).ceil() * r);
                    continue;
                }
            }
        }
        if t >= cfg.horizon_s || cfg.horizon_s.is_nan() {
            return Err(horizon_reached(cfg.horizon_s, &active));
        }
        n_rounds += 1;
        if n_rounds > cfg.max_rounds {
            return Err(ReplayError::NoProgress(format!(
                "more than {} rounds (raise --max-rounds if the workload is really this long)",
                cfg.max_rounds
            )));
        }

        // Decide.
        let started = Instant::now();
        let demand: u64 = active.iter().map(|j| j.spec.gpus as u64).sum();
        let contention = (demand as f64 / cl.total_gpus as f64).max(1.0);
        let pctx = PolicyCtx {
            now: t,
            cluster: cl,
            contention,
            free_frac,
        };
        keyed.clear();
        keyed.extend(
            active
                .iter()
                .enumerate()
                .map(|(i, j)| (cfg.policy.key(j, &pctx), j.spec.arrival_s, j.spec.id, i)),
        );
        keyed.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        order.clear();
        order.extend(keyed.iter().map(|k| k.3));
        placements.clear();
        let mctx = MechCtx {
            cluster: cl,
            profiles: cfg.profiles,
            semantics: cfg.semantics,
            jobs: &active,
        };
        let mut stats = MechStats::default();
        cfg.mechanism
            .allocate(&mctx, &order, &mut placements, &mut stats);
        let decision_s = started.elapsed().as_secs_f64();
        if stats.lp_failed {
            lp_failures += 1;
        }

        // Check every server in every dimension, and each job placed at most once, whole.
        placed_of.clear();
        placed_of.resize(active.len(), None);
        let ns = cl.servers.len();
        let mut used = vec![(0u32, 0.0f64, 0.0f64); ns];
        for (k, p) in placements.iter().enumerate() {
            let job = active.get(p.job).ok_or_else(|| {
                ReplayError::Internal(format!("placement of unknown job index {}", p.job))
            })?;
            if placed_of[p.job].replace(k).is_some() {
                return Err(ReplayError::Internal(format!(
                    "job {} placed twice in one round",
                    job.spec.id
                )));
            }
            if p.gpus != job.spec.gpus || p.server >= ns || !(p.cpus >= 0.0 && p.mem_gb >= 0.0) {
                return Err(ReplayError::Internal(format!(
                    "bad placement {p:?} of job {}",
                    job.spec.id
                )));
            }
            let u = &mut used[p.server];
            u.0 += p.gpus;
            u.1 += p.cpus;
            u.2 += p.mem_gb;
        }
        for (s, u) in used.iter().enumerate() {
            let srv = &cl.servers[s];
            if u.0 > srv.gpus
                || u.1 > srv.cpus * (1.0 + 1e-9) + EPS
                || u.2 > srv.mem_gb * (1.0 + 1e-9) + EPS
            {
                return Err(ReplayError::Internal(format!(
                    "{} over-allocated server {s} at t={t}: {} GPUs, {} cores, {} GB of {}, {}, {}",
                    cfg.mechanism.name(),
                    u.0,
                    u.1,
                    u.2,
                    srv.gpus,
                    srv.cpus,
                    srv.mem_gb
                )));
            }
        }
        if let Some(audit) = cfg.audit {
            audit(t, &active, &placements);
        }

        // Progress.
        rates.clear();
        rates.resize(active.len(), 0.0);
        let mut row = RoundRow {
            t,
            active: active.len(),
            running: placements.len(),
            gpus: 0,
            cpus: 0.0,
            mem_gb: 0.0,
            gpu_use: 0.0,
            cpu_use: 0.0,
            mem_use: 0.0,
            decision_s,
            lp_bound: stats.lp_bound,
            lp_rounded: stats.rounded,
        };
        let mut progressed = false;
        for p in &placements {
            let rate = mctx.rate(p.job, p.cpus, p.mem_gb);
            rates[p.job] = rate;
            let j = &active[p.job];
            row.gpus += p.gpus;
            row.cpus += p.cpus;
            row.mem_gb += p.mem_gb;
            row.gpu_use += p.gpus as f64 * (rate / j.best_rate).min(1.0);
            row.cpu_use += p.cpus.min(j.best_cpu);
            row.mem_use += p.mem_gb.min(j.best_mem);
            progressed |= rate > 0.0;
        }
        free_frac = [
            1.0 - row.gpus as f64 / cl.total_gpus as f64,
            1.0 - row.cpus / cl.total_cpus,
            1.0 - row.mem_gb / cl.total_mem_gb,
        ];
        rounds.push(row);
        if !progressed && arrivals.peek().is_none() {
            idle_rounds += 1;
            if idle_rounds > 3 {
                return Err(ReplayError::NoProgress(format!(
                    "{} jobs wait at t={t} s and no placement makes progress",
                    active.len()
                )));
            }
        } else {
            idle_rounds = 0;
        }
        for (i, j) in active.iter_mut().enumerate() {
            j.rounds_active += 1;
            j.contention_sum += contention;
            let Some(k) = placed_of[i] else { continue };
            let p = &placements[k];
            let rate = rates[i];
            j.rounds_run += 1;
            j.first_start.get_or_insert(t);
            let dom = (p.gpus as f64 / cl.total_gpus as f64)
                .max(p.cpus / cl.total_cpus)
                .max(p.mem_gb / cl.total_mem_gb);
            let needed = if rate > 0.0 {
                j.remaining / rate
            } else {
                f64::INFINITY
            };
            let ran = if needed <= r * (1.0 + 1e-12) {
                j.remaining = 0.0;
                j.finish = Some(match cfg.semantics {
                    Semantics::Exact => t + needed.min(r),
                    Semantics::Synergy => t + r,
                });
                needed.min(r)
            } else {
                j.remaining -= rate * r;
                r
            };
            j.attained_gpu_s += p.gpus as f64 * ran;
            j.attained_dominant_s += dom * ran;
        }
        // Retire finished jobs, keeping `active` in admission order: the keys of most policies
        // change little between rounds, so the next sort sees nearly sorted input (linear time).
        if active.iter().any(|j| j.finish.is_some()) {
            let mut kept = Vec::with_capacity(active.len());
            for j in active.drain(..) {
                if j.finish.is_none() {
                    kept.push(j);
                    continue;
                }
                if let Some((a, b)) = cfg.window
                    && (a..=b).contains(&j.spec.id)
                {
                    window_done += 1;
                }
                done.push(j);
            }
            active = kept;
            if let Some(progress) = cfg.progress {
                progress(if cfg.window.is_some() {
                    window_done
                } else {
                    done.len() as u64
                });
            }
        }
        t += r;
    }
    let end_s = done.iter().filter_map(|j| j.finish).fold(0.0, f64::max);
    done.extend(active);
    done.sort_by_key(|j| j.spec.id);
    Ok(EngineOutput {
        jobs: done,
        rounds,
        end_s,
        lp_failures,
    })
}
