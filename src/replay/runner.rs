//! The steps of a replay after its [`Scenario`]: run each scheme (a policy and a mechanism, the
//! built-ins or a front end's own) on it, collect the results, write the files. The CLI and
//! the Python package call the same steps.

use super::engine::{self, EngineConfig, simulate, simulate_into};
use super::job::JobSpec;
use super::mechanism::{self, Mechanism};
use super::metrics;
use super::policy::{self, Policy};
use super::scenario::{Loaded, Scenario, with_origins};
use super::workload::{self, synthetic::Synthetic};
use super::{ReplayError, ReplayObserver, ReplayOptions, ReplaySummary, RunResult, plot, tables};

/// A policy and the mechanism that places what it orders.
pub type Scheme = (Box<dyn Policy>, Box<dyn Mechanism>);

/// The built-in schemes named `(policy, mechanism)`.
pub fn schemes_by_name(names: &[(String, String)]) -> Result<Vec<Scheme>, ReplayError> {
    if names.is_empty() {
        return Err(ReplayError::Options(
            "no policy/mechanism pair to run".into(),
        ));
    }
    names
        .iter()
        .map(|(p, m)| {
            let policy = policy::by_name(p).ok_or_else(|| {
                ReplayError::Options(format!("unknown policy {p:?}; known: {}", policy::names()))
            })?;
            let mech = mechanism::by_name(m).ok_or_else(|| {
                ReplayError::Options(format!(
                    "unknown mechanism {m:?}; known: {}",
                    mechanism::names()
                ))
            })?;
            Ok((policy, mech))
        })
        .collect()
}

/// The engine's configuration for `scheme` on `scenario` with the options' round, window and
/// limits.
pub fn engine_config<'a>(
    opts: &ReplayOptions,
    scenario: &'a Scenario,
    scheme: &'a Scheme,
    progress: Option<&'a engine::ProgressFn<'a>>,
) -> EngineConfig<'a> {
    EngineConfig {
        cluster: &scenario.cluster,
        profiles: &scenario.profiles,
        policy: scheme.0.as_ref(),
        mechanism: scheme.1.as_ref(),
        semantics: opts.semantics,
        round_s: opts.round_s,
        window: opts.window,
        horizon_s: opts.horizon_s,
        max_rounds: opts.max_rounds,
        first_round_s: opts.first_round_s,
        audit: None,
        progress,
        measured: None,
        fast: true,
    }
}

/// A scheme's result from the engine's output, every job kept (a deploy's, or a replay's
/// that did not stream).
pub fn run_result(
    out: engine::EngineOutput,
    window: Option<(u64, u64)>,
    scheme: &Scheme,
    cluster: &super::cluster::Cluster,
    wall_s: f64,
) -> RunResult {
    let mut tally = metrics::JobTally::new(window);
    let jobs = metrics::job_records(&out);
    for r in &jobs {
        tally.add(r);
    }
    let mut summary = tally.summary(scheme.0.name(), scheme.1.name(), &out.rounds, cluster);
    summary.lp_failures = out.lp_failures;
    summary.wall_s = wall_s;
    RunResult {
        summary,
        jobs,
        rounds: out.rounds,
        finished_jct_s: tally.finished_jcts(),
        streamed: false,
    }
}

/// Runs scheme `k` of the replay on `scenario`. Only scheme 0 records the canonical trace
/// (`opts.record`).
pub fn run_scheme(
    opts: &ReplayOptions,
    scenario: &Scenario,
    k: usize,
    scheme: &Scheme,
    observer: &dyn ReplayObserver,
) -> Result<RunResult, ReplayError> {
    run_scheme_measured(opts, scenario, k, scheme, observer, None)
}

