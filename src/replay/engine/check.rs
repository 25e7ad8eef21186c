//! The engine's check of a mechanism's placements: every job placed whole (its parts on distinct
//! servers, their GPUs its demand) and no server over-allocated in any dimension. What passes
//! is summed into one [`Alloc`] per job.

use super::super::cluster::Cluster;
use super::super::error::ReplayError;
use super::super::job::JobState;
use super::super::mechanism::{EPS, Placement};

/// A job's allocation in one round, summed over the servers it spans.
#[derive(Debug, Clone, Copy, Default)]
pub struct Alloc {
    /// The job's slot in the active list.
    pub slot: usize,
    pub gpus: u32,
    pub cpus: f64,
    pub mem_gb: f64,
    pub servers: u32,
    /// Samples/s it runs at (the engine fills it in).
    pub rate: f64,
}

/// Memory the check reuses from one round to the next.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Per server, what the round's placements use.
    used: Vec<(u32, f64, f64)>,
    /// Per slot, 1 + the job's index in the allocations while they are summed, else 0.
    index: Vec<u32>,
}

/// Checks `placements` of the round at `t` (`by` names the mechanism in errors) and returns
/// the allocations, in the order the jobs were first placed, in `allocs` (emptied first; passed
/// in to reuse its memory).
pub fn allocations(
    placements: &[Placement],
    active: &[JobState],
    cluster: &Cluster,
    by: &str,
    t: f64,
    scratch: &mut Scratch,
    mut allocs: Vec<Alloc>,
) -> Result<Vec<Alloc>, ReplayError> {
    let internal = |m: String| Err(ReplayError::Internal(m));
    let ns = cluster.servers.len();
    let used = &mut scratch.used;
    used.clear();
    used.resize(ns, (0, 0.0, 0.0));
    for p in placements {
        let Some(job) = active.get(p.job) else {
            return internal(format!("placement of unknown job index {}", p.job));
        };
        if p.gpus == 0 || p.server >= ns || !(p.cpus >= 0.0 && p.mem_gb >= 0.0) {
            return internal(format!("bad placement {p:?} of job {}", job.spec.id));
        }
        let u = &mut used[p.server];
        u.0 += p.gpus;
        u.1 += p.cpus;
        u.2 += p.mem_gb;
    }
    for (s, u) in used.iter().enumerate() {
        let srv = &cluster.servers[s];
        if u.0 > srv.gpus
            || u.1 > srv.cpus * (1.0 + 1e-9) + EPS
            || u.2 > srv.mem_gb * (1.0 + 1e-9) + EPS
        {
            return internal(format!(
                "{by} over-allocated server {s} at t={t}: {} GPUs, {} cores, {} GB of {}, {}, {}",
                u.0, u.1, u.2, srv.gpus, srv.cpus, srv.mem_gb
            ));
        }
    }
    // One allocation per job, its parts summed in the order they were placed.
    let index = &mut scratch.index;
    index.resize(index.len().max(active.len()), 0);
    allocs.clear();
    let mut spread = false;
    for p in placements {
        match index[p.job] {
            0 => {
                allocs.push(Alloc {
                    slot: p.job,
                    gpus: p.gpus,
                    cpus: p.cpus,
                    mem_gb: p.mem_gb,
                    servers: 1,
                    rate: 0.0,
                });
                index[p.job] = allocs.len() as u32;
            }
            k => {
                spread = true;
                let a = &mut allocs[k as usize - 1];
                a.gpus += p.gpus;
                a.cpus += p.cpus;
                a.mem_gb += p.mem_gb;
                a.servers += 1;
            }
        }
    }
    // A job spanning servers holds each once.
    if spread {
        let mut parts: Vec<(usize, usize)> = placements
            .iter()
            .filter(|p| allocs[index[p.job] as usize - 1].servers > 1)
            .map(|p| (p.job, p.server))
            .collect();
        parts.sort_unstable();
        if let Some(w) = parts.windows(2).find(|w| w[0] == w[1]) {
            let job = active[w[0].0].spec.id;
            for a in &allocs {
                index[a.slot] = 0;
            }
            return internal(format!(
                "job {job} placed twice on server {} in one round",
                w[0].1
            ));
        }
    }
    for a in &allocs {
        index[a.slot] = 0;
    }
    for a in &allocs {
        let want = active[a.slot].spec.gpus;
        if a.gpus != want {
            return internal(format!(
                "job {} placed on {} GPUs, wants {want}",
                active[a.slot].spec.id, a.gpus
            ));
        }
    }
    Ok(allocs)
}
