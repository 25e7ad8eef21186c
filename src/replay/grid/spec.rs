//! The grid file (`GRID.toml`): axes whose product is the set of scenarios, and the settings
//! every scenario shares. Parsed with serde + toml; every error names the file and the line of
//! the offending value.
//!
//! ```toml
//! clusters = ["synergy-4"]                 # built-in names or cluster TOML files
//! loads = [4, 8, 12]                       # synthetic arrivals, jobs/hour
//! traces = ["../traces/synergy/deploy_dynamic_100job.csv"]   # and/or trace files
//! splits = [[20, 70, 10]]                  # image, language, speech
//! seeds = [0, 1, 2]
//! schemes = ["srtf+proportional", "srtf+tune"]
//!
//! [settings]                               # shared by every scenario (all optional)
//! jobs = 300                               # synthetic jobs per scenario
//! window = "100..199"
//! round_s = 300
//! ```
//!
//! Relative paths (cluster files, traces, profiles) are relative to the grid file's directory,
//! so a grid means the same from any working directory (Slurm tasks start elsewhere).

use super::super::bounds;
use super::super::cluster::ClusterSpec;
use super::super::error::ReplayError;
use super::super::input::{TraceFormat, detect, parse_window};
use super::super::profile::Semantics;
use super::super::workload::WideJobs;
use super::super::workload::synthetic::{DurationDist, parse_gpu_demand};
use super::super::{WorkloadSpec, mechanism, policy};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Most scenarios a grid may expand to: far more than a sweep needs, few enough that the
/// expansion and the summary table stay small (a few hundred bytes per scenario).
pub const MAX_SCENARIOS: u64 = 100_000;
/// Largest grid file, bytes.
pub const MAX_GRID_BYTES: usize = 1 << 20;

type List<T> = Spanned<Vec<Spanned<T>>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrid {
    #[serde(default)]
    clusters: Option<List<String>>,
    #[serde(default)]
    loads: Option<List<f64>>,
    #[serde(default)]
    traces: Option<List<String>>,
    #[serde(default)]
    splits: Option<List<[f64; 3]>>,
    #[serde(default)]
    seeds: Option<List<u64>>,
    schemes: List<String>,
    #[serde(default)]
    settings: RawSettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    jobs: Option<Spanned<u64>>,
    window: Option<Spanned<String>>,
    round_s: Option<Spanned<f64>>,
    first_round_s: Option<Spanned<f64>>,
    duration: Option<Spanned<String>>,
    gpu_demand: Option<Spanned<String>>,
    semantics: Option<Spanned<String>>,
    horizon: Option<Spanned<String>>,
    profiles: Option<Spanned<String>>,
    wide_jobs: Option<Spanned<String>>,
}

/// A cluster of the grid: as written (its label in ids and tables) and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterAxis {
    pub label: String,
    pub spec: ClusterSpec,
}

/// A workload of the grid: a synthetic arrival rate or a trace file.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadAxis {
    /// Synthetic Poisson arrivals, jobs per hour.
    Load(f64),
    /// A trace: as written in the grid (its label), and resolved with its detected format.
    Trace { label: String, spec: WorkloadSpec },
}

/// Settings every scenario shares.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub jobs: Option<u64>,
    pub window: Option<(u64, u64)>,
    pub round_s: f64,
    pub first_round_s: Option<f64>,
    pub duration: DurationDist,
    pub gpu_demand: Vec<(u32, f64)>,
    pub semantics: Semantics,
    pub horizon_s: f64,
    pub profiles: Option<PathBuf>,
    pub wide_jobs: WideJobs,
}

/// A validated grid.
#[derive(Debug, Clone, PartialEq)]
pub struct GridSpec {
    pub path: PathBuf,
    pub clusters: Vec<ClusterAxis>,
    pub workloads: Vec<WorkloadAxis>,
    pub splits: Vec<[f64; 3]>,
    pub seeds: Vec<u64>,
    /// (policy, mechanism)
    pub schemes: Vec<(String, String)>,
    pub settings: Settings,
}

impl GridSpec {
    /// Scenarios in the grid (the product of the axes' lengths).
    pub fn len(&self) -> usize {
        self.clusters.len()
            * self.workloads.len()
            * self.splits.len()
            * self.seeds.len()
            * self.schemes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads and parses a grid file (bounded read: a grid is a few lines).
    pub fn load(path: &Path) -> Result<GridSpec, ReplayError> {
        let file = std::fs::File::open(path).map_err(ReplayError::io(path))?;
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(file, MAX_GRID_BYTES as u64 + 1),
            &mut text,
        )
        .map_err(ReplayError::io(path))?;
        if text.len() > MAX_GRID_BYTES {
            return Err(ReplayError::parse(
                path,
                1,
                format!("larger than {MAX_GRID_BYTES} bytes: not a grid file"),
            ));
        }
        Self::parse(&text, path)
    }

