//! Jobs across servers: where a job's GPUs go when it does not fit on one server (or, under
//! `--semantics synergy`, wherever Synergy's allocator puts them). A job's allocation is then
//! several [`Placement`]s, one per server, each with its GPUs' share of the job's CPUs and
//! memory.

use super::{EPS, Free, Placement};
use crate::replay::profile::Semantics;

/// One server's part of a job: (server, GPUs).
pub type Part = (usize, u32);

/// Where a job goes: one server (no allocation, the common case) or several.
#[derive(Debug, Clone, PartialEq)]
pub enum Home {
    One(Part),
    Spread(Vec<Part>),
}

impl std::ops::Deref for Home {
    type Target = [Part];
    fn deref(&self) -> &[Part] {
        match self {
            Home::One(p) => std::slice::from_ref(p),
            Home::Spread(v) => v,
        }
    }
}

/// How many GPUs of a job needing `per_gpu` (cores, GB) per GPU server `s` can still take.
fn room(free: &Free, s: usize, (c, m): (f64, f64)) -> u32 {
    let r = free.server(s);
    let by = |left: f64, need: f64| {
        if need <= 0.0 {
            u32::MAX
        } else {
            ((left + EPS) / need).floor().min(u32::MAX as f64) as u32
        }
    };
    r.gpus.min(by(r.cpus, c)).min(by(r.mem_gb, m))
}

impl Free {
    /// Synergy's allocator (`_top_synergy_gpus`): walks the free GPUs in id order, i.e. server
    /// by server, taking a GPU while its server still has room for one more GPU's share of the
    /// demand, until it has `g`. `None` (nothing taken) when the walk ends short.
    pub fn synergy_walk(&self, g: u32, per_gpu: impl Fn(usize) -> (f64, f64)) -> Option<Vec<Part>> {
        if g == 0 || g > self.total_gpus {
            return None;
        }
        let mut parts = Vec::new();
        let mut left = g;
        for s in 0..self.server_count() {
            if self.server(s).gpus == 0 {
                continue;
            }
            let k = room(self, s, per_gpu(s)).min(left);
            if k > 0 {
                parts.push((s, k));
                left -= k;
                if left == 0 {
                    return Some(parts);
                }
            }
        }
        None
    }

    /// The fewest servers that hold `g` GPUs with their share of the demand: servers with the
    /// most room first (lowest id on ties); the last one gives only what is still missing.
    pub fn fewest_servers(
        &self,
        g: u32,
        per_gpu: impl Fn(usize) -> (f64, f64),
    ) -> Option<Vec<Part>> {
        if g == 0 || g > self.total_gpus {
            return None;
        }
        let mut rooms: Vec<(u32, usize)> = (0..self.server_count())
            .filter(|&s| self.server(s).gpus > 0)
            .map(|s| (room(self, s, per_gpu(s)), s))
            .filter(|r| r.0 > 0)
            .collect();
        rooms.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut parts = Vec::new();
        let mut left = g;
        for (k, s) in rooms {
            let k = k.min(left);
            parts.push((s, k));
            left -= k;
            if left == 0 {
                return Some(parts);
            }
        }
        None
    }

    /// Where a job of `g` GPUs goes at `demand(server)` (cores, GB for the whole job): under
    /// Synergy's semantics its GPU walk; otherwise the best-fitting single server, else the
    /// fewest servers.
    pub fn find(
        &self,
        sem: Semantics,
        g: u32,
        demand: impl Fn(usize) -> (f64, f64),
    ) -> Option<Home> {
        let per_gpu = |s: usize| {
            let (c, m) = demand(s);
            (c / g as f64, m / g as f64)
        };
        match sem {
            Semantics::Synergy => self.synergy_walk(g, per_gpu).map(Home::Spread),
            Semantics::Exact => match self.best_fit(g, &demand) {
                Some(s) => Some(Home::One((s, g))),
                // One GPU cannot span servers: where no server fits it, no servers together do.
                None if g == 1 => None,
                None => self.fewest_servers(g, per_gpu).map(Home::Spread),
            },
        }
    }

    /// Places job `j` on `parts`, each part taking its GPUs' share of `demand(server)`.
    /// Returns the indices of the new placements in `out`.
    pub fn place_parts(
        &mut self,
        out: &mut Vec<Placement>,
        j: usize,
        g: u32,
        parts: &[Part],
        demand: impl Fn(usize) -> (f64, f64),
    ) -> std::ops::Range<usize> {
        let first = out.len();
        for &(s, k) in parts {
            let (c, m) = demand(s);
            let (cpus, mem_gb) = if k == g {
                (c, m)
            } else {
                let f = k as f64 / g as f64;
                (c * f, m * f)
            };
            self.place(
                out,
                Placement {
                    job: j,
                    server: s,
                    gpus: k,
                    cpus,
                    mem_gb,
                },
            );
        }
        first..out.len()
    }
}
