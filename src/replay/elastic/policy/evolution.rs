//! ONES's online evolutionary search (SC'21), shared by `ones`, its improved variants and the
//! joint batch x CPU x memory search; a [`Variant`] switches each change on or off.
//!
//! An individual is a slot vector over the cluster's GPUs, server by server (slot i belongs to
//! one job or none), so a job's GPU count is its number of slots. One generation: refresh the 16
//! parents (per-job caps), 8 uniform slot-wise crossovers (16 children), one mutant per parent,
//! repair every one of the 48 (pad idle GPUs: new jobs at one GPU first-come first-served, then
//! executed jobs by shortest predicted remaining time up to their caps; then place them, jobs
//! that keep their GPU count keeping their GPUs), score, keep the best 16. The population
//! carries over from one decision to the next. See docs/REPLAY.md ("ONES") for what differs from
//! the artifact.

use super::super::super::cluster::{Cluster, EPS};
use super::super::allocation::Allocation;
use super::super::job::ElasticJob;
use super::super::model::AppModel;
use super::sampling;
use super::{DecisionCtx, ElasticPolicy};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::{BTreeMap, BinaryHeap};

/// Which of the improvements over ONES a search uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variant {
    pub name: &'static str,
    /// Fitness = estimated sum of completion times of every active job, queued jobs included
    /// (shortest predicted remaining time first), instead of the allocated executed jobs'
    /// remaining GPU-seconds.
    pub queue_aware: bool,
    /// Mutation also moves GPUs from one executed job to another (ONES's only deletes jobs).
    pub move_mutation: bool,
    /// The global batch is chosen per GPU count by goodput (throughput x statistical
    /// efficiency) within the job's bounds, instead of the job's batch-size rule.
    pub free_batch: bool,
    /// The progress predictor's mean instead of a fresh Beta sample every generation.
    pub mean_predictor: bool,
    /// CPU and memory per GPU are searched too (a level per job), read from the job's matrix.
    pub resources: bool,
}

impl Variant {
    pub const ONES: Variant = Variant {
        name: "ones",
        queue_aware: false,
        move_mutation: false,
        free_batch: false,
        mean_predictor: false,
        resources: false,
    };
}

/// Individuals kept per generation (ONES's `population_size`).
pub const POPULATION: usize = 16;
/// Crossover pairs per generation (16 children).
const PAIRS: usize = 8;
/// Uniform crossover: probability that a slot is swapped between the two children.
const SWAP_P: f64 = 0.5;
/// Mutation: probability that a job (executed, not pinned) is removed from the mutant.
const DELETE_P: f64 = 0.3;
/// Spread (log-normal sigma) of the emulated predictor's error on the remaining epochs.
pub const PREDICTOR_SIGMA: f64 = 0.4;
/// Generations per decision: one per second of the decision interval (ONES runs one a second),
/// at most this many.
pub const MAX_GENERATIONS: usize = 300;
/// CPU levels of the joint search, as multiples of the cluster's proportional share per GPU.
pub const CPU_STEPS: [f64; 6] = [0.5, 0.75, 1.0, 1.5, 2.0, 3.0];
const SHARE_LEVEL: u8 = 2;
/// A batch change of a job that keeps its GPUs must raise its goodput this much (it restarts).
const BATCH_HYSTERESIS: f64 = 1.1;
/// Fraction of the rate a memory level may lose to be enough.
const MEM_KEEP: f64 = 0.99;
/// Cost of an allocated job the model gives no rate for.
const STALLED_S: f64 = 1e12;
const NONE: u32 = u32::MAX;

/// Per-job state the search keeps across decisions (ONES's elasticity manager).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Caps {
    /// Training max size: doubles when the job holds it; halved with `stored` when skipped.
    pub max_size: u32,
    /// GPUs the job held when last running (a stopped job's size).
    pub stored: u32,
    pub started: bool,
}

/// An individual between decisions: slot owners by job id, CPU levels by job id.
#[derive(Debug, Clone)]
struct Stored {
    slots: Vec<Option<u64>>,
    levels: BTreeMap<u64, u8>,
}

#[derive(Debug, Clone)]
struct Ind {
    slots: Vec<u32>,
    level: Vec<u8>,
    score: f64,
}

/// What one decision knows about a job.
struct JobInfo {
    executed: bool,
    pinned: bool,
    live_n: u32,
    /// Crossover/refresh cap (ONES's `ones_max_size`): 0 for a never-started job.
    cap: u32,
    max_size: u32,
    /// Completed epochs, epoch 0 (evaluation of the untrained model) included.
    epochs: f64,
    samples: f64,
    remaining_epochs: f64,
    /// The emulated predictor's error for this decision.
    err: f64,
}

/// Decision-local view: jobs, cluster geometry, rate cache.
struct Prepared<'a> {
    ctx: &'a DecisionCtx<'a>,
    info: Vec<JobInfo>,
    models: Vec<Option<&'a AppModel>>,
    /// Server of each slot; first slot of each server.
    server_of: Vec<usize>,
    first_slot: Vec<usize>,
    share: (f64, f64),
    max_server_gpus: u32,
    /// Lazily filled (rate, global batch) per job, GPU count and level.
    cache: Vec<Vec<(f64, u32)>>,
    levels: usize,
    variant: Variant,
}