    /// Parses and validates a grid; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<GridSpec, ReplayError> {
        let line_of = |byte: usize| bounds::line_at(text, byte);
        let at = |span: std::ops::Range<usize>, m: String| {
            ReplayError::parse(path, line_of(span.start), m)
        };
        let raw: RawGrid = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(s.start));
            ReplayError::parse(path, line, e.message().trim_end().to_owned())
        })?;
        let base = path.parent().unwrap_or(Path::new("")).to_owned();
        let relative = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_owned()
            } else {
                base.join(p)
            }
        };
        let clusters = cluster_axis(&raw, &at, &relative)?;
        let workloads = workload_axis(&raw, &at, &relative)?;
        if workloads.is_empty() {
            return Err(ReplayError::parse(
                path,
                1,
                "no workload: give `loads = [...]` (synthetic jobs/hour) or `traces = [...]`",
            ));
        }
        let splits = split_axis(&raw, &at)?;
        let seeds = axis(raw.seeds.as_ref(), "seeds", Some(0), &at)?
            .into_iter()
            .map(Spanned::into_inner)
            .collect::<Vec<_>>();
        let schemes = scheme_axis(&raw, &at)?;
        let settings = settings(&raw.settings, &at, &relative)?;
        if raw.loads.is_some() && settings.jobs.is_none() && settings.window.is_none() {
            let line = raw.loads.as_ref().map_or(1, |l| line_of(l.span().start));
            return Err(ReplayError::parse(
                path,
                line,
                "synthetic loads need `jobs = N` or `window = \"A..B\"` under [settings] to know when to stop",
            ));
        }
        check_size(
            path,
            &[
                ("clusters", clusters.len()),
                ("workloads", workloads.len()),
                ("splits", splits.len()),
                ("seeds", seeds.len()),
                ("schemes", schemes.len()),
            ],
        )?;
        Ok(GridSpec {
            path: path.to_owned(),
            clusters,
            workloads,
            splits,
            seeds,
            schemes,
            settings,
        })
    }
}

/// Where in the grid file an error is: a span's line.
type At<'a> = dyn Fn(std::ops::Range<usize>, String) -> ReplayError + 'a;

/// An axis: absent -> the default, present -> non-empty and without repeats.
fn axis<T: Clone + PartialEq>(
    list: Option<&List<T>>,
    name: &str,
    default: Option<T>,
    at: &At,
) -> Result<Vec<Spanned<T>>, ReplayError> {
    let Some(list) = list else {
        return Ok(default.map(|d| Spanned::new(0..0, d)).into_iter().collect());
    };
    if list.get_ref().is_empty() {
        return Err(at(
            list.span(),
            format!("`{name}` is empty: give at least one value"),
        ));
    }
    for (i, v) in list.get_ref().iter().enumerate() {
        if list.get_ref()[..i]
            .iter()
            .any(|w| w.get_ref() == v.get_ref())
        {
            return Err(at(v.span(), format!("`{name}` lists this value twice")));
        }
    }
    Ok(list.get_ref().clone())
}

/// The clusters, built-in names or files relative to the grid.
fn cluster_axis(
    raw: &RawGrid,
    at: &At,
    relative: &dyn Fn(&str) -> PathBuf,
) -> Result<Vec<ClusterAxis>, ReplayError> {
    axis(
        raw.clusters.as_ref(),
        "clusters",
        Some("synergy-default".to_owned()),
        at,
    )?
    .into_iter()
    .map(|c| {
        let spec = ClusterSpec::resolve(&builtin_or_relative(c.get_ref(), relative)).map_err(
            |e| match e {
                // An error inside the cluster file names that file's line.
                e @ ReplayError::Parse { .. } => e,
                e => at(c.span(), e.to_string()),
            },
        )?;
        Ok(ClusterAxis {
            label: c.into_inner(),
            spec,
        })
    })
    .collect()
}

