//! Pollux-like goodput optimiser (OSDI'21). Per job and GPU count g: the goodput-maximising
//! global batch among geometric candidates in [max(min batch, g), max batch], a local batch
//! above what fits on a GPU running as gradient accumulation (`AppModel::micro_batches`), on
//! the fewest servers, at the proportional CPU and memory share; the batch is re-tuned at every
//! decision, which costs no restart (AdaptDL's agent re-tunes between steps). A job's speed-up
//! is that goodput over its goodput at a fair share (ceil(GPUs / active jobs), or the nearest
//! feasible count), scaled so that one server's GPUs count 1 (as Pollux's simulator does). The
//! objective is Pollux's: the power mean with p = -1 of the speed-ups plus 0.001, a job whose
//! GPU count would change (a start included) having its speed-up scaled by the restart penalty
//! max(age - 30 x restarts, 0) / (age + 30), age since arrival, restarts after the first start,
//! floored at 0.001 (a job arriving exactly at a decision has age 0).
//!
//! Departures from Pollux: the search is a deterministic greedy then hill-climb over GPU counts
//! (one GPU at a time to the largest objective gain, then single-GPU transfers between jobs
//! while one improves, also started from the current allocation; the better wins), not NSGA-II
//! over a jobs x servers matrix; placement follows the shared rule (fewest servers, keep a
//! job's servers), not the genome, so the penalty applies to a change of GPU count only (a move
//! forced by fragmentation is not weighed); no second objective (Pollux's NSGA-II also keeps
//! cluster utility, for autoscaling, which a fixed cluster does not need).

use super::super::allocation::Allocation;
use super::super::job::ElasticJob;
use super::support::{min_nodes, place_counts, proportional_share};
use super::{DecisionCtx, ElasticPolicy};

/// Geometric batch candidates per GPU count (numpy.geomspace's default, as Pollux).
pub const BATCH_CANDIDATES: usize = 50;
/// Added to every speed-up in the power mean (Pollux's), so that no GPUs is not infinitely bad.
const ZERO_SPEEDUP: f64 = 1e-3;
/// Pollux's restart penalty constant, seconds.
const RESTART_S: f64 = 30.0;
/// Smallest restart penalty factor.
const MIN_PENALTY: f64 = 1e-3;
/// Hill-climb iterations at most (each tries every transfer).
const MAX_CLIMB: usize = 64;

pub struct Pollux;

pub fn pollux(_seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Pollux)
}

/// Feasible global batch range at `g` GPUs (at least one sample per GPU; above what fits,
/// gradient accumulation), if any.
fn batch_range(job: &ElasticJob, g: u32) -> Option<(u32, u32)> {
    let lo = job.spec.min_batch.max(g);
    let hi = job.spec.max_batch;
    (g > 0 && lo <= hi).then_some((lo, hi))
}

