//! Elastic experiments: several policies x several seeds on the same jobs and cluster, in
//! parallel; the table of results (mean over seeds with their spread), per-job and summary
//! CSVs and a JCT CDF plot.

use super::super::cluster::ClusterSpec;
use super::super::error::ReplayError;
use super::engine::{ElasticOutcome, ElasticReplay, ElasticSummary, EngineConfig};
use super::job::ElasticJobSpec;
use super::model::AppModels;
use super::policy;
use crate::plot::{Chart, Scale, thin};
use crate::stats::mean_sd;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Seeds per policy by default: the ONES scenario's results are means over at least 5.
pub const DEFAULT_SEEDS: u64 = 5;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticOptions {
    pub cluster: ClusterSpec,
    /// Policy names (from [`policy::ALL`]).
    pub policies: Vec<String>,
    /// Seeds `first_seed .. first_seed + seeds`.
    pub first_seed: u64,
    pub seeds: u64,
    /// The engine's settings; its seed is set per run.
    pub engine: EngineConfig,
    /// Policies each row's mean JCT is compared with (reduction columns).
    pub versus: Vec<String>,
    /// Writes CSVs and a plot here.
    pub out_dir: Option<PathBuf>,
}

/// The outcome of every (policy, seed) run.
#[derive(Debug, Clone)]
pub struct ElasticExperiment {
    pub cluster: String,
    pub workload: String,
    pub policies: Vec<String>,
    pub versus: Vec<String>,
    /// `runs[p][s]`: policy p, seed s.
    pub runs: Vec<Vec<ElasticOutcome>>,
}

/// Checks the policy names, `versus` and the seed count.
pub fn check(opts: &ElasticOptions) -> Result<(), ReplayError> {
    check_with(opts, &policy::by_name)
}

/// [`check`], the names known to `make`.
pub fn check_with(opts: &ElasticOptions, make: &policy::Factory) -> Result<(), ReplayError> {
    if opts.policies.is_empty() {
        return Err(ReplayError::Options("no elastic policy to run".into()));
    }
    for p in opts.policies.iter() {
        if make(p, 0).is_none() {
            return Err(ReplayError::Options(format!(
                "unknown elastic policy {p:?}; known: {}",
                policy::names()
            )));
        }
    }
    for (i, p) in opts.policies.iter().enumerate() {
        if opts.policies[..i].contains(p) {
            return Err(ReplayError::Options(format!(
                "elastic policy {p:?} is listed twice"
            )));
        }
    }
    for v in &opts.versus {
        if !opts.policies.contains(v) {
            return Err(ReplayError::Options(format!(
                "--versus {v:?} is not among the policies run ({})",
                opts.policies.join(", ")
            )));
        }
    }
    if opts.seeds == 0 || opts.seeds > 1000 {
        return Err(ReplayError::Options(format!(
            "--seeds {}: between 1 and 1000 seeds",
            opts.seeds
        )));
    }
    opts.engine.validate()
}

/// Runs every policy with every seed on `jobs` (in parallel, one thread per core) and writes
/// the outputs when asked.
pub fn run(
    opts: &ElasticOptions,
    jobs: &[ElasticJobSpec],
    models: &AppModels,
    workload: &str,
) -> Result<ElasticExperiment, ReplayError> {
    run_with(opts, jobs, models, workload, &policy::by_name)
}

