//! The genetic operators on slot vectors: refresh to the caps, crossover, mutation, and the
//! repair that pads and places an individual.

use super::*;

impl Prepared<'_> {
    /// Keeps at most `cap` slots per job (its first always; pinned jobs untouched).
    pub(super) fn refresh(&self, ind: &mut Ind) {
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
    pub(super) fn crossover(&self, a: &Ind, b: &Ind, rng: &mut ChaCha8Rng) -> (Ind, Ind) {
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
    pub(super) fn mutate(&self, parent: &Ind, rng: &mut ChaCha8Rng) -> Ind {
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
    pub(super) fn repair(&mut self, ind: &mut Ind, order: &[u32], _rhat: &[f64]) {
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
    pub(super) fn place(&mut self, ind: &mut Ind, counts: &mut [u32]) {
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
}

/// Writes `g` slots of server `s` to job `j`.
fn put(slots: &mut [u32], cursor: &mut [usize], s: usize, g: u32, j: u32) {
    for _ in 0..g {
        slots[cursor[s]] = j;
        cursor[s] += 1;
    }
}
