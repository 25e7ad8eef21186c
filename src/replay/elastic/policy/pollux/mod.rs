//! Pollux (OSDI'21) as Pollux's simulator runs it (petuum/adaptdl, `simulator/pollux.py`).
//!
//! Every decision searches a jobs x servers matrix of GPU counts with NSGA-II ([`genome`]),
//! warm-started from the current allocation and the previous decision's Pareto front, and
//! takes the state with the best first objective: the power mean with p = -1 of the jobs'
//! scaled speed-ups plus 0.001 (so a job without GPUs weighs heavily). A job's speed-up on N
//! servers and R GPUs is its goodput there (the best of 50 geometric global batches from
//! max(B0, R x smallest local batch) to the largest, above what fits on a GPU as gradient
//! accumulation) over its goodput on one server at the fair share ceil(GPUs / jobs), scaled so
//! that one server's worth of GPUs counts 1. A job whose row differs from its current
//! allocation (a start included) has its speed-up scaled by the restart penalty
//! max(age - 30 x restarts, 0) / (age + 30). The second objective, which shapes the front
//! only, is the cluster's utility: the sum of speed-ups over the GPUs of the servers in use.
//!
//! Pollux's rules: a job may hold at most twice the most GPUs it has run on (1 before it has
//! run; exploration doubles), nor more than its largest batch has smallest local batches; at
//! most one multi-server job per server; jobs ordered by least attained service, which wins
//! servers in the repair. The batch is re-tuned at every decision, which costs no restart.
//!
//! As the simulator, NCF jobs ([`ONE_GPU_AT_MAX_BATCH`]) run on one GPU at their largest batch.
//!
//! Departure from the simulator: the speed-ups come from the replay's model of the job (an
//! oracle), where Pollux fits its model to the configurations the job has run (and until then
//! assumes linear scaling).

pub mod genome;

use super::super::allocation::Allocation;
use super::super::job::ElasticJob;
use super::super::placement::FreePool;
use super::support::proportional_share;
use super::{DecisionCtx, ElasticPolicy};
use genome::Problem;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// Geometric batch candidates per GPU count (numpy.geomspace's default, as Pollux).
pub const BATCH_CANDIDATES: usize = 50;
/// Added to every speed-up in the power mean (Pollux's), so that no GPUs is not infinitely bad.
const ZERO_SPEEDUP: f64 = 1e-3;
/// Pollux's restart penalty constant, seconds.
const RESTART_S: f64 = 30.0;
/// Applications Pollux's simulator does not scale: one GPU, the largest batch.
pub const ONE_GPU_AT_MAX_BATCH: &[&str] = &["ncf"];

fn held_to_one_gpu(job: &ElasticJob) -> bool {
    ONE_GPU_AT_MAX_BATCH.contains(&job.spec.app.as_str())
}

pub struct Pollux {
    rng: ChaCha8Rng,
    /// The previous decision's Pareto front, with the job ids of its rows.
    previous: Option<(Vec<u64>, Vec<Vec<u8>>)>,
}

pub fn pollux(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Pollux {
        rng: ChaCha8Rng::seed_from_u64(seed),
        previous: None,
    })
}

/// Feasible global batch range at `g` GPUs: from the job's smallest batch, and at least the
/// application's smallest local batch per GPU, to its largest.
fn batch_range(ctx: &DecisionCtx, job: &ElasticJob, g: u32) -> Option<(u32, u32)> {
    let min_local = ctx.models.get(&job.spec.app)?.min_local_batch.max(1);
    let lo = job.spec.min_batch.max(g.saturating_mul(min_local));
    let hi = job.spec.max_batch;
    (g > 0 && lo <= hi).then_some((lo, hi))
}

/// The best (goodput, batch) of `job` on `g` GPUs over `nodes` servers.
fn best_batch(ctx: &DecisionCtx, job: &ElasticJob, g: u32, nodes: u32) -> Option<(f64, u32)> {
    let model = ctx.models.get(&job.spec.app)?;
    let (mut lo, hi) = batch_range(ctx, job, g)?;
    if held_to_one_gpu(job) {
        lo = hi;
    }
    let share = proportional_share(ctx.cluster);
    let frac = job.progress_frac();
    let good = |b: u32| {
        let local = b as f64 / g as f64;
        if model.micro_batches(g, local).0 < model.min_local_batch as f64 - 1e-9 {
            return 0.0;
        }
        let x = model.throughput_with(g, nodes, local, share.0, share.1)
            * model
                .efficiency
                .efficiency(b as f64, job.spec.base_batch as f64, frac);
        if x.is_finite() && x > 0.0 { x } else { 0.0 }
    };
    let mut best = (good(lo), lo);
    let ratio = (hi as f64 / lo as f64).powf(1.0 / (BATCH_CANDIDATES - 1) as f64);
    let mut b = lo as f64;
    for _ in 1..BATCH_CANDIDATES {
        b *= ratio;
        let bi = (b.round() as u32).clamp(lo, hi);
        let x = good(bi);
        if x > best.0 {
            best = (x, bi);
        }
    }
    (best.0 > 0.0).then_some(best)
}