/// The workloads: synthetic loads (jobs/hour), then traces (their format detected).
fn workload_axis(
    raw: &RawGrid,
    at: &At,
    relative: &dyn Fn(&str) -> PathBuf,
) -> Result<Vec<WorkloadAxis>, ReplayError> {
    let mut workloads = Vec::new();
    for l in axis(raw.loads.as_ref(), "loads", None, at)? {
        let x = bounds::in_range("load (jobs/hour)", *l.get_ref(), 1e-6, 1e6)
            .map_err(|m| at(l.span(), m))?;
        workloads.push(WorkloadAxis::Load(x));
    }
    for t in axis(raw.traces.as_ref(), "traces", None, at)? {
        let p = relative(t.get_ref());
        if !p.is_file() {
            return Err(at(t.span(), format!("trace {} is not a file", p.display())));
        }
        let spec = match detect(&p).map_err(|e| at(t.span(), e.to_string()))? {
            TraceFormat::Philly => WorkloadSpec::PhillyCsv(p),
            TraceFormat::PhillyJson => WorkloadSpec::PhillyJson(p),
            TraceFormat::Alibaba => WorkloadSpec::Alibaba(p),
            TraceFormat::Canonical => WorkloadSpec::Canonical(p),
            TraceFormat::Synergy | TraceFormat::Auto => WorkloadSpec::SynergyCsv(p),
        };
        workloads.push(WorkloadAxis::Trace {
            label: t.into_inner(),
            spec,
        });
    }
    Ok(workloads)
}

/// The job mixes: weights of image, language and speech jobs.
fn split_axis(raw: &RawGrid, at: &At) -> Result<Vec<[f64; 3]>, ReplayError> {
    axis(raw.splits.as_ref(), "splits", Some([20.0, 70.0, 10.0]), at)?
        .into_iter()
        .map(|s| {
            let v = *s.get_ref();
            if v.iter().any(|x| !x.is_finite() || *x < 0.0 || *x > 1e6)
                || v.iter().sum::<f64>() <= 0.0
            {
                return Err(at(
                    s.span(),
                    format!(
                        "split {v:?}: three weights image, language, speech, each 0..=1e6, not \
                         all 0"
                    ),
                ));
            }
            Ok(v)
        })
        .collect()
}

/// The schemes, POLICY+MECHANISM of known names.
fn scheme_axis(raw: &RawGrid, at: &At) -> Result<Vec<(String, String)>, ReplayError> {
    axis(Some(&raw.schemes), "schemes", None, at)?
        .into_iter()
        .map(|s| {
            let (p, m) = s.get_ref().split_once('+').ok_or_else(|| {
                at(
                    s.span(),
                    format!(
                        "scheme {:?}: expected POLICY+MECHANISM, e.g. srtf+tune",
                        s.get_ref()
                    ),
                )
            })?;
            let (p, m) = (p.trim(), m.trim());
            if policy::by_name(p).is_none() {
                return Err(at(
                    s.span(),
                    format!("unknown policy {p:?}; known: {}", policy::names()),
                ));
            }
            if mechanism::by_name(m).is_none() {
                return Err(at(
                    s.span(),
                    format!("unknown mechanism {m:?}; known: {}", mechanism::names()),
                ));
            }
            Ok((p.to_owned(), m.to_owned()))
        })
        .collect()
}

/// An error where the axes' product is more scenarios than a grid runs.
fn check_size(path: &Path, counts: &[(&str, usize)]) -> Result<(), ReplayError> {
    let total = counts
        .iter()
        .try_fold(1u64, |acc, (_, n)| acc.checked_mul(*n as u64));
    if total.is_some_and(|t| t <= MAX_SCENARIOS) {
        return Ok(());
    }
    let product = counts
        .iter()
        .map(|(what, n)| format!("{n} {what}"))
        .collect::<Vec<_>>()
        .join(" x ");
    Err(ReplayError::parse(
        path,
        1,
        format!(
            "the grid has {} scenarios ({product}); at most {MAX_SCENARIOS} are supported: split \
             it into several grids",
            total.map_or("too many".into(), |t| t.to_string())
        ),
    ))
}

/// A built-in cluster name as is; a file relative to the grid where one exists; otherwise the
/// name as written (so the error quotes it).
fn builtin_or_relative(name: &str, relative: &dyn Fn(&str) -> PathBuf) -> String {
    let file = relative(name);
    if ClusterSpec::builtin(name).is_none() && file.is_file() {
        file.to_string_lossy().into_owned()
    } else {
        name.to_owned()
    }
}

