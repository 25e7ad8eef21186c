use super::{
    EPS, Free, MechCtx, MechStats, Mechanism, Order, Placement, best_on, reclaim_and_place,
};
use good_lp::{Expression, ProblemVariables, Solution, SolverModel, constraint, microlp, variable};
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
        // Runnable set.
        let mut budget = cl.total_gpus;
        let mut runnable = Vec::new();
        // Every job pulled, for the fallback below.
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
        if runnable.is_empty() {
            return;
        }
        let (ref_c, ref_m) = cl.reference_share();
        let max_c = cl.servers.iter().map(|s| s.cpus).fold(0.0, f64::max);
        let max_m = cl.servers.iter().map(|s| s.mem_gb).fold(0.0, f64::max);
        // Classes of interchangeable jobs, in priority order within each.
        let mut classes: BTreeMap<(usize, u32), Vec<usize>> = BTreeMap::new();
        for &j in &runnable {
            let job = &ctx.jobs[j];
            classes
                .entry((job.profile as usize, job.spec.gpus))
                .or_default()
                .push(j);
        }
        let mut vars = ProblemVariables::new();
        let mut objective = Expression::with_capacity(256);
        let mut cpu_sum = Expression::with_capacity(256);
        let mut mem_sum = Expression::with_capacity(256);
        let mut class_vars = Vec::new();
        let mut constraints = Vec::new();
        for (&(pi, g), jobs) in &classes {
            let prof = ctx.profiles.get(pi);
            let gf = g as f64;
            let prop = prof.per_gpu(ref_c, ref_m, ctx.semantics).max(EPS);
            let mut pts: Vec<Point> = Vec::new();
            for (ci, &c) in prof.surface.cpu.iter().enumerate() {
                for (mi, &m) in prof.surface.mem.iter().enumerate() {
                    if c * gf > max_c + EPS || m * gf > max_m + EPS {
                        continue;
                    }
                    pts.push(Point {
                        cpu: c,
                        mem: m,
                        tput: prof.surface.on_grid(ci, mi),
                    });
                }
            }
            // Pareto: drop points another point beats on all three counts.
            let all = pts.clone();
            pts.retain(|p| {
                !all.iter().any(|q| {
                    q.cpu <= p.cpu
                        && q.mem <= p.mem
                        && q.tput >= p.tput
                        && (q.cpu < p.cpu || q.mem < p.mem || q.tput > p.tput)
                })
            });
            if pts.is_empty() {
                // No grid point fits a server: fall back to the smallest share (rounding clips).
                pts.push(Point {
                    cpu: ref_c,
                    mem: ref_m,
                    tput: prop,
                });
            }
            let n = jobs.len() as f64;
            let mut count = Expression::with_capacity(pts.len());
            let mut vs = Vec::with_capacity(pts.len());
            for p in &pts {
                let v = vars.add(variable().min(0.0).max(n));
                count.add_mul(1.0, v);
                objective.add_mul(gf * p.tput / prop, v);
                cpu_sum.add_mul(gf * p.cpu, v);
                mem_sum.add_mul(gf * p.mem, v);
                vs.push(v);
            }
            constraints.push(constraint!(count == n));
            class_vars.push((pts, vs, jobs.clone(), g, prop));
        }
        let mut problem = vars.maximise(objective.clone()).using(microlp);
        problem = problem
            .with(constraint!(cpu_sum <= cl.total_cpus))
            .with(constraint!(mem_sum <= cl.total_mem_gb));
        for c in constraints {
            problem = problem.with(c);
        }
        let solution = match problem.solve() {
            Ok(s) => s,
            Err(_) => {
                stats.lp_failed = true;
                // Fall back to Synergy-Tune for this round.
                let mut again = pulled.into_iter().chain(order);
                super::tune::Tune.allocate(ctx, &mut again, out, stats);
                return;
            }
        };
        stats.lp_bound = Some(solution.eval(&objective));

        // Rounding to one grid point per job.
        let mut demands: Vec<(usize, u32, f64, f64, usize)> = Vec::new(); // job, g, cpus, mem, rank
        let rank_of: BTreeMap<usize, usize> =
            runnable.iter().enumerate().map(|(r, &j)| (j, r)).collect();
        for (pts, vs, jobs, g, _) in &class_vars {
            let n = jobs.len();
            let x: Vec<f64> = vs.iter().map(|v| solution.value(*v).max(0.0)).collect();
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
            let mut it = jobs.iter();
            for &pi in &by_speed {
                for _ in 0..counts[pi] {
                    if let Some(&j) = it.next() {
                        let gf = *g as f64;
                        demands.push((j, *g, pts[pi].cpu * gf, pts[pi].mem * gf, rank_of[&j]));
                    }
                }
            }
        }
        // First-fit decreasing (GPUs, then CPUs, then priority).
        demands.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.4.cmp(&b.4)));
        let mut free = Free::new(cl);
        let first = out.len();
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
        // Jobs whose LP point fits nowhere: proportional share, reclaiming as Tune does.
        misfits.sort_unstable();
        for (_, j) in misfits {
            reclaim_and_place(ctx, &mut free, out, j);
        }
        // Top up: leftovers on each server to its jobs, in priority order, up to best case.
        out[first..].sort_by_key(|p| rank_of[&p.job]);
        for p in out[first..].iter_mut() {
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
        let mut prop_of: BTreeMap<usize, f64> = BTreeMap::new();
        for (_, _, jobs, g, prop) in &class_vars {
            for &j in jobs {
                prop_of.insert(j, prop * *g as f64);
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
