//! ONES's online evolutionary search (SC'21), shared by `ones`, its improved variants and the
//! joint batch x CPU x memory search; a [`Variant`] switches each change on or off.
//!
//! An individual is a slot vector over the cluster's GPUs, server by server (slot i belongs to
//! one job or none), so a job's GPU count is its number of slots. One generation: refresh the 16
//! parents (per-job caps), 8 uniform slot-wise crossovers (16 children), one mutant per parent,
//! repair every one of the 48 (pad idle GPUs: new jobs at one GPU first-come first-served, then
//! executed jobs by shortest predicted remaining time up to their caps; then place them, jobs
//! that keep their GPU count keeping their GPUs), score, keep the best 16. The population
//! carries over from one decision to the next. See docs/findings/ones-search.md ("ONES") for
//! what differs from the artifact.

use super::super::super::cluster::{Cluster, EPS};
use super::super::allocation::Allocation;
use super::super::job::ElasticJob;
use super::super::model::AppModel;
use super::sampling;
use super::{DecisionCtx, ElasticPolicy};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;

mod free;
mod gate;
mod operators;
mod scoring;

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
    /// ONES's gate: while any running job has not completed an epoch since its allocation last
    /// changed, no running job changes (queued jobs may still start on free GPUs); without it,
    /// only the jobs inside that first epoch are held.
    pub global_gate: bool,
}

impl Variant {
    pub const ONES: Variant = Variant {
        name: "ones",
        queue_aware: false,
        move_mutation: false,
        free_batch: false,
        mean_predictor: false,
        resources: false,
        global_gate: true,
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

impl Caps {
    /// A job the search has not started yet.
    const UNSTARTED: Caps = Caps {
        max_size: 1,
        stored: 0,
        started: false,
    };
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
    /// The search's best decision last time, before ONES's gate.
    last_best: Vec<Option<Allocation>>,
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
            last_best: Vec::new(),
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

    /// The search's best decision last time, before ONES's gate held it back (with
    /// [`Variant::global_gate`]; otherwise the decision itself).
    pub fn last_best(&self) -> &[Option<Allocation>] {
        &self.last_best
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
            let e = self.caps.entry(j.spec.id).or_insert(Caps::UNSTARTED);
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
        let live_level: Vec<u8> = ctx
            .jobs
            .iter()
            .map(|j| {
                j.allocation
                    .as_ref()
                    .map_or(SHARE_LEVEL, |a| p.level_of(a.cpus_per_gpu))
            })
            .collect();
        let mut pop = self.load_population(ctx, p.server_of.len(), &live_level);
        if pop.is_empty() {
            pop = self.seed_population(&p, &live_level);
        }
        let generations = self
            .generations
            .unwrap_or_else(|| (ctx.interval_s.round().max(1.0) as usize).min(MAX_GENERATIONS));
        let mut search = Generation::start(&mut p, pop, &mut self.rng);
        let initial = search.pop.clone();
        for _ in 0..generations {
            search.next(&mut p, &mut self.rng);
        }
        search.keep_best_of(&mut p, &initial);
        let decision = p.decision(&search.pop[0]);
        self.last_initial = initial.iter().map(|i| p.decision(i)).collect();
        self.last_rhat = ctx
            .jobs
            .iter()
            .zip(&search.rhat)
            .map(|(j, &r)| (j.spec.id, r))
            .collect();
        self.scale_in(ctx, &decision);
        self.store_population(ctx, &search.pop);
        decision
    }

    /// The population kept from the last decision, on this decision's jobs (finished jobs'
    /// slots freed; a new job at its live level), or none when the cluster changed its `slots`.
    fn load_population(&self, ctx: &DecisionCtx, slots: usize, live_level: &[u8]) -> Vec<Ind> {
        let index: BTreeMap<u64, u32> = ctx
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.spec.id, i as u32))
            .collect();
        self.population
            .iter()
            .filter(|s| s.slots.len() == slots)
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
            .collect()
    }

