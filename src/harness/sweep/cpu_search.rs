//! Adaptive choice of the CPU levels a sweep measures. Instead of a fixed list, a search
//! proposes one level at a time from the levels measured so far, and stops when the throughput
//! curve (piecewise linear through the measured levels) is known well enough.
//!
//! Three rules share the interface ([`CpuSearch::next`]):
//! - the knee search ([`SearchRule::Knee`]) measures both ends of the range, then refines the
//!   intervals whose chord may miss the curve by more than the tolerance;
//! - Synergy's profiler rule ([`SearchRule::Synergy`]), for comparison;
//! - the prediction search ([`SearchRule::Predict`]) measures the highest of its levels, then
//!   the level `profiler predict` reads least surely from the library, until every level left
//!   is predicted within the tolerance (`crate::predict`).
//!
//! The search is a pure function of the points measured so far (it keeps no state), so a
//! resumed sweep continues where it stopped, and it is tested on curves without running
//! anything (`cpu_search/tests.rs`). Semantics: docs/JOB_SPEC.md; figures:
//! docs/findings/cpu-search.md.

/// Which rule chooses the levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchRule {
    /// Find where throughput stops rising: the least CPU reaching (1 - tolerance) of the best,
    /// and a curve within the tolerance of the measured job's.
    Knee,
    /// Synergy's offline profiler: from the maximum, halve while the epoch time changes by less
    /// than the tolerance (10%) from the previous level, else step down by the GPU count.
    Synergy,
    /// Measure until the rest of the levels is predicted within the tolerance.
    Predict,
}

impl SearchRule {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchRule::Knee => "knee",
            SearchRule::Synergy => "synergy",
            SearchRule::Predict => "predict",
        }
    }
}

/// Levels the knee search may propose between the two ends (which are measured as given).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Granularity {
    /// Quarter cores below 2 cores, whole cores from 2 cores up: fine where a quarter core is a
    /// large share of the job's allocation, whole cores where schedulers allocate whole cores.
    Auto,
    /// Multiples of this many cores.
    Every(f64),
}

impl Granularity {
    /// Spacing of the levels near `cpu`.
    pub fn spacing_at(self, cpu: f64) -> f64 {
        match self {
            Granularity::Auto if cpu < 2.0 => 0.25,
            Granularity::Auto => 1.0,
            Granularity::Every(step) => step,
        }
    }

    /// The level nearest `x` strictly between `a` and `b` (at milli-core resolution), if any;
    /// ties go to the higher level.
    fn snap(self, x: f64, a: f64, b: f64) -> Option<f64> {
        let (a, b) = (milli(a), milli(b));
        let candidates = match self {
            Granularity::Every(step) => [snap_every(step, x, a, b), None],
            // Quarter cores below 2 cores, whole cores from 2 up.
            Granularity::Auto => [
                snap_every(0.25, x, a, b.min(2000)),
                snap_every(1.0, x, a.max(1999), b),
            ],
        };
        candidates
            .into_iter()
            .flatten()
            .min_by(|p, q| (p - x).abs().total_cmp(&(q - x).abs()).then(q.total_cmp(p)))
    }
}

/// The multiple of `step` nearest `x` whose milli-cores are strictly between `a` and `b`.
fn snap_every(step: f64, x: f64, a: i64, b: i64) -> Option<f64> {
    let level = |k: f64| k * step;
    // Smallest and largest k with milli(k * step) strictly inside (a, b).
    let mut lo = (a as f64 / 1000.0 / step).floor();
    while milli(level(lo)) <= a {
        lo += 1.0;
    }
    let mut hi = (b as f64 / 1000.0 / step).ceil();
    while milli(level(hi)) >= b {
        hi -= 1.0;
    }
    if lo > hi {
        return None;
    }
    let below = (x / step).floor().clamp(lo, hi);
    let above = (x / step).ceil().clamp(lo, hi);
    let pick = if (level(above) - x).abs() <= (x - level(below)).abs() {
        above
    } else {
        below
    };
    Some(level(pick))
}

/// A CPU level measured so far: cores and samples/s (0 when the job failed or was killed there).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub cpu: f64,
    pub rate: f64,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Measure this level (cores).
    Measure(f64),
    /// The search is over.
    Done,
}