/// The search: a [`Variant`], its RNG, its population and per-job caps.
pub struct Evolution {
    variant: Variant,
    rng: ChaCha8Rng,
    population: Vec<Stored>,
    caps: BTreeMap<u64, Caps>,
    /// The last decision's remaining-work draw, by job id (for [`Evolution::score_decision`]).
    last_rhat: BTreeMap<u64, f64>,
    /// The last decision's initial (repaired) population, as decisions.
    last_initial: Vec<Vec<Option<Allocation>>>,
    generations: Option<usize>,
}

impl Evolution {
    pub fn new(variant: Variant, seed: u64) -> Evolution {
        Evolution {
            variant,
            rng: ChaCha8Rng::seed_from_u64(seed),
            population: Vec::new(),
            caps: BTreeMap::new(),
            last_rhat: BTreeMap::new(),
            last_initial: Vec::new(),
            generations: None,
        }
    }

    /// Fixes the generations per decision (default: one per second of the interval).
    pub fn with_generations(mut self, g: usize) -> Evolution {
        self.generations = Some(g.max(1));
        self
    }

    pub fn caps(&self) -> &BTreeMap<u64, Caps> {
        &self.caps
    }

    /// The last decision's initial population, repaired, as decisions.
    pub fn last_initial(&self) -> &[Vec<Option<Allocation>>] {
        &self.last_initial
    }

    /// The search's own fitness (lower is better) of `decision` for `ctx`, with the remaining
    /// work drawn in the last generation of the last decision.
    pub fn score_decision(&self, ctx: &DecisionCtx, decision: &[Option<Allocation>]) -> f64 {
        let mut p = Prepared::new(ctx, self.variant, &self.caps, |_| 1.0);
        let rhat: Vec<f64> = ctx
            .jobs
            .iter()
            .map(|j| self.last_rhat.get(&j.spec.id).copied().unwrap_or(0.0))
            .collect();
        let counts: Vec<u32> = decision
            .iter()
            .map(|a| a.as_ref().map_or(0, |a| a.gpus()))
            .collect();
        let level: Vec<u8> = decision
            .iter()
            .map(|a| {
                a.as_ref()
                    .map_or(SHARE_LEVEL, |a| p.level_of(a.cpus_per_gpu))
            })
            .collect();
        let order = p.srpt_order(&rhat);
        p.score(&counts, &level, &rhat, &order)
    }

    /// Updates the caps before a decision (ONES's scale_up / scale_down).
    fn update_caps(&mut self, ctx: &DecisionCtx) {
        let c = ctx.cluster.total_gpus;
        let active: std::collections::BTreeSet<u64> = ctx.jobs.iter().map(|j| j.spec.id).collect();
        self.caps.retain(|id, _| active.contains(id));
        for j in ctx.jobs {
            let e = self.caps.entry(j.spec.id).or_insert(Caps {
                max_size: 1,
                stored: 0,
                started: false,
            });
            if let Some(a) = &j.allocation {
                e.started = true;
                e.stored = a.gpus();
                e.max_size = e.max_size.max(1);
            }
        }
        for j in ctx.jobs {
            let e = self.caps.get_mut(&j.spec.id).expect("inserted above");
            let n = j.allocation.as_ref().map_or(0, |a| a.gpus());
            if n > 0 && executed(j) && n >= e.max_size {
                e.max_size = (2 * e.max_size).min(c).max(1);
            }
        }
    }

