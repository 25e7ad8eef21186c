//! Workloads: a synthetic generator and trace adapters. Every adapter streams its input line by
//! line (or element by element), validates each job (known model, fits on a server) and names
//! the line of any error. Jobs come out sorted by arrival (stable).

pub mod alibaba;
pub mod canonical;
pub mod philly;
pub mod synergy_csv;
pub mod synthetic;

use super::bounds;
use super::error::ReplayError;
use super::job::JobSpec;
use super::profile::{JobClass, ProfileSet};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// What to do with a job wider than the whole cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WideJobs {
    /// Stop with an error naming the job.
    #[default]
    Error,
    /// Leave the job out (counted in the summary).
    Skip,
}

/// Checks jobs against the profiles, the cluster and the replay's bounds while an adapter reads
/// them, and remembers the line each job came from (for duplicate ids and later errors).
pub struct Binder<'a> {
    pub profiles: &'a ProfileSet,
    /// GPUs of the whole cluster (a job may span servers, not clusters).
    pub max_gpus: u32,
    pub path: PathBuf,
    pub wide: WideJobs,
    pub skipped_wide: u64,
    /// Job id -> line of the trace it came from.
    pub origins: HashMap<u64, usize>,
}

impl<'a> Binder<'a> {
    pub fn new(profiles: &'a ProfileSet, max_gpus: u32, path: PathBuf, wide: WideJobs) -> Self {
        Binder {
            profiles,
            max_gpus,
            path,
            wide,
            skipped_wide: 0,
            origins: HashMap::new(),
        }
    }

    fn bad(&self, line: usize, job: &JobSpec, message: String) -> ReplayError {
        ReplayError::parse(&self.path, line, format!("job {}: {message}", job.id))
    }

    /// Work in samples, checked: finite, positive, at most [`bounds::MAX_WORK_SAMPLES`].
    pub fn work(&self, line: usize, job: &JobSpec, work: f64) -> Result<f64, ReplayError> {
        bounds::positive("work (samples)", work, bounds::MAX_WORK_SAMPLES)
            .map_err(|e| self.bad(line, job, e))
    }

    /// `Ok(false)`: skip this job (too wide, `--wide-jobs skip`).
    pub fn check(&mut self, line: usize, job: &JobSpec) -> Result<bool, ReplayError> {
        if let Some(&first_line) = self.origins.get(&job.id) {
            return Err(ReplayError::DuplicateJob {
                path: self.path.clone(),
                line,
                first_line,
                job_id: job.id,
            });
        }
        self.origins.insert(job.id, line);
        if self.profiles.lookup(&job.model).is_none() {
            return Err(ReplayError::UnknownModel {
                path: self.path.clone(),
                line,
                job_id: job.id,
                model: job.model.clone(),
                known: self.profiles.known(),
            });
        }
        if job.gpus == 0 {
            return Err(self.bad(line, job, "0 GPUs".into()));
        }
        bounds::in_range("arrival (s)", job.arrival_s, 0.0, bounds::MAX_TIME_S)
            .map_err(|e| self.bad(line, job, e))?;
        self.work(line, job, job.work_samples)?;
        for (what, v) in [
            ("CPU request", job.cpu_request),
            ("memory request (GB)", job.mem_request_gb),
        ] {
            if let Some(v) = v {
                bounds::in_range(what, v, 0.0, bounds::MAX_REQUEST)
                    .map_err(|e| self.bad(line, job, e))?;
            }
        }
        if job.gpus > self.max_gpus {
            return match self.wide {
                WideJobs::Error => Err(ReplayError::WideJob {
                    path: self.path.clone(),
                    line,
                    job_id: job.id,
                    gpus: job.gpus,
                    max_gpus: self.max_gpus,
                }),
                WideJobs::Skip => {
                    self.skipped_wide += 1;
                    Ok(false)
                }
            };
        }
        Ok(true)
    }
}

/// Reads `path` line by line, calling `f(line_number, line)` for each non-empty line. Lines
/// longer than [`bounds::MAX_LINE_BYTES`] and lines that are not UTF-8 are errors.
pub fn for_each_line(
    path: &Path,
    mut f: impl FnMut(usize, &str) -> Result<(), ReplayError>,
) -> Result<(), ReplayError> {
    let file = std::fs::File::open(path).map_err(ReplayError::io(path))?;
    let mut reader = std::io::BufReader::new(file);
    let mut buf = String::new();
    let mut n = 0;
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(bounds::MAX_LINE_BYTES as u64 + 1)
            .read_line(&mut buf)
            .map_err(|e| ReplayError::parse(path, n + 1, format!("cannot read the line: {e}")))?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        if read > bounds::MAX_LINE_BYTES {
            return Err(ReplayError::parse(
                path,
                n,
                format!("line longer than {} bytes", bounds::MAX_LINE_BYTES),
            ));
        }
        let line = buf.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        f(n, line)?;
    }
}

/// Checks a CSV row has exactly `want` columns; the error names the file and line.
pub fn columns(path: &Path, n: usize, f: &[&str], want: usize) -> Result<(), ReplayError> {
    if f.len() != want {
        return Err(ReplayError::parse(
            path,
            n,
            format!("expected {want} columns, found {}", f.len()),
        ));
    }
    Ok(())
}

/// Parses a field, naming it and the line on failure.
pub fn field<T: std::str::FromStr>(
    path: &Path,
    line: usize,
    fields: &[&str],
    i: usize,
    name: &str,
) -> Result<T, ReplayError> {
    let s = fields
        .get(i)
        .ok_or_else(|| {
            ReplayError::parse(path, line, format!("missing column {} ({name})", i + 1))
        })?
        .trim();
    s.parse::<T>()
        .map_err(|_| ReplayError::parse(path, line, format!("{name} {s:?} is not valid")))
}

