//! A verdict with its uncertainty: whether a scheme's mean-JCT gain over the proportional
//! share, under the same policy, is more than the matrices' intervals allow. The scenario is
//! replayed on profiles drawn within their cells' 95% intervals, both schemes on each draw;
//! where the central 95% of the gains holds zero, the verdict is "no difference".

use super::profile::{Profile, ProfileSet};
use super::{ReplayError, ReplayOptions, RunResult, Scenario};
use crate::matrix::{Matrix, load_matrix};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

/// Replays on drawn profiles a verdict rests on, unless told otherwise.
pub const DEFAULT_DRAWS: usize = 20;

/// The draws' seeds start here (the same draws for every run of a scenario).
const SEED: u64 = 0x5eed_0fba_4d00;

/// One scheme's gain over the proportional share under its policy, with its band.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub policy: String,
    pub mechanism: String,
    /// Mean JCT's gain over `policy+proportional`, percent, on the profiles as they are.
    pub gain_pct: f64,
    /// The 2.5th and 97.5th percentiles of the gain over the draws, percent.
    pub band_pct: (f64, f64),
    pub draws: usize,
}

impl Verdict {
    /// Whether the band leaves zero out: the gain's sign holds within the matrices'
    /// intervals.
    pub fn differs(&self) -> bool {
        self.band_pct.0 > 0.0 || self.band_pct.1 < 0.0
    }

    /// One line: the gain and its band, or "no difference".
    pub fn describe(&self) -> String {
        let (low, high) = self.band_pct;
        let scheme = format!("{}+{}", self.policy, self.mechanism);
        let base = format!("{}+proportional", self.policy);
        let band = format!("[{low:+.1}%, {high:+.1}%] over {} draws", self.draws);
        if self.differs() {
            let word = if self.gain_pct >= 0.0 {
                "beats"
            } else {
                "loses to"
            };
            format!(
                "{scheme} {word} {base}: mean JCT {:+.1}% {band} within the matrices' intervals",
                self.gain_pct
            )
        } else {
            format!(
                "{scheme} against {base}: no difference (mean JCT {:+.1}%, {band} holds 0)",
                self.gain_pct
            )
        }
    }
}

/// Replays the `k`-th scheme with the options and scenario given; returns its mean JCT.
pub type MeanJct<'a> = dyn Fn(&ReplayOptions, &Scenario, usize) -> Result<f64, ReplayError> + 'a;

/// The verdict on each scheme of `runs` that has a proportional run of its policy beside
/// it, from `opts.draws` replays (`mean_jct` of each scheme) on profiles drawn within their
/// cells' intervals. None where no profile has an interval (Synergy's zoo), or draws are off.
pub fn verdicts(
    opts: &ReplayOptions,
    scenario: &Scenario,
    runs: &[RunResult],
    mean_jct: &MeanJct,
) -> Result<Vec<Verdict>, ReplayError> {
    let pairs = pairs(runs);
    if pairs.is_empty() || opts.draws == 0 {
        return Ok(Vec::new());
    }
    let matrices: Vec<Option<Matrix>> = (scenario.profiles.profiles.iter())
        .map(|p| load_matrix(std::path::Path::new(&p.source)).ok())
        .collect();
    if !matrices.iter().flatten().any(has_interval) {
        return Ok(Vec::new());
    }
    let quiet = ReplayOptions {
        out_dir: None,
        stream: false,
        record: None,
        ..opts.clone()
    };
    let needed: Vec<usize> = {
        let mut k: Vec<usize> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    let mut gains: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
    for d in 0..opts.draws {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED.wrapping_add(d as u64));
        let profiles = drawn_profiles(&scenario.profiles, &matrices, &mut rng)?;
        let drawn = scenario.with_profiles(profiles);
        let mut means = vec![f64::NAN; runs.len()];
        for &k in &needed {
            means[k] = mean_jct(&quiet, &drawn, k)?;
        }
        for (i, &(own, base)) in pairs.iter().enumerate() {
            let g = gain(means[base], means[own]);
            if g.is_finite() {
                gains[i].push(g);
            }
        }
    }
    Ok((pairs.iter().zip(gains))
        .filter(|(_, g)| !g.is_empty())
        .map(|(&(own, base), mut g)| {
            g.sort_by(f64::total_cmp);
            let s = &runs[own].summary;
            Verdict {
                policy: s.policy.clone(),
                mechanism: s.mechanism.clone(),
                gain_pct: gain(runs[base].summary.mean_jct_s, s.mean_jct_s),
                band_pct: (percentile(&g, 0.025), percentile(&g, 0.975)),
                draws: g.len(),
            }
        })
        .collect())
}

/// (scheme, its policy's proportional run) index pairs of `runs`.
fn pairs(runs: &[RunResult]) -> Vec<(usize, usize)> {
    (runs.iter().enumerate())
        .filter(|(_, r)| r.summary.mechanism != "proportional")
        .filter_map(|(k, r)| {
            let base = runs.iter().position(|b| {
                b.summary.mechanism == "proportional" && b.summary.policy == r.summary.policy
            })?;
            Some((k, base))
        })
        .collect()
}

/// Mean JCT's gain of `own` over `base`, percent.
fn gain(base: f64, own: f64) -> f64 {
    (base - own) / base * 100.0
}

