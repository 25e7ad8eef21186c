use super::{
    Free, MechCtx, MechStats, Mechanism, Order, Part, Placement, best_on, reclaim_and_place,
};
use crate::replay::profile::Semantics;
use std::collections::HashMap;

/// Synergy-Tune. In policy order, each job gets its best-case demand where it fits (one
/// best-fitting server, else the fewest servers). Otherwise it gets its proportional share on
/// a server with enough free GPUs (or the fewest that have them together), after taking back
/// CPU and memory from jobs already placed there above their own proportional share (lowest
/// priority first, down to their share). Because every placed job then holds at most its
/// share in each dimension, a job whose GPUs fit always fits: Tune never runs fewer jobs than
/// proportional.
pub struct Tune;

impl Mechanism for Tune {
    fn name(&self) -> &'static str {
        "tune"
    }
    fn synergy_tune(&self) -> bool {
        true
    }
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &mut Order,
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        if ctx.semantics == Semantics::Synergy {
            synergy_tune(ctx, order, out);
            return;
        }
        let mut free = Free::new(ctx.cluster);
        while free.total_gpus > 0 {
            let Some(j) = order.next() else { break };
            let g = ctx.jobs[j].spec.gpus;
            let best = |s| best_on(ctx, j, s);
            if let Some(parts) = ctx.find(&free, j, best) {
                free.place_parts(out, j, g, &parts, best);
                continue;
            }
            reclaim_and_place(ctx, &mut free, out, j);
        }
    }
}

/// The round's allocation so far, as Synergy-Tune's peer adjustment sees it.
struct TuneState {
    free: Free,
    /// Per server, the placements on it in the order they were made (Synergy's
    /// `server_job_schedule`; re-sorted in place by the peer adjustment).
    on_server: Vec<Vec<usize>>,
    /// Per job index, its placements (one per server it spans).
    parts_of: HashMap<usize, Vec<usize>>,
}

impl TuneState {
    fn place(
        &mut self,
        out: &mut Vec<Placement>,
        j: usize,
        g: u32,
        parts: &[Part],
        demand: impl Fn(usize) -> (f64, f64),
    ) {
        for k in self.free.place_parts(out, j, g, parts, demand) {
            self.on_server[out[k].server].push(k);
            self.parts_of.entry(j).or_default().push(k);
        }
    }

    /// A placed job's whole allocation: (GPUs, cores, GB, servers).
    fn alloc(&self, out: &[Placement], j: usize) -> (u32, f64, f64, usize) {
        let parts = &self.parts_of[&j];
        parts.iter().fold((0, 0.0, 0.0, parts.len()), |a, &k| {
            (
                a.0 + out[k].gpus,
                a.1 + out[k].cpus,
                a.2 + out[k].mem_gb,
                a.3,
            )
        })
    }
}

/// Synergy-Tune as Synergy's simulator runs it (`--semantics synergy`), for each job in policy
/// order that has enough free GPUs in the cluster (all placements by Synergy's GPU walk,
/// [`Free::synergy_walk`], so a job may span servers):
/// 1. its best case;
/// 2. else its demand tuned down ([`fair_share`]);
/// 3. else peer adjustment on the servers Synergy picks (the first with `g` free GPUs when
///    `g` > 1, else servers by fewest free GPUs, lowest id on ties, until they hold `g`): on
///    each, the jobs already placed there this round, sorted (stably, in place, so later
///    searches start from this order) by servers spanned (fewest first), then CPUs per GPU and
///    GB per GPU (most first), are taken in turn, each one's excess over its proportional share
///    on that server counting against what is missing, until nothing is; every job so taken,
///    even one with no excess, is set to its tuned-down demand (and speed-up 1) on all its
///    servers;
/// 4. then one more walk with the tuned-down demand (Synergy exits if it fails; here the job
///    waits).
fn synergy_tune(ctx: &MechCtx, order: &mut Order, out: &mut Vec<Placement>) {
    let cl = ctx.cluster;
    let mut st = TuneState {
        free: Free::new(cl),
        on_server: vec![Vec::new(); cl.servers.len()],
        parts_of: HashMap::new(),
    };
    while st.free.total_gpus > 0 {
        let Some(j) = order.next() else { break };
        let g = ctx.jobs[j].spec.gpus;
        if g == 0 || g > st.free.total_gpus {
            continue;
        }
        let per_gpu = |d: (f64, f64)| (d.0 / g as f64, d.1 / g as f64);
        let best = |s| best_on(ctx, j, s);
        let fair = |s| fair_share(ctx, j, s);
        if let Some(parts) = st.free.synergy_walk(g, |s| per_gpu(best(s))) {
            st.place(out, j, g, &parts, best);
            continue;
        }
        if let Some(parts) = st.free.synergy_walk(g, |s| per_gpu(fair(s))) {
            st.place(out, j, g, &parts, fair);
            continue;
        }
        for (s, k) in peer_servers(&st.free, g) {
            adjust_peers(ctx, &mut st, out, s, per_gpu(fair(s)), k);
        }
        if let Some(parts) = st.free.synergy_walk(g, |s| per_gpu(fair(s))) {
            st.place(out, j, g, &parts, fair);
        }
    }
}

