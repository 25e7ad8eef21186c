//! The first step of a replay: what every scheme runs on. The cluster, the profiles and the
//! jobs (loaded from a trace, or the synthetic spec that generates them per run), checked
//! against the options once, whichever front end (the CLI, Python) asked.

use super::cluster::Cluster;
use super::job::JobSpec;
use super::profile::ProfileSet;
use super::workload::synthetic::SyntheticSpec;
use super::workload::{self, Assigner, Binder};
use super::{ReplayError, ReplayOptions, WorkloadSpec, check_options};
use std::collections::HashMap;
use std::path::PathBuf;

/// Jobs loaded from a trace, or the synthetic spec to generate them lazily per run.
#[derive(Clone)]
pub(super) enum Loaded {
    Jobs(Vec<JobSpec>),
    Synthetic(SyntheticSpec),
}

/// Where each trace job came from: the trace, and job id -> line.
pub(super) type Origins = Option<(PathBuf, HashMap<u64, usize>)>;

/// A replay's cluster, profiles and workload, ready for any number of schemes.
pub struct Scenario {
    pub cluster: Cluster,
    pub profiles: ProfileSet,
    pub(super) loaded: Loaded,
    /// Trace jobs wider than the cluster that were skipped (`--wide-jobs skip`).
    pub skipped_wide_jobs: u64,
    pub(super) origins: Origins,
    /// The workload in words (a trace's path, or the synthetic spec).
    pub workload_name: String,
    /// Jobs a scheme must finish (the window's, or all), where known.
    pub total_jobs: Option<u64>,
}

impl Scenario {
    /// The jobs of a trace, in arrival order; `None` for a synthetic workload, generated per
    /// run.
    pub fn trace_jobs(&self) -> Option<&[JobSpec]> {
        match &self.loaded {
            Loaded::Jobs(jobs) => Some(jobs),
            Loaded::Synthetic(_) => None,
        }
    }

    /// The same scenario on other profiles of the same models (drawn within their
    /// intervals, [`super::verdict`]).
    pub fn with_profiles(&self, profiles: ProfileSet) -> Scenario {
        Scenario {
            cluster: self.cluster.clone(),
            profiles,
            loaded: self.loaded.clone(),
            skipped_wide_jobs: self.skipped_wide_jobs,
            origins: self.origins.clone(),
            workload_name: self.workload_name.clone(),
            total_jobs: self.total_jobs,
        }
    }

    /// Builds the cluster, loads the profiles and the workload, and checks the options.
    pub fn load(opts: &ReplayOptions) -> Result<Scenario, ReplayError> {
        let cluster = opts.cluster.build()?;
        let mut profiles = match &opts.profiles {
            Some(p) => ProfileSet::load(p)?,
            None => ProfileSet::builtin_zoo(),
        };
        if let Some(penalty) = opts.spread_penalty {
            if !(penalty > 0.0 && penalty <= 1.0) {
                return Err(ReplayError::Options(format!(
                    "--spread-penalty {penalty}: expected a throughput multiplier in (0, 1]"
                )));
            }
            profiles.set_placement_penalty(penalty);
        }
        check_options(opts)?;
        let (mut loaded, skipped_wide_jobs, origins) = load_workload(opts, &cluster, &profiles)?;
        // A synthetic workload with a window and no job count: arrivals go on for as many jobs
        // again as the window holds after it, then stop, so that a policy that starves long
        // jobs under overload (SRTF) still lets the window finish.
        if let (Loaded::Synthetic(s), Some((a, b))) = (&mut loaded, opts.window)
            && s.max_jobs.is_none()
        {
            s.max_jobs = Some(b + 1 + (b - a + 1));
        }
        if let (Loaded::Synthetic(s), None) = (&loaded, opts.window)
            && s.max_jobs.is_none()
        {
            return Err(ReplayError::Options(
                "a synthetic workload needs --jobs N or --window A..B to know when to stop".into(),
            ));
        }
        if let (Loaded::Jobs(jobs), Some((_, b))) = (&loaded, opts.window)
            && !jobs.iter().any(|j| j.id >= b)
        {
            return Err(ReplayError::Options(format!(
                "window ends at job {b} but the trace has no job with that id or a later one"
            )));
        }
        if let (Loaded::Jobs(jobs), Some((a, b))) = (&loaded, opts.window)
            && !jobs.iter().any(|j| (a..=b).contains(&j.id))
        {
            return Err(ReplayError::Options(format!(
                "window {a}..{b} holds no job of the trace, so there would be nothing to measure"
            )));
        }
        let workload_name = match &opts.workload {
            WorkloadSpec::Synthetic(s) => format!(
                "synthetic: {} jobs/h, seed {}, split {:?}, GPUs {:?}",
                s.jobs_per_hour, s.seed, s.split, s.gpu_demand
            ),
            WorkloadSpec::SynergyCsv(p)
            | WorkloadSpec::PhillyCsv(p)
            | WorkloadSpec::PhillyJson(p)
            | WorkloadSpec::Alibaba(p)
            | WorkloadSpec::Canonical(p) => p.display().to_string(),
        };
        let total_jobs = match (&loaded, opts.window) {
            (_, Some((a, b))) => Some(b - a + 1),
            (Loaded::Jobs(jobs), None) => Some(jobs.len() as u64),
            (Loaded::Synthetic(s), None) => s.max_jobs,
        };
        Ok(Scenario {
            cluster,
            profiles,
            loaded,
            skipped_wide_jobs,
            origins,
            workload_name,
            total_jobs,
        })
    }
}

