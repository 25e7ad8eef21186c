//! What is left on each server while a round is being allocated, with the servers bucketed by
//! free GPUs so that finding a home for a job looks only at the servers that have enough GPUs,
//! fullest first: on a large, busy cluster a handful instead of every server. Servers nothing
//! has touched yet this round are not in the buckets: of those alike (same capacity) only the
//! lowest id is ever a candidate, since the others would tie with it.

use super::Placement;
use crate::replay::cluster::{Cluster, Resources};

/// Free resources per server during one round's allocation; changed only through its methods,
/// which keep the buckets.
///
/// A demand passed to its searches must depend on a server only through its capacity (as
/// shares and capped best cases do): then untouched servers alike are interchangeable, and
/// the lowest id stands for them all.
#[derive(Debug, Clone)]
pub struct Free {
    /// What is left on each server.
    servers: Vec<Resources>,
    pub total_gpus: u32,
    /// Most free GPUs on any one server (a wider job cannot fit anywhere: skipped in O(1)).
    pub max_free: u32,
    /// The touched servers with `k` free GPUs as a list from `head[k]` through `next`, linked
    /// back by `prev` (`NONE` ends): moving a server between buckets is O(1) and a round's
    /// buckets cost no allocation each. (Also ordering the servers by free CPUs, so as to skip
    /// those short of CPUs, cost more to maintain on every placement than it saved.)
    head: Vec<usize>,
    next: Vec<usize>,
    prev: Vec<usize>,
    /// Whether server `s` is as it was at the start of the round (and so in no bucket).
    untouched: Vec<bool>,
    /// Runs of consecutive servers of one capacity, each with its lowest untouched server.
    alike: Vec<Alike>,
    /// Per server, its run in `alike`.
    alike_of: Vec<usize>,
    /// Per server, its machine kind (servers of other kinds are never alike).
    kind: Vec<u16>,
    /// The placements made through [`Free::place`], per server as a list, latest first:
    /// `last_on[s]` (`NONE`: none yet), then `prev_on[k]` for placement `k` in `out`.
    last_on: Vec<usize>,
    prev_on: Vec<usize>,
}

/// Consecutive servers of one capacity.
#[derive(Debug, Clone)]
struct Alike {
    gpus: u32,
    end: usize,
    /// The lowest untouched server of the run (`end`: none is left).
    first: usize,
}

const NONE: usize = usize::MAX;

impl Free {
    pub fn new(c: &Cluster) -> Free {
        let servers: Vec<Resources> = c.servers.iter().map(|s| s.capacity()).collect();
        let n = servers.len();
        let mut alike: Vec<Alike> = Vec::new();
        let mut alike_of = Vec::with_capacity(n);
        for (s, r) in servers.iter().enumerate() {
            if s == 0 || *r != servers[s - 1] || c.servers[s].kind != c.servers[s - 1].kind {
                alike.push(Alike {
                    gpus: r.gpus,
                    end: s,
                    first: s,
                });
            }
            let last = alike.len() - 1;
            alike[last].end = s + 1;
            alike_of.push(last);
        }
        Free {
            head: vec![NONE; c.max_server_gpus as usize + 1],
            next: vec![NONE; n],
            prev: vec![NONE; n],
            untouched: vec![true; n],
            alike,
            alike_of,
            kind: c.servers.iter().map(|s| s.kind).collect(),
            last_on: vec![NONE; n],
            prev_on: Vec::with_capacity(c.total_gpus as usize),
            servers,
            total_gpus: c.total_gpus,
            max_free: c.max_server_gpus,
        }
    }

    /// Server `s` is about to change: it leaves the untouched and joins the buckets.
    fn touch(&mut self, s: usize) {
        if !self.untouched[s] {
            return;
        }
        self.untouched[s] = false;
        let a = &mut self.alike[self.alike_of[s]];
        while a.first < a.end && !self.untouched[a.first] {
            a.first += 1;
        }
        self.link(s);
    }

