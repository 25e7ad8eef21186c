//! Whether a whole decision fits the cluster: the check the engine applies to every decision
//! before it applies it (a decision that fails is a bug of the policy).

use super::super::cluster::{Cluster, EPS};
use super::allocation::Allocation;
use super::job::ElasticJob;

/// Why a decision does not fit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Infeasible {
    #[error("decision has {got} entries for {jobs} jobs")]
    Length { got: usize, jobs: usize },
    #[error("job {job}: {what}")]
    Job { job: u64, what: String },
    #[error("server {server}: {what}")]
    Server { server: usize, what: String },
}

/// Checks a decision (one entry per job, `None`: not running) against the cluster: every
/// allocation well formed (servers exist, GPUs > 0, batch within the job's bounds and at
/// least one sample per GPU, finite non-negative CPU and memory) and no server's GPUs, cores
/// or GB over-committed.
pub fn check(
    jobs: &[ElasticJob],
    decision: &[Option<Allocation>],
    cluster: &Cluster,
) -> Result<(), Infeasible> {
    if decision.len() != jobs.len() {
        return Err(Infeasible::Length {
            got: decision.len(),
            jobs: jobs.len(),
        });
    }
    let n = cluster.servers.len();
    let mut used = vec![(0u32, 0.0f64, 0.0f64); n];
    for (job, a) in jobs.iter().zip(decision) {
        let Some(a) = a else { continue };
        let bad = |what: String| Infeasible::Job {
            job: job.spec.id,
            what,
        };
        if a.gpus_per_server.is_empty() || a.gpus_per_server.iter().any(|&(_, g)| g == 0) {
            return Err(bad("an allocation with no GPUs on a server it names".into()));
        }
        if a.gpus_per_server.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(bad("servers not strictly ascending".into()));
        }
        let b = a.global_batch;
        if b < job.spec.min_batch || b > job.spec.max_batch || b < a.gpus() {
            return Err(bad(format!(
                "global batch {b} outside [{}, {}] or below one sample per GPU ({} GPUs)",
                job.spec.min_batch,
                job.spec.max_batch,
                a.gpus()
            )));
        }
        let usable = |x: f64| x.is_finite() && x >= 0.0;
        if !(usable(a.cpus_per_gpu) && usable(a.mem_gb_per_gpu)) {
            return Err(bad(format!(
                "CPU {} / memory {} per GPU not finite and non-negative",
                a.cpus_per_gpu, a.mem_gb_per_gpu
            )));
        }
        for &(s, g) in &a.gpus_per_server {
            let Some(u) = used.get_mut(s) else {
                return Err(bad(format!("server {s} does not exist ({n} servers)")));
            };
            u.0 += g;
            u.1 += g as f64 * a.cpus_per_gpu;
            u.2 += g as f64 * a.mem_gb_per_gpu;
        }
    }
    for (s, (u, server)) in used.iter().zip(&cluster.servers).enumerate() {
        if u.0 > server.gpus || u.1 > server.cpus + EPS || u.2 > server.mem_gb + EPS {
            return Err(Infeasible::Server {
                server: s,
                what: format!(
                    "{} GPUs, {:.3} cores, {:.3} GB allocated; it has {}, {}, {}",
                    u.0, u.1, u.2, server.gpus, server.cpus, server.mem_gb
                ),
            });
        }
    }
    Ok(())
}
