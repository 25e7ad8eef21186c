//! What is left on each server while a round is being allocated, with the servers bucketed by
//! free GPUs so that finding a home for a job looks only at the servers that have enough GPUs,
//! fullest first: on a large, busy cluster that is a handful instead of every server.

use super::Placement;
use crate::replay::cluster::{Cluster, Resources};

/// Free resources per server during one round's allocation. GPUs are only ever taken
/// ([`Free::take`]), which keeps the buckets; CPUs and memory may be handed back directly.
#[derive(Debug, Clone)]
pub struct Free {
    /// What is left on each server.
    pub servers: Vec<Resources>,
    pub total_gpus: u32,
    /// Most free GPUs on any one server (a wider job cannot fit anywhere: skipped in O(1)).
    pub max_free: u32,
    /// `by_free[k]`: the servers with `k` free GPUs, in no order; `slot[s]`: where server `s`
    /// is in its bucket.
    by_free: Vec<Vec<usize>>,
    slot: Vec<usize>,
}

impl Free {
    pub fn new(c: &Cluster) -> Free {
        let servers: Vec<Resources> = c.servers.iter().map(|s| s.capacity()).collect();
        let mut by_free = vec![Vec::new(); c.max_server_gpus as usize + 1];
        let mut slot = Vec::with_capacity(servers.len());
        for (s, r) in servers.iter().enumerate() {
            let bucket = &mut by_free[r.gpus as usize];
            slot.push(bucket.len());
            bucket.push(s);
        }
        Free {
            servers,
            total_gpus: c.total_gpus,
            max_free: c.max_server_gpus,
            by_free,
            slot,
        }
    }

    pub fn fits(&self, s: usize, g: u32, c: f64, m: f64) -> bool {
        self.servers[s].fits(&Resources::new(g, c, m))
    }

    /// The servers with at least `g` free GPUs, those with fewest first (in no order within a
    /// count).
    pub fn with_gpus(&self, g: u32) -> impl Iterator<Item = usize> + '_ {
        let top = self.max_free as usize;
        self.by_free
            .get(g as usize..=top)
            .unwrap_or_default()
            .iter()
            .flatten()
            .copied()
    }

    /// Best fit: the fitting server left with the fewest free GPUs, then the fewest CPUs, then
    /// the lowest id. Stops at the first GPU count that has a fitting server.
    pub fn best_fit(&self, g: u32, demand: impl Fn(usize) -> (f64, f64)) -> Option<usize> {
        if g > self.max_free {
            return None;
        }
        for bucket in &self.by_free[g as usize..=self.max_free as usize] {
            let mut best: Option<(f64, usize)> = None;
            for &s in bucket {
                let (c, m) = demand(s);
                if !self.fits(s, g, c, m) {
                    continue;
                }
                let key = self.servers[s].cpus - c;
                if best.is_none_or(|b| key < b.0 || (key == b.0 && s < b.1)) {
                    best = Some((key, s));
                }
            }
            if let Some((_, s)) = best {
                return Some(s);
            }
        }
        None
    }

    /// Worst fit on CPU and memory: the fitting server with the most (CPU + memory) left,
    /// relative to its capacity; spreads jobs so every server's CPUs and memory get used.
    pub fn most_room(&self, c_: &Cluster, g: u32, c: f64, m: f64) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for s in 0..self.servers.len() {
            if !self.fits(s, g, c, m) {
                continue;
            }
            let room = (self.servers[s].cpus - c) / c_.servers[s].cpus
                + (self.servers[s].mem_gb - m) / c_.servers[s].mem_gb;
            if best.is_none_or(|b| room > b.1) {
                best = Some((s, room));
            }
        }
        best.map(|b| b.0)
    }

    /// Takes `p`'s resources, appends it to `out` and returns its index there.
    pub fn place(&mut self, out: &mut Vec<Placement>, p: Placement) -> usize {
        self.take(&p);
        out.push(p);
        out.len() - 1
    }

    pub fn take(&mut self, p: &Placement) {
        let s = p.server;
        let before = self.servers[s].gpus as usize;
        self.servers[s].gpus -= p.gpus;
        self.servers[s].cpus = (self.servers[s].cpus - p.cpus).max(0.0);
        self.servers[s].mem_gb = (self.servers[s].mem_gb - p.mem_gb).max(0.0);
        self.total_gpus -= p.gpus;
        let after = self.servers[s].gpus as usize;
        if after != before {
            let k = self.slot[s];
            self.by_free[before].swap_remove(k);
            if let Some(&moved) = self.by_free[before].get(k) {
                self.slot[moved] = k;
            }
            self.slot[s] = self.by_free[after].len();
            self.by_free[after].push(s);
        }
        while self.max_free > 0 && self.by_free[self.max_free as usize].is_empty() {
            self.max_free -= 1;
        }
    }
}
