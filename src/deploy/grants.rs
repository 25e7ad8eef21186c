//! From a round's placements to what each job holds on the machine: the cluster's servers
//! carved out of this machine's CPUs and GPUs, CPU sets that spread the quotas, and GPU
//! devices a job keeps while it stays on its server.

use super::backend::Grant;
use super::error::DeployError;
use crate::matrix::surface::BYTES_PER_GB;
use crate::replay::cluster::Cluster;
use crate::replay::engine::JobState;
use crate::replay::mechanism::Placement;
use std::collections::HashMap;

/// One server of the cluster on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSlice {
    /// The machine's CPUs it owns: its cores rounded up.
    pub cpu_ids: Vec<u32>,
    /// The machine's GPUs it owns; empty where its accelerators are emulated (slots only).
    pub gpu_ids: Vec<u32>,
}

/// Carves `cluster`'s servers out of the machine's `cpus` (in order) and `gpus` (device
/// indices; empty: every server's accelerators are emulated). An error says what does not fit.
pub fn carve(
    cluster: &Cluster,
    cpus: &[u32],
    gpus: &[u32],
) -> Result<Vec<ServerSlice>, DeployError> {
    let need_cpus: usize = cluster.servers.iter().map(|s| s.cpus.ceil() as usize).sum();
    if need_cpus > cpus.len() {
        return Err(DeployError::Machine(format!(
            "its {} servers have {need_cpus} CPUs (cores rounded up) and this machine gives \
             the profiler {} ({})",
            cluster.servers.len(),
            cpus.len(),
            list(cpus)
        )));
    }
    let emulated = gpus.is_empty();
    if !emulated && cluster.total_gpus as usize > gpus.len() {
        return Err(DeployError::Machine(format!(
            "its servers have {} GPUs and this machine has {}; run on emulated accelerators \
             (--emulate-gpus) or a smaller cluster",
            cluster.total_gpus,
            gpus.len()
        )));
    }
    let (mut c, mut g) = (0, 0);
    Ok(cluster
        .servers
        .iter()
        .map(|s| {
            let n = s.cpus.ceil() as usize;
            let slice = ServerSlice {
                cpu_ids: cpus[c..c + n].to_vec(),
                gpu_ids: if emulated {
                    Vec::new()
                } else {
                    gpus[g..g + s.gpus as usize].to_vec()
                },
            };
            c += n;
            if !emulated {
                g += s.gpus as usize;
            }
            slice
        })
        .collect())
}

fn list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The grants of one round, by job id: `placements` (a part per server a job spans) of the
/// active `jobs`; `previous` are the last round's, whose GPU devices a job keeps where it stays
/// on the same server with as many.
pub fn round_grants(
    placements: &[Placement],
    jobs: &[JobState],
    slices: &[ServerSlice],
    previous: &HashMap<u64, Grant>,
) -> HashMap<u64, Grant> {
    // Per server: the quota each of its CPUs carries so far, and the GPUs taken.
    let mut load: Vec<Vec<f64>> = slices.iter().map(|s| vec![0.0; s.cpu_ids.len()]).collect();
    let mut taken: Vec<Vec<u32>> = vec![Vec::new(); slices.len()];
    // Jobs that keep their devices take them first, so no newcomer is handed one of them.
    let keeps = |p: &Placement| {
        let id = jobs[p.job].spec.id;
        previous
            .get(&id)
            .filter(|g| g.server == p.server && g.gpu_ids.len() == p.gpus as usize)
            .map(|g| g.gpu_ids.clone())
    };
    for p in placements {
        if let Some(ids) = keeps(p) {
            taken[p.server].extend(ids);
        }
    }
    let mut grants: HashMap<u64, Grant> = HashMap::new();
    for p in placements {
        let id = jobs[p.job].spec.id;
        let slice = &slices[p.server];
        let cpu_ids = least_loaded(&mut load[p.server], p.cpus)
            .into_iter()
            .map(|i| slice.cpu_ids[i])
            .collect::<Vec<u32>>();
        let gpu_ids = if slice.gpu_ids.is_empty() {
            Vec::new()
        } else {
            keeps(p).unwrap_or_else(|| {
                let free: Vec<u32> = slice
                    .gpu_ids
                    .iter()
                    .copied()
                    .filter(|d| !taken[p.server].contains(d))
                    .take(p.gpus as usize)
                    .collect();
                taken[p.server].extend(&free);
                free
            })
        };
        let part = Grant {
            server: p.server,
            cpus: p.cpus,
            cpu_ids,
            mem_bytes: (p.mem_gb * BYTES_PER_GB).round() as u64,
            gpus: p.gpus,
            gpu_ids,
        };
        grants
            .entry(id)
            .and_modify(|g| {
                // A job spanning servers holds the sum of its parts.
                g.cpus += part.cpus;
                g.cpu_ids.extend(&part.cpu_ids);
                g.mem_bytes += part.mem_bytes;
                g.gpus += part.gpus;
                g.gpu_ids.extend(&part.gpu_ids);
            })
            .or_insert(part);
    }
    grants
}