/// What the objectives need of one job (a row of the matrix).
struct JobTerms<'c> {
    job: &'c ElasticJob,
    /// Goodput at the fair share on one server; 0: none, the speed-up is then R / fair.
    base: f64,
    /// Restart penalty factor, applied when the row changes.
    penalty: f64,
    /// Speed-ups by [GPUs][multi-server], NaN until computed.
    memo: Vec<[Cell<f64>; 2]>,
}

impl<'c> JobTerms<'c> {
    /// `job`'s terms, its speed-ups memoised up to `cap` GPUs.
    fn new(ctx: &DecisionCtx<'c>, job: &'c ElasticJob, fair: u32, cap: u32) -> JobTerms<'c> {
        let age = (ctx.now - job.spec.arrival_s).max(0.0);
        // Pollux counts restarts after the first start.
        let restarts = job.reconfigurations.saturating_sub(1) as f64;
        JobTerms {
            job,
            base: best_batch(ctx, job, fair, 1).map_or(0.0, |x| x.0),
            penalty: (age - RESTART_S * restarts).max(0.0) / (age + RESTART_S),
            memo: (0..=cap)
                .map(|_| [Cell::new(f64::NAN), Cell::new(f64::NAN)])
                .collect(),
        }
    }
}

/// The two objectives of a state (a jobs x servers matrix of GPU counts), with what they
/// depend on.
struct Objectives<'c> {
    ctx: &'c DecisionCtx<'c>,
    /// One per row.
    terms: Vec<JobTerms<'c>>,
    /// The current allocation: a row that differs pays its job's restart penalty.
    base: &'c [u8],
    capacity: &'c [u8],
    servers: usize,
    /// GPUs of the fair share, ceil(GPUs / jobs).
    fair: u32,
    /// Servers per GPU: one server's worth of GPUs counts 1.
    scale: f64,
    /// Which servers a state uses (reused from one evaluation to the next).
    active: RefCell<Vec<bool>>,
}

impl Objectives<'_> {
    /// The speed-up of row `t` on `r` GPUs over `nodes` servers, memoised.
    fn speedup(&self, t: &JobTerms, r: u32, nodes: u32) -> f64 {
        let Some(cell) = t.memo.get(r as usize).map(|m| &m[(nodes > 1) as usize]) else {
            return 0.0;
        };
        if cell.get().is_nan() {
            let x = if r == 0 {
                0.0
            } else if t.base > 0.0 {
                best_batch(self.ctx, t.job, r, nodes).map_or(0.0, |x| x.0) / t.base
            } else {
                r as f64 / self.fair as f64
            };
            cell.set(x);
        }
        cell.get()
    }

    /// Both objectives of `x`, minimised: minus the power mean (p = -1) of the penalised,
    /// scaled speed-ups, and minus the cluster's utility.
    fn evaluate(&self, x: &[u8]) -> [f64; 2] {
        let servers = self.servers;
        let mut harmonic = 0.0;
        let mut sum = 0.0;
        let mut active = self.active.borrow_mut();
        active.fill(false);
        for (r, t) in self.terms.iter().enumerate() {
            let row = &x[r * servers..(r + 1) * servers];
            let (mut g, mut nodes) = (0u32, 0u32);
            for (s, &v) in row.iter().enumerate() {
                if v > 0 {
                    g += v as u32;
                    nodes += 1;
                    active[s] = true;
                }
            }
            let sp = self.speedup(t, g, nodes);
            sum += sp;
            let mut scaled = sp * self.scale;
            if row != &self.base[r * servers..(r + 1) * servers] {
                scaled *= t.penalty;
            }
            harmonic += 1.0 / (scaled + ZERO_SPEEDUP);
        }
        let gpus: u32 = (0..servers)
            .filter(|&s| active[s])
            .map(|s| self.capacity[s] as u32)
            .sum();
        let utility = if gpus > 0 { sum / gpus as f64 } else { 0.0 };
        [-(self.terms.len() as f64) / harmonic, -utility]
    }
}

impl ElasticPolicy for Pollux {
    fn name(&self) -> &'static str {
        "pollux"
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let n = ctx.jobs.len();
        let servers = ctx.cluster.servers.len();
        let total = ctx.cluster.total_gpus;
        if n == 0 || servers == 0 || total == 0 {
            self.previous = None;
            return vec![None; n];
        }
        let share = proportional_share(ctx.cluster);
        let pool = FreePool::new(ctx.cluster);
        let capacity: Vec<u8> = (0..servers)
            .map(|s| pool.room(s, share.0, share.1).min(u8::MAX as u32) as u8)
            .collect();
        let rows = rows_by_service(ctx);
        let base = current_state(ctx, &rows, servers);
        let max_replicas: Vec<u32> = rows.iter().map(|&i| max_gpus(ctx, &ctx.jobs[i])).collect();
        let fair = total.div_ceil(n as u32).max(1);
        let objectives = Objectives {
            ctx,
            terms: rows
                .iter()
                .zip(&max_replicas)
                .map(|(&i, &cap)| JobTerms::new(ctx, &ctx.jobs[i], fair, cap))
                .collect(),
            base: &base,
            capacity: &capacity,
            servers,
            fair,
            scale: servers as f64 / total as f64,
            active: RefCell::new(vec![false; servers]),
        };
        let problem = Problem {
            jobs: n,
            servers,
            capacity: &capacity,
            base: &base,
            max_replicas: &max_replicas,
            objectives: &|x: &[u8]| objectives.evaluate(x),
        };
        let ids: Vec<u64> = rows.iter().map(|&i| ctx.jobs[i].spec.id).collect();
        let starts = self.starts(&base, &ids, servers);
        let front = problem.solve(starts, &mut self.rng);
        let best = front.first().map_or_else(|| base.clone(), |b| b.0.clone());
        self.previous = Some((ids, front.into_iter().map(|(x, _)| x).collect()));
        decision(ctx, &rows, &best, servers, share)
    }
}

