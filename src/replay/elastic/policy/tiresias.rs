//! Tiresias (NSDI'19) as Pollux's simulator runs it: two-dimensional discretised LAS. A job's
//! attained service is GPUs x time held (GPU-seconds); queues are bounded by thresholds of
//! attained service (Pollux's simulator: 2 queues, split at 16 GPU-hours); jobs are served by
//! queue, FIFO (arrival order) within a queue, preemptively, non-elastic at their requested GPUs
//! and own batch. Admission in that order while the job's GPUs are still unclaimed (a smaller
//! job further down may backfill); placed as Pollux's simulator does, a running job keeping its
//! servers and a started one taking GPUs from the servers with the most free. No starvation
//! guard, as in Pollux's simulator.

use super::super::allocation::Allocation;
use super::support::{gang_gpus, own_batch_on, place_most_free_keeping};
use super::{DecisionCtx, ElasticPolicy};

/// Queue thresholds, GPU-seconds (Pollux's simulator: one threshold at 16 GPU-hours).
pub const THRESHOLDS_GPU_S: &[f64] = &[16.0 * 3600.0];

pub struct Tiresias {
    thresholds: Vec<f64>,
}

impl Tiresias {
    pub fn new(thresholds: Vec<f64>) -> Tiresias {
        Tiresias { thresholds }
    }

    /// The queue of a job with this attained service (0: highest priority).
    pub fn queue(&self, attained_gpu_s: f64) -> usize {
        self.thresholds
            .iter()
            .take_while(|&&t| attained_gpu_s >= t)
            .count()
    }
}

pub fn tiresias(_seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Tiresias::new(THRESHOLDS_GPU_S.to_vec()))
}

impl ElasticPolicy for Tiresias {
    fn name(&self) -> &'static str {
        "tiresias"
    }

    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>> {
        let mut order: Vec<usize> = (0..ctx.jobs.len()).collect();
        order.sort_by(|&a, &b| {
            let (ja, jb) = (&ctx.jobs[a], &ctx.jobs[b]);
            self.queue(ja.attained_gpu_s)
                .cmp(&self.queue(jb.attained_gpu_s))
                .then(ja.spec.arrival_s.total_cmp(&jb.spec.arrival_s))
                .then(ja.spec.id.cmp(&jb.spec.id))
        });
        let mut unclaimed = ctx.cluster.total_gpus;
        let mut counts = vec![0u32; ctx.jobs.len()];
        for &i in &order {
            let g = gang_gpus(&ctx.jobs[i].spec);
            if g <= unclaimed {
                counts[i] = g;
                unclaimed -= g;
            }
        }
        let batch = |i: usize, servers: &[(usize, u32)]| own_batch_on(ctx, i, servers);
        place_most_free_keeping(ctx, &counts, &order, &batch)
    }
}