fn load_workload(
    opts: &ReplayOptions,
    cluster: &Cluster,
    profiles: &ProfileSet,
) -> Result<(Loaded, u64, Origins), ReplayError> {
    let path = match &opts.workload {
        WorkloadSpec::Synthetic(s) => return Ok((Loaded::Synthetic(s.clone()), 0, None)),
        WorkloadSpec::SynergyCsv(p)
        | WorkloadSpec::PhillyCsv(p)
        | WorkloadSpec::PhillyJson(p)
        | WorkloadSpec::Alibaba(p)
        | WorkloadSpec::Canonical(p) => p.clone(),
    };
    let mut binder = Binder::new(profiles, cluster.total_gpus, path.clone(), opts.wide_jobs);
    let assigner = || {
        Assigner::new(
            profiles,
            opts.split,
            opts.seed,
            cluster.reference_share(),
            opts.semantics,
        )
    };
    let jobs = match &opts.workload {
        WorkloadSpec::SynergyCsv(_) => workload::synergy_csv::read(&path, &mut binder)?,
        WorkloadSpec::Canonical(_) => workload::canonical::read(&path, &mut binder)?,
        WorkloadSpec::PhillyCsv(_) => {
            workload::philly::read_csv(&path, &mut binder, &mut assigner()?)?
        }
        WorkloadSpec::PhillyJson(_) => {
            workload::philly::read_json(&path, &mut binder, &mut assigner()?)?
        }
        WorkloadSpec::Alibaba(_) => workload::alibaba::read(&path, &mut binder, &mut assigner()?)?,
        WorkloadSpec::Synthetic(_) => unreachable!("handled above"),
    };
    if jobs.is_empty() {
        return Err(ReplayError::parse(
            &path,
            1,
            "the trace has no jobs to replay",
        ));
    }
    let origins = std::mem::take(&mut binder.origins);
    Ok((
        Loaded::Jobs(jobs),
        binder.skipped_wide,
        Some((path, origins)),
    ))
}

/// Names the trace line of each job a horizon error lists.
pub(super) fn with_origins(e: ReplayError, origins: &Origins) -> ReplayError {
    match (e, origins) {
        (
            ReplayError::Horizon {
                horizon_s,
                count,
                mut jobs,
            },
            Some((path, lines)),
        ) => {
            for j in &mut jobs {
                j.origin = lines.get(&j.job_id).map(|&l| (path.clone(), l));
            }
            ReplayError::Horizon {
                horizon_s,
                count,
                jobs,
            }
        }
        (e, _) => e,
    }
}