/// [`run`], each policy made by `make` (a front end's own policies beside the built-ins).
pub fn run_with(
    opts: &ElasticOptions,
    jobs: &[ElasticJobSpec],
    models: &AppModels,
    workload: &str,
    make: &policy::Factory,
) -> Result<ElasticExperiment, ReplayError> {
    check_with(opts, make)?;
    if jobs.is_empty() {
        return Err(ReplayError::Options("the workload has no jobs".into()));
    }
    let cluster = opts.cluster.build()?;
    let tasks: Vec<(usize, u64)> = (0..opts.policies.len())
        .flat_map(|p| (0..opts.seeds).map(move |s| (p, s)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tasks.len());
    let run_one = |(p, s): (usize, u64)| -> Result<ElasticOutcome, ReplayError> {
        let seed = opts.first_seed + s;
        let name = &opts.policies[p];
        let policy = make(name, seed)
            .ok_or_else(|| ReplayError::Options(format!("unknown elastic policy {name:?}")))?;
        let config = EngineConfig {
            seed,
            ..opts.engine.clone()
        };
        ElasticReplay::new(jobs.to_vec(), &cluster, models, policy, config)?.finish()
    };
    let mut results: Vec<Option<Result<ElasticOutcome, ReplayError>>> =
        (0..tasks.len()).map(|_| None).collect();
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                sc.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&t) = tasks.get(k) else { break };
                        mine.push((k, run_one(t)));
                    }
                    mine
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(mine) => {
                    for (k, r) in mine {
                        results[k] = Some(r);
                    }
                }
                Err(_) => {
                    results.push(Some(Err(ReplayError::Internal(
                        "an elastic replay thread panicked".into(),
                    ))));
                }
            }
        }
    });
    let mut flat = Vec::with_capacity(tasks.len());
    for r in results {
        flat.push(r.ok_or_else(|| ReplayError::Internal("a run produced nothing".into()))??);
    }
    let mut runs: Vec<Vec<ElasticOutcome>> = vec![Vec::new(); opts.policies.len()];
    for ((p, _), o) in tasks.iter().zip(flat) {
        runs[*p].push(o);
    }
    let exp = ElasticExperiment {
        cluster: cluster.describe(),
        workload: workload.to_owned(),
        policies: opts.policies.clone(),
        versus: opts.versus.clone(),
        runs,
    };
    if let Some(dir) = &opts.out_dir {
        write_outputs(&exp, dir)?;
    }
    Ok(exp)
}

fn per_seed(runs: &[ElasticOutcome], f: fn(&ElasticSummary) -> f64) -> Vec<f64> {
    runs.iter().map(|r| f(&r.summary)).collect()
}

/// Mean-JCT reduction of `a` against `b`, percent, mean and sd over seeds (paired by seed).
pub fn reduction(a: &[ElasticOutcome], b: &[ElasticOutcome]) -> (f64, f64) {
    let r: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| {
            if y.summary.mean_jct_s > 0.0 {
                (1.0 - x.summary.mean_jct_s / y.summary.mean_jct_s) * 100.0
            } else {
                0.0
            }
        })
        .collect();
    mean_sd(&r)
}

/// The results table: per policy, mean over seeds +- sd.
pub fn render(e: &ElasticExperiment) -> String {
    let seeds = e.runs.first().map_or(0, |r| r.len());
    let jobs = e
        .runs
        .first()
        .and_then(|r| r.first())
        .map_or(0, |r| r.summary.jobs);
    let mut s = String::new();
    let _ = writeln!(s, "cluster:  {}", e.cluster);
    let _ = writeln!(s, "workload: {} ({jobs} jobs)", e.workload);
    let _ = writeln!(
        s,
        "seeds:    {seeds} (figures are means over seeds +- their standard deviation; JCT in minutes)"
    );
    let w = e
        .policies
        .iter()
        .map(|p| p.len())
        .max()
        .unwrap_or(0)
        .max(10);
    let mut header = format!(
        "{:<w$} {:>16} {:>16} {:>14} {:>16} {:>9} {:>7} {:>10}",
        "policy",
        "mean JCT",
        "p99 JCT",
        "median JCT",
        "makespan",
        "restarts",
        "GPU use",
        "decide ms"
    );
    for v in &e.versus {
        let _ = write!(header, " {:>16}", format!("vs {v}"));
    }
    let _ = writeln!(s, "{header}");
    let pm = |xs: Vec<f64>, scale: f64| {
        let (m, sd) = mean_sd(&xs);
        format!("{:.1} +- {:.1}", m / scale, sd / scale)
    };
    for (name, runs) in e.policies.iter().zip(&e.runs) {
        let mut line = format!(
            "{:<w$} {:>16} {:>16} {:>14} {:>16} {:>9.2} {:>6.0}% {:>10.2}",
            name,
            pm(per_seed(runs, |x| x.mean_jct_s), 60.0),
            pm(per_seed(runs, |x| x.p99_jct_s), 60.0),
            format!(
                "{:.1}",
                mean_sd(&per_seed(runs, |x| x.median_jct_s)).0 / 60.0
            ),
            pm(per_seed(runs, |x| x.makespan_s), 60.0),
            mean_sd(&per_seed(runs, |x| x.restarts_per_job)).0,
            mean_sd(&per_seed(runs, |x| x.gpu_utilization)).0 * 100.0,
            mean_sd(&per_seed(runs, |x| x.decision_mean_s)).0 * 1e3,
        );
        for v in &e.versus {
            let k = e.policies.iter().position(|p| p == v).unwrap_or(0);
            let cell = if v == name {
                "-".to_owned()
            } else {
                let (m, sd) = reduction(runs, &e.runs[k]);
                format!("{m:+.1}% +- {sd:.1}")
            };
            let _ = write!(line, " {cell:>16}");
        }
        let _ = writeln!(s, "{line}");
    }
    if !e.versus.is_empty() {
        let _ = writeln!(
            s,
            "vs X: mean-JCT reduction against X, paired by seed (positive: lower JCT than X)"
        );
    }
    s
}

