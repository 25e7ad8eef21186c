//! What an individual is worth: the rates, the predicted remaining work and the completion
//! times it gives, and the decision it stands for.

use super::*;
use std::collections::BinaryHeap;

impl<'a> Prepared<'a> {
    pub(super) fn new(
        ctx: &'a DecisionCtx<'a>,
        variant: Variant,
        caps: &BTreeMap<u64, Caps>,
        mut err: impl FnMut(usize) -> f64,
    ) -> Prepared<'a> {
        let cluster = ctx.cluster;
        let (server_of, first_slot) = slot_layout(cluster);
        let share = min_share(cluster);
        let share = if share.0.is_finite() {
            share
        } else {
            (0.0, 0.0)
        };
        let scale_down = ScaleDown::new(ctx, caps);
        // Without ONES's gate (which holds the whole decision instead, `gate.rs`), a job in its
        // first epoch since its last change is held inside the search.
        let held = |j: &ElasticJob| {
            !variant.global_gate && live_gpus(j) > 0 && j.epochs_since_change() < 1.0
        };
        let info = ctx
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let c = caps.get(&j.spec.id).copied().unwrap_or(Caps::UNSTARTED);
                let cap = scale_down.cap(i, j, search_cap(j, c));
                job_info(j, c, cap, held(j), err(i))
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
    pub(super) fn level_of(&self, c: f64) -> u8 {
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
    pub(super) fn resources_of(&self, j: usize, level: u8) -> (f64, f64) {
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
    pub(super) fn rate(&mut self, j: usize, n: u32, level: u8) -> (f64, u32) {
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

    pub(super) fn compute_rate(&self, j: usize, n: u32, level: u8) -> (f64, u32) {
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
        // Above what fits on a GPU the batch accumulates gradients (AppModel::micro_batches).
        let lo = spec.min_batch.max(n) as f64;
        let hi = (spec.max_batch as f64).max(lo);
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
        best
    }

    /// Remaining work per job for one generation: the emulated predictor (rho ~ Beta(e, beta),
    /// beta = true remaining epochs x the decision's log-normal error; R = S (1/rho - 1)), or its
    /// mean; jobs without an executed epoch get the predictor's point estimate beta x N.
    pub(super) fn draw_rhat(&self, rng: &mut ChaCha8Rng) -> Vec<f64> {
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
    pub(super) fn srpt_order(&mut self, rhat: &[f64]) -> Vec<u32> {
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
    pub(super) fn live_slots(&self) -> Vec<u32> {
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

    pub(super) fn counts(&self, ind: &Ind) -> Vec<u32> {
        let mut counts = vec![0u32; self.info.len()];
        for &s in &ind.slots {
            if s != NONE {
                counts[s as usize] += 1;
            }
        }
        counts
    }

    pub(super) fn score_ind(&mut self, ind: &Ind, rhat: &[f64], order: &[u32]) -> f64 {
        let counts = self.counts(ind);
        self.score(&counts, &ind.level, rhat, order)
    }

    /// Fitness, lower is better. ONES: sum over allocated executed jobs of
    /// n x R / X(n) (remaining GPU-seconds). Queue-aware: every job's predicted completion,
    /// queued jobs started shortest-first as allocated ones finish.
    pub(super) fn score(
        &mut self,
        counts: &[u32],
        level: &[u8],
        rhat: &[f64],
        order: &[u32],
    ) -> f64 {
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
    pub(super) fn decision(&mut self, ind: &Ind) -> Vec<Option<Allocation>> {
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

/// The slot layout of `cluster`: the server of each slot (its GPUs, server by server), and the
/// first slot of each server.
fn slot_layout(cluster: &Cluster) -> (Vec<usize>, Vec<usize>) {
    let mut server_of = Vec::with_capacity(cluster.total_gpus as usize);
    let mut first_slot = Vec::with_capacity(cluster.servers.len());
    for (s, srv) in cluster.servers.iter().enumerate() {
        first_slot.push(server_of.len());
        server_of.extend(std::iter::repeat_n(s, srv.gpus as usize));
    }
    (server_of, first_slot)
}

/// GPUs a job holds now.
fn live_gpus(j: &ElasticJob) -> u32 {
    j.allocation.as_ref().map_or(0, |a| a.gpus())
}

/// The most GPUs the search may give a job (before scale_down): an executed running job its
/// max size, up to 4x its request; a job in its first epoch what it holds; a stopped job its
/// stored size; a never-started job none.
fn search_cap(j: &ElasticJob, c: Caps) -> u32 {
    let live_n = live_gpus(j);
    if live_n > 0 {
        if executed(j) {
            c.max_size.min(4 * j.spec.requested_gpus.max(1))
        } else {
            live_n
        }
    } else if c.started {
        c.stored
    } else {
        0
    }
}

/// What one decision knows about job `j`, whose caps are `c`, the search's cap `cap`.
fn job_info(j: &ElasticJob, c: Caps, cap: u32, pinned: bool, err: f64) -> JobInfo {
    let live_n = live_gpus(j);
    // One sample per GPU at the largest batch at most.
    let most = j.spec.max_batch.max(1);
    let cap = cap.min(most);
    let n = j.spec.epoch_samples.max(1e-9);
    JobInfo {
        executed: executed(j),
        pinned,
        live_n,
        cap,
        max_size: c.max_size.max(1).min(most).max(live_n),
        epochs: (j.samples / n).floor() + 1.0,
        samples: j.samples,
        remaining_epochs: (j.remaining() / n).max(1e-3),
        err,
    }
}

/// ONES's scale_down: the largest running executed job holding half the cluster or more is cut
/// toward 2n / (t / median t + 1) when it has run longer than the median of the started jobs.
struct ScaleDown {
    /// Index of that job, if any.
    largest: Option<usize>,
    /// Median run time of the started jobs; 0 when none has started.
    median: f64,
}

impl ScaleDown {
    fn new(ctx: &DecisionCtx, caps: &BTreeMap<u64, Caps>) -> ScaleDown {
        let total = ctx.cluster.total_gpus;
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
        let largest = ctx
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| executed(j) && 2 * live_gpus(j) >= total && live_gpus(j) > 0)
            .max_by_key(|(i, j)| (live_gpus(j), std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        ScaleDown { largest, median }
    }

    /// Job `i`'s cap: `cap`, or the even size scale_down cuts it to.
    fn cap(&self, i: usize, j: &ElasticJob, cap: u32) -> u32 {
        if Some(i) == self.largest && self.median > 0.0 && j.run_s > self.median {
            let m =
                ((2.0 * live_gpus(j) as f64 / (j.run_s / self.median + 1.0)).floor() as u32).max(1);
            (m / 2 + m % 2) * 2
        } else {
            cap
        }
    }
}
