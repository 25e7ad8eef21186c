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
    /// The machine kinds of its servers, one bit per [`Cluster::kinds`] index.
    pub kinds: u32,
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
    let internal = |message: String| ReplayError::Placement {
        by: format!("mechanism {by}"),
        t,
        message,
    };
    tally_servers(placements, active, cluster, &mut scratch.used).map_err(internal)?;
    check_room(placements, active, cluster, &scratch.used).map_err(internal)?;
    let index = &mut scratch.index;
    index.resize(index.len().max(active.len()), 0);
    allocs.clear();
    let spread = sum_per_job(placements, cluster, index, &mut allocs);
    let twice = if spread {
        placed_twice(placements, index, &allocs)
    } else {
        None
    };
    for a in &allocs {
        index[a.slot] = 0;
    }
    if let Some((slot, server)) = twice {
        return Err(internal(format!(
            "job {} placed twice on server {server} in one round",
            active[slot].spec.id
        )));
    }
    for a in &allocs {
        let want = active[a.slot].spec.gpus;
        if a.gpus != want {
            return Err(internal(format!(
                "job {} placed on {} GPUs, wants {want}",
                active[a.slot].spec.id, a.gpus
            )));
        }
    }
    Ok(allocs)
}

/// Sums what the placements use of each server into `used` (one entry per server), checking
/// each placement names a job of the round and a server of the cluster, and asks for at least
/// one GPU and no negative amount.
#[inline]
fn tally_servers(
    placements: &[Placement],
    active: &[JobState],
    cluster: &Cluster,
    used: &mut Vec<(u32, f64, f64)>,
) -> Result<(), String> {
    let ns = cluster.servers.len();
    used.clear();
    used.resize(ns, (0, 0.0, 0.0));
    for p in placements {
        let Some(job) = active.get(p.job) else {
            return Err(format!(
                "placement of job index {} but the round has {} jobs",
                p.job,
                active.len()
            ));
        };
        if p.gpus == 0 || p.server >= ns || !(p.cpus >= 0.0 && p.mem_gb >= 0.0) {
            return Err(format!(
                "job {} placed on {} GPUs, {} cores, {} GB of server {} (the cluster has {} \
                 servers; GPUs must be at least 1, cores and GB not negative)",
                job.spec.id, p.gpus, p.cpus, p.mem_gb, p.server, ns
            ));
        }
        let u = &mut used[p.server];
        u.0 += p.gpus;
        u.1 += p.cpus;
        u.2 += p.mem_gb;
    }
    Ok(())
}

/// Checks no server is given more than it has in any dimension (cores and memory with a
/// rounding tolerance), naming the jobs placed on the first one that is.
#[inline]
fn check_room(
    placements: &[Placement],
    active: &[JobState],
    cluster: &Cluster,
    used: &[(u32, f64, f64)],
) -> Result<(), String> {
    for (s, u) in used.iter().enumerate() {
        let srv = &cluster.servers[s];
        if u.0 > srv.gpus
            || u.1 > srv.cpus * (1.0 + 1e-9) + EPS
            || u.2 > srv.mem_gb * (1.0 + 1e-9) + EPS
        {
            return Err(format!(
                "server {s} over-allocated: {} GPUs, {} cores, {} GB placed of {}, {}, {} \
                 (jobs {})",
                u.0,
                u.1,
                u.2,
                srv.gpus,
                srv.cpus,
                srv.mem_gb,
                job_list(
                    placements
                        .iter()
                        .filter(|p| p.server == s)
                        .filter_map(|p| active.get(p.job).map(|j| j.spec.id))
                )
            ));
        }
    }
    Ok(())
}

