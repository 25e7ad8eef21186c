//! Synthetic workload (Synergy's default): Poisson arrivals at N jobs/hour, durations drawn
//! from a distribution (log-uniform mix by default), GPU demand from a discrete distribution,
//! a model per job keeping the image/language/speech split. Jobs are generated lazily, so a
//! replay that stops when its steady-state window finishes draws only the jobs it needs.

use super::{ModelPicker, unit, work_for_duration};
use crate::replay::bounds;
use crate::replay::error::ReplayError;
use crate::replay::job::JobSpec;
use crate::replay::profile::{ProfileSet, Semantics};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Lowest and highest Poisson arrival rate, jobs per hour (a job every 114 years on average, or
/// every 3.6 ms).
pub const MIN_JOBS_PER_HOUR: f64 = 1e-6;
pub const MAX_JOBS_PER_HOUR: f64 = 1e6;

/// Job duration at the proportional share, in minutes.
#[derive(Debug, Clone, PartialEq)]
pub enum DurationDist {
    /// Synergy's: with probability `p`, 10^U(lo1, hi1) minutes, else 10^U(lo2, hi2).
    LogUniformMix {
        p: f64,
        lo1: f64,
        hi1: f64,
        lo2: f64,
        hi2: f64,
    },
    /// Every job the same number of minutes.
    Fixed(f64),
    /// Exponential with this mean, minutes.
    Exponential(f64),
}

impl DurationDist {
    pub const SYNERGY: DurationDist = DurationDist::LogUniformMix {
        p: 0.8,
        lo1: 1.5,
        hi1: 3.0,
        lo2: 3.0,
        hi2: 4.0,
    };

    /// `synergy`, `fixed:MIN`, `exp:MEAN_MIN`, `loguniform:LO,HI` (exponents of minutes).
    pub fn parse(s: &str) -> Result<DurationDist, String> {
        let bad = || {
            format!(
                "duration distribution {s:?}: expected synergy, fixed:MINUTES, exp:MEAN_MINUTES \
                 or loguniform:LO_EXP,HI_EXP"
            )
        };
        let (kind, arg) = s.split_once(':').unwrap_or((s, ""));
        let nums: Vec<f64> = if arg.is_empty() {
            vec![]
        } else {
            arg.split(',')
                .map(|x| x.trim().parse::<f64>().map_err(|_| bad()))
                .collect::<Result<_, _>>()?
        };
        // Minutes (fixed, exp) or exponents of minutes (loguniform), at most MAX_TIME_S.
        let max_min = bounds::MAX_TIME_S / 60.0;
        let ok = |hi: f64| nums.iter().all(|x| x.is_finite() && *x > 0.0 && *x <= hi);
        match (kind, nums.as_slice()) {
            ("synergy", []) => Ok(Self::SYNERGY),
            ("fixed", [m]) if ok(max_min) => Ok(DurationDist::Fixed(*m)),
            // The exponential's tail is cut at 40 means (unit() < 1 - 2^-53).
            ("exp", [m]) if ok(max_min / 40.0) => Ok(DurationDist::Exponential(*m)),
            ("loguniform", [lo, hi]) if ok(max_min.log10()) && lo <= hi => {
                Ok(DurationDist::LogUniformMix {
                    p: 1.0,
                    lo1: *lo,
                    hi1: *hi,
                    lo2: *lo,
                    hi2: *hi,
                })
            }
            _ => Err(bad()),
        }
    }

    pub fn sample_minutes(&self, rng: &mut ChaCha8Rng) -> f64 {
        match *self {
            DurationDist::LogUniformMix {
                p,
                lo1,
                hi1,
                lo2,
                hi2,
            } => {
                let (lo, hi) = if unit(rng) < p {
                    (lo1, hi1)
                } else {
                    (lo2, hi2)
                };
                10f64.powf(lo + (hi - lo) * unit(rng))
            }
            DurationDist::Fixed(m) => m,
            DurationDist::Exponential(mean) => -mean * (1.0 - unit(rng)).ln(),
        }
    }
}

/// Parses `1:0.7,2:0.1,4:0.15,8:0.05` (GPUs:weight).
pub fn parse_gpu_demand(s: &str) -> Result<Vec<(u32, f64)>, String> {
    let bad =
        || format!("GPU demand {s:?}: expected GPUS:WEIGHT[,GPUS:WEIGHT...], e.g. 1:0.7,2:0.3");
    let mut out = Vec::new();
    for part in s.split(',') {
        let (g, w) = part.split_once(':').ok_or_else(bad)?;
        let g: u32 = g.trim().parse().map_err(|_| bad())?;
        let w: f64 = w.trim().parse().map_err(|_| bad())?;
        if g == 0 || !(w.is_finite() && w >= 0.0) {
            return Err(bad());
        }
        out.push((g, w));
    }
    let total = out.iter().map(|x| x.1).sum::<f64>();
    if !(total.is_finite() && total > 0.0) {
        return Err(bad());
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    pub jobs_per_hour: f64,
    pub duration: DurationDist,
    pub gpu_demand: Vec<(u32, f64)>,
    /// image / language / speech weights.
    pub split: [f64; 3],
    pub seed: u64,
    /// Stop generating after this many jobs (`None`: unbounded, the replay stops on its window).
    pub max_jobs: Option<u64>,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            jobs_per_hour: 9.0,
            duration: DurationDist::SYNERGY,
            gpu_demand: vec![(1, 1.0)],
            split: [20.0, 70.0, 10.0],
            seed: 0,
            max_jobs: None,
        }
    }
}

