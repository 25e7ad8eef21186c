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
pub use super::job::JobState;
use super::job::{JobSpec, SynergyCounters};
use super::mechanism::{EPS, MechCtx, MechStats, Mechanism, Placement};
use super::policy::{Policy, PolicyCtx};
use super::profile::{ProfileSet, Semantics};
use super::workload::canonical::Recorder;
use std::time::Instant;

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

/// A job's allocation in one round, summed over the servers it spans.
#[derive(Debug, Clone, Copy, Default)]
struct Alloc {
    gpus: u32,
    cpus: f64,
    mem_gb: f64,
    servers: u32,
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
    /// Time of the first round; `None`: rounds fall on multiples of the round length from 0.
    /// Synergy's simulator starts a static trace (`--static`) at 1 s, so its rounds fall on
    /// 1 + k x round; later rounds keep the phase of the first.
    pub first_round_s: Option<f64>,
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

/// Starvation guard of Synergy's schedulers: a job that has not run for this long sorts before
/// all others from then on (priority 1).
pub const SYNERGY_STARVATION_S: f64 = 1000.0 * 3600.0;

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
    if job.gpus > cluster.total_gpus {
        return Err(ReplayError::JobTooWide {
            job_id: job.id,
            gpus: job.gpus,
            max_gpus: cluster.total_gpus,
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
    // Synergy counts iterations: a trace gives them (work = iterations x batch x GPUs, exact),
    // other workloads give work that floors to whole iterations as `int(duration / iter_time)`.
    let per_gpu_prop = p.per_gpu(c, m, sem);
    let batch = p.batch_size_per_gpu.unwrap_or(1).max(1) as f64;
    let samples_per_iter = batch * g;
    let total_iters = ((job.work_samples / samples_per_iter) * (1.0 + 1e-12))
        .floor()
        .max(1.0) as u64;
    let speedup_orig = p.best_tput / per_gpu_prop;
    let best = Demand {
        cpus: g * p.best_cpu,
        mem_gb: g * p.best_mem,
        speedup: speedup_orig,
    };
    let demand = match sem {
        Semantics::Synergy => {
            let (bc, bm) = p.declared_best.unwrap_or((p.best_cpu, p.best_mem));
            let declared = Demand {
                cpus: g * bc,
                mem_gb: g * bm,
                speedup: speedup_orig,
            };
            declared.synergy_capped(job.gpus, &cluster.servers[0])
        }
        Semantics::Exact if job.gpus > cluster.max_server_gpus => Demand {
            cpus: best.cpus.min(c * g),
            mem_gb: best.mem_gb.min(m * g),
            speedup: speedup_orig,
        },
        Semantics::Exact => best,
    };
    let synergy = SynergyCounters {
        iter_s: batch / per_gpu_prop,
        samples_per_iter,
        total_iters,
        done_iters: 0,
        speedup_orig: demand.speedup,
        speedup: demand.speedup,
        priority: 0,
        last_run_end: None,
    };
    Ok(JobState {
        profile: pi,
        remaining: job.work_samples,
        prop_rate,
        best_rate: g * p.best_tput,
        best_cpu: demand.cpus,
        best_mem: demand.mem_gb,
        spec: job,
        attained_gpu_s: 0.0,
        attained_dominant_s: 0.0,
        first_start: None,
        finish: None,
        contention_sum: 0.0,
        rounds_active: 0,
        rounds_run: 0,
        synergy,
    })
}

/// A job's best-case demand in all (cores, GB) and its speed-up there over the proportional
/// share.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Demand {
    cpus: f64,
    mem_gb: f64,
    speedup: f64,
}

impl Demand {
    /// Synergy's binding of a job's demand to a server shape (`add_synergy_profile`): a
    /// dimension above one server is capped at the server, and the speed-up of a job capped in
    /// CPUs falls on the straight line from 1 at the proportional share to the best case; a job
    /// wider than a server asks for its proportional share in every capped dimension and runs
    /// at speed-up 1 (its storage demand, a server's share per GPU, always exceeds a server).
    fn synergy_capped(self, gpus: u32, server: &super::cluster::Server) -> Demand {
        let g = gpus as f64;
        let wide = gpus > server.gpus;
        let per_gpu = |whole: f64| g * (whole / server.gpus as f64);
        let mut d = self;
        let mut interpolate = false;
        if d.cpus > server.cpus {
            d.cpus = if wide { per_gpu(server.cpus) } else { server.cpus };
            interpolate = !wide;
        }
        if d.mem_gb > server.mem_gb {
            d.mem_gb = if wide { per_gpu(server.mem_gb) } else { server.mem_gb };
            interpolate = !wide;
        }
        if wide {
            d.speedup = 1.0;
        } else if interpolate {
            let fair = per_gpu(server.cpus);
            let span = self.cpus - fair;
            if span != 0.0 {
                d.speedup = 1.0 + (self.speedup - 1.0) / span * (d.cpus - fair);
            }
        }
        d
    }
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
    recorder: Option<&mut Recorder>,
) -> Result<EngineOutput, ReplayError> {
    let mut replay = Replay::new(cfg, arrivals, recorder)?;
    replay.run_to_end()?;
    Ok(replay.finish())
}

/// A replay in progress: [`Replay::step_round`] runs one scheduling round, so tests can look at
/// the jobs and placements between rounds; [`simulate`] runs it to the end.
pub struct Replay<'c, 'a> {
    cfg: &'c EngineConfig<'a>,
    arrivals: std::iter::Peekable<&'c mut dyn Iterator<Item = JobSpec>>,
    recorder: Option<&'c mut Recorder>,
    active: Vec<JobState>,
    done: Vec<JobState>,
    rounds: Vec<RoundRow>,
    placements: Vec<Placement>,
    keyed: Vec<(f64, f64, f64, u64, usize)>,
    order: Vec<usize>,
    rates: Vec<f64>,
    alloc: Vec<Option<Alloc>>,
    pairs: Vec<(usize, usize)>,
    free_frac: [f64; 3],
    last_arrival: f64,
    window_done: u64,
    lp_failures: u64,
    idle_rounds: u32,
    t: f64,
    t0: f64,
    n_rounds: u64,
    ended: bool,
}

impl<'c, 'a> Replay<'c, 'a> {
    pub fn new(
        cfg: &'c EngineConfig<'a>,
        arrivals: &'c mut dyn Iterator<Item = JobSpec>,
        recorder: Option<&'c mut Recorder>,
    ) -> Result<Self, ReplayError> {
        let r = cfg.round_s;
        if !(r.is_finite() && r > 0.0) {
            return Err(ReplayError::Options("round length must be positive".into()));
        }
        let t0 = cfg.first_round_s.unwrap_or(0.0);
        if !t0.is_finite() {
            return Err(ReplayError::Options(
                "first round time must be finite".into(),
            ));
        }
        Ok(Replay {
            cfg,
            arrivals: arrivals.peekable(),
            recorder,
            active: Vec::new(),
            done: Vec::new(),
            rounds: Vec::new(),
            placements: Vec::new(),
            keyed: Vec::new(),
            order: Vec::new(),
            rates: Vec::new(),
            alloc: Vec::new(),
            pairs: Vec::new(),
            free_frac: [1.0; 3],
            last_arrival: f64::NEG_INFINITY,
            window_done: 0,
            lp_failures: 0,
            idle_rounds: 0,
            t: t0,
            t0,
            n_rounds: 0,
            ended: false,
        })
    }

    /// Start of the next round (after [`Replay::step_round`]: of the round after the one run).
    pub fn now(&self) -> f64 {
        self.t
    }

    /// Jobs admitted and not finished, in admission order.
    pub fn active(&self) -> &[JobState] {
        &self.active
    }

    /// Finished jobs, in finishing order.
    pub fn finished(&self) -> &[JobState] {
        &self.done
    }

    /// The placements of the last round run; their `job` indexes the active jobs as they were
    /// in that round (finished jobs have since moved to [`Replay::finished`]).
    pub fn last_placements(&self) -> &[Placement] {
        &self.placements
    }

    pub fn rounds(&self) -> &[RoundRow] {
        &self.rounds
    }

    /// Runs rounds until every job has finished (or the window has).
    pub fn run_to_end(&mut self) -> Result<(), ReplayError> {
        while self.step_round()? {}
        Ok(())
    }

    /// The output: every job admitted, ordered by id.
    pub fn finish(self) -> EngineOutput {
        let end_s = self
            .done
            .iter()
            .filter_map(|j| j.finish)
            .fold(0.0, f64::max);
        let mut jobs = self.done;
        jobs.extend(self.active);
        jobs.sort_by_key(|j| j.spec.id);
        EngineOutput {
            jobs,
            rounds: self.rounds,
            end_s,
            lp_failures: self.lp_failures,
        }
    }

    /// Admits the jobs that arrived by the current time.
    fn admit(&mut self) -> Result<(), ReplayError> {
        let cfg = self.cfg;
        while let Some(next) = self.arrivals.peek() {
            if next.arrival_s > self.t {
                break;
            }
            let job = self.arrivals.next().expect("peeked");
            if job.arrival_s < self.last_arrival {
                return Err(ReplayError::Options(format!(
                    "workload is not sorted by arrival: job {} arrives at {} after a job at {}",
                    job.id, job.arrival_s, self.last_arrival
                )));
            }
            self.last_arrival = job.arrival_s;
            if let Some(rec) = self.recorder.as_deref_mut() {
                rec.write(&job)?;
            }
            self.active
                .push(bind(job, cfg.cluster, cfg.profiles, cfg.semantics)?);
        }
        Ok(())
    }

    /// Runs the next round that has work (admitting arrivals first, skipping empty rounds).
    /// Returns `false`, running nothing, once the replay is over.
    pub fn step_round(&mut self) -> Result<bool, ReplayError> {
        if self.ended {
            return Ok(false);
        }
        let cfg = self.cfg;
        let r = cfg.round_s;
        let window_len = cfg.window.map_or(0, |(a, b)| b - a + 1);
        loop {
            self.admit()?;
            if cfg.window.is_some() && self.window_done == window_len {
                self.ended = true;
                return Ok(false);
            }
            if !self.active.is_empty() {
                break;
            }
            match self.arrivals.peek() {
                None => {
                    self.ended = true;
                    return Ok(false);
                }
                Some(next) => {
                    let k = ((next.arrival_s - self.t0) / r).ceil();
                    self.t = self.t.max(self.t0 + k * r);
                }
            }
        }
        if self.t >= cfg.horizon_s || cfg.horizon_s.is_nan() {
            return Err(horizon_reached(cfg.horizon_s, &self.active));
        }
        self.round()?;
        Ok(true)
    }

    /// One round at `self.t` over the (non-empty) active jobs.
    fn round(&mut self) -> Result<(), ReplayError> {
        let cfg = self.cfg;
        let cl = cfg.cluster;
        let r = cfg.round_s;
        let t = self.t;
        let synergy = cfg.semantics == Semantics::Synergy;
        self.n_rounds += 1;
        if self.n_rounds > cfg.max_rounds {
            return Err(ReplayError::NoProgress(format!(
                "more than {} rounds (raise --max-rounds if the workload is really this long)",
                cfg.max_rounds
            )));
        }

        // Decide.
        let started = Instant::now();
        let active = &mut self.active;
        let demand: u64 = active.iter().map(|j| j.spec.gpus as u64).sum();
        let contention = (demand as f64 / cl.total_gpus as f64).max(1.0);
        let pctx = PolicyCtx {
            now: t,
            cluster: cl,
            contention,
            free_frac: self.free_frac,
            semantics: cfg.semantics,
            fair: cfg.mechanism.synergy_fair(),
        };
        // Synergy: starved jobs (priority 1) first, except under FIFO, whose key is arrival only.
        let prioritized = synergy && cfg.policy.uses_priority();
        self.keyed.clear();
        self.keyed.extend(active.iter().enumerate().map(|(i, j)| {
            let prio = if prioritized {
                -f64::from(j.synergy.priority)
            } else {
                0.0
            };
            (
                prio,
                cfg.policy.key(j, &pctx),
                j.spec.arrival_s,
                j.spec.id,
                i,
            )
        }));
        self.keyed.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then(a.2.total_cmp(&b.2))
                .then(a.3.cmp(&b.3))
        });
        self.order.clear();
        self.order.extend(self.keyed.iter().map(|k| k.4));
        if synergy && cfg.policy.synergy_selected_only() {
            select_round_jobs(&mut self.order, active, cl.total_gpus);
            if cfg.mechanism.synergy_tune() {
                self.order
                    .sort_by_key(|&i| std::cmp::Reverse(active[i].spec.gpus));
            }
        }
        if synergy {
            // After the sort, as Synergy's schedulers do: the bump counts from the next round.
            for j in active.iter_mut() {
                let since = t - j.synergy.last_run_end.unwrap_or(j.spec.arrival_s);
                if since > SYNERGY_STARVATION_S {
                    j.synergy.priority = 1;
                }
            }
        }
        self.placements.clear();
        let mctx = MechCtx {
            cluster: cl,
            profiles: cfg.profiles,
            semantics: cfg.semantics,
            jobs: active,
        };
        let mut stats = MechStats::default();
        cfg.mechanism
            .allocate(&mctx, &self.order, &mut self.placements, &mut stats);
        let decision_s = started.elapsed().as_secs_f64();
        if stats.lp_failed {
            self.lp_failures += 1;
        }

        // Check every server in every dimension, and each job placed whole: its parts on
        // distinct servers, their GPUs its demand.
        let placements = &self.placements;
        let alloc = &mut self.alloc;
        alloc.clear();
        alloc.resize(active.len(), None);
        let ns = cl.servers.len();
        let mut used = vec![(0u32, 0.0f64, 0.0f64); ns];
        self.pairs.clear();
        for p in placements {
            let job = active.get(p.job).ok_or_else(|| {
                ReplayError::Internal(format!("placement of unknown job index {}", p.job))
            })?;
            if p.gpus == 0 || p.server >= ns || !(p.cpus >= 0.0 && p.mem_gb >= 0.0) {
                return Err(ReplayError::Internal(format!(
                    "bad placement {p:?} of job {}",
                    job.spec.id
                )));
            }
            let a = alloc[p.job].get_or_insert_default();
            a.gpus += p.gpus;
            a.cpus += p.cpus;
            a.mem_gb += p.mem_gb;
            a.servers += 1;
            self.pairs.push((p.job, p.server));
            let u = &mut used[p.server];
            u.0 += p.gpus;
            u.1 += p.cpus;
            u.2 += p.mem_gb;
        }
        self.pairs.sort_unstable();
        if let Some(w) = self.pairs.windows(2).find(|w| w[0] == w[1]) {
            return Err(ReplayError::Internal(format!(
                "job {} placed twice on server {} in one round",
                active[w[0].0].spec.id, w[0].1
            )));
        }
        for (i, a) in alloc.iter().enumerate() {
            if let Some(a) = a
                && a.gpus != active[i].spec.gpus
            {
                return Err(ReplayError::Internal(format!(
                    "job {} placed on {} GPUs, wants {}",
                    active[i].spec.id, a.gpus, active[i].spec.gpus
                )));
            }
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
            audit(t, active, placements);
        }

        // Progress.
        let rates = &mut self.rates;
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
        for (i, a) in alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            let rate = mctx.rate_spread(i, a.cpus, a.mem_gb, a.servers);
            rates[i] = rate;
            let j = &active[i];
            row.gpus += a.gpus;
            row.cpus += a.cpus;
            row.mem_gb += a.mem_gb;
            row.gpu_use += a.gpus as f64 * (rate / j.best_rate).min(1.0);
            row.cpu_use += a.cpus.min(j.best_cpu);
            row.mem_use += a.mem_gb.min(j.best_mem);
            progressed |= rate > 0.0;
        }
        self.free_frac = [
            1.0 - row.gpus as f64 / cl.total_gpus as f64,
            1.0 - row.cpus / cl.total_cpus,
            1.0 - row.mem_gb / cl.total_mem_gb,
        ];
        self.rounds.push(row);
        if !progressed && self.arrivals.peek().is_none() {
            self.idle_rounds += 1;
            if self.idle_rounds > 3 {
                return Err(ReplayError::NoProgress(format!(
                    "{} jobs wait at t={t} s and no placement makes progress",
                    active.len()
                )));
            }
        } else {
            self.idle_rounds = 0;
        }
        for (i, j) in active.iter_mut().enumerate() {
            j.rounds_active += 1;
            j.contention_sum += contention;
            let Some(p) = &alloc[i] else {
                if synergy {
                    j.synergy.speedup = j.synergy.speedup_orig;
                }
                continue;
            };
            let rate = rates[i];
            j.rounds_run += 1;
            j.first_start.get_or_insert(t);
            let dom = (p.gpus as f64 / cl.total_gpus as f64)
                .max(p.cpus / cl.total_cpus)
                .max(p.mem_gb / cl.total_mem_gb);
            let ran = if synergy {
                synergy_progress(j, rate, t, r)
            } else {
                exact_progress(j, rate, t, r)
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
                    self.window_done += 1;
                }
                self.done.push(j);
            }
            *active = kept;
            if let Some(progress) = cfg.progress {
                progress(if cfg.window.is_some() {
                    self.window_done
                } else {
                    self.done.len() as u64
                });
            }
        }
        self.t += r;
        Ok(())
    }
}

