use super::{
    EPS, Free, MechCtx, MechStats, Mechanism, Order, Placement, best_on, reclaim_and_place,
};
use good_lp::{
    Expression, ProblemVariables, Solution, SolverModel, Variable, constraint, microlp, variable,
};
use std::collections::BTreeMap;

/// Synergy-Opt. The round's runnable jobs are the policy-order prefix that fits the cluster's
/// GPUs. Level 1, the LP (upper bound): the cluster is one super-machine with all its CPUs and
/// memory; every runnable job picks a convex combination of its profile's (Pareto-optimal) grid
/// points; maximize the sum over jobs of throughput / throughput at the proportional share.
/// Jobs of the same model and GPU count are interchangeable, so the LP has one variable per
/// (model, GPUs, grid point): "how many of these jobs run at this point"; this is exact and keeps
/// the LP tiny whatever the cluster size. Level 2, rounding: counts are rounded to integers
/// (largest remainder), higher-priority jobs get the faster points, jobs are packed in decreasing size
/// onto the server with the most CPU and memory left (worst fit), checking every dimension (a job that fits nowhere at its LP point
/// gets its proportional share, reclaiming from jobs above theirs as Tune does), and CPU and memory left on a server
/// go to its jobs up to their best case. The LP bound and the rounded objective are reported.
pub struct Opt;

#[derive(Clone, Copy)]
struct Point {
    cpu: f64,
    mem: f64,
    tput: f64,
}

/// Jobs of one model and GPU count, interchangeable in the LP: their candidate points and
/// the LP's variable for each (how many of them run there).
struct Class {
    points: Vec<Point>,
    vars: Vec<Variable>,
    /// The jobs, in priority order.
    jobs: Vec<usize>,
    gpus: u32,
    /// Per-GPU throughput at the proportional share.
    prop: f64,
}

/// A job rounded to one point: job, GPUs, cores, GB, rank in the policy order.
type Demand = (usize, u32, f64, f64, usize);

impl Mechanism for Opt {
    fn name(&self) -> &'static str {
        "opt"
    }

    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &mut Order,
        out: &mut Vec<Placement>,
        stats: &mut MechStats,
    ) {
        let cl = ctx.cluster;
        let (runnable, pulled) = runnable_prefix(ctx, order);
        if runnable.is_empty() {
            return;
        }
        let mut vars = ProblemVariables::new();
        let classes = classes(ctx, &runnable, &mut vars);
        let mut objective = Expression::with_capacity(256);
        let mut cpu_sum = Expression::with_capacity(256);
        let mut mem_sum = Expression::with_capacity(256);
        let mut constraints = Vec::new();
        for class in &classes {
            let gf = class.gpus as f64;
            let mut count = Expression::with_capacity(class.points.len());
            for (p, &v) in class.points.iter().zip(&class.vars) {
                count.add_mul(1.0, v);
                objective.add_mul(gf * p.tput / class.prop, v);
                cpu_sum.add_mul(gf * p.cpu, v);
                mem_sum.add_mul(gf * p.mem, v);
            }
            constraints.push(constraint!(count == class.jobs.len() as f64));
        }
        let mut problem = vars
            .maximise(objective.clone())
            .using(microlp)
            .with(constraint!(cpu_sum <= cl.total_cpus))
            .with(constraint!(mem_sum <= cl.total_mem_gb));
        for c in constraints {
            problem = problem.with(c);
        }
        let Ok(solution) = problem.solve() else {
            stats.lp_failed = true;
            // Fall back to Synergy-Tune for this round.
            let mut again = pulled.into_iter().chain(order);
            super::tune::Tune.allocate(ctx, &mut again, out, stats);
            return;
        };
        stats.lp_bound = Some(solution.eval(&objective));
        let rank_of: BTreeMap<usize, usize> =
            runnable.iter().enumerate().map(|(r, &j)| (j, r)).collect();
        let mut demands: Vec<Demand> = Vec::new();
        for class in &classes {
            let x: Vec<f64> = (class.vars.iter())
                .map(|v| solution.value(*v).max(0.0))
                .collect();
            demands.extend(rounded(class, &x, &rank_of));
        }
        let first = out.len();
        let mut free = place(ctx, &demands, out);
        top_up(ctx, &mut free, &mut out[first..], &rank_of);
        let mut prop_of: BTreeMap<usize, f64> = BTreeMap::new();
        for class in &classes {
            for &j in &class.jobs {
                prop_of.insert(j, class.prop * class.gpus as f64);
            }
        }
        let rounded: f64 = out[first..]
            .iter()
            .map(|p| {
                ctx.rate(p.job, p.cpus, p.mem_gb) / prop_of.get(&p.job).copied().unwrap_or(1.0)
            })
            .sum();
        stats.rounded = Some(rounded);
    }
}

/// The round's runnable jobs, the policy-order prefix that fits the cluster's GPUs, and every
/// job pulled (for the fallback).
fn runnable_prefix(ctx: &MechCtx, order: &mut Order) -> (Vec<usize>, Vec<usize>) {
    let mut budget = ctx.cluster.total_gpus;
    let mut runnable = Vec::new();
    let mut pulled = Vec::new();
    while budget > 0 {
        let Some(j) = order.next() else { break };
        pulled.push(j);
        let g = ctx.jobs[j].spec.gpus;
        if g <= budget {
            budget -= g;
            runnable.push(j);
        }
    }
    (runnable, pulled)
}