/// Lazy generator of a synthetic workload.
pub struct Synthetic<'a> {
    spec: SyntheticSpec,
    profiles: &'a ProfileSet,
    share: (f64, f64),
    semantics: Semantics,
    picker: ModelPicker,
    rng: ChaCha8Rng,
    next_id: u64,
    t: f64,
}

impl<'a> Synthetic<'a> {
    pub fn new(
        spec: &SyntheticSpec,
        profiles: &'a ProfileSet,
        share: (f64, f64),
        cluster_gpus: u32,
        semantics: Semantics,
    ) -> Result<Self, ReplayError> {
        bounds::in_range(
            "--jobs-per-hour",
            spec.jobs_per_hour,
            MIN_JOBS_PER_HOUR,
            MAX_JOBS_PER_HOUR,
        )
        .map_err(ReplayError::Options)?;
        if spec
            .max_jobs
            .is_some_and(|n| n > bounds::MAX_SYNTHETIC_JOBS)
        {
            return Err(ReplayError::Options(format!(
                "a synthetic workload of more than {} jobs (--jobs, or a window's end) is too \
                 large to replay",
                bounds::MAX_SYNTHETIC_JOBS
            )));
        }
        let total: f64 = spec.gpu_demand.iter().map(|x| x.1).sum();
        if spec
            .gpu_demand
            .iter()
            .any(|(g, w)| *g == 0 || !(w.is_finite() && *w >= 0.0))
            || !(total.is_finite() && total > 0.0)
        {
            return Err(ReplayError::Options(format!(
                "GPU demand distribution {:?} needs GPUs >= 1 and finite weights with a \
                 positive sum",
                spec.gpu_demand
            )));
        }
        if let Some((g, _)) = spec
            .gpu_demand
            .iter()
            .find(|(g, w)| *g > cluster_gpus && *w > 0.0)
        {
            return Err(ReplayError::Options(format!(
                "GPU demand distribution has {g}-GPU jobs but the cluster has \
                 {cluster_gpus} GPUs in all"
            )));
        }
        Ok(Synthetic {
            picker: ModelPicker::new(profiles, spec.split)?,
            spec: spec.clone(),
            profiles,
            share,
            semantics,
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            next_id: 0,
            t: 0.0,
        })
    }
}

impl Iterator for Synthetic<'_> {
    type Item = JobSpec;

    fn next(&mut self) -> Option<JobSpec> {
        if self.spec.max_jobs.is_some_and(|m| self.next_id >= m) {
            return None;
        }
        let rng = &mut self.rng;
        if self.next_id > 0 {
            self.t += -(3600.0 / self.spec.jobs_per_hour) * (1.0 - unit(rng)).ln();
        }
        let minutes = self.spec.duration.sample_minutes(rng);
        let total: f64 = self.spec.gpu_demand.iter().map(|x| x.1).sum();
        let mut u = unit(rng) * total;
        // Rounding may leave `u` past every weight: fall back on the last entry that has one
        // (never a zero-weight entry, which may be wider than every server).
        let mut gpus = self
            .spec
            .gpu_demand
            .iter()
            .rev()
            .find(|x| x.1 > 0.0)
            .map_or(1, |x| x.0);
        for &(g, w) in &self.spec.gpu_demand {
            if u < w {
                gpus = g;
                break;
            }
            u -= w;
        }
        let profile = self.picker.pick(rng);
        let work = work_for_duration(
            self.profiles,
            profile,
            gpus,
            minutes * 60.0,
            self.share,
            self.semantics,
        );
        let job = JobSpec {
            id: self.next_id,
            model: self.profiles.get(profile).model.clone(),
            arrival_s: self.t,
            gpus,
            work_samples: work,
            cpu_request: None,
            mem_request_gb: None,
        };
        self.next_id += 1;
        Some(job)
    }
}