/// Synergy's `_get_underutilized_servers`: the first server with `g` free GPUs when `g` > 1;
/// else (or when none has) servers by fewest free GPUs (lowest id on ties) until `g` are
/// covered, the last giving only what is still missing.
fn peer_servers(free: &Free, g: u32) -> Vec<Part> {
    if g > 1
        && let Some(s) = (0..free.server_count()).find(|&s| free.server(s).gpus >= g)
    {
        return vec![(s, g)];
    }
    let mut by_free: Vec<(u32, usize)> = (0..free.server_count())
        .filter(|&s| free.server(s).gpus > 0)
        .map(|s| (free.server(s).gpus, s))
        .collect();
    by_free.sort_unstable();
    let mut parts = Vec::new();
    let mut left = g;
    for (n, s) in by_free {
        if left == 0 {
            break;
        }
        parts.push((s, n.min(left)));
        left -= n.min(left);
    }
    parts
}

/// Synergy's `_reallocate_peer` on server `s` for `k` GPUs at `per_gpu` (cores, GB): demotes
/// jobs placed there this round to their tuned-down demand until `k` GPUs' worth fits.
fn adjust_peers(
    ctx: &MechCtx,
    st: &mut TuneState,
    out: &mut [Placement],
    s: usize,
    per_gpu: (f64, f64),
    k: u32,
) {
    let mut need = (
        (per_gpu.0 * k as f64 - st.free.server(s).cpus).max(0.0),
        (per_gpu.1 * k as f64 - st.free.server(s).mem_gb).max(0.0),
    );
    if need == (0.0, 0.0) {
        return;
    }
    let keys: HashMap<usize, (usize, f64, f64)> = st.on_server[s]
        .iter()
        .map(|&p| {
            let (g, c, m, spans) = st.alloc(out, out[p].job);
            (p, (spans, c / g as f64, m / g as f64))
        })
        .collect();
    st.on_server[s].sort_by(|a, b| {
        let (ka, kb) = (keys[a], keys[b]);
        ka.0.cmp(&kb.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(kb.2.total_cmp(&ka.2))
    });
    let (sc, sm) = ctx.cluster.servers[s].share_per_gpu();
    let mut victims = Vec::new();
    for &p in &st.on_server[s] {
        let on_s = out[p].gpus as f64;
        let (g, c, m, _) = st.alloc(out, out[p].job);
        let share = on_s / g as f64;
        let excess = (
            (c * share - sc * on_s).max(0.0),
            (m * share - sm * on_s).max(0.0),
        );
        let diff = ((need.0 - excess.0).max(0.0), (need.1 - excess.1).max(0.0));
        victims.push(out[p].job);
        if diff == (0.0, 0.0) {
            break;
        }
        need = diff;
    }
    for v in victims {
        let g = ctx.jobs[v].spec.gpus as f64;
        for &p in &st.parts_of[&v] {
            let srv = out[p].server;
            let (fc, fm) = fair_share(ctx, v, srv);
            let f = out[p].gpus as f64 / g;
            let (vc, vm) = (fc * f, fm * f);
            st.free.add_cpus(srv, out[p].cpus - vc);
            st.free.add_mem(srv, out[p].mem_gb - vm);
            out[p].cpus = vc;
            out[p].mem_gb = vm;
        }
    }
}

/// Synergy's `_make_fair_share`: a demand above the proportional share in any dimension becomes
/// the proportional share (in every dimension); a smaller one is kept.
pub fn fair_share(ctx: &MechCtx, j: usize, s: usize) -> (f64, f64) {
    let (bc, bm) = best_on(ctx, j, s);
    let (pc, pm) = ctx.proportional(j, s);
    if bc > pc || bm > pm {
        (pc, pm)
    } else {
        (bc, bm)
    }
}