    fn run(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        if ctx.jobs.is_empty() || ctx.cluster.total_gpus == 0 {
            self.population.clear();
            self.last_initial.clear();
            self.last_rhat.clear();
            return vec![None; ctx.jobs.len()];
        }
        self.update_caps(ctx);
        let sigma = PREDICTOR_SIGMA;
        let rng = &mut self.rng;
        let mut p = Prepared::new(ctx, self.variant, &self.caps, |_| {
            sampling::lognormal(rng, sigma)
        });
        let nj = ctx.jobs.len();
        let c = p.server_of.len();
        let index: BTreeMap<u64, u32> = ctx
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.spec.id, i as u32))
            .collect();
        let live_level: Vec<u8> = ctx
            .jobs
            .iter()
            .map(|j| {
                j.allocation
                    .as_ref()
                    .map_or(SHARE_LEVEL, |a| p.level_of(a.cpus_per_gpu))
            })
            .collect();
        // Load the population (dropping finished jobs), or seed it.
        let mut pop: Vec<Ind> = self
            .population
            .iter()
            .filter(|s| s.slots.len() == c)
            .map(|s| Ind {
                slots: s
                    .slots
                    .iter()
                    .map(|o| o.and_then(|id| index.get(&id).copied()).unwrap_or(NONE))
                    .collect(),
                level: ctx
                    .jobs
                    .iter()
                    .enumerate()
                    .map(|(i, j)| s.levels.get(&j.spec.id).copied().unwrap_or(live_level[i]))
                    .collect(),
                score: 0.0,
            })
            .collect();
        if pop.is_empty() {
            let live = p.live_slots();
            let new: Vec<u32> = (0..nj as u32)
                .filter(|&i| ctx.jobs[i as usize].allocation.is_none())
                .collect();
            for k in 0..POPULATION {
                let mut slots = live.clone();
                let mut perm = new.clone();
                if k > 0 {
                    for i in (1..perm.len()).rev() {
                        perm.swap(i, sampling::below(&mut self.rng, i + 1));
                    }
                }
                let free: Vec<usize> = (0..c).filter(|&s| slots[s] == NONE).collect();
                for (&j, &s) in perm.iter().take(POPULATION).zip(&free) {
                    slots[s] = j;
                }
                pop.push(Ind {
                    slots,
                    level: live_level.clone(),
                    score: 0.0,
                });
            }
        }
        let generations = self
            .generations
            .unwrap_or_else(|| (ctx.interval_s.round().max(1.0) as usize).min(MAX_GENERATIONS));
        let mut rhat = p.draw_rhat(&mut self.rng);
        let mut order = p.srpt_order(&rhat);
        for ind in &mut pop {
            p.refresh(ind);
            p.repair(ind, &order, &rhat);
            ind.score = p.score_ind(ind, &rhat, &order);
        }
        let initial = pop.clone();
        for _ in 0..generations {
            rhat = p.draw_rhat(&mut self.rng);
            order = p.srpt_order(&rhat);
            for ind in &mut pop {
                p.refresh(ind);
            }
            let mut pool = pop.clone();
            let k = pop.len();
            for _ in 0..PAIRS {
                let a = sampling::below(&mut self.rng, k);
                let mut b = sampling::below(&mut self.rng, k);
                if k > 1 {
                    while b == a {
                        b = sampling::below(&mut self.rng, k);
                    }
                }
                let (c1, c2) = p.crossover(&pop[a], &pop[b], &mut self.rng);
                pool.push(c1);
                pool.push(c2);
            }
            for ind in &pop {
                pool.push(p.mutate(ind, &mut self.rng));
            }
            for ind in &mut pool {
                p.repair(ind, &order, &rhat);
                ind.score = p.score_ind(ind, &rhat, &order);
            }
            pool.sort_by(|x, y| x.score.total_cmp(&y.score));
            pool.truncate(POPULATION);
            pop = pool;
        }
        // Never worse than where this decision started, under the last draw.
        let mut start = initial.clone();
        for ind in &mut start {
            ind.score = p.score_ind(ind, &rhat, &order);
        }
        start.sort_by(|x, y| x.score.total_cmp(&y.score));
        if start[0].score < pop[0].score {
            pop.insert(0, start[0].clone());
            pop.truncate(POPULATION);
        }
        let decision = p.decision(&pop[0]);
        self.last_initial = initial.iter().map(|i| p.decision(i)).collect();
        self.last_rhat = ctx
            .jobs
            .iter()
            .zip(&rhat)
            .map(|(j, &r)| (j.spec.id, r))
            .collect();
        // Scale in: stopped jobs left out again halve their size and max size.
        for (j, a) in ctx.jobs.iter().zip(&decision) {
            if let Some(e) = self.caps.get_mut(&j.spec.id)
                && e.started
                && j.allocation.is_none()
                && a.is_none()
            {
                e.stored = (e.stored / 2).max(1);
                e.max_size = e.stored;
            }
        }
        let ids: Vec<u64> = ctx.jobs.iter().map(|j| j.spec.id).collect();
        self.population = pop
            .iter()
            .map(|i| Stored {
                slots: i
                    .slots
                    .iter()
                    .map(|&s| (s != NONE).then(|| ids[s as usize]))
                    .collect(),
                levels: ids.iter().copied().zip(i.level.iter().copied()).collect(),
            })
            .collect();
        decision
    }
}

impl ElasticPolicy for Evolution {
    fn name(&self) -> &'static str {
        self.variant.name
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        self.run(ctx)
    }
}

/// ONES's "executed": at least one training epoch done (two counting epoch 0).
fn executed(j: &ElasticJob) -> bool {
    j.spec.epoch_samples > 0.0 && j.samples >= j.spec.epoch_samples
}

/// Smallest proportional share per GPU over the servers (cores, GB): fits on every server.
fn min_share(cluster: &Cluster) -> (f64, f64) {
    cluster
        .servers
        .iter()
        .filter(|s| s.gpus > 0)
        .map(|s| s.share_per_gpu())
        .fold((f64::INFINITY, f64::INFINITY), |a, b| {
            (a.0.min(b.0), a.1.min(b.1))
        })
}

