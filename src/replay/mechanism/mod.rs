//! Allocation mechanisms: given the jobs of a round in policy order, decide which run where
//! with how many CPUs and how much memory. A job's allocation is one [`Placement`] per server
//! it runs on (several when it spans servers, [`spread`]), each fitting that server in every
//! dimension (the engine re-checks). One file per mechanism, registered in [`ALL`].

mod free;
mod greedy;
mod opt;
mod proportional;
mod request;
mod spread;
mod tune;

pub use free::Free;
pub use spread::{Home, Part};

use super::cluster::Cluster;
use super::job::JobState;
use super::profile::{ProfileSet, Semantics};

/// Slack for floating-point sums of CPUs and GB.
pub use super::cluster::EPS;

/// A job's GPUs on one server with their CPUs and memory (one of several when it spans servers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Index into the round's job slice.
    pub job: usize,
    pub server: usize,
    pub gpus: u32,
    pub cpus: f64,
    pub mem_gb: f64,
}

pub struct MechCtx<'a> {
    pub cluster: &'a Cluster,
    pub profiles: &'a ProfileSet,
    pub semantics: Semantics,
    pub jobs: &'a [JobState],
}

impl MechCtx<'_> {
    /// Samples/s of job `j` given `cpus` and `mem_gb`.
    pub fn rate(&self, j: usize, cpus: f64, mem_gb: f64) -> f64 {
        let job = &self.jobs[j];
        self.profiles
            .get(job.profile as usize)
            .rate(job.spec.gpus, cpus, mem_gb, self.semantics)
    }

    /// Samples/s of job `j` given its whole allocation, `cpus` and `mem_gb` over `servers`
    /// servers: times its model's placement penalty when it spans more than one. Under
    /// Synergy's semantics a job given its best-case demand runs at its speed-up over the
    /// proportional share, as Synergy's simulator has it (the speed-up interpolated when the
    /// demand was capped at a server's size, and the demand Synergy's zoo declares).
    /// On servers of several machine kinds (`kinds`, one bit per kind) it runs at the slowest
    /// kind's rate: a data-parallel step waits for its slowest worker.
    pub fn rate_spread(&self, j: usize, cpus: f64, mem_gb: f64, servers: u32, kinds: u32) -> f64 {
        let job = &self.jobs[j];
        let at_best = cpus + EPS >= job.best_cpu && mem_gb + EPS >= job.best_mem;
        let rate = match &job.kinds {
            Some(k) => (0..k.profiles.len())
                .filter(|&i| kinds & (1 << i) != 0)
                .map(|i| {
                    (self.profiles.get(k.profiles[i] as usize)).rate(
                        job.spec.gpus,
                        cpus,
                        mem_gb,
                        self.semantics,
                    )
                })
                .fold(f64::INFINITY, f64::min),
            None if self.semantics == Semantics::Synergy && at_best => {
                job.prop_rate * job.synergy.speedup_orig
            }
            None => self.rate(j, cpus, mem_gb),
        };
        let rate = if rate.is_finite() { rate } else { 0.0 };
        let penalty = self.profiles.get(job.profile as usize).placement_penalty;
        if servers > 1 && penalty != 1.0 {
            rate * penalty
        } else {
            rate
        }
    }

    /// Where job `j` of `g` GPUs goes at `demand(server)`: on a cluster placed by kind, the
    /// best-fitting server of the first kind in the job's order that has one; else (or where
    /// none fits on one server) as [`Free::find`] places it.
    pub fn find(
        &self,
        free: &Free,
        j: usize,
        demand: impl Fn(usize) -> (f64, f64),
    ) -> Option<Home> {
        let g = self.jobs[j].spec.gpus;
        if self.semantics == Semantics::Exact
            && self.cluster.places_by_kind()
            && let Some(kinds) = &self.jobs[j].kinds
        {
            for &k in &kinds.order {
                if let Some(s) = free.best_fit_of_kind(g, &demand, Some(k)) {
                    return Some(Home::One((s, g)));
                }
            }
        }
        free.find(self.semantics, g, demand)
    }

    /// The rank of server `s`'s kind in job `j`'s order (0 on a cluster not placed by kind).
    pub fn kind_rank(&self, j: usize, s: usize) -> usize {
        match &self.jobs[j].kinds {
            Some(k) if self.cluster.places_by_kind() => {
                let kind = self.cluster.servers[s].kind;
                k.order.iter().position(|&o| o == kind).unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// The proportional share of job `j` on server `s`: (cores, GB).
    pub fn proportional(&self, j: usize, s: usize) -> (f64, f64) {
        let (c, m) = self.cluster.servers[s].share_per_gpu();
        let g = self.jobs[j].spec.gpus as f64;
        (c * g, m * g)
    }
}

/// Per-round statistics a mechanism may report (opt's LP bound).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MechStats {
    /// LP objective (sum over jobs of throughput / proportional throughput), if an LP ran.
    pub lp_bound: Option<f64>,
    /// The same objective for the placed (rounded) allocation.
    pub rounded: Option<f64>,
    pub lp_failed: bool,
}

/// The round's jobs in policy order, as indices into [`MechCtx::jobs`], pulled one at a time:
/// a mechanism pulls only as many as it needs (the engine reuses a round's decision when the
/// jobs pulled are unchanged, so a mechanism must depend on nothing else about the order).
pub type Order<'a> = dyn Iterator<Item = usize> + 'a;

pub trait Mechanism: Send + Sync {
    fn name(&self) -> &'static str;
    /// Places jobs pulled from `order` into `out`. Must depend only on the jobs pulled (their
    /// static fields: GPUs, profile, best case, prop rate, requests), the cluster and the
    /// profiles, and on whether `order` ran out.
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &mut Order,
        out: &mut Vec<Placement>,
        stats: &mut MechStats,
    );
    /// Whether Synergy runs this mechanism in its `+fair` mode (speed-ups ignored).
    fn synergy_fair(&self) -> bool {
        false
    }
    /// Whether this is Synergy-Tune (Synergy's LAS then offers the largest jobs first).
    fn synergy_tune(&self) -> bool {
        false
    }
    /// A plug-in mechanism's first failure (its code raised or returned something that is not
    /// a list of placements): the engine stops the replay with it after the round.
    fn failure(&self) -> Option<String> {
        None
    }
}

