//! Optimus-like greedy (EuroSys'18) as Pollux's simulator runs "Optimus+Oracle": every job (in
//! arrival order, while GPUs last) gets one GPU, then GPUs go one at a time to the job whose
//! remaining time drops the most: (step time at n GPUs - at n + 1) x the steps it has left,
//! from the job's true remaining work (the oracle) and the model's step time at the job's own
//! batch, packed on the fewest servers. A job takes at most as many GPUs as its batch has
//! micro-batches of the application's smallest measured local batch. Elastic in GPUs, not in
//! batch: the batch follows the job's rule. Placement as the simulator's: a job whose count is
//! unchanged keeps its servers, the others, fewest GPUs first, take GPUs from the servers with
//! the most free. A resize restarts the job; the greedy does not weigh that (as Optimus).

use super::super::allocation::Allocation;
use super::support::{
    goodput, min_nodes, own_batch, own_batch_on, place_most_free_keeping, proportional_share,
};
use super::{DecisionCtx, ElasticPolicy};

pub struct Optimus;

pub fn optimus(_seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Optimus)
}

impl ElasticPolicy for Optimus {
    fn name(&self) -> &'static str {
        "optimus"
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let n = ctx.jobs.len();
        let share = proportional_share(ctx.cluster);
        let cap: Vec<u32> = ctx
            .jobs
            .iter()
            .map(|j| {
                let min_local = ctx.models.get(&j.spec.app).map_or(1, |m| m.min_local_batch);
                (own_batch(&j.spec, 1) / min_local.max(1)).clamp(1, ctx.cluster.total_gpus.max(1))
            })
            .collect();
        // Seconds the job still needs on g GPUs at its own batch.
        let time = |i: usize, g: u32| -> f64 {
            let job = &ctx.jobs[i];
            let Some(model) = ctx.models.get(&job.spec.app) else {
                return f64::INFINITY;
            };
            let batch = own_batch(&job.spec, g).max(g);
            let rate = goodput(model, job, g, min_nodes(ctx.cluster, g), batch, share);
            if rate > 0.0 {
                job.remaining().max(1.0) / rate
            } else {
                f64::INFINITY
            }
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            ctx.jobs[a]
                .spec
                .arrival_s
                .total_cmp(&ctx.jobs[b].spec.arrival_s)
                .then(ctx.jobs[a].spec.id.cmp(&ctx.jobs[b].spec.id))
        });
        let mut free = ctx.cluster.total_gpus;
        let mut counts = vec![0u32; n];
        for &i in &order {
            if free == 0 {
                break;
            }
            if time(i, 1).is_finite() {
                counts[i] = 1;
                free -= 1;
            }
        }
        let gain = |i: usize, g: u32| -> f64 {
            if g == 0 || g >= cap[i] {
                return 0.0;
            }
            let d = time(i, g) - time(i, g + 1);
            if d.is_finite() { d } else { 0.0 }
        };
        let mut gains: Vec<f64> = (0..n).map(|i| gain(i, counts[i])).collect();
        while free > 0 {
            // Largest gain; ties to the earliest in arrival order.
            let best = order.iter().copied().filter(|&i| gains[i] > 0.0).fold(
                None::<usize>,
                |b, i| match b {
                    Some(b) if gains[b] >= gains[i] => Some(b),
                    _ => Some(i),
                },
            );
            let Some(i) = best else { break };
            counts[i] += 1;
            free -= 1;
            gains[i] = gain(i, counts[i]);
        }
        let mut placing = order.clone();
        placing.sort_by_key(|&i| counts[i]);
        let batch = |i: usize, servers: &[(usize, u32)]| own_batch_on(ctx, i, servers);
        place_most_free_keeping(ctx, &counts, &placing, &batch)
    }
}
