//! Non-elastic gang scheduling at the requested GPUs and the job's own batch: FIFO
//! (non-preemptive, with backfill: a queued job that does not fit is skipped, as ONES's FCFS
//! baseline does), SRTF and LAS (preemptive, re-ordered at every decision).

use super::super::allocation::Allocation;
use super::support::{
    gang_gpus, goodput, min_nodes, own_batch, place_in_order, proportional_share,
};
use super::{DecisionCtx, ElasticPolicy};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Arrival, then id.
    Fifo,
    /// Shortest estimated remaining time at the requested GPUs first.
    Srtf,
    /// Least attained GPU-seconds first (then arrival).
    Las,
}

pub struct Gang {
    order: Order,
}

impl Gang {
    pub fn new(order: Order) -> Gang {
        Gang { order }
    }
}

pub fn fifo(_seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Gang::new(Order::Fifo))
}
pub fn srtf(_seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Gang::new(Order::Srtf))
}
pub fn las(_seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Gang::new(Order::Las))
}

/// Estimated seconds left for job `i` at its gang GPUs (infinite when the model says it
/// cannot run there).
pub fn remaining_at_gang(ctx: &DecisionCtx, i: usize) -> f64 {
    let job = &ctx.jobs[i];
    let Some(model) = ctx.models.get(&job.spec.app) else {
        return f64::INFINITY;
    };
    let g = gang_gpus(&job.spec);
    let rate = goodput(
        model,
        job,
        g,
        min_nodes(ctx.cluster, g),
        own_batch(&job.spec, g).max(g),
        proportional_share(ctx.cluster),
    );
    if rate > 0.0 {
        job.remaining() / rate
    } else {
        f64::INFINITY
    }
}

impl ElasticPolicy for Gang {
    fn name(&self) -> &'static str {
        match self.order {
            Order::Fifo => "fifo",
            Order::Srtf => "srtf",
            Order::Las => "las",
        }
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let arrival = |i: usize| (ctx.jobs[i].spec.arrival_s, ctx.jobs[i].spec.id);
        let mut order: Vec<usize> = (0..ctx.jobs.len()).collect();
        match self.order {
            Order::Fifo => order.sort_by(|&a, &b| {
                arrival(a)
                    .partial_cmp(&arrival(b))
                    .unwrap_or(std::cmp::Ordering::Equal)
            }),
            Order::Srtf => {
                let left: Vec<f64> = (0..ctx.jobs.len())
                    .map(|i| remaining_at_gang(ctx, i))
                    .collect();
                order.sort_by(|&a, &b| {
                    left[a]
                        .total_cmp(&left[b])
                        .then(arrival(a).0.total_cmp(&arrival(b).0))
                        .then(arrival(a).1.cmp(&arrival(b).1))
                });
            }
            Order::Las => order.sort_by(|&a, &b| {
                ctx.jobs[a]
                    .attained_gpu_s
                    .total_cmp(&ctx.jobs[b].attained_gpu_s)
                    .then(arrival(a).0.total_cmp(&arrival(b).0))
                    .then(arrival(a).1.cmp(&arrival(b).1))
            }),
        }
        let gpus = |i: usize| gang_gpus(&ctx.jobs[i].spec);
        place_in_order(ctx, &order, &gpus, self.order != Order::Fifo)
    }
}