type Ctor = fn() -> Box<dyn Mechanism>;

pub const ALL: &[(&str, &str, Ctor)] = &[
    (
        "proportional",
        "CPU and memory in proportion to GPUs (GPU-only schedulers)",
        || Box::new(proportional::Proportional),
    ),
    ("greedy", "best-case CPU and memory demand or wait", || {
        Box::new(greedy::Greedy)
    }),
    (
        "tune",
        "Synergy-Tune: best case if it fits, else proportional, reclaiming from jobs above their share",
        || Box::new(tune::Tune),
    ),
    (
        "request",
        "CPU and memory as the trace requested (Alibaba), else proportional: request-based schedulers",
        || Box::new(request::Request),
    ),
    (
        "opt",
        "Synergy-Opt: LP over the round's jobs (upper bound) + feasible per-server rounding",
        || Box::new(opt::Opt),
    ),
];

pub fn by_name(name: &str) -> Option<Box<dyn Mechanism>> {
    ALL.iter().find(|p| p.0 == name).map(|p| (p.2)())
}

pub fn names() -> String {
    ALL.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
}

/// Best-case demand of job `j` (cores, GB), capped at server `s`'s capacity when the job fits
/// on one server (a wider job's demand was capped per GPU when it was bound).
pub fn best_on(ctx: &MechCtx, j: usize, s: usize) -> (f64, f64) {
    let job = &ctx.jobs[j];
    let srv = &ctx.cluster.servers[s];
    if job.spec.gpus > srv.gpus {
        return (job.best_cpu, job.best_mem);
    }
    (job.best_cpu.min(srv.cpus), job.best_mem.min(srv.mem_gb))
}