/// Picks ceil(`cores`) of a server's CPUs (at least one), the least loaded first (the lower
/// index on a tie), and spreads `cores` over them; returns their indices, ascending.
pub fn least_loaded(load: &mut [f64], cores: f64) -> Vec<usize> {
    if load.is_empty() {
        return Vec::new();
    }
    let k = (cores.max(0.0).ceil() as usize).clamp(1, load.len());
    let mut order: Vec<usize> = (0..load.len()).collect();
    order.sort_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)));
    let mut picked: Vec<usize> = order[..k].to_vec();
    picked.sort_unstable();
    for &i in &picked {
        load[i] += cores.max(0.0) / k as f64;
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::cluster::ClusterSpec;
    use proptest::prelude::*;

    fn cluster(toml: &str) -> Cluster {
        let spec: ClusterSpec = toml::from_str(toml).unwrap();
        spec.build().unwrap()
    }

    #[test]
    fn servers_are_carved_from_the_machine_in_order() {
        let c = cluster("[[group]]\ncount = 2\ngpus = 2\ncpus = 1.5\nmemory_gb = 4\n");
        let s = carve(&c, &[0, 1, 2, 3], &[]).unwrap();
        assert_eq!(s[0].cpu_ids, vec![0, 1]);
        assert_eq!(s[1].cpu_ids, vec![2, 3]);
        assert!(s.iter().all(|s| s.gpu_ids.is_empty()), "emulated");
        let real = carve(&c, &[0, 1, 2, 3], &[0, 1, 2, 3]).unwrap();
        assert_eq!(real[1].gpu_ids, vec![2, 3]);
        let e = carve(&c, &[0, 1, 2], &[]).unwrap_err().to_string();
        assert!(
            e.contains("4 CPUs") && e.contains("gives the profiler 3 (0,1,2)"),
            "{e}"
        );
        let e = carve(&c, &[0, 1, 2, 3], &[0]).unwrap_err().to_string();
        assert!(e.contains("4 GPUs and this machine has 1"), "{e}");
    }

    #[test]
    fn half_cores_share_a_cpu_and_whole_ones_take_the_free_ones() {
        let mut load = vec![0.0; 2];
        assert_eq!(least_loaded(&mut load, 0.5), vec![0]);
        assert_eq!(least_loaded(&mut load, 0.5), vec![1]);
        assert_eq!(least_loaded(&mut load, 0.5), vec![0]);
        assert_eq!(least_loaded(&mut load, 1.0), vec![1]);
        assert_eq!(load, vec![1.0, 1.5]);
        assert_eq!(
            least_loaded(&mut load, 5.0),
            vec![0, 1],
            "never more than the server's"
        );
    }

    proptest! {
        /// Quotas that fit a server never pile more than one CPU's worth of extra load on any
        /// CPU than the spread would, and each job gets its cores rounded up.
        #[test]
        fn the_quotas_spread_over_the_cpus(
            n in 1usize..8,
            cores in proptest::collection::vec(0.1f64..3.0, 1..10),
        ) {
            let mut load = vec![0.0; n];
            for &c in &cores {
                let picked = least_loaded(&mut load, c);
                prop_assert_eq!(picked.len(), (c.ceil() as usize).clamp(1, n));
                prop_assert!(picked.windows(2).all(|w| w[0] < w[1]));
            }
            let total: f64 = cores.iter().sum();
            let spread = load.iter().cloned().fold(0.0, f64::max) - load.iter().cloned().fold(f64::INFINITY, f64::min);
            prop_assert!((load.iter().sum::<f64>() - total).abs() < 1e-9);
            prop_assert!(spread <= cores.iter().cloned().fold(0.0, f64::max) + 1e-9, "spread {}", spread);
        }
    }
}
