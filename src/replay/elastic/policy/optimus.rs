//! Optimus-like greedy (EuroSys'18) as Pollux's "Optimus+Oracle": every job (in arrival order,
//! while GPUs last) gets one GPU, then GPUs go one at a time to the job whose estimated
//! remaining time drops the most. The estimate uses the job's true remaining work (the oracle)
//! and the model's goodput at the job's own batch rule, on the fewest servers, plus the restart a
//! change of GPU count would cost a running job (without it the greedy reshuffles jobs every
//! interval for gains smaller than the restart). Elastic in GPUs, not in batch: the batch
//! follows the job's rule. Placement: largest jobs first, keeping a
//! job's servers when its count is unchanged.

use super::super::allocation::Allocation;
use super::support::{
    goodput, max_gpus_at_own_batch, min_nodes, own_batch, place_counts, proportional_share,
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
            .map(|j| max_gpus_at_own_batch(&j.spec, ctx.cluster))
            .collect();
        let time = |i: usize, g: u32| -> f64 {
            let job = &ctx.jobs[i];
            let Some(model) = ctx.models.get(&job.spec.app) else {
                return f64::INFINITY;
            };
            let rate = goodput(
                model,
                job,
                g,
                min_nodes(ctx.cluster, g),
                own_batch(&job.spec, g).max(g),
                share,
            );
            // A running job resized restarts: the estimate counts the time that costs.
            let restart = match &job.allocation {
                Some(a) if a.gpus() != g => ctx.reconfiguration_s,
                _ => 0.0,
            };
            if rate > 0.0 {
                job.remaining() / rate + restart
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
        let mut t_now: Vec<f64> = (0..n)
            .map(|i| {
                if counts[i] > 0 {
                    time(i, 1)
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        let gain = |i: usize, counts: &[u32], t_now: &[f64]| -> (f64, f64) {
            if counts[i] == 0 || counts[i] >= cap[i] {
                return (0.0, f64::INFINITY);
            }
            let t = time(i, counts[i] + 1);
            (t_now[i] - t, t)
        };
        let mut gains: Vec<(f64, f64)> = (0..n).map(|i| gain(i, &counts, &t_now)).collect();
        while free > 0 {
            // Largest gain; ties to the earliest in arrival order.
            let best = order
                .iter()
                .copied()
                .filter(|&i| gains[i].0 > 0.0 && gains[i].0.is_finite())
                .fold(None::<usize>, |b, i| match b {
                    Some(b) if gains[b].0 >= gains[i].0 => Some(b),
                    _ => Some(i),
                });
            let Some(i) = best else { break };
            counts[i] += 1;
            t_now[i] = gains[i].1;
            free -= 1;
            gains[i] = gain(i, &counts, &t_now);
        }
        let feasible = |i: usize, g: u32| g <= cap[i];
        let batch = |i: usize, servers: &[(usize, u32)]| {
            let g = servers.iter().map(|&(_, g)| g).sum::<u32>();
            own_batch(&ctx.jobs[i].spec, g).max(g)
        };
        place_counts(ctx, &counts, &feasible, &batch)
    }
}