impl Pollux {
    /// The search's starting states: the current allocation, then the previous decision's
    /// Pareto front on this decision's rows.
    fn starts(&self, base: &[u8], ids: &[u64], servers: usize) -> Vec<Vec<u8>> {
        let mut starts = vec![base.to_vec()];
        if let Some((prev_ids, states)) = &self.previous {
            let at: HashMap<u64, usize> = prev_ids
                .iter()
                .enumerate()
                .map(|(r, &id)| (id, r))
                .collect();
            for state in states {
                starts.push(adapt(state, &at, ids, servers));
            }
        }
        starts
    }
}

/// The rows: jobs by least attained service first (Pollux's order; the repair favours it).
fn rows_by_service(ctx: &DecisionCtx) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..ctx.jobs.len()).collect();
    rows.sort_by(|&a, &b| {
        let (ja, jb) = (&ctx.jobs[a], &ctx.jobs[b]);
        ja.attained_gpu_s
            .total_cmp(&jb.attained_gpu_s)
            .then(ja.spec.arrival_s.total_cmp(&jb.spec.arrival_s))
            .then(ja.spec.id.cmp(&jb.spec.id))
    });
    rows
}

/// The current allocation as a state: GPUs per row and server.
fn current_state(ctx: &DecisionCtx, rows: &[usize], servers: usize) -> Vec<u8> {
    let mut base = vec![0u8; rows.len() * servers];
    for (r, &i) in rows.iter().enumerate() {
        if let Some(a) = &ctx.jobs[i].allocation {
            for &(s, g) in &a.gpus_per_server {
                if s < servers {
                    base[r * servers + s] = g.min(u8::MAX as u32) as u8;
                }
            }
        }
    }
    base
}

/// The most GPUs `job` may hold: twice the most it has run on (exploration), at most one
/// smallest local batch per GPU of its largest batch and the cluster's GPUs; one for a job
/// held to one GPU.
fn max_gpus(ctx: &DecisionCtx, job: &ElasticJob) -> u32 {
    let min_local = ctx
        .models
        .get(&job.spec.app)
        .map_or(1, |m| m.min_local_batch);
    if held_to_one_gpu(job) {
        return 1;
    }
    (2 * job.max_gpus_run)
        .max(1)
        .min(job.spec.max_batch / min_local.max(1))
        .min(ctx.cluster.total_gpus)
        .max(1)
}

/// The decision state `best` (rows in `rows`' order) stands for, by job: each job's servers,
/// its best batch there, `share` (cores, GB) per GPU.
fn decision(
    ctx: &DecisionCtx,
    rows: &[usize],
    best: &[u8],
    servers: usize,
    share: (f64, f64),
) -> Vec<Option<Allocation>> {
    let mut out = vec![None; ctx.jobs.len()];
    for (r, &i) in rows.iter().enumerate() {
        let gpus_per_server: Vec<(usize, u32)> = best[r * servers..(r + 1) * servers]
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v > 0)
            .map(|(s, &v)| (s, v as u32))
            .collect();
        if gpus_per_server.is_empty() {
            continue;
        }
        let job = &ctx.jobs[i];
        let g: u32 = gpus_per_server.iter().map(|&(_, g)| g).sum();
        let global_batch = best_batch(ctx, job, g, gpus_per_server.len() as u32)
            .map_or_else(|| job.spec.min_batch.max(g), |(_, b)| b);
        out[i] = Some(Allocation {
            gpus_per_server,
            global_batch,
            cpus_per_gpu: share.0,
            mem_gb_per_gpu: share.1,
        });
    }
    out
}

/// `state` (a job's row at `at[id]`) with rows for `ids`: a job's previous row, zeros for a
/// new one.
fn adapt(state: &[u8], at: &HashMap<u64, usize>, ids: &[u64], servers: usize) -> Vec<u8> {
    let mut out = vec![0u8; ids.len() * servers];
    for (r, id) in ids.iter().enumerate() {
        if let Some(&p) = at.get(id) {
            out[r * servers..(r + 1) * servers]
                .copy_from_slice(&state[p * servers..(p + 1) * servers]);
        }
    }
    out
}