impl<'a> Prepared<'a> {
    fn new(
        ctx: &'a DecisionCtx<'a>,
        variant: Variant,
        caps: &BTreeMap<u64, Caps>,
        mut err: impl FnMut(usize) -> f64,
    ) -> Prepared<'a> {
        let cluster = ctx.cluster;
        let total = cluster.total_gpus;
        let mut server_of = Vec::with_capacity(total as usize);
        let mut first_slot = Vec::with_capacity(cluster.servers.len());
        for (s, srv) in cluster.servers.iter().enumerate() {
            first_slot.push(server_of.len());
            server_of.extend(std::iter::repeat_n(s, srv.gpus as usize));
        }
        let share = min_share(cluster);
        let share = if share.0.is_finite() {
            share
        } else {
            (0.0, 0.0)
        };
        // scale_down: the largest running executed job holding half the cluster or more,
        // cut toward 2n / (t / median t + 1) when it has run longer than the median.
        let mut runs: Vec<f64> = ctx
            .jobs
            .iter()
            .filter(|j| caps.get(&j.spec.id).is_some_and(|c| c.started))
            .map(|j| j.run_s)
            .collect();
        runs.sort_by(f64::total_cmp);
        let median = if runs.is_empty() {
            0.0
        } else if runs.len() % 2 == 1 {
            runs[runs.len() / 2]
        } else {
            0.5 * (runs[runs.len() / 2 - 1] + runs[runs.len() / 2])
        };
        let n_of = |j: &ElasticJob| j.allocation.as_ref().map_or(0, |a| a.gpus());
        let largest = ctx
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| executed(j) && 2 * n_of(j) >= total && n_of(j) > 0)
            .max_by_key(|(i, j)| (n_of(j), std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        let info = ctx
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let c = caps.get(&j.spec.id).copied().unwrap_or(Caps {
                    max_size: 1,
                    stored: 0,
                    started: false,
                });
                let live_n = n_of(j);
                let ex = executed(j);
                let mut cap = if live_n > 0 {
                    if ex {
                        c.max_size.min(4 * j.spec.requested_gpus.max(1))
                    } else {
                        live_n
                    }
                } else if c.started {
                    c.stored
                } else {
                    0
                };
                if Some(i) == largest && median > 0.0 && j.run_s > median {
                    let m =
                        ((2.0 * live_n as f64 / (j.run_s / median + 1.0)).floor() as u32).max(1);
                    cap = (m / 2 + m % 2) * 2;
                }
                // One sample per GPU at the largest batch at most.
                let most = j.spec.max_batch.max(1);
                let cap = cap.min(most);
                let n = j.spec.epoch_samples.max(1e-9);
                JobInfo {
                    executed: ex,
                    pinned: live_n > 0 && j.epochs_since_change() < 1.0,
                    live_n,
                    cap,
                    max_size: c.max_size.max(1).min(most).max(live_n),
                    epochs: (j.samples / n).floor() + 1.0,
                    samples: j.samples,
                    remaining_epochs: (j.remaining() / n).max(1e-3),
                    err: err(i),
                }
            })
            .collect();
        let levels = if variant.resources {
            CPU_STEPS.len()
        } else {
            1
        };
        Prepared {
            ctx,
            info,
            models: ctx
                .jobs
                .iter()
                .map(|j| ctx.models.get(&j.spec.app))
                .collect(),
            server_of,
            first_slot,
            share,
            max_server_gpus: cluster.max_server_gpus.max(1),
            cache: vec![Vec::new(); ctx.jobs.len()],
            levels,
            variant,
        }
    }

    /// The level whose CPU per GPU is closest to `c`.
    fn level_of(&self, c: f64) -> u8 {
        if !self.variant.resources || self.share.0 <= 0.0 {
            return SHARE_LEVEL;
        }
        let r = c / self.share.0;
        (0..CPU_STEPS.len())
            .min_by(|&a, &b| {
                (CPU_STEPS[a] - r)
                    .abs()
                    .total_cmp(&(CPU_STEPS[b] - r).abs())
            })
            .unwrap_or(SHARE_LEVEL as usize) as u8
    }

    /// Cores and GB per GPU of `level` for job `j`.
    fn resources_of(&self, j: usize, level: u8) -> (f64, f64) {
        if !self.variant.resources {
            return self.share;
        }
        let res = self.models[j].and_then(|m| m.resources.as_ref());
        match res {
            Some(r) => {
                let c = self.share.0 * CPU_STEPS[level as usize];
                (c, r.mem_for(c, MEM_KEEP).min(self.share.1 * 4.0))
            }
            None => self.share,
        }
    }

    /// (rate, global batch) of job `j` on `n` GPUs at `level`: samples/s (ONES's throughput),
    /// or progress/s (goodput) when the batch is free.
    fn rate(&mut self, j: usize, n: u32, level: u8) -> (f64, u32) {
        let lv = if self.variant.resources {
            level as usize
        } else {
            0
        };
        let k = n as usize * self.levels + lv;
        if self.cache[j].len() <= k {
            self.cache[j].resize((n as usize + 1) * self.levels, (f64::NAN, 0));
        }
        if !self.cache[j][k].0.is_nan() {
            return self.cache[j][k];
        }
        let v = self.compute_rate(j, n, level);
        self.cache[j][k] = v;
        v
    }

    fn compute_rate(&self, j: usize, n: u32, level: u8) -> (f64, u32) {
        let job = &self.ctx.jobs[j];
        let spec = &job.spec;
        let rule = spec
            .rule_batch(n)
            .unwrap_or_else(|| (spec.base_batch.max(1) * n).clamp(spec.min_batch, spec.max_batch));
        let rule = rule.max(n).min(spec.max_batch.max(n));
        let Some(m) = self.models[j] else {
            return (n as f64, rule);
        };
        let nodes = n.div_ceil(self.max_server_gpus);
        let (c, g) = self.resources_of(j, level);
        let x = |b: u32| m.throughput_with(n, nodes, b as f64 / n as f64, c, g);
        if !self.variant.free_batch {
            return (x(rule), rule);
        }
        let frac = job.progress_frac();
        let good = |b: u32| {
            x(b) * m
                .efficiency
                .efficiency(b as f64, spec.base_batch as f64, frac)
        };
        let lo = spec.min_batch.max(n) as f64;
        let hi = (spec.max_batch as f64)
            .min(n as f64 * m.max_local_batch.max(1) as f64)
            .max(lo);
        let mut best = (good(rule), rule);
        const STEPS: u32 = 12;
        for s in 0..=STEPS {
            let b = (lo * (hi / lo).powf(s as f64 / STEPS as f64)).round() as u32;
            let b = b.clamp(spec.min_batch.max(n), spec.max_batch.max(n));
            let v = good(b);
            if v > best.0 {
                best = (v, b);
            }
        }
        // A job keeping its GPUs keeps its batch unless the change pays for the restart.
        if let Some(a) = &job.allocation
            && a.gpus() == n
        {
            let live = good(a.global_batch);
            if best.0 < BATCH_HYSTERESIS * live {
                return (live, a.global_batch);
            }
        }
        best
    }

    /// Remaining work per job for one generation: the emulated predictor (rho ~ Beta(e, beta),
    /// beta = true remaining epochs x the decision's log-normal error; R = S (1/rho - 1)), or its
    /// mean; jobs without an executed epoch get the predictor's point estimate beta x N.
    fn draw_rhat(&self, rng: &mut ChaCha8Rng) -> Vec<f64> {
        self.info
            .iter()
            .zip(self.ctx.jobs)
            .map(|(i, j)| {
                let beta = i.remaining_epochs * i.err;
                if !i.executed || i.samples <= 0.0 {
                    return beta * j.spec.epoch_samples;
                }
                let rho = if self.variant.mean_predictor {
                    i.epochs / (i.epochs + beta)
                } else {
                    sampling::beta(rng, i.epochs, beta)
                };
                i.samples * (1.0 / rho.max(1e-12) - 1.0)
            })
            .collect()
    }

    /// Jobs by predicted remaining time on one GPU, shortest first (pad and queue order).
    fn srpt_order(&mut self, rhat: &[f64]) -> Vec<u32> {
        let keys: Vec<f64> = (0..rhat.len())
            .map(|j| {
                let (x, _) = self.rate(j, 1, SHARE_LEVEL);
                if x > 0.0 { rhat[j] / x } else { STALLED_S }
            })
            .collect();
        let mut order: Vec<u32> = (0..rhat.len() as u32).collect();
        order.sort_by(|&a, &b| {
            keys[a as usize]
                .total_cmp(&keys[b as usize])
                .then(a.cmp(&b))
        });
        order
    }

    /// Slot vector of the jobs' current allocations.
    fn live_slots(&self) -> Vec<u32> {
        let mut slots = vec![NONE; self.server_of.len()];
        let mut cursor = self.first_slot.clone();
        for (i, j) in self.ctx.jobs.iter().enumerate() {
            if let Some(a) = &j.allocation {
                for &(s, g) in &a.gpus_per_server {
                    for _ in 0..g {
                        if s < cursor.len()
                            && cursor[s] < slots.len()
                            && self.server_of[cursor[s]] == s
                        {
                            slots[cursor[s]] = i as u32;
                            cursor[s] += 1;
                        }
                    }
                }
            }
        }
        slots
    }

    /// Keeps at most `cap` slots per job (its first always; pinned jobs untouched).
    fn refresh(&self, ind: &mut Ind) {
        let mut count = vec![0u32; self.info.len()];
        for s in ind.slots.iter_mut() {
            if *s == NONE {
                continue;
            }
            let j = *s as usize;
            let info = &self.info[j];
            count[j] += 1;
            if !info.pinned && count[j] > info.cap.max(1) {
                *s = NONE;
            }
        }
    }

    /// Uniform slot-wise crossover; children keep at most each job's cap (0 for never-started
    /// jobs, which only come back through padding).
    fn crossover(&self, a: &Ind, b: &Ind, rng: &mut ChaCha8Rng) -> (Ind, Ind) {
        let c = a.slots.len();
        let mut s1 = vec![NONE; c];
        let mut s2 = vec![NONE; c];
        let mut n1 = vec![0u32; self.info.len()];
        let mut n2 = vec![0u32; self.info.len()];
        let put = |slots: &mut Vec<u32>, n: &mut Vec<u32>, i: usize, j: u32| {
            if j == NONE {
                return;
            }
            let info = &self.info[j as usize];
            if info.pinned || n[j as usize] < info.cap {
                n[j as usize] += 1;
                slots[i] = j;
            }
        };
        for i in 0..c {
            let (x, y) = if sampling::unit(rng) >= SWAP_P {
                (a.slots[i], b.slots[i])
            } else {
                (b.slots[i], a.slots[i])
            };
            put(&mut s1, &mut n1, i, x);
            put(&mut s2, &mut n2, i, y);
        }
        let mut l1 = a.level.clone();
        let mut l2 = b.level.clone();
        if self.variant.resources {
            for j in 0..l1.len() {
                if sampling::unit(rng) < SWAP_P {
                    std::mem::swap(&mut l1[j], &mut l2[j]);
                }
            }
        }
        (
            Ind {
                slots: s1,
                level: l1,
                score: 0.0,
            },
            Ind {
                slots: s2,
                level: l2,
                score: 0.0,
            },
        )
    }

    /// ONES's mutation (each executed, unpinned job removed with probability 0.3); with
    /// `move_mutation` also moves a few GPUs between executed jobs; with `resources` steps a
    /// few jobs' CPU levels.
    fn mutate(&self, parent: &Ind, rng: &mut ChaCha8Rng) -> Ind {
        let mut m = parent.clone();
        let nj = self.info.len();
        let mut present = vec![false; nj];
        for &s in &m.slots {
            if s != NONE {
                present[s as usize] = true;
            }
        }
        let mut delete = vec![false; nj];
        for j in 0..nj {
            let i = &self.info[j];
            if present[j] && i.executed && !i.pinned && sampling::unit(rng) < DELETE_P {
                delete[j] = true;
            }
        }
        for s in m.slots.iter_mut() {
            if *s != NONE && delete[*s as usize] {
                *s = NONE;
            }
        }
        if self.variant.move_mutation {
            let movable: Vec<u32> = (0..nj as u32)
                .filter(|&j| self.info[j as usize].executed && !self.info[j as usize].pinned)
                .collect();
            if movable.len() >= 2 {
                let moves = 1 + sampling::below(rng, 4);
                for _ in 0..moves {
                    let to = movable[sampling::below(rng, movable.len())];
                    let from_slots: Vec<usize> = (0..m.slots.len())
                        .filter(|&i| {
                            let s = m.slots[i];
                            s != to && (s == NONE || movable.binary_search(&s).is_ok())
                        })
                        .collect();
                    if !from_slots.is_empty() {
                        let i = from_slots[sampling::below(rng, from_slots.len())];
                        m.slots[i] = to;
                    }
                }
            }
        }
        if self.variant.resources {
            for l in m.level.iter_mut() {
                if sampling::unit(rng) < 0.2 {
                    *l = if sampling::unit(rng) < 0.5 {
                        l.saturating_sub(1)
                    } else {
                        (*l + 1).min(CPU_STEPS.len() as u8 - 1)
                    };
                }
            }
        }
        m
    }

    /// Pads the individual's GPU counts (ONES's `_pad`) and places them.
    // Jobs are indices into several parallel vectors here.
    #[allow(clippy::needless_range_loop)]
    fn repair(&mut self, ind: &mut Ind, order: &[u32], _rhat: &[f64]) {
        let c = ind.slots.len() as u32;
        let nj = self.info.len();
        let mut counts = vec![0u32; nj];
        for &s in &ind.slots {
            if s != NONE {
                counts[s as usize] += 1;
            }
        }
        for (j, i) in self.info.iter().enumerate() {
            counts[j] = if i.pinned {
                i.live_n
            } else if !i.executed {
                counts[j].min(1)
            } else {
                counts[j].min(i.max_size)
            };
        }
        let mut total: u32 = counts.iter().sum();
        // Over the cluster (pinned jobs forced back): drop unpinned jobs, longest first.
        for &j in order.iter().rev() {
            if total <= c {
                break;
            }
            let j = j as usize;
            if !self.info[j].pinned && counts[j] > 0 {
                total -= counts[j];
                counts[j] = 0;
            }
        }
        // (a) new jobs at one GPU, first come first served.
        for j in 0..nj {
            if total >= c {
                break;
            }
            let i = &self.info[j];
            if !i.executed && !i.pinned && counts[j] == 0 {
                counts[j] = 1;
                total += 1;
            }
        }
        // (b) executed jobs up to their cap, (c) up to their max size, shortest first.
        for pass in 0..2 {
            for &j in order {
                if total >= c {
                    break;
                }
                let j = j as usize;
                let i = &self.info[j];
                if !i.executed || i.pinned {
                    continue;
                }
                let limit = if pass == 0 { i.cap } else { i.max_size };
                if counts[j] < limit {
                    let add = (limit - counts[j]).min(c - total);
                    counts[j] += add;
                    total += add;
                }
            }
        }
        self.place(ind, &mut counts);
    }

    /// Places `counts` on servers: pinned jobs where they are, jobs keeping their GPU count
    /// (and fitting) where they are, the others largest first (best fit on one server, else
    /// the roomiest servers first); a job that fits nowhere (CPU or memory short) tries lower
    /// CPU levels, then waits. Rewrites the slot vector server by server.
    #[allow(clippy::needless_range_loop)]
    fn place(&mut self, ind: &mut Ind, counts: &mut [u32]) {
        let ctx = self.ctx;
        let servers = &ctx.cluster.servers;
        let mut free = Free {
            gpus: servers.iter().map(|s| s.gpus).collect(),
            cpus: servers.iter().map(|s| s.cpus).collect(),
            mem: servers.iter().map(|s| s.mem_gb).collect(),
            buckets: vec![Vec::new(); self.max_server_gpus as usize + 1],
            at: vec![0; servers.len()],
        };
        for (s, srv) in servers.iter().enumerate() {
            free.at[s] = free.buckets[srv.gpus as usize].len();
            free.buckets[srv.gpus as usize].push(s);
        }
        ind.slots.iter_mut().for_each(|s| *s = NONE);
        let mut cursor = self.first_slot.clone();
        let nj = self.info.len();
        let mut rest: Vec<usize> = Vec::new();
        let mut scratch: Vec<(usize, u32)> = Vec::new();
        // Pinned jobs first (their cores and GB must not go to a job placed before them),
        // then the jobs keeping their GPU count.
        let (pinned, others): (Vec<usize>, Vec<usize>) = (0..nj)
            .filter(|&j| counts[j] > 0)
            .partition(|&j| self.info[j].pinned);
        for j in pinned.into_iter().chain(others) {
            let i = &self.info[j];
            let live = ctx.jobs[j].allocation.as_ref();
            let (cp, mp) = match (i.pinned, live) {
                (true, Some(a)) => (a.cpus_per_gpu, a.mem_gb_per_gpu),
                _ => self.resources_of(j, ind.level[j]),
            };
            if let Some(a) = live
                && a.gpus() == counts[j]
                && free.fits(&a.gpus_per_server, cp, mp)
            {
                for &(s, g) in &a.gpus_per_server {
                    free.take(s, g, cp, mp);
                    put(&mut ind.slots, &mut cursor, s, g, j as u32);
                }
                if i.pinned {
                    ind.level[j] = self.level_of(cp);
                }
                continue;
            }
            if i.pinned {
                counts[j] = 0;
                continue;
            }
            rest.push(j);
        }
        rest.sort_by_key(|&j| (std::cmp::Reverse(counts[j]), j));
        for j in rest {
            let mut level = ind.level[j];
            loop {
                let (cp, mp) = self.resources_of(j, level);
                let ok = if self.variant.resources {
                    free.find_scan(counts[j], cp, mp, &mut scratch)
                } else {
                    free.find_buckets(counts[j], &mut scratch)
                };
                if ok {
                    for &(s, g) in &scratch {
                        free.take(s, g, cp, mp);
                        put(&mut ind.slots, &mut cursor, s, g, j as u32);
                    }
                    ind.level[j] = level;
                    break;
                }
                if !self.variant.resources || level == 0 {
                    counts[j] = 0;
                    break;
                }
                level -= 1;
            }
        }
    }

    fn counts(&self, ind: &Ind) -> Vec<u32> {
        let mut counts = vec![0u32; self.info.len()];
        for &s in &ind.slots {
            if s != NONE {
                counts[s as usize] += 1;
            }
        }
        counts
    }

    fn score_ind(&mut self, ind: &Ind, rhat: &[f64], order: &[u32]) -> f64 {
        let counts = self.counts(ind);
        self.score(&counts, &ind.level, rhat, order)
    }

    /// Fitness, lower is better. ONES: sum over allocated executed jobs of
    /// n x R / X(n) (remaining GPU-seconds). Queue-aware: every job's predicted completion,
    /// queued jobs started shortest-first as allocated ones finish.
    fn score(&mut self, counts: &[u32], level: &[u8], rhat: &[f64], order: &[u32]) -> f64 {
        let mut total = 0.0;
        if !self.variant.queue_aware {
            for j in 0..counts.len() {
                if counts[j] == 0 || !self.info[j].executed {
                    continue;
                }
                let (x, _) = self.rate(j, counts[j], level[j]);
                let t = if x > 0.0 { rhat[j] / x } else { STALLED_S };
                total += counts[j] as f64 * t;
            }
            return total;
        }
        let mut heap: BinaryHeap<std::cmp::Reverse<OrdF64>> = BinaryHeap::new();
        for j in 0..counts.len() {
            if counts[j] == 0 {
                continue;
            }
            let (x, _) = self.rate(j, counts[j], level[j]);
            let t = if x > 0.0 { rhat[j] / x } else { STALLED_S };
            total += t;
            heap.push(std::cmp::Reverse(OrdF64(t)));
        }
        for &j in order {
            let j = j as usize;
            if counts[j] > 0 {
                continue;
            }
            let (x, _) = self.rate(j, 1, SHARE_LEVEL);
            let t = if x > 0.0 { rhat[j] / x } else { STALLED_S };
            let start = heap.pop().map_or(0.0, |r| r.0.0);
            let f = start + t;
            total += f;
            heap.push(std::cmp::Reverse(OrdF64(f)));
        }
        total
    }

    /// The decision an individual stands for.
    fn decision(&mut self, ind: &Ind) -> Vec<Option<Allocation>> {
        let nj = self.info.len();
        let mut per: Vec<Vec<(usize, u32)>> = vec![Vec::new(); nj];
        for (i, &s) in ind.slots.iter().enumerate() {
            if s == NONE {
                continue;
            }
            let srv = self.server_of[i];
            let v = &mut per[s as usize];
            match v.iter_mut().find(|x| x.0 == srv) {
                Some(x) => x.1 += 1,
                None => v.push((srv, 1)),
            }
        }
        (0..nj)
            .map(|j| {
                let mut g = std::mem::take(&mut per[j]);
                if g.is_empty() {
                    return None;
                }
                if self.info[j].pinned {
                    return self.ctx.jobs[j].allocation.clone();
                }
                g.sort_unstable();
                let n: u32 = g.iter().map(|x| x.1).sum();
                let (_, batch) = self.rate(j, n, ind.level[j]);
                let (c, m) = self.resources_of(j, ind.level[j]);
                Some(Allocation {
                    gpus_per_server: g,
                    global_batch: batch,
                    cpus_per_gpu: c,
                    mem_gb_per_gpu: m,
                })
            })
            .collect()
    }
}

