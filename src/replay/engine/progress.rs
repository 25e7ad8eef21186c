//! How a job placed for one round progresses: exactly (finishing the instant its work runs
//! out) or as Synergy's simulator counts it (whole iterations, finishing at the round's end).

use super::super::job::JobState;

/// Exact semantics: the job runs at `rate` and finishes the instant its work runs out.
/// Returns the seconds it ran.
pub fn exact_progress(j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
    let needed = if rate > 0.0 {
        j.remaining / rate
    } else {
        f64::INFINITY
    };
    if needed <= r * (1.0 + 1e-12) {
        j.remaining = 0.0;
        j.finish = Some(t + needed.min(r));
        needed.min(r)
    } else {
        j.remaining -= rate * r;
        r
    }
}

/// Synergy's semantics: the job is credited `floor(round / (iteration time / speed-up))` whole
/// iterations at the start of the round (speed-up = rate over the proportional rate) and, once
/// they reach its total, finishes at the end of the round. It holds the whole round either way.
pub fn synergy_progress(j: &mut JobState, rate: f64, t: f64, r: f64) -> f64 {
    let sc = &mut j.synergy;
    let speedup = if rate == j.prop_rate {
        1.0
    } else if rate == j.prop_rate * sc.speedup_orig {
        sc.speedup_orig
    } else {
        rate / j.prop_rate
    };
    sc.done_iters = (sc.done_iters + sc.iters_in_round(r, speedup)).min(sc.total_iters);
    sc.speedup = speedup;
    sc.last_run_end = Some(t + r);
    j.remaining = (sc.total_iters - sc.done_iters) as f64 * sc.samples_per_iter;
    if sc.done_iters >= sc.total_iters {
        j.finish = Some(t + r);
    }
    r
}