/// The `q` quantile of sorted `xs`, linearly between order statistics.
fn percentile(xs: &[f64], q: f64) -> f64 {
    let pos = q * (xs.len() - 1) as f64;
    let (i, f) = (pos.floor() as usize, pos.fract());
    match xs.get(i + 1) {
        Some(next) => xs[i] * (1.0 - f) + next * f,
        None => xs[i],
    }
}

fn has_interval(m: &Matrix) -> bool {
    (m.cells.iter().filter_map(|c| c.throughput.as_ref()))
        .any(|t| t.ci95_high > t.ci95_low && t.ci95_low > 0.0)
}

/// Each profile with its matrix's cells drawn within their intervals (log-normal, the
/// interval its 95%), independently; a profile without a matrix file stays as it is. What
/// the profile carries besides its matrix (start-up, spread penalty, declared best) is kept.
fn drawn_profiles(
    set: &ProfileSet,
    matrices: &[Option<Matrix>],
    rng: &mut ChaCha8Rng,
) -> Result<ProfileSet, ReplayError> {
    let normal = Normal::new(0.0, 1.0).expect("the standard normal is valid");
    let mut out = set.clone();
    for (p, m) in out.profiles.iter_mut().zip(matrices) {
        let Some(m) = m else { continue };
        let mut m = m.clone();
        for t in m.cells.iter_mut().filter_map(|c| c.throughput.as_mut()) {
            if !(t.ci95_high > t.ci95_low && t.ci95_low > 0.0 && t.samples_per_s > 0.0) {
                continue;
            }
            let sigma = (t.ci95_high / t.ci95_low).ln() / (2.0 * 1.96);
            // A uniform in (0, 1) from 53 random bits, off its ends.
            let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let f = (sigma * normal.inverse_cdf(u)).exp();
            t.samples_per_s *= f;
            t.ci95_low *= f;
            t.ci95_high *= f;
        }
        *p = redrawn(p, &m)?;
    }
    Ok(out)
}

/// `p` read again from `m`, keeping what the replay set on it besides its matrix.
fn redrawn(p: &Profile, m: &Matrix) -> Result<Profile, ReplayError> {
    let mut q = Profile::from_matrix(m, &p.source)?;
    q.model = p.model.clone();
    q.class = p.class;
    q.placement_penalty = p.placement_penalty;
    q.declared_best = p.declared_best;
    q.start = p.start;
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::cluster::ClusterSpec;
    use crate::replay::{Semantics, Unobserved, WorkloadSpec, run_observed};
    use std::path::Path;

    fn deploy_options(profiles: Option<&Path>) -> ReplayOptions {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let cluster = root.join("workloads/deploy/cluster.toml");
        ReplayOptions {
            cluster: ClusterSpec::resolve(&cluster.display().to_string()).unwrap(),
            profiles: profiles.map(Path::to_owned),
            workload: WorkloadSpec::SynergyCsv(root.join("workloads/deploy/trace.csv")),
            schemes: vec![
                ("fifo".into(), "proportional".into()),
                ("fifo".into(), "tune".into()),
            ],
            semantics: Semantics::Exact,
            round_s: 30.0,
            ..ReplayOptions::default()
        }
    }

    fn verdicts_of(opts: &ReplayOptions) -> Vec<Verdict> {
        run_observed(opts, &Unobserved).unwrap().verdicts
    }

    #[test]
    fn matrices_with_intervals_give_a_band_the_same_every_time() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let opts = deploy_options(Some(&root.join("workloads/deploy/matrices")));
        let v = verdicts_of(&opts);
        assert_eq!(v.len(), 1, "{v:?}");
        let v = &v[0];
        assert_eq!((v.policy.as_str(), v.mechanism.as_str()), ("fifo", "tune"));
        assert_eq!(v.draws, DEFAULT_DRAWS);
        assert!(v.band_pct.0 < v.band_pct.1, "{v:?}");
        assert!(v.gain_pct.is_finite());
        assert!(v.describe().contains("fifo+tune"), "{}", v.describe());
        assert_eq!(verdicts_of(&opts)[0], *v, "the same draws every run");
        let off = ReplayOptions { draws: 0, ..opts };
        assert!(verdicts_of(&off).is_empty());
    }

    #[test]
    fn a_band_that_holds_zero_is_no_difference() {
        let v = |band_pct| Verdict {
            policy: "srtf".into(),
            mechanism: "tune".into(),
            gain_pct: 2.0,
            band_pct,
            draws: 20,
        };
        assert!(!v((-1.0, 5.0)).differs());
        assert!(v((-1.0, 5.0)).describe().contains("no difference"));
        assert!(v((0.5, 5.0)).differs());
        assert!(v((0.5, 5.0)).describe().contains("beats srtf+proportional"));
        assert!(v((-6.0, -0.5)).differs());
    }

    #[test]
    fn percentiles_run_between_order_statistics() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&xs, 0.0), 1.0);
        assert_eq!(percentile(&xs, 1.0), 5.0);
        assert!((percentile(&xs, 0.5) - 3.0).abs() < 1e-12);
        assert!((percentile(&xs, 0.025) - 1.1).abs() < 1e-12);
    }
}