/// [`run_scheme`] with each job progressing at the rate `measured` gives it at its
/// allocation, where it gives one (a replay of a deploy, at the rates its jobs ran at).
pub fn run_scheme_measured(
    opts: &ReplayOptions,
    scenario: &Scenario,
    k: usize,
    scheme: &Scheme,
    observer: &dyn ReplayObserver,
    measured: Option<&dyn engine::MeasuredRates>,
) -> Result<RunResult, ReplayError> {
    let (policy, mech) = scheme;
    let (cluster, profiles) = (&scenario.cluster, &scenario.profiles);
    observer.scheme_started(
        k,
        &format!("{}+{}", policy.name(), mech.name()),
        scenario.total_jobs,
    );
    let progress = |finished: u64| observer.jobs_finished(k, finished);
    let mut cfg = engine_config(opts, scenario, scheme, Some(&progress));
    cfg.measured = measured;
    let mut recorder = match (&opts.record, k) {
        (Some(p), 0) => Some(workload::canonical::Recorder::create(p)?),
        _ => None,
    };
    let mut writer = match (&opts.out_dir, opts.stream) {
        (Some(dir), true) => Some(tables::JobTableWriter::create(
            dir,
            &format!("{}-{}.jobs", policy.name(), mech.name()),
        )?),
        (None, true) => {
            return Err(ReplayError::Options(
                "--stream writes each job's row to the output directory: give --out DIR".into(),
            ));
        }
        _ => None,
    };
    let started = std::time::Instant::now();
    let mut tally = metrics::JobTally::new(opts.window);
    let mut sink = |job: engine::JobState| -> Result<(), ReplayError> {
        let record = metrics::job_record(&job);
        tally.add(&record);
        match &mut writer {
            Some(w) => w.push(record),
            None => Ok(()),
        }
    };
    let mut simulate_with = |arrivals: &mut dyn Iterator<Item = JobSpec>| {
        if opts.stream {
            simulate_into(&cfg, arrivals, recorder.as_mut(), &mut sink)
        } else {
            simulate(&cfg, arrivals, recorder.as_mut())
        }
    };
    let out = match &scenario.loaded {
        Loaded::Jobs(jobs) => simulate_with(&mut jobs.iter().cloned())
            .map_err(|e| with_origins(e, &scenario.origins))?,
        Loaded::Synthetic(s) => {
            let mut generator = Synthetic::new(
                s,
                profiles,
                cluster.reference_share(),
                cluster.total_gpus,
                opts.semantics,
            )?;
            simulate_with(&mut generator)?
        }
    };
    let wall_s = started.elapsed().as_secs_f64();
    observer.scheme_done(k);
    if let Some(r) = recorder {
        r.finish()?;
    }
    // What the sink did not take: every job, or those still active at the end.
    let jobs = metrics::job_records(&out);
    for r in &jobs {
        tally.add(r);
    }
    let (jobs, streamed) = match writer {
        Some(mut w) => {
            for r in jobs {
                w.push(r)?;
            }
            w.finish()?;
            (Vec::new(), true)
        }
        None => (jobs, false),
    };
    let mut summary = tally.summary(policy.name(), mech.name(), &out.rounds, cluster);
    summary.lp_failures = out.lp_failures;
    summary.wall_s = wall_s;
    Ok(RunResult {
        summary,
        jobs,
        rounds: out.rounds,
        finished_jct_s: tally.finished_jcts(),
        streamed,
    })
}

/// Runs every scheme on the identical scenario (in parallel when several), then writes the
/// tables and plots to `opts.out_dir` where given: only once every scheme finished, so no
/// table of a failed replay is left looking complete.
pub fn run_schemes(
    opts: &ReplayOptions,
    scenario: &Scenario,
    schemes: &[Scheme],
    observer: &dyn ReplayObserver,
) -> Result<ReplaySummary, ReplayError> {
    if schemes.is_empty() {
        return Err(ReplayError::Options(
            "no policy/mechanism pair to run".into(),
        ));
    }
    let run_one = |k: usize| run_scheme(opts, scenario, k, &schemes[k], observer);
    let runs: Vec<RunResult> = if schemes.len() == 1 {
        vec![run_one(0)?]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..schemes.len())
                .map(|k| s.spawn(move || run_one(k)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ReplayError::Internal("a replay thread panicked".into()))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })?
    };
    let cluster = &scenario.cluster;
    let mean_jct = |o: &ReplayOptions, s: &Scenario, k: usize| {
        Ok(run_scheme(o, s, k, &schemes[k], &super::Unobserved)?
            .summary
            .mean_jct_s)
    };
    let verdicts = super::verdict::verdicts(opts, scenario, &runs, &mean_jct)?;
    let summary = ReplaySummary {
        cluster: scenario.cluster.describe(),
        profiles: scenario.profiles.origin.clone(),
        workload: scenario.workload_name.clone(),
        semantics: opts.semantics,
        skipped_wide_jobs: scenario.skipped_wide_jobs,
        totals: (cluster.total_gpus, cluster.total_cpus, cluster.total_mem_gb),
        runs,
        verdicts,
    };
    if let Some(dir) = &opts.out_dir {
        write_outputs(&summary, dir)?;
    }
    Ok(summary)
}

/// The per-job, per-round and summary tables (CSV and Parquet) and the plots, in `dir`.
pub fn write_outputs(summary: &ReplaySummary, dir: &std::path::Path) -> Result<(), ReplayError> {
    tables::write_tables(&summary.runs, dir)?;
    plot::write_plots(summary, dir)?;
    Ok(())
}