/// Uniform in [0, 1).
pub fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Picks a model per job so the running class counts track the target split exactly (the class
/// furthest below its share goes next), and a model uniformly within the class.
#[derive(Debug, Clone)]
pub struct ModelPicker {
    split: [f64; 3],
    counts: [u64; 3],
    by_class: [Vec<usize>; 3],
}

impl ModelPicker {
    pub fn new(profiles: &ProfileSet, split: [f64; 3]) -> Result<ModelPicker, ReplayError> {
        let total: f64 = split.iter().sum();
        if !total.is_finite() || total <= 0.0 || split.iter().any(|s| !(s.is_finite() && *s >= 0.0))
        {
            return Err(ReplayError::Options(format!(
                "class split {split:?} must be non-negative with a positive sum"
            )));
        }
        let mut by_class: [Vec<usize>; 3] = Default::default();
        for (i, p) in profiles.profiles.iter().enumerate() {
            if let Some(c) = p.class {
                by_class[c as usize].push(i);
            }
        }
        for (k, c) in JobClass::ALL.iter().enumerate() {
            if split[k] > 0.0 && by_class[k].is_empty() {
                return Err(ReplayError::Options(format!(
                    "class split asks for {} jobs but no profile of that class is loaded \
                     ({}); known models: {}",
                    c.as_str(),
                    profiles.origin,
                    profiles.known()
                )));
            }
        }
        Ok(ModelPicker {
            split: split.map(|s| s / total),
            counts: [0; 3],
            by_class,
        })
    }

    /// Profile index for the next job.
    pub fn pick(&mut self, rng: &mut ChaCha8Rng) -> usize {
        let n = self.counts.iter().sum::<u64>() as f64 + 1.0;
        let mut best = 0;
        let mut best_deficit = f64::NEG_INFINITY;
        for k in 0..3 {
            if self.split[k] <= 0.0 {
                continue;
            }
            let deficit = self.split[k] * n - self.counts[k] as f64;
            if deficit > best_deficit + 1e-12 {
                best = k;
                best_deficit = deficit;
            }
        }
        self.counts[best] += 1;
        let models = &self.by_class[best];
        models[(rng.next_u64() % models.len() as u64) as usize]
    }
}

/// Samples of work that take `duration_s` at the proportional share of the reference server.
pub fn work_for_duration(
    profiles: &ProfileSet,
    profile: usize,
    gpus: u32,
    duration_s: f64,
    share: (f64, f64),
    sem: super::profile::Semantics,
) -> f64 {
    let g = gpus as f64;
    duration_s
        * profiles
            .get(profile)
            .rate(gpus, share.0 * g, share.1 * g, sem)
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Seconds since the epoch of `YYYY-MM-DD HH:MM:SS` (UTC), `None` when malformed.
pub fn parse_datetime(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, mo, da) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|x| x.parse::<f64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next().flatten().unwrap_or(0.0));
    // Bounded so the arithmetic below cannot overflow.
    if !(1..=9999).contains(&y)
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&da)
        || !(0.0..24.0).contains(&h)
        || !(0.0..60.0).contains(&mi)
        || !(0.0..61.0).contains(&se)
    {
        return None;
    }
    Some(days_from_civil(y, mo, da) * 86400 + (h * 3600.0 + mi * 60.0 + se) as i64)
}

/// Sorts by arrival (stable, so equal arrivals keep trace order). Duplicate ids were rejected
/// by [`Binder::check`], with their lines.
pub fn finish(mut jobs: Vec<JobSpec>, _path: &Path) -> Result<Vec<JobSpec>, ReplayError> {
    jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
    Ok(jobs)
}

/// Gives model-less trace jobs (Philly, Alibaba) a model keeping the class split, and turns
/// their recorded duration into work at the proportional share of the reference server.
pub struct Assigner<'a> {
    pub profiles: &'a ProfileSet,
    pub picker: ModelPicker,
    pub rng: ChaCha8Rng,
    pub share: (f64, f64),
    pub semantics: super::profile::Semantics,
}

impl<'a> Assigner<'a> {
    pub fn new(
        profiles: &'a ProfileSet,
        split: [f64; 3],
        seed: u64,
        share: (f64, f64),
        semantics: super::profile::Semantics,
    ) -> Result<Self, ReplayError> {
        use rand_core::SeedableRng;
        Ok(Assigner {
            profiles,
            picker: ModelPicker::new(profiles, split)?,
            rng: ChaCha8Rng::seed_from_u64(seed),
            share,
            semantics,
        })
    }

    /// (model, work in samples) for a job of `gpus` GPUs that ran `duration_s`.
    pub fn assign(&mut self, gpus: u32, duration_s: f64) -> (String, f64) {
        let p = self.picker.pick(&mut self.rng);
        let work = work_for_duration(
            self.profiles,
            p,
            gpus,
            duration_s,
            self.share,
            self.semantics,
        );
        (self.profiles.get(p).model.clone(), work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime() {
        assert_eq!(parse_datetime("1970-01-01 00:00:00"), Some(0));
        assert_eq!(parse_datetime("2017-10-09 07:01:55"), Some(1507532515));
        assert_eq!(parse_datetime("None"), None);
        // Out-of-range fields used to overflow the day arithmetic (a panic in debug builds).
        for bad in [
            "9223372036854775807-01-01 00:00:00",
            "2017-10-09 1e300:00:00",
            "2017-10-09 00:00:nan",
            "-5-01-01 00:00:00",
            "2017-10-09 24:00:00",
        ] {
            assert_eq!(parse_datetime(bad), None, "{bad}");
        }
    }
}