/// A configured search over CPU levels in `[min, max]` (cores).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuSearch {
    pub rule: SearchRule,
    pub min: f64,
    pub max: f64,
    /// Knee: the error allowed between the measured curve and its reconstruction, and what
    /// "stops rising" means, as a fraction of the best throughput. Synergy: the relative
    /// change of epoch time below which the rule halves the level (Synergy: 0.10).
    pub tolerance: f64,
    /// Knee: levels proposed between the ends.
    pub granularity: Granularity,
    /// Knee: at most this many levels (both ends included).
    pub max_points: usize,
    /// Synergy: cores to step down by where the throughput is sensitive (the job's GPU count in
    /// Synergy; one core for a CPU-only job).
    pub step_down: f64,
    /// Predict: the levels of the whole matrix, ascending, and the library read.
    pub levels: Vec<f64>,
    pub library: Option<crate::predict::Library>,
}

/// Defaults of the knee search.
pub const KNEE_TOLERANCE: f64 = 0.05;
pub const KNEE_MAX_POINTS: usize = 12;
/// Synergy's threshold: epoch time within 10% of the previous level's.
pub const SYNERGY_TOLERANCE: f64 = 0.10;

impl CpuSearch {
    /// The knee search with its defaults over `[min, max]`.
    pub fn knee(min: f64, max: f64) -> Self {
        CpuSearch {
            rule: SearchRule::Knee,
            min,
            max,
            tolerance: KNEE_TOLERANCE,
            granularity: Granularity::Auto,
            max_points: KNEE_MAX_POINTS,
            step_down: 1.0,
            levels: Vec::new(),
            library: None,
        }
    }

    /// Synergy's rule over `[min, max]` for a job with `gpus` GPUs (0: CPU-only).
    pub fn synergy(min: f64, max: f64, gpus: u32) -> Self {
        CpuSearch {
            rule: SearchRule::Synergy,
            min,
            max,
            tolerance: SYNERGY_TOLERANCE,
            granularity: Granularity::Auto,
            max_points: usize::MAX,
            step_down: f64::from(gpus.max(1)),
            levels: Vec::new(),
            library: None,
        }
    }

    /// The prediction search over `levels` (cores), leaning on `library`, stopping where every
    /// level left is predicted within `tolerance` (a relative half-width).
    pub fn predict(levels: &[f64], library: crate::predict::Library, tolerance: f64) -> Self {
        let mut levels: Vec<f64> = levels.to_vec();
        levels.sort_by(f64::total_cmp);
        levels.dedup_by(|b, a| milli(*a) == milli(*b));
        CpuSearch {
            rule: SearchRule::Predict,
            min: levels.first().copied().unwrap_or(0.0),
            max: levels.last().copied().unwrap_or(0.0),
            tolerance,
            granularity: Granularity::Auto,
            max_points: levels.len(),
            step_down: 1.0,
            levels,
            library: Some(library),
        }
    }

    /// The next level to measure given the levels measured so far (in any order; levels
    /// outside `[min, max]` are ignored), or [`Next::Done`]. Never a level already measured
    /// (milli-core resolution), never outside `[min, max]`.
    pub fn next(&self, measured: &[Measured]) -> Next {
        let points = self.in_range(measured);
        match self.rule {
            SearchRule::Knee => self.next_knee(&points),
            SearchRule::Synergy => self.next_synergy(&points),
            SearchRule::Predict => self.next_predicted(&points),
        }
    }

    /// An upper bound on the number of levels the search measures.
    pub fn at_most(&self) -> usize {
        if milli(self.min) >= milli(self.max) {
            return 1;
        }
        match self.rule {
            SearchRule::Knee | SearchRule::Predict => self.max_points,
            // Each step goes down by at least min(level / 2, step_down).
            SearchRule::Synergy => {
                let (mut c, mut n) = (self.max, 0);
                while milli(c) >= milli(self.min) {
                    n += 1;
                    c -= (c / 2.0).min(self.step_down);
                }
                n
            }
        }
    }