    /// A first population: the live allocations, with the queued jobs on free GPUs (one each),
    /// in the jobs' order in the first individual and shuffled in the others.
    fn seed_population(&mut self, p: &Prepared, live_level: &[u8]) -> Vec<Ind> {
        let jobs = p.ctx.jobs;
        let live = p.live_slots();
        let new: Vec<u32> = (0..jobs.len() as u32)
            .filter(|&i| jobs[i as usize].allocation.is_none())
            .collect();
        let mut pop = Vec::with_capacity(POPULATION);
        for k in 0..POPULATION {
            let mut slots = live.clone();
            let mut perm = new.clone();
            if k > 0 {
                for i in (1..perm.len()).rev() {
                    perm.swap(i, sampling::below(&mut self.rng, i + 1));
                }
            }
            let free: Vec<usize> = (0..slots.len()).filter(|&s| slots[s] == NONE).collect();
            for (&j, &s) in perm.iter().take(POPULATION).zip(&free) {
                slots[s] = j;
            }
            pop.push(Ind {
                slots,
                level: live_level.to_vec(),
                score: 0.0,
            });
        }
        pop
    }

    /// Scale in: stopped jobs left out again halve their size and max size.
    fn scale_in(&mut self, ctx: &DecisionCtx, decision: &[Option<Allocation>]) {
        for (j, a) in ctx.jobs.iter().zip(decision) {
            if let Some(e) = self.caps.get_mut(&j.spec.id)
                && e.started
                && j.allocation.is_none()
                && a.is_none()
            {
                e.stored = (e.stored / 2).max(1);
                e.max_size = e.stored;
            }
        }
    }

    /// Keeps `pop` for the next decision, by job ids.
    fn store_population(&mut self, ctx: &DecisionCtx, pop: &[Ind]) {
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
    }
}

/// The population and the remaining-work draw it was last scored under.
struct Generation {
    pop: Vec<Ind>,
    rhat: Vec<f64>,
    /// Jobs by predicted remaining time under `rhat`, shortest first.
    order: Vec<u32>,
}

impl Generation {
    /// Draws the remaining work and refreshes, repairs and scores `pop` under it.
    fn start(p: &mut Prepared, mut pop: Vec<Ind>, rng: &mut ChaCha8Rng) -> Generation {
        let rhat = p.draw_rhat(rng);
        let order = p.srpt_order(&rhat);
        for ind in &mut pop {
            p.refresh(ind);
            p.repair(ind, &order, &rhat);
            ind.score = p.score_ind(ind, &rhat, &order);
        }
        Generation { pop, rhat, order }
    }

    /// One generation: a fresh draw, refreshed parents, their crossed children and mutants,
    /// all repaired and scored; the best [`POPULATION`] survive.
    fn next(&mut self, p: &mut Prepared, rng: &mut ChaCha8Rng) {
        self.rhat = p.draw_rhat(rng);
        self.order = p.srpt_order(&self.rhat);
        let pop = &mut self.pop;
        for ind in pop.iter_mut() {
            p.refresh(ind);
        }
        let mut pool = pop.clone();
        let k = pop.len();
        for _ in 0..PAIRS {
            let a = sampling::below(rng, k);
            let mut b = sampling::below(rng, k);
            if k > 1 {
                while b == a {
                    b = sampling::below(rng, k);
                }
            }
            let (c1, c2) = p.crossover(&pop[a], &pop[b], rng);
            pool.push(c1);
            pool.push(c2);
        }
        for ind in pop.iter() {
            pool.push(p.mutate(ind, rng));
        }
        for ind in &mut pool {
            p.repair(ind, &self.order, &self.rhat);
            ind.score = p.score_ind(ind, &self.rhat, &self.order);
        }
        pool.sort_by(|x, y| x.score.total_cmp(&y.score));
        pool.truncate(POPULATION);
        *pop = pool;
    }

    /// Never worse than where the decision started (`initial`), under the last draw.
    fn keep_best_of(&mut self, p: &mut Prepared, initial: &[Ind]) {
        let mut start = initial.to_vec();
        for ind in &mut start {
            ind.score = p.score_ind(ind, &self.rhat, &self.order);
        }
        start.sort_by(|x, y| x.score.total_cmp(&y.score));
        if start[0].score < self.pop[0].score {
            self.pop.insert(0, start[0].clone());
            self.pop.truncate(POPULATION);
        }
    }
}

impl ElasticPolicy for Evolution {
    fn name(&self) -> &'static str {
        self.variant.name
    }

    /// ONES scales a running job out or in by re-forming its NCCL group inside the live workers.
    fn rescales_in_place(&self) -> bool {
        true
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let decision = self.run(ctx);
        self.last_best = decision.clone();
        if self.variant.global_gate {
            gate::apply(ctx, decision)
        } else {
            decision
        }
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
