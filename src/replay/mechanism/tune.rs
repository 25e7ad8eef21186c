use super::{Free, MechCtx, MechStats, Mechanism, Placement, best_on, reclaim_and_place};
use crate::replay::profile::Semantics;

/// Synergy-Tune. In policy order, each job gets its best-case demand on the best-fitting server
/// if it fits anywhere. Otherwise it gets its proportional share on a server with enough free
/// GPUs, after taking back CPU and memory from jobs already placed there above their own
/// proportional share (lowest priority first, down to their share). Because every placed job
/// then holds at most its share in each dimension, a job whose GPUs fit always fits: Tune
/// never runs fewer jobs than proportional.
pub struct Tune;

impl Mechanism for Tune {
    fn name(&self) -> &'static str {
        "tune"
    }
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &[usize],
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        if ctx.semantics == Semantics::Synergy {
            synergy_tune(ctx, order, out);
            return;
        }
        let mut free = Free::new(ctx.cluster);
        let mut on_server: Vec<Vec<usize>> = vec![Vec::new(); ctx.cluster.servers.len()];
        for &j in order {
            if free.total_gpus == 0 {
                break;
            }
            let g = ctx.jobs[j].spec.gpus;
            if let Some(s) = free.best_fit(g, |s| best_on(ctx, j, s)) {
                let (c, m) = best_on(ctx, j, s);
                let p = Placement {
                    job: j,
                    server: s,
                    gpus: g,
                    cpus: c,
                    mem_gb: m,
                };
                on_server[s].push(free.place(out, p));
                continue;
            }
            reclaim_and_place(ctx, &mut free, &mut on_server, out, j);
        }
    }
}

/// Synergy-Tune as Synergy's simulator runs it (`--semantics synergy`), for each job in policy
/// order that has enough free GPUs in the cluster:
/// 1. its best case on the first server that fits it;
/// 2. else its demand tuned down ([`fair_share`]) on the first server that fits that;
/// 3. else peer adjustment on one server (the first with `g` free GPUs when `g` > 1, else the
///    one with the fewest free GPUs, lowest id on ties): the jobs already placed there this
///    round, sorted (stably, in place, so later searches start from this order) by CPUs per
///    GPU then GB per GPU, most first, are taken in turn, each one's excess over its
///    proportional share counting against what is missing, until nothing is; every job so
///    taken, even one with no excess, is set to its tuned-down demand (and speed-up 1);
/// 4. then one more first fit of the tuned-down demand (Synergy exits if it fails; here the
///    job waits).
fn synergy_tune(ctx: &MechCtx, order: &[usize], out: &mut Vec<Placement>) {
    let cl = ctx.cluster;
    let mut free = Free::new(cl);
    let mut on_server: Vec<Vec<usize>> = vec![Vec::new(); cl.servers.len()];
    let place = |free: &mut Free,
                 on_server: &mut [Vec<usize>],
                 out: &mut Vec<Placement>,
                 j: usize,
                 s: usize,
                 (cpus, mem_gb): (f64, f64)| {
        let gpus = ctx.jobs[j].spec.gpus;
        let p = Placement {
            job: j,
            server: s,
            gpus,
            cpus,
            mem_gb,
        };
        on_server[s].push(free.place(out, p));
    };
    for &j in order {
        let g = ctx.jobs[j].spec.gpus;
        if g == 0 || g > free.total_gpus {
            continue;
        }
        if let Some(s) = free.first_fit(g, |s| best_on(ctx, j, s)) {
            place(&mut free, &mut on_server, out, j, s, best_on(ctx, j, s));
            continue;
        }
        if let Some(s) = free.first_fit(g, |s| fair_share(ctx, j, s)) {
            place(&mut free, &mut on_server, out, j, s, fair_share(ctx, j, s));
            continue;
        }
        let peer_server = if g > 1 {
            (0..free.servers.len()).find(|&s| free.servers[s].gpus >= g)
        } else {
            (0..free.servers.len())
                .filter(|&s| free.servers[s].gpus > 0)
                .min_by_key(|&s| (free.servers[s].gpus, s))
        };
        let Some(s) = peer_server else { continue };
        let (dc, dm) = fair_share(ctx, j, s);
        let mut need = (
            (dc - free.servers[s].cpus).max(0.0),
            (dm - free.servers[s].mem_gb).max(0.0),
        );
        if need != (0.0, 0.0) {
            let list = &mut on_server[s];
            let per_gpu = |k: usize| {
                let p = &out[k];
                (p.cpus / p.gpus as f64, p.mem_gb / p.gpus as f64)
            };
            list.sort_by(|&a, &b| {
                let (ca, ma) = per_gpu(a);
                let (cb, mb) = per_gpu(b);
                cb.total_cmp(&ca).then(mb.total_cmp(&ma))
            });
            let mut victims = Vec::new();
            for &k in list.iter() {
                let p = &out[k];
                let (pc, pm) = ctx.proportional(p.job, s);
                let excess = ((p.cpus - pc).max(0.0), (p.mem_gb - pm).max(0.0));
                let diff = ((need.0 - excess.0).max(0.0), (need.1 - excess.1).max(0.0));
                victims.push(k);
                if diff == (0.0, 0.0) {
                    break;
                }
                need = diff;
            }
            for k in victims {
                let (vc, vm) = fair_share(ctx, out[k].job, s);
                free.servers[s].cpus += out[k].cpus - vc;
                free.servers[s].mem_gb += out[k].mem_gb - vm;
                out[k].cpus = vc;
                out[k].mem_gb = vm;
            }
        }
        if let Some(s) = free.first_fit(g, |s| fair_share(ctx, j, s)) {
            place(&mut free, &mut on_server, out, j, s, fair_share(ctx, j, s));
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