/// One allocation per job into `allocs`, its parts summed in the order they were placed;
/// `index` maps each placed job's slot to 1 + its allocation's position (the caller clears
/// it). Whether any job spans servers.
#[inline]
fn sum_per_job(
    placements: &[Placement],
    cluster: &Cluster,
    index: &mut [u32],
    allocs: &mut Vec<Alloc>,
) -> bool {
    let mut spread = false;
    for p in placements {
        let kind = 1u32 << cluster.servers[p.server].kind;
        match index[p.job] {
            0 => {
                allocs.push(Alloc {
                    slot: p.job,
                    gpus: p.gpus,
                    cpus: p.cpus,
                    mem_gb: p.mem_gb,
                    servers: 1,
                    kinds: kind,
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
                a.kinds |= kind;
            }
        }
    }
    spread
}

/// A job spanning servers holds each once: the first (slot, server) placed twice, if any.
/// Only called when a job spans servers, so that a round without one allocates nothing.
fn placed_twice(
    placements: &[Placement],
    index: &[u32],
    allocs: &[Alloc],
) -> Option<(usize, usize)> {
    let mut parts: Vec<(usize, usize)> = placements
        .iter()
        .filter(|p| allocs[index[p.job] as usize - 1].servers > 1)
        .map(|p| (p.job, p.server))
        .collect();
    parts.sort_unstable();
    parts.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// The first few job ids, then how many more.
fn job_list(ids: impl Iterator<Item = u64>) -> String {
    const SHOWN: usize = 8;
    let ids: Vec<u64> = ids.collect();
    let mut list: Vec<String> = ids.iter().take(SHOWN).map(u64::to_string).collect();
    if ids.len() > SHOWN {
        list.push(format!("and {} more", ids.len() - SHOWN));
    }
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::binding::bind;
    use crate::replay::cluster::ClusterSpec;
    use crate::replay::job::JobSpec;
    use crate::replay::profile::{ProfileSet, Semantics};
    use std::path::Path;

    fn setup(gpus: &[u32]) -> (Cluster, Vec<JobState>) {
        let text = "[[group]]\ncount = 2\ngpus = 8\ncpus = 24\nmemory_gb = 500\n";
        let cl = ClusterSpec::from_toml(text, Path::new("c.toml"))
            .unwrap()
            .build()
            .unwrap();
        let profiles = ProfileSet::builtin_zoo();
        let jobs = gpus
            .iter()
            .enumerate()
            .map(|(i, &g)| {
                let spec = JobSpec {
                    id: i as u64,
                    model: "alexnet".into(),
                    arrival_s: 0.0,
                    gpus: g,
                    work_samples: 1e6,
                    cpu_request: None,
                    mem_request_gb: None,
                };
                bind(spec, &cl, &profiles, Semantics::Exact).unwrap()
            })
            .collect();
        (cl, jobs)
    }

    fn part(job: usize, server: usize, gpus: u32, cpus: f64) -> Placement {
        Placement {
            job,
            server,
            gpus,
            cpus,
            mem_gb: 10.0,
        }
    }

    fn check(cl: &Cluster, jobs: &[JobState], ps: &[Placement]) -> Result<Vec<Alloc>, String> {
        let mut scratch = Scratch::default();
        let out = allocations(ps, jobs, cl, "test", 0.0, &mut scratch, Vec::new())
            .map_err(|e| e.to_string());
        assert!(
            scratch.index.iter().all(|&i| i == 0),
            "the per-slot index is cleared on every return"
        );
        out
    }

    #[test]
    fn parts_of_a_spread_job_are_summed_in_placement_order() {
        let (cl, jobs) = setup(&[4, 1]);
        let a = check(
            &cl,
            &jobs,
            &[part(0, 0, 3, 6.0), part(1, 0, 1, 2.0), part(0, 1, 1, 2.0)],
        )
        .unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].slot, a[0].gpus, a[0].servers), (0, 4, 2));
        assert_eq!(a[0].cpus, 8.0);
        assert_eq!((a[1].slot, a[1].gpus, a[1].servers), (1, 1, 1));
    }

    #[test]
    fn a_mechanism_that_breaks_the_rules_is_named_with_what_it_broke() {
        let (cl, jobs) = setup(&[2, 1]);
        let twice = check(&cl, &jobs, &[part(0, 1, 1, 1.0), part(0, 1, 1, 1.0)]).unwrap_err();
        assert!(twice.contains("placed twice on server 1"), "{twice}");
        let short = check(&cl, &jobs, &[part(0, 0, 1, 1.0)]).unwrap_err();
        assert!(short.contains("wants 2"), "{short}");
        let over = check(&cl, &jobs, &[part(0, 0, 2, 20.0), part(1, 0, 1, 5.0)]).unwrap_err();
        assert!(
            over.contains("mechanism test") && over.contains("server 0 over-allocated"),
            "{over}"
        );
    }
}