    /// The lowest untouched server of each run of servers with `k` GPUs.
    fn untouched_with(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.alike
            .iter()
            .filter(move |a| a.gpus as usize == k && a.first < a.end)
            .map(|a| a.first)
    }

    /// Puts server `s` at the head of the bucket of its free GPUs.
    fn link(&mut self, s: usize) {
        let k = self.servers[s].gpus as usize;
        let first = self.head[k];
        self.next[s] = first;
        self.prev[s] = NONE;
        if first != NONE {
            self.prev[first] = s;
        }
        self.head[k] = s;
    }

    /// Takes server `s` out of the bucket of its free GPUs.
    fn unlink(&mut self, s: usize) {
        let (p, n) = (self.prev[s], self.next[s]);
        match p {
            NONE => self.head[self.servers[s].gpus as usize] = n,
            p => self.next[p] = n,
        }
        if n != NONE {
            self.prev[n] = p;
        }
    }

    /// The touched servers with `k` free GPUs, then the lowest untouched one of each run of
    /// servers with `k` GPUs.
    fn bucket(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(self.head[k]).filter(|&s| s != NONE), |&s| {
            Some(self.next[s]).filter(|&n| n != NONE)
        })
        .chain(self.untouched_with(k))
    }

    /// What is left on server `s`.
    pub fn server(&self, s: usize) -> &Resources {
        &self.servers[s]
    }

    /// Number of servers.
    pub fn server_count(&self) -> usize {
        self.servers.len()
    }

    pub fn fits(&self, s: usize, g: u32, c: f64, m: f64) -> bool {
        self.servers[s].fits(&Resources::new(g, c, m))
    }

    /// The servers with at least `g` free GPUs, those with fewest first; of untouched servers
    /// alike, only the lowest id (see [`Free`]).
    pub fn with_gpus(&self, g: u32) -> impl Iterator<Item = usize> + '_ {
        (g as usize..=self.max_free as usize).flat_map(|k| self.bucket(k))
    }

    /// Best fit: the fitting server left with the fewest free GPUs, then the fewest CPUs, then
    /// the lowest id. Stops at the first GPU count that has a fitting server.
    pub fn best_fit(&self, g: u32, demand: impl Fn(usize) -> (f64, f64)) -> Option<usize> {
        self.best_fit_of_kind(g, demand, None)
    }

    /// [`Free::best_fit`] among the servers of machine kind `kind` (`None`: of any kind).
    pub fn best_fit_of_kind(
        &self,
        g: u32,
        demand: impl Fn(usize) -> (f64, f64),
        kind: Option<u16>,
    ) -> Option<usize> {
        if g > self.max_free {
            return None;
        }
        for k in g as usize..=self.max_free as usize {
            let mut best: Option<(f64, usize)> = None;
            for s in self.bucket(k) {
                if kind.is_some_and(|want| self.kind[s] != want) {
                    continue;
                }
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
        let k = out.len() - 1;
        if self.prev_on.len() <= k {
            self.prev_on.resize(k + 1, NONE);
        }
        self.prev_on[k] = self.last_on[p.server];
        self.last_on[p.server] = k;
        k
    }

    /// The latest placement made on server `s` before placement `before` (`None`: the latest
    /// of all), through [`Free::place`]; walk a server's placements latest first with it.
    pub fn placed_before(&self, s: usize, before: Option<usize>) -> Option<usize> {
        let k = match before {
            None => self.last_on[s],
            Some(k) => self.prev_on[k],
        };
        (k != NONE).then_some(k)
    }

    pub fn take(&mut self, p: &Placement) {
        let s = p.server;
        self.touch(s);
        let r = self.servers[s];
        self.set(
            s,
            Resources {
                gpus: r.gpus - p.gpus,
                cpus: (r.cpus - p.cpus).max(0.0),
                mem_gb: (r.mem_gb - p.mem_gb).max(0.0),
            },
        );
        self.total_gpus -= p.gpus;
        while self.max_free > 0 && self.bucket(self.max_free as usize).next().is_none() {
            self.max_free -= 1;
        }
    }

    /// Adds `d` cores (negative: takes them) to what is left on server `s`.
    pub fn add_cpus(&mut self, s: usize, d: f64) {
        self.touch(s);
        self.servers[s].cpus += d;
    }

    /// Adds `d` GB (negative: takes them) to what is left on server `s`.
    pub fn add_mem(&mut self, s: usize, d: f64) {
        self.touch(s);
        self.servers[s].mem_gb += d;
    }

    fn set(&mut self, s: usize, r: Resources) {
        if r.gpus != self.servers[s].gpus {
            self.unlink(s);
            self.servers[s] = r;
            self.link(s);
        } else {
            self.servers[s] = r;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::cluster::ClusterSpec;
    use proptest::prelude::*;
    use std::path::Path;

    /// Best fit by looking at every server, as the definition says.
    fn best_fit_by_scan(f: &Free, g: u32, demand: impl Fn(usize) -> (f64, f64)) -> Option<usize> {
        let mut best: Option<(u32, f64, usize)> = None;
        for s in 0..f.server_count() {
            let (c, m) = demand(s);
            if f.server(s).gpus < g || !f.fits(s, g, c, m) {
                continue;
            }
            let key = (f.server(s).gpus - g, f.server(s).cpus - c, s);
            if best.is_none_or(|b| (key.0, key.1) < (b.0, b.1)) {
                best = Some(key);
            }
        }
        best.map(|b| b.2)
    }

    proptest! {
        /// After any sequence of placements and CPU hand-backs, best fit through the buckets
        /// (touched servers, and the lowest untouched one of servers alike) picks exactly the
        /// server a scan of every server picks, on identical servers and on mixed ones.
        #[test]
        fn buckets_pick_what_a_full_scan_picks(
            mixed in any::<bool>(),
            steps in proptest::collection::vec((1u32..5, 0.0f64..14.0, 0.0f64..200.0, 0usize..6, -3.0f64..3.0), 1..60),
        ) {
            let text = if mixed {
                "[[group]]\ncount = 3\ngpus = 8\ncpus = 24\nmemory_gb = 500\n[[group]]\ncount = 3\ngpus = 4\ncpus = 16\nmemory_gb = 256\n[[group]]\ncount = 2\ngpus = 8\ncpus = 24\nmemory_gb = 500\n"
            } else {
                "[[group]]\ncount = 6\ngpus = 8\ncpus = 24\nmemory_gb = 500\n"
            };
            let cl = ClusterSpec::from_toml(text, Path::new("c.toml")).unwrap().build().unwrap();
            let mut f = Free::new(&cl);
            let mut out = Vec::new();
            for (k, (g, c, m, hint, back)) in steps.into_iter().enumerate() {
                // A demand that depends on the server where servers differ, as shares do.
                let demand = |s: usize| {
                    let scale = cl.servers[s].cpus / 24.0;
                    ((c * scale).min(cl.servers[s].cpus), m.min(cl.servers[s].mem_gb))
                };
                let fast = f.best_fit(g, demand);
                prop_assert_eq!(fast, best_fit_by_scan(&f, g, demand), "step {}", k);
                // Any key of a server's capacity and what is left on it (here reclaiming's):
                // its minimum over `with_gpus` is its minimum over every server.
                let key = |s: usize| {
                    let (c, m) = demand(s);
                    let short = (c - f.server(s).cpus).max(0.0) + (m - f.server(s).mem_gb).max(0.0);
                    (short, f.server(s).gpus - g, s)
                };
                let least = |it: &mut dyn Iterator<Item = usize>| {
                    it.map(key).min_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))))
                };
                let scan = least(&mut (0..f.server_count()).filter(|&s| f.server(s).gpus >= g));
                prop_assert_eq!(least(&mut f.with_gpus(g)), scan, "step {}", k);
                if let Some(s) = fast {
                    let (c, m) = demand(s);
                    f.place(&mut out, Placement { job: k, server: s, gpus: g, cpus: c, mem_gb: m });
                }
                let s = hint % f.server_count();
                if f.server(s).cpus + back >= 0.0 {
                    f.add_cpus(s, back);
                }
            }
        }
    }
}