    /// Measured points inside `[min, max]`, sorted by CPU, one per level (the last measured).
    fn in_range(&self, measured: &[Measured]) -> Vec<Measured> {
        let (lo, hi) = (milli(self.min), milli(self.max));
        let mut points: Vec<Measured> = Vec::new();
        for m in measured {
            let level = milli(m.cpu);
            if level < lo || level > hi {
                continue;
            }
            let rate = if m.rate.is_finite() {
                m.rate.max(0.0)
            } else {
                0.0
            };
            match points.iter_mut().find(|p| milli(p.cpu) == level) {
                Some(p) => p.rate = rate,
                None => points.push(Measured { cpu: m.cpu, rate }),
            }
        }
        points.sort_by(|a, b| a.cpu.total_cmp(&b.cpu));
        points
    }

    fn next_knee(&self, points: &[Measured]) -> Next {
        for end in [self.max, self.min] {
            if !points.iter().any(|p| milli(p.cpu) == milli(end)) {
                return Next::Measure(end);
            }
        }
        if points.len() >= self.max_points {
            return Next::Done;
        }
        let best = points.iter().map(|p| p.rate).fold(0.0, f64::max);
        if best <= 0.0 {
            return Next::Done;
        }
        let allowed = self.tolerance * best;
        // With only the ends known, aim at where a rate proportional to the CPU (the usual
        // input-bound regime below the knee) would reach the best.
        if let [low, high] = points
            && best - low.rate > allowed
            && low.rate > 0.0
        {
            let guess = low.cpu * best / low.rate;
            if let Some(c) = self.granularity.snap(guess, low.cpu, high.cpu) {
                return Next::Measure(c);
            }
        }
        let mut candidates: Vec<(f64, f64, usize)> = Vec::new();
        for i in 0..points.len() - 1 {
            if let Some((priority, target)) = refinement(points, i, allowed) {
                candidates.push((priority, target, i));
            }
        }
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
        candidates
            .into_iter()
            .find_map(|(_, target, i)| {
                self.granularity
                    .snap(target, points[i].cpu, points[i + 1].cpu)
            })
            .map_or(Next::Done, Next::Measure)
    }

    /// The highest level first; then the level predicted least surely from the measured ones,
    /// while one is wider than the tolerance.
    fn next_predicted(&self, points: &[Measured]) -> Next {
        let Some(library) = &self.library else {
            return Next::Done;
        };
        let measured: Vec<(f64, f64)> = points.iter().map(|p| (p.cpu, p.rate)).collect();
        let settings = &crate::predict::SETTINGS;
        crate::predict::next_level(&measured, &self.levels, library, settings, self.tolerance)
            .map_or(Next::Done, Next::Measure)
    }

    /// Synergy's walk, replayed from the top over the levels already measured.
    fn next_synergy(&self, points: &[Measured]) -> Next {
        let rate_at = |c: f64| {
            points
                .iter()
                .find(|p| milli(p.cpu) == milli(c))
                .map(|p| p.rate)
        };
        let mut level = self.max;
        let mut previous: Option<f64> = None;
        loop {
            if milli(level) < milli(self.min) {
                return Next::Done;
            }
            let Some(rate) = rate_at(level) else {
                return Next::Measure(level);
            };
            // Epoch time is 1 / rate: |t_prev - t| / t_prev = |1 - prev / rate|. Synergy counts
            // a missing previous result as within; a failed level here is not.
            let within = match previous {
                None => true,
                Some(p) if p <= 0.0 => true,
                Some(p) => rate > 0.0 && (1.0 - p / rate).abs() < self.tolerance,
            };
            level = if within {
                level / 2.0
            } else {
                level - self.step_down
            };
            previous = Some(rate);
        }
    }
}