/// The `[settings]` table, each value checked where it is written, defaults for the rest.
fn settings(
    raw: &RawSettings,
    at: &At,
    relative: &dyn Fn(&str) -> PathBuf,
) -> Result<Settings, ReplayError> {
    let d = super::super::ReplayOptions::default();
    let check = |v: &Option<Spanned<f64>>,
                 what: &str,
                 lo: f64,
                 hi: f64|
     -> Result<Option<f64>, ReplayError> {
        v.as_ref()
            .map(|x| bounds::in_range(what, *x.get_ref(), lo, hi).map_err(|m| at(x.span(), m)))
            .transpose()
    };
    let mut s = Settings {
        jobs: None,
        window: None,
        round_s: check(
            &raw.round_s,
            "round_s",
            bounds::MIN_ROUND_S,
            bounds::MAX_ROUND_S,
        )?
        .unwrap_or(d.round_s),
        first_round_s: check(&raw.first_round_s, "first_round_s", 0.0, bounds::MAX_TIME_S)?,
        duration: DurationDist::SYNERGY,
        gpu_demand: vec![(1, 1.0)],
        semantics: d.semantics,
        horizon_s: d.horizon_s,
        profiles: raw.profiles.as_ref().map(|p| relative(p.get_ref())),
        wide_jobs: d.wide_jobs,
    };
    synthetic_settings(raw, at, &mut s)?;
    if let Some(x) = &raw.semantics {
        s.semantics = one_of(
            x,
            "semantics",
            [("exact", Semantics::Exact), ("synergy", Semantics::Synergy)],
            at,
        )?;
    }
    if let Some(x) = &raw.wide_jobs {
        s.wide_jobs = one_of(
            x,
            "wide_jobs",
            [("error", WideJobs::Error), ("skip", WideJobs::Skip)],
            at,
        )?;
    }
    if let Some(x) = &raw.horizon {
        s.horizon_s = horizon_s(x, s.round_s, at)?;
    }
    if let Some(p) = &raw.profiles
        && !relative(p.get_ref()).exists()
    {
        return Err(at(
            p.span(),
            format!("profiles {} do not exist", relative(p.get_ref()).display()),
        ));
    }
    Ok(s)
}

/// What synthetic workloads draw: how many jobs (or which window of them), their durations and
/// their GPU demands, into `s`.
fn synthetic_settings(raw: &RawSettings, at: &At, s: &mut Settings) -> Result<(), ReplayError> {
    if let Some(j) = &raw.jobs {
        let n = *j.get_ref();
        if n == 0 || n > bounds::MAX_SYNTHETIC_JOBS {
            return Err(at(
                j.span(),
                format!("jobs {n} is not in 1..={}", bounds::MAX_SYNTHETIC_JOBS),
            ));
        }
        s.jobs = Some(n);
    }
    let mut window = None;
    if let Some(w) = &raw.window {
        window = Some(parse_window(w.get_ref()).map_err(|e| {
            at(
                w.span(),
                e.to_string().replace("options: --window", "window"),
            )
        })?);
    }
    s.window = window;
    if let Some(x) = &raw.duration {
        s.duration = DurationDist::parse(x.get_ref()).map_err(|m| at(x.span(), m))?;
    }
    if let Some(x) = &raw.gpu_demand {
        s.gpu_demand = parse_gpu_demand(x.get_ref()).map_err(|m| at(x.span(), m))?;
    }
    Ok(())
}

/// The value a setting's word names, of the two it may name.
fn one_of<T: Copy>(
    x: &Spanned<String>,
    what: &str,
    [(a, va), (b, vb)]: [(&str, T); 2],
    at: &At,
) -> Result<T, ReplayError> {
    match x.get_ref().as_str() {
        w if w == a => Ok(va),
        w if w == b => Ok(vb),
        other => Err(at(
            x.span(),
            format!("{what} {other:?}: expected {a:?} or {b:?}"),
        )),
    }
}

/// The horizon, seconds: a duration, at most [`bounds::MAX_HORIZON_ROUNDS`] rounds of
/// `round_s`.
fn horizon_s(x: &Spanned<String>, round_s: f64, at: &At) -> Result<f64, ReplayError> {
    let horizon_s =
        bounds::parse_duration_s(x.get_ref()).map_err(|m| at(x.span(), format!("horizon: {m}")))?;
    if horizon_s / round_s > bounds::MAX_HORIZON_ROUNDS {
        return Err(at(
            x.span(),
            format!(
                "horizon is more than {} rounds of {} s",
                bounds::MAX_HORIZON_ROUNDS,
                round_s
            ),
        ));
    }
    Ok(horizon_s)
}