/// Places job `j` at its proportional share on a server with enough free GPUs (or, when no
/// server has that many, on the fewest servers that do together), first taking back CPU and
/// memory from jobs already placed there above their own proportional share (most recently
/// placed, i.e. lowest priority, first; never below their share). Picks the server needing the
/// least reclaiming, then the fewest free GPUs. Returns whether it placed. Because every job
/// then holds at most its share, a job whose GPUs fit always fits.
pub fn reclaim_and_place(
    ctx: &MechCtx,
    free: &mut Free,
    out: &mut Vec<Placement>,
    j: usize,
) -> bool {
    let g = ctx.jobs[j].spec.gpus;
    if g > free.total_gpus {
        return false;
    }
    let parts: Home = if g <= free.max_free {
        // The job's kinds in order (placed by kind), then least reclaiming, then fewest GPUs
        // left, then lowest id.
        let mut best: Option<(usize, f64, u32, usize)> = None;
        for s in free.with_gpus(g) {
            let (c, m) = ctx.proportional(j, s);
            let need = (c - free.server(s).cpus).max(0.0) / ctx.cluster.servers[s].cpus
                + (m - free.server(s).mem_gb).max(0.0) / ctx.cluster.servers[s].mem_gb;
            let key = (ctx.kind_rank(j, s), need, free.server(s).gpus - g, s);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        match best {
            Some((_, _, _, s)) => Home::One((s, g)),
            None => return false,
        }
    } else {
        match free.fewest_servers(g, |_| (0.0, 0.0)) {
            Some(parts) => Home::Spread(parts),
            None => return false,
        }
    };
    let share = |s: usize, k: u32| {
        let (c, m) = ctx.cluster.servers[s].share_per_gpu();
        (c * k as f64, m * k as f64)
    };
    for &(s, k) in parts.iter() {
        let (c, m) = share(s, k);
        reclaim(ctx, free, out, s, c, m);
        // Always true by the argument above; kept as a guard.
        if !free.fits(s, k, c, m) {
            return false;
        }
    }
    for &(s, k) in parts.iter() {
        let (c, m) = share(s, k);
        let p = Placement {
            job: j,
            server: s,
            gpus: k,
            cpus: c.min(free.server(s).cpus),
            mem_gb: m.min(free.server(s).mem_gb),
        };
        free.place(out, p);
    }
    true
}

/// Takes CPU and memory back on server `s` from the placements there (latest first) that hold
/// more than their proportional share, until `c` cores and `m` GB are free.
fn reclaim(ctx: &MechCtx, free: &mut Free, out: &mut [Placement], s: usize, c: f64, m: f64) {
    let (sc, sm) = ctx.cluster.servers[s].share_per_gpu();
    let mut next = free.placed_before(s, None);
    while let Some(k) = next {
        next = free.placed_before(s, Some(k));
        if free.server(s).cpus + EPS >= c && free.server(s).mem_gb + EPS >= m {
            break;
        }
        let p = &mut out[k];
        let (pc, pm) = (sc * p.gpus as f64, sm * p.gpus as f64);
        if free.server(s).cpus + EPS < c && p.cpus > pc {
            let back = (p.cpus - pc).min(c - free.server(s).cpus);
            p.cpus -= back;
            free.add_cpus(s, back);
        }
        if free.server(s).mem_gb + EPS < m && p.mem_gb > pm {
            let back = (p.mem_gb - pm).min(m - free.server(s).mem_gb);
            p.mem_gb -= back;
            free.add_mem(s, back);
        }
    }
}

/// Places jobs in policy order, each at `demand(job, server)` (cores, GB) where [`Free::find`]
/// puts it (one best-fitting server, else the fewest servers; under `--semantics synergy`
/// Synergy's GPU walk), or not at all this round.
pub fn place_in_order(
    ctx: &MechCtx,
    order: &mut Order,
    out: &mut Vec<Placement>,
    demand: impl Fn(usize, usize) -> (f64, f64),
) {
    let mut free = Free::new(ctx.cluster);
    while free.total_gpus > 0 {
        let Some(j) = order.next() else { break };
        let g = ctx.jobs[j].spec.gpus;
        if let Some(parts) = ctx.find(&free, j, |s| demand(j, s)) {
            free.place_parts(out, j, g, &parts, |s| demand(j, s));
        }
    }
}