/// The runnable jobs by class (model and GPUs), each with its Pareto-optimal grid points that
/// fit a server and a variable per point, at most the class's jobs.
fn classes(ctx: &MechCtx, runnable: &[usize], vars: &mut ProblemVariables) -> Vec<Class> {
    let cl = ctx.cluster;
    let (ref_c, ref_m) = cl.reference_share();
    let max_c = cl.servers.iter().map(|s| s.cpus).fold(0.0, f64::max);
    let max_m = cl.servers.iter().map(|s| s.mem_gb).fold(0.0, f64::max);
    let mut by_class: BTreeMap<(usize, u32), Vec<usize>> = BTreeMap::new();
    for &j in runnable {
        let job = &ctx.jobs[j];
        by_class
            .entry((job.profile as usize, job.spec.gpus))
            .or_default()
            .push(j);
    }
    let mut classes = Vec::with_capacity(by_class.len());
    for ((pi, g), jobs) in by_class {
        let prof = ctx.profiles.get(pi);
        let gf = g as f64;
        let prop = prof.per_gpu(ref_c, ref_m, ctx.semantics).max(EPS);
        let mut points: Vec<Point> = Vec::new();
        for (ci, &c) in prof.surface.cpu.iter().enumerate() {
            for (mi, &m) in prof.surface.mem.iter().enumerate() {
                if c * gf > max_c + EPS || m * gf > max_m + EPS {
                    continue;
                }
                points.push(Point {
                    cpu: c,
                    mem: m,
                    tput: prof.surface.on_grid(ci, mi),
                });
            }
        }
        // Pareto: drop points another point beats on all three counts.
        let all = points.clone();
        points.retain(|p| {
            !all.iter().any(|q| {
                q.cpu <= p.cpu
                    && q.mem <= p.mem
                    && q.tput >= p.tput
                    && (q.cpu < p.cpu || q.mem < p.mem || q.tput > p.tput)
            })
        });
        if points.is_empty() {
            // No grid point fits a server: fall back to the smallest share (rounding clips).
            points.push(Point {
                cpu: ref_c,
                mem: ref_m,
                tput: prop,
            });
        }
        let n = jobs.len() as f64;
        let vs = (points.iter())
            .map(|_| vars.add(variable().min(0.0).max(n)))
            .collect();
        classes.push(Class {
            points,
            vars: vs,
            jobs,
            gpus: g,
            prop,
        });
    }
    classes
}

/// The class's jobs rounded to one point each from the LP's counts `x` (largest remainder),
/// the higher-priority jobs at the faster points.
fn rounded(class: &Class, x: &[f64], rank_of: &BTreeMap<usize, usize>) -> Vec<Demand> {
    let (pts, n) = (&class.points, class.jobs.len());
    let mut counts: Vec<usize> = x.iter().map(|v| (v + 1e-7).floor() as usize).collect();
    let mut assigned: usize = counts.iter().sum();
    if assigned > n {
        // Numerical excess: trim from the slowest points.
        let mut idx: Vec<usize> = (0..pts.len()).collect();
        idx.sort_by(|&a, &b| pts[a].tput.total_cmp(&pts[b].tput));
        for i in idx {
            while assigned > n && counts[i] > 0 {
                counts[i] -= 1;
                assigned -= 1;
            }
        }
    }
    let mut rem: Vec<usize> = (0..pts.len()).collect();
    rem.sort_by(|&a, &b| {
        let fa = x[a] - x[a].floor();
        let fb = x[b] - x[b].floor();
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    let mut k = 0;
    while assigned < n {
        counts[rem[k % rem.len()]] += 1;
        assigned += 1;
        k += 1;
    }
    let mut by_speed: Vec<usize> = (0..pts.len()).collect();
    by_speed.sort_by(|&a, &b| pts[b].tput.total_cmp(&pts[a].tput).then(a.cmp(&b)));
    let (g, gf) = (class.gpus, class.gpus as f64);
    let mut it = class.jobs.iter();
    let mut out = Vec::with_capacity(n);
    for &pi in &by_speed {
        for _ in 0..counts[pi] {
            if let Some(&j) = it.next() {
                out.push((j, g, pts[pi].cpu * gf, pts[pi].mem * gf, rank_of[&j]));
            }
        }
    }
    out
}

/// Places the rounded jobs first-fit decreasing (GPUs, then CPUs, then priority) on the
/// server with the most room; a job whose point fits nowhere gets its proportional share,
/// reclaiming as Tune does.
fn place(ctx: &MechCtx, demands: &[Demand], out: &mut Vec<Placement>) -> Free {
    let cl = ctx.cluster;
    let mut demands = demands.to_vec();
    demands.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.4.cmp(&b.4)));
    let mut free = Free::new(cl);
    let mut misfits = Vec::new();
    for &(j, g, c, m, rank) in &demands {
        match free.most_room(cl, g, c, m) {
            Some(s) => {
                let p = Placement {
                    job: j,
                    server: s,
                    gpus: g,
                    cpus: c,
                    mem_gb: m,
                };
                free.place(out, p);
            }
            None => misfits.push((rank, j)),
        }
    }
    misfits.sort_unstable();
    for (_, j) in misfits {
        reclaim_and_place(ctx, &mut free, out, j);
    }
    free
}

/// Leftovers on each server to its jobs, in priority order, up to their best case.
fn top_up(
    ctx: &MechCtx,
    free: &mut Free,
    placed: &mut [Placement],
    rank_of: &BTreeMap<usize, usize>,
) {
    placed.sort_by_key(|p| rank_of[&p.job]);
    for p in placed.iter_mut() {
        let (bc, bm) = best_on(ctx, p.job, p.server);
        let s = p.server;
        if bc > p.cpus {
            let add = (bc - p.cpus).min(free.server(s).cpus);
            p.cpus += add;
            free.add_cpus(s, -add);
        }
        if bm > p.mem_gb {
            let add = (bm - p.mem_gb).min(free.server(s).mem_gb);
            p.mem_gb += add;
            free.add_mem(s, -add);
        }
    }
}
