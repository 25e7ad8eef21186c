//! A lower bound on a job's JCT under the replay's model: the job alone on the cluster, from its
//! arrival, at every moment on the GPU count and global batch with the highest goodput (any
//! count up to the cluster's, packed on the fewest servers; any batch within its bounds, the
//! rule's included), with no restart and no noise. No scheduler can finish it sooner in the
//! replay, so a published mean JCT below the mean of these bounds is out of the model's reach.

use super::super::cluster::Cluster;
use super::job::ElasticJobSpec;
use super::model::AppModel;

/// Steps of the progress integral; the goodput of a step is the better of its two ends (phi
/// only grows with progress, so the bound stays a bound).
const PROGRESS_STEPS: usize = 200;
/// Geometric batches tried per GPU count, besides the rule's.
const BATCHES: usize = 64;

/// The best goodput of `spec` at this progress fraction over GPU counts and batches.
fn best_goodput(model: &AppModel, spec: &ElasticJobSpec, cluster: &Cluster, frac: f64) -> f64 {
    let per_server = cluster.max_server_gpus.max(1);
    let mut best = 0.0f64;
    for g in 1..=cluster.total_gpus.min(spec.max_batch) {
        let nodes = g.div_ceil(per_server);
        let (lo, hi) = (spec.min_batch.max(g) as f64, spec.max_batch as f64);
        if lo > hi {
            break;
        }
        let ratio = (hi / lo).powf(1.0 / (BATCHES - 1) as f64);
        let rule = spec.rule_batch(g).map(|b| b.max(g) as f64);
        let batches = (0..BATCHES).map(|k| lo * ratio.powi(k as i32)).chain(rule);
        for b in batches {
            let x = model.goodput(g, nodes, b.round().max(1.0) as u32, spec.base_batch, frac);
            if x.is_finite() {
                best = best.max(x);
            }
        }
    }
    best
}

/// Seconds `spec` needs at least (see the module); `None` when the model gives it no goodput.
pub fn min_jct_s(model: &AppModel, spec: &ElasticJobSpec, cluster: &Cluster) -> Option<f64> {
    let work = spec.work();
    let step = work / PROGRESS_STEPS as f64;
    let mut prev = best_goodput(model, spec, cluster, 0.0);
    let mut total = 0.0;
    for k in 1..=PROGRESS_STEPS {
        let next = best_goodput(model, spec, cluster, k as f64 / PROGRESS_STEPS as f64);
        let rate = prev.max(next);
        if rate <= 0.0 {
            return None;
        }
        total += step / rate;
        prev = next;
    }
    Some(total)
}