/// Writes `g` slots of server `s` to job `j`.
fn put(slots: &mut [u32], cursor: &mut [usize], s: usize, g: u32, j: u32) {
    for _ in 0..g {
        slots[cursor[s]] = j;
        cursor[s] += 1;
    }
}

/// What is left on each server while an individual is placed, with servers bucketed by free
/// GPUs (for placements at the proportional share, where GPUs are the only constraint).
struct Free {
    gpus: Vec<u32>,
    cpus: Vec<f64>,
    mem: Vec<f64>,
    buckets: Vec<Vec<usize>>,
    /// Position of each server in its bucket.
    at: Vec<usize>,
}

impl Free {
    fn room(&self, s: usize, c: f64, m: f64) -> u32 {
        let by = |have: f64, per: f64| {
            if per > 0.0 {
                ((have + EPS) / per).floor().clamp(0.0, u32::MAX as f64) as u32
            } else {
                u32::MAX
            }
        };
        self.gpus[s]
            .min(by(self.cpus[s], c))
            .min(by(self.mem[s], m))
    }

    fn fits(&self, g: &[(usize, u32)], c: f64, m: f64) -> bool {
        g.iter()
            .all(|&(s, n)| s < self.gpus.len() && self.room(s, c, m) >= n)
    }

    fn take(&mut self, s: usize, g: u32, c: f64, m: f64) {
        let old = self.gpus[s] as usize;
        let new = old - g as usize;
        // Move s from bucket old to bucket new.
        let k = self.at[s];
        let last = *self.buckets[old].last().expect("s is in its bucket");
        self.buckets[old].swap_remove(k);
        if last != s {
            self.at[last] = k;
        }
        self.at[s] = self.buckets[new].len();
        self.buckets[new].push(s);
        self.gpus[s] = new as u32;
        self.cpus[s] = (self.cpus[s] - g as f64 * c).max(0.0);
        self.mem[s] = (self.mem[s] - g as f64 * m).max(0.0);
    }