/// Synergy's `jobs_this_round`: the jobs, in order, whose GPUs still fit the cluster's count.
fn select_round_jobs(order: &mut Vec<usize>, jobs: &[JobState], total_gpus: u32) {
    let mut free = total_gpus;
    order.retain(|&i| {
        let g = jobs[i].spec.gpus;
        let take = g <= free;
        if take {
            free -= g;
        }
        take
    });
}

/// Exact semantics: the job runs at `rate` and finishes the instant its work runs out.
/// Returns the seconds it ran.
fn exact_progress(j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
    let needed = if rate > 0.0 {
        j.remaining / rate
    } else {
        f64::INFINITY
    };
    if needed <= r * (1.0 + 1e-12) {
        j.remaining = 0.0;
        j.finish = Some(t + needed.min(r));
        needed.min(r)
    } else {
        j.remaining -= rate * r;
        r
    }
}

/// Synergy's semantics: the job is credited `floor(round / (iteration time / speed-up))` whole
/// iterations at the start of the round (speed-up = rate over the proportional rate) and, once
/// they reach its total, finishes at the end of the round. It holds the whole round either way.
fn synergy_progress(j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
    let sc = &mut j.synergy;
    let speedup = if rate == j.prop_rate {
        1.0
    } else if rate == j.prop_rate * sc.speedup_orig {
        sc.speedup_orig
    } else {
        rate / j.prop_rate
    };
    sc.done_iters = (sc.done_iters + sc.iters_in_round(r, speedup)).min(sc.total_iters);
    sc.speedup = speedup;
    sc.last_run_end = Some(t + r);
    j.remaining = (sc.total_iters - sc.done_iters) as f64 * sc.samples_per_iter;
    if sc.done_iters >= sc.total_iters {
        j.finish = Some(t + r);
    }
    r
}