/// Whether interval `i` (between `points[i]` and `points[i + 1]`) needs a level inside, and if
/// so its priority (how far the curve may be from the chord, samples/s) and the CPU to aim at.
fn refinement(points: &[Measured], i: usize, allowed: f64) -> Option<(f64, f64)> {
    let (a, b) = (points[i], points[i + 1]);
    let rise = b.rate - a.rate;
    // A non-decreasing curve stays between the two ends' rates: the chord cannot be off by
    // more than the rise.
    if rise <= allowed {
        return None;
    }
    let right_slope = points.get(i + 2).map_or(0.0, |r| slope(b, *r));
    if i > 0
        && let Some((gap, target)) = sandwich(points[i - 1], a, b, right_slope)
    {
        return (gap > allowed).then_some((gap, target));
    }
    // No bound from the neighbours (the lowest interval, or a locally convex stretch): the
    // chord is trusted once a level near the middle of a three-point stretch lies on it.
    let verified = |p: Measured, q: Measured, r: Measured| {
        let t = (q.cpu - p.cpu) / (r.cpu - p.cpu);
        (0.25..=0.75).contains(&t)
            && (q.rate - (p.rate + (r.rate - p.rate) * t)).abs() <= allowed / 2.0
    };
    let left_ok = i > 0 && verified(points[i - 1], a, b);
    let right_ok = points.get(i + 2).is_some_and(|r| verified(a, b, *r));
    if left_ok || right_ok {
        return None;
    }
    Some((rise, (a.cpu + b.cpu) / 2.0))
}

/// For a concave non-decreasing curve through `a` and `b`, with `left` measured before `a` and
/// the curve's slope after `b` at most `right_slope`: the curve lies above the chord and below
/// both the left segment extended to the right and the right segment extended to the left.
/// Returns the largest gap between that envelope and the chord, and where it is (the knee of
/// the envelope), or `None` where the slopes are not those of a concave curve.
fn sandwich(left: Measured, a: Measured, b: Measured, right_slope: f64) -> Option<(f64, f64)> {
    let s = slope(a, b);
    let sl = slope(left, a);
    let sr = right_slope;
    let slack = 1e-9 * (s.abs() + sl.abs() + sr.abs());
    if sl < s - slack || sr > s + slack {
        return None;
    }
    if sl - sr <= slack {
        return Some((0.0, (a.cpu + b.cpu) / 2.0));
    }
    let x = ((b.rate - sr * b.cpu - a.rate + sl * a.cpu) / (sl - sr)).clamp(a.cpu, b.cpu);
    let upper = (a.rate + sl * (x - a.cpu)).min(b.rate - sr * (b.cpu - x));
    Some((upper - (a.rate + s * (x - a.cpu)), x))
}

fn slope(p: Measured, q: Measured) -> f64 {
    (q.rate - p.rate) / (q.cpu - p.cpu)
}

/// CPU levels compare in milli-cores, as matrix cells do.
fn milli(cpu: f64) -> i64 {
    (cpu * 1000.0).round() as i64
}

/// The throughput curve the measured levels describe: piecewise linear through them, constant
/// above the highest, linear to zero at zero cores below the lowest (as the replay reads a
/// matrix).
pub fn reconstruct(measured: &[Measured], cpu: f64) -> f64 {
    let mut points = measured.to_vec();
    points.sort_by(|a, b| a.cpu.total_cmp(&b.cpu));
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return 0.0;
    };
    if cpu <= first.cpu {
        return first.rate * (cpu / first.cpu).max(0.0);
    }
    if cpu >= last.cpu {
        return last.rate;
    }
    let i = points.partition_point(|p| p.cpu <= cpu);
    let (a, b) = (points[i - 1], points[i]);
    a.rate + slope(a, b) * (cpu - a.cpu)
}

/// The knee of the reconstructed curve: the least CPU at which it reaches (1 - tolerance) of
/// the best measured rate (between two measured levels, by linear interpolation).
pub fn knee(measured: &[Measured], tolerance: f64) -> Option<f64> {
    let mut points = measured.to_vec();
    points.sort_by(|a, b| a.cpu.total_cmp(&b.cpu));
    let best = points.iter().map(|p| p.rate).fold(0.0, f64::max);
    if best <= 0.0 {
        return None;
    }
    let threshold = (1.0 - tolerance) * best;
    let i = points.iter().position(|p| p.rate >= threshold)?;
    if i == 0 {
        return Some(points[0].cpu);
    }
    let (a, b) = (points[i - 1], points[i]);
    Some(a.cpu + (threshold - a.rate) / (b.rate - a.rate) * (b.cpu - a.cpu))
}

#[cfg(test)]
mod tests;