    /// GPUs only: best fit on one server, else the roomiest servers first.
    fn find_buckets(&self, n: u32, out: &mut Vec<(usize, u32)>) -> bool {
        out.clear();
        let top = self.buckets.len() - 1;
        if (n as usize) <= top
            && let Some(b) = (n as usize..=top).find(|&k| !self.buckets[k].is_empty())
        {
            // Any server of the tightest bucket (the bucket's order is deterministic).
            let s = *self.buckets[b].last().expect("non-empty");
            out.push((s, n));
            return true;
        }
        let mut left = n;
        for k in (1..=top).rev() {
            for &s in self.buckets[k].iter().rev() {
                let g = left.min(k as u32);
                out.push((s, g));
                left -= g;
                if left == 0 {
                    out.sort_unstable();
                    return true;
                }
            }
        }
        false
    }

    /// With CPU and memory: the same rule over every server's room.
    fn find_scan(&self, n: u32, c: f64, m: f64, out: &mut Vec<(usize, u32)>) -> bool {
        out.clear();
        let servers = self.gpus.len();
        // One server: the fewest free GPUs first, the first whose cores and GB also suffice.
        let top = self.buckets.len() - 1;
        for k in (n as usize).min(top + 1)..=top {
            if let Some(&s) = self.buckets[k]
                .iter()
                .rev()
                .find(|&&s| self.room(s, c, m) >= n)
            {
                out.push((s, n));
                return true;
            }
        }
        let mut rooms: Vec<(u32, usize)> = (0..servers)
            .map(|s| (self.room(s, c, m), s))
            .filter(|r| r.0 > 0)
            .collect();
        rooms.sort_by_key(|&(r, s)| (std::cmp::Reverse(r), s));
        let mut left = n;
        for (r, s) in rooms {
            let g = left.min(r);
            out.push((s, g));
            left -= g;
            if left == 0 {
                out.sort_unstable();
                return true;
            }
        }
        false
    }
}

/// f64 ordered by `total_cmp`, for the completion-time heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
