//! Where an allocation's GPUs go: what is left free on each server, and the placement rule every
//! elastic policy shares (keep a job where it is when it still fits; else the fewest servers).

use super::super::cluster::{Cluster, EPS, Resources};
use super::allocation::Allocation;

/// Free GPUs, cores and GB on each server.
#[derive(Debug, Clone, PartialEq)]
pub struct FreePool {
    pub free: Vec<Resources>,
}

impl FreePool {
    /// The whole cluster free.
    pub fn new(cluster: &Cluster) -> FreePool {
        FreePool {
            free: cluster.servers.iter().map(|s| s.capacity()).collect(),
        }
    }

    /// GPUs server `s` can still host at this CPU and memory per GPU.
    pub fn room(&self, s: usize, cpus_per_gpu: f64, mem_gb_per_gpu: f64) -> u32 {
        let r = &self.free[s];
        let by = |have: f64, per: f64| {
            if per > 0.0 {
                ((have + EPS) / per).floor().max(0.0).min(u32::MAX as f64) as u32
            } else {
                u32::MAX
            }
        };
        r.gpus
            .min(by(r.cpus, cpus_per_gpu))
            .min(by(r.mem_gb, mem_gb_per_gpu))
    }

    /// Marks `a` as taken. The caller has checked that it fits ([`Self::fits`]).
    pub fn take(&mut self, a: &Allocation) {
        for &(s, g) in &a.gpus_per_server {
            let r = &mut self.free[s];
            r.gpus = r.gpus.saturating_sub(g);
            r.cpus = (r.cpus - g as f64 * a.cpus_per_gpu).max(0.0);
            r.mem_gb = (r.mem_gb - g as f64 * a.mem_gb_per_gpu).max(0.0);
        }
    }

    /// Whether `gpus_per_server` fits at this CPU and memory per GPU.
    pub fn fits(
        &self,
        gpus_per_server: &[(usize, u32)],
        cpus_per_gpu: f64,
        mem_gb_per_gpu: f64,
    ) -> bool {
        gpus_per_server
            .iter()
            .all(|&(s, g)| s < self.free.len() && self.room(s, cpus_per_gpu, mem_gb_per_gpu) >= g)
    }

    /// Servers for `gpus` GPUs as Pollux's simulator places its baselines: from the server
    /// with the most room (ties to the lowest index), as many as it has, until the job has
    /// them all. `None` when the cluster cannot host it.
    pub fn place_most_free(
        &self,
        gpus: u32,
        cpus_per_gpu: f64,
        mem_gb_per_gpu: f64,
    ) -> Option<Vec<(usize, u32)>> {
        if gpus == 0 {
            return None;
        }
        let mut rooms: Vec<u32> = (0..self.free.len())
            .map(|s| self.room(s, cpus_per_gpu, mem_gb_per_gpu))
            .collect();
        let mut left = gpus;
        let mut out = Vec::new();
        while left > 0 {
            let s = (0..rooms.len()).max_by_key(|&s| (rooms[s], std::cmp::Reverse(s)))?;
            if rooms[s] == 0 {
                return None;
            }
            let g = rooms[s].min(left);
            rooms[s] -= g;
            left -= g;
            out.push((s, g));
        }
        out.sort_unstable();
        Some(out)
    }

    /// Servers for `gpus` GPUs at this CPU and memory per GPU: `keep` (the job's current
    /// servers) when it has the same GPU count and still fits (no migration); else one server,
    /// the fullest that fits (best fit, ties to the lowest index); else as few servers as
    /// possible, roomiest first. `None` when the cluster cannot host it.
    pub fn place(
        &self,
        gpus: u32,
        cpus_per_gpu: f64,
        mem_gb_per_gpu: f64,
        keep: Option<&[(usize, u32)]>,
    ) -> Option<Vec<(usize, u32)>> {
        if gpus == 0 {
            return None;
        }
        if let Some(k) = keep {
            let same = k.iter().map(|&(_, g)| g).sum::<u32>() == gpus;
            if same && self.fits(k, cpus_per_gpu, mem_gb_per_gpu) {
                return Some(k.to_vec());
            }
        }
        let rooms: Vec<u32> = (0..self.free.len())
            .map(|s| self.room(s, cpus_per_gpu, mem_gb_per_gpu))
            .collect();
        if let Some(s) = (0..rooms.len())
            .filter(|&s| rooms[s] >= gpus)
            .min_by_key(|&s| (rooms[s], s))
        {
            return Some(vec![(s, gpus)]);
        }
        let mut order: Vec<usize> = (0..rooms.len()).filter(|&s| rooms[s] > 0).collect();
        order.sort_by_key(|&s| (std::cmp::Reverse(rooms[s]), s));
        let mut out = Vec::new();
        spill(order.into_iter().map(|s| (s, rooms[s])), gpus, &mut out).then_some(out)
    }
}

/// Fills `gpus` GPUs from `rooms` (server, GPUs it can take), in the order given, each server
/// giving as many as it can, into `out` (cleared first, sorted by server); false when the rooms
/// run out first.
pub fn spill(
    rooms: impl IntoIterator<Item = (usize, u32)>,
    gpus: u32,
    out: &mut Vec<(usize, u32)>,
) -> bool {
    out.clear();
    let mut left = gpus;
    for (s, room) in rooms {
        if left == 0 {
            break;
        }
        let g = left.min(room);
        if g > 0 {
            out.push((s, g));
            left -= g;
        }
    }
    out.sort_unstable();
    left == 0
}