/// The best (goodput, batch) of `job` on `g` GPUs over `nodes` servers.
fn best_batch(ctx: &DecisionCtx, job: &ElasticJob, g: u32, nodes: u32) -> Option<(f64, u32)> {
    let model = ctx.models.get(&job.spec.app)?;
    let (lo, hi) = batch_range(job, g)?;
    let share = proportional_share(ctx.cluster);
    let frac = job.progress_frac();
    let good = |b: u32| {
        let x = model.throughput_with(g, nodes, b as f64 / g as f64, share.0, share.1)
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

impl ElasticPolicy for Pollux {
    fn name(&self) -> &'static str {
        "pollux"
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let n = ctx.jobs.len();
        let total = ctx.cluster.total_gpus;
        // Pollux: fair share ceil(GPUs / jobs); speed-ups scaled so that one server's worth of
        // GPUs is 1 (this sets the weight of the 0.001 added to every speed-up).
        let fair = total.div_ceil(n.max(1) as u32).max(1);
        let scale = ctx.cluster.servers.len() as f64 / total.max(1) as f64;
        // Per job: speed-up at each count 0..=cap (0 where infeasible).
        let mut table: Vec<Vec<f64>> = Vec::with_capacity(n);
        let mut current = vec![0u32; n];
        let mut penalty = vec![1.0f64; n];
        for (i, job) in ctx.jobs.iter().enumerate() {
            let cap = job.spec.max_batch.min(total);
            let mut good = vec![0.0f64; cap as usize + 1];
            for g in 1..=cap {
                good[g as usize] =
                    best_batch(ctx, job, g, min_nodes(ctx.cluster, g)).map_or(0.0, |x| x.0);
            }
            let base = (fair.min(cap)..=cap)
                .chain((1..fair.min(cap)).rev())
                .map(|g| good[g as usize])
                .find(|&x| x > 0.0)
                .unwrap_or(0.0);
            table.push(
                good.iter()
                    .map(|&x| if base > 0.0 { x / base * scale } else { 0.0 })
                    .collect(),
            );
            current[i] = job.allocation.as_ref().map_or(0, |a| a.gpus());
            // Pollux counts restarts after the first start; a start is penalised too.
            let age = (ctx.now - job.spec.arrival_s).max(0.0);
            let restarts = job.reconfigurations.saturating_sub(1) as f64;
            // Floored so that a job arriving exactly at a decision (age 0) can start.
            penalty[i] =
                ((age - RESTART_S * restarts).max(0.0) / (age + RESTART_S)).max(MIN_PENALTY);
        }
        let cost_of = |i: usize, g: u32| -> f64 {
            let mut s = table[i].get(g as usize).copied().unwrap_or(0.0);
            if g != current[i] {
                s *= penalty[i];
            }
            1.0 / (s + ZERO_SPEEDUP)
        };
        let next_up = |i: usize, g: u32| -> Option<u32> {
            ((g + 1) as usize..table[i].len())
                .find(|&h| table[i][h] > 0.0)
                .map(|h| h as u32)
        };
        let next_down = |i: usize, g: u32| -> u32 {
            (1..g as usize)
                .rev()
                .find(|&h| table[i][h] > 0.0)
                .map_or(0, |h| h as u32)
        };
        let total_cost = |c: &[u32]| (0..n).map(|i| cost_of(i, c[i])).sum::<f64>();
        // Greedy: GPUs to the largest objective gain per GPU.
        let mut greedy = vec![0u32; n];
        let mut free = total;
        loop {
            let mut best: Option<(f64, usize, u32)> = None;
            for (i, &gi) in greedy.iter().enumerate() {
                if let Some(h) = next_up(i, gi) {
                    let need = h - gi;
                    if need > free {
                        continue;
                    }
                    let gain = (cost_of(i, gi) - cost_of(i, h)) / need as f64;
                    if gain > 1e-12 && best.is_none_or(|b| gain > b.0) {
                        best = Some((gain, i, h));
                    }
                }
            }
            let Some((_, i, h)) = best else { break };
            free -= h - greedy[i];
            greedy[i] = h;
        }
        let climb = |mut c: Vec<u32>| -> Vec<u32> {
            let mut free = total.saturating_sub(c.iter().sum());
            for _ in 0..MAX_CLIMB {
                let mut best: Option<(f64, usize, u32, usize, u32)> = None;
                for a in 0..n {
                    let (ga, down) = (c[a], next_down(a, c[a]));
                    let freed = if ga > 0 { ga - down } else { 0 };
                    let da = if ga > 0 {
                        cost_of(a, down) - cost_of(a, ga)
                    } else {
                        0.0
                    };
                    for (b, &cb) in c.iter().enumerate() {
                        if b == a {
                            continue;
                        }
                        let Some(hb) = next_up(b, cb) else { continue };
                        let need = hb - cb;
                        if need > free + freed {
                            continue;
                        }
                        let db = cost_of(b, hb) - cost_of(b, cb);
                        // Take from a only when b needs more than the free GPUs.
                        let delta = if need <= free {
                            db
                        } else if ga > 0 {
                            da + db
                        } else {
                            continue;
                        };
                        if delta < -1e-12 && best.is_none_or(|x| delta < x.0) {
                            best = Some((delta, a, down, b, hb));
                        }
                    }
                }
                let Some((_, a, down, b, hb)) = best else {
                    break;
                };
                let need = hb - c[b];
                if need > free {
                    free += c[a] - down;
                    c[a] = down;
                }
                free -= need;
                c[b] = hb;
            }
            c
        };
        let from_greedy = climb(greedy);
        let mut kept = current.clone();
        // The current allocation is feasible as a count vector only if it fits; it did.
        if kept.iter().sum::<u32>() > total {
            kept = vec![0; n];
        }
        let from_current = climb(kept);
        let counts = if total_cost(&from_current) < total_cost(&from_greedy) {
            from_current
        } else {
            from_greedy
        };
        let feasible = |i: usize, g: u32| table[i].get(g as usize).is_some_and(|&s| s > 0.0);
        let batch = |i: usize, servers: &[(usize, u32)]| {
            let job = &ctx.jobs[i];
            let g = servers.iter().map(|&(_, g)| g).sum::<u32>();
            best_batch(ctx, job, g, servers.len() as u32)
                .map_or(job.spec.min_batch.max(g), |(_, b)| b)
        };
        place_counts(ctx, &counts, &feasible, &batch)
    }
}