fn write_file(path: &Path, text: &str) -> Result<(), ReplayError> {
    std::fs::write(path, text).map_err(ReplayError::io(path))
}

/// Writes `<policy>.seed<N>.jobs.csv` per run, `summary.csv` (one row per run),
/// `summary_by_policy.csv` (means and sds over seeds) and `jct_cdf.{png,svg}`.
pub fn write_outputs(e: &ElasticExperiment, dir: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
    let mut written = Vec::new();
    let mut summary = String::from(
        "policy,seed,jobs,mean_jct_s,median_jct_s,p99_jct_s,makespan_s,gpu_utilization,restarts_per_job,decisions,decision_mean_s,decision_max_s\n",
    );
    for runs in &e.runs {
        for r in runs {
            let x = &r.summary;
            let _ = writeln!(
                summary,
                "{},{},{},{:.3},{:.3},{:.3},{:.3},{:.6},{:.4},{},{:.6},{:.6}",
                x.policy,
                x.seed,
                x.jobs,
                x.mean_jct_s,
                x.median_jct_s,
                x.p99_jct_s,
                x.makespan_s,
                x.gpu_utilization,
                x.restarts_per_job,
                x.decisions,
                x.decision_mean_s,
                x.decision_max_s
            );
            let mut jobs = String::from(
                "id,name,app,requested_gpus,arrival_s,first_start_s,finish_s,jct_s,run_s,wait_s,gpu_s,reconfigurations,preemptions,noise\n",
            );
            for j in &r.jobs {
                let _ = writeln!(
                    jobs,
                    "{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{:.6}",
                    j.id,
                    j.name,
                    j.app,
                    j.requested_gpus,
                    j.arrival_s,
                    j.first_start_s,
                    j.finish_s,
                    j.jct_s,
                    j.run_s,
                    j.wait_s,
                    j.gpu_s,
                    j.reconfigurations,
                    j.preemptions,
                    j.noise
                );
            }
            let p = dir.join(format!("{}.seed{}.jobs.csv", x.policy, x.seed));
            write_file(&p, &jobs)?;
            written.push(p);
        }
    }
    let p = dir.join("summary.csv");
    write_file(&p, &summary)?;
    written.push(p);
    let mut by = String::from(
        "policy,seeds,mean_jct_s,mean_jct_sd_s,p99_jct_s,p99_jct_sd_s,median_jct_s,makespan_s,makespan_sd_s,restarts_per_job,gpu_utilization\n",
    );
    for (name, runs) in e.policies.iter().zip(&e.runs) {
        let (mj, mjs) = mean_sd(&per_seed(runs, |x| x.mean_jct_s));
        let (pj, pjs) = mean_sd(&per_seed(runs, |x| x.p99_jct_s));
        let (mk, mks) = mean_sd(&per_seed(runs, |x| x.makespan_s));
        let _ = writeln!(
            by,
            "{name},{},{mj:.3},{mjs:.3},{pj:.3},{pjs:.3},{:.3},{mk:.3},{mks:.3},{:.4},{:.6}",
            runs.len(),
            mean_sd(&per_seed(runs, |x| x.median_jct_s)).0,
            mean_sd(&per_seed(runs, |x| x.restarts_per_job)).0,
            mean_sd(&per_seed(runs, |x| x.gpu_utilization)).0,
        );
    }
    let p = dir.join("summary_by_policy.csv");
    write_file(&p, &by)?;
    written.push(p);
    written.extend(jct_cdf(e).save_png_and_svg(dir, "jct_cdf")?);
    Ok(written)
}

/// JCT CDF per policy, every seed's jobs pooled, minutes.
pub fn jct_cdf(e: &ElasticExperiment) -> Chart {
    let mut chart = Chart::new("JCT CDF (all seeds pooled)")
        .subtitle(format!("{}; {}", e.workload, e.cluster))
        .x_label("JCT (minutes, log scale)")
        .y_label("fraction of jobs")
        .y_range(0.0, 1.0)
        .x_scale(Scale::Log);
    // 1-2-5 ticks over the JCTs (the log axis's own ticks crowd above 50).
    let all = e
        .runs
        .iter()
        .flatten()
        .flat_map(|r| r.jobs.iter().map(|j| j.jct_s / 60.0));
    let (lo, hi) = all
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    if lo.is_finite() && hi > 0.0 {
        let ticks: Vec<f64> = (-3..8)
            .flat_map(|k| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k)))
            .filter(|&t| t >= lo / 2.0 && t <= hi * 2.0)
            .collect();
        chart = chart.x_ticks(ticks);
    }
    for (name, runs) in e.policies.iter().zip(&e.runs) {
        let mut v: Vec<f64> = runs
            .iter()
            .flat_map(|r| r.jobs.iter().map(|j| j.jct_s / 60.0))
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mut pts = Vec::with_capacity(2 * v.len());
        for (i, x) in v.iter().enumerate() {
            pts.push((*x, i as f64 / n));
            pts.push((*x, (i + 1) as f64 / n));
        }
        chart = chart.line(name.clone(), thin(pts, 2000));
    }
    chart
}

/// An elastic trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    /// ONES's `trace_1.csv` (`time,model,task,epoch_size,...`).
    Ones,
    /// Pollux's `workload-N.csv` (`name,time,application,num_replicas,batch_size`).
    Pollux,
}

/// `KIND:PATH` of `--elastic-trace`.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticTrace {
    pub kind: TraceKind,
    pub path: PathBuf,
}

impl std::str::FromStr for ElasticTrace {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{s:?}: expected KIND:PATH with KIND ones or pollux, e.g. ones:workloads/traces/ones/trace_1.csv"
            )
        };
        let (k, p) = s.split_once(':').ok_or_else(bad)?;
        let kind = match k {
            "ones" => TraceKind::Ones,
            "pollux" => TraceKind::Pollux,
            _ => return Err(bad()),
        };
        if p.is_empty() {
            return Err(bad());
        }
        Ok(ElasticTrace {
            kind,
            path: PathBuf::from(p),
        })
    }
}

impl TraceKind {
    /// The built-in cluster of the scenario the format comes from.
    pub fn default_cluster(self) -> &'static str {
        match self {
            TraceKind::Ones => "ones-64",
            TraceKind::Pollux => "pollux-64",
        }
    }
}

/// A whole elastic run from the command line: the experiment, the trace and how many of its
/// first jobs to take.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticRun {
    pub options: ElasticOptions,
    pub trace: ElasticTrace,
    pub first: Option<usize>,
    /// Attach the zoo's CPU/memory sensitivity to the applications
    /// ([`super::model::resources::attach_resources`]).
    pub resources: bool,
}

/// Reads an elastic trace with the built-in calibration, and the application models.
pub fn load_trace(trace: &ElasticTrace) -> Result<(Vec<ElasticJobSpec>, AppModels), ReplayError> {
    let cal = super::model::calibration::Calibration::builtin();
    let jobs = match trace.kind {
        TraceKind::Ones => super::workload::ones::read(&trace.path, cal)?,
        TraceKind::Pollux => super::workload::pollux::read(&trace.path, cal)?,
    };
    Ok((jobs, cal.app_models()))
}

/// Loads the trace, keeps its first `run.first` jobs (by arrival) and runs the experiment.
pub fn run_trace(r: &ElasticRun) -> Result<ElasticExperiment, ReplayError> {
    run_trace_with(r, &policy::by_name)
}

/// [`run_trace`], each policy made by `make`.
pub fn run_trace_with(
    r: &ElasticRun,
    make: &policy::Factory,
) -> Result<ElasticExperiment, ReplayError> {
    check_with(&r.options, make)?;
    let (mut jobs, mut models) = load_trace(&r.trace)?;
    if r.resources {
        // Applications with no zoo counterpart keep running unconstrained (docs/REPLAY.md).
        super::model::resources::attach_resources(
            &mut models,
            &super::super::profile::ProfileSet::builtin_zoo(),
        );
    }
    jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    if let Some(n) = r.first {
        jobs.truncate(n);
    }
    let name = match r.first {
        Some(n) => format!("{} (first {n} jobs)", r.trace.path.display()),
        None => r.trace.path.display().to_string(),
    };
    run_with(&r.options, &jobs, &models, &name, make)
}
