//! The replay of a deploy: its trace replayed with the rates its jobs ran at, each job at each
//! grant ([`Observed`]). It splits the deploy's gap to its replay in two. The engine's part is
//! the deploy against the replay of the deploy: round slips, start-ups, restarts. The
//! matrices' part is the replay of the deploy against the replay on the matrices: the rates.

use super::error::DeployError;
use super::journal::read_journal;
use super::observed::Observed;
use crate::replay::profile::Semantics;
use crate::replay::runner::{Scheme, run_scheme_measured};
use crate::replay::{ReplayOptions, RunResult, Scenario, Unobserved};
use std::path::Path;

/// One scheme's replay of its deploy, and what the journal says beside it.
#[derive(Debug, Clone)]
pub struct SchemeReplay {
    pub run: RunResult,
    /// Rounds a job was started again in for its grant.
    pub restarts: usize,
    /// Jobs that finished in a later round deployed than in the replay of the deploy.
    pub slips: usize,
    /// Per job kind and grant, the rates measured over the matrix's there.
    pub ratios: Vec<KindRatio>,
}

/// A job kind's measured rate over its matrix's, at one grant, over the rounds it ran there.
#[derive(Debug, Clone, PartialEq)]
pub struct KindRatio {
    pub model: String,
    pub cpus: f64,
    pub mem_bytes: u64,
    pub rounds: usize,
    /// Mean of the rounds' ratios, and the half-width of its Student-t 95% interval (0 for
    /// one round).
    pub ratio: f64,
    pub half_width: f64,
}

/// The replay of the deploy of `scheme` (the `k`-th), from its journal in `out_dir`, where
/// `deployed` is the deploy's result for it. `None` where the journal is missing.
pub fn replay_scheme(
    opts: &ReplayOptions,
    scenario: &Scenario,
    k: usize,
    scheme: &Scheme,
    out_dir: &Path,
    deployed: &RunResult,
) -> Result<Option<SchemeReplay>, DeployError> {
    let label = format!("{}-{}", scheme.0.name(), scheme.1.name());
    let path = out_dir.join("journal").join(format!("{label}.jsonl"));
    if !path.is_file() {
        return Ok(None);
    }
    let (_, rounds) = read_journal(&path)?;
    let rounds: Vec<_> = rounds.into_iter().collect();
    let trace = scenario.trace_jobs().unwrap_or_default();
    let observed = Observed::from_rounds(trace, &rounds);
    let run = run_scheme_measured(opts, scenario, k, scheme, &Unobserved, Some(&observed))?;
    let restarts = (rounds.iter())
        .flat_map(|r| &r.jobs)
        .filter(|o| o.restarted)
        .count();
    let slips = slips(deployed, &run, opts.round_s);
    let ratios = ratios(scenario, &observed);
    Ok(Some(SchemeReplay {
        run,
        restarts,
        slips,
        ratios,
    }))
}

/// Jobs whose finish fell in a later round in `deployed` than in `replayed`.
fn slips(deployed: &RunResult, replayed: &RunResult, round_s: f64) -> usize {
    let round_of = |t: f64| (t / round_s).floor() as i64;
    (deployed.jobs.iter())
        .filter(|d| {
            let r = replayed.jobs.iter().find(|r| r.id == d.id);
            match (d.finish_s, r.and_then(|r| r.finish_s)) {
                (Some(a), Some(b)) => round_of(a) > round_of(b),
                _ => false,
            }
        })
        .count()
}

#[cfg(test)]
pub(super) fn ratios_for_tests(scenario: &Scenario, observed: &Observed) -> Vec<KindRatio> {
    ratios(scenario, observed)
}

/// Per job kind and grant, each round's rate over the kind's matrix rate at the grant.
fn ratios(scenario: &Scenario, observed: &Observed) -> Vec<KindRatio> {
    let trace = scenario.trace_jobs().unwrap_or_default();
    (observed.by_kind().into_iter())
        .filter_map(|g| {
            let profile = scenario.profiles.get(scenario.profiles.lookup(&g.model)?);
            let gpus = (trace.iter()).find(|j| j.model == g.model)?.gpus;
            let mem_gb = g.mem_bytes as f64 / crate::matrix::surface::BYTES_PER_GB;
            let matrix = profile.rate(gpus, g.cpus, mem_gb, Semantics::Exact);
            if !(matrix.is_finite() && matrix > 0.0) {
                return None;
            }
            let each: Vec<f64> = g.rates.iter().map(|r| r / matrix).collect();
            let (ratio, half_width) = crate::stats::mean_ci95(&each);
            Some(KindRatio {
                model: g.model,
                cpus: g.cpus,
                mem_bytes: g.mem_bytes,
                rounds: each.len(),
                ratio,
                half_width,
            })
        })
        .collect()
}

/// Writes each scheme's rates measured over the matrices' (`ratios.csv`, `.parquet`): a row per
/// job kind and grant.
pub fn write_ratios(replays: &[Option<SchemeReplay>], dir: &Path) -> Result<(), DeployError> {
    use crate::replay::tables::{col, write_table};
    let rows: Vec<(&SchemeReplay, &KindRatio)> = (replays.iter().flatten())
        .flat_map(|r| r.ratios.iter().map(move |k| (r, k)))
        .collect();
    let text =
        |get: fn(&(&SchemeReplay, &KindRatio)) -> String| rows.iter().map(get).collect::<Vec<_>>();
    let num =
        |get: fn(&(&SchemeReplay, &KindRatio)) -> f64| rows.iter().map(get).collect::<Vec<_>>();
    let mut frame = polars::prelude::DataFrame::new(
        rows.len(),
        vec![
            col("policy", text(|(r, _)| r.run.summary.policy.clone())),
            col("mechanism", text(|(r, _)| r.run.summary.mechanism.clone())),
            col("model", text(|(_, k)| k.model.clone())),
            col("cpus", num(|(_, k)| k.cpus)),
            col("mem_bytes", num(|(_, k)| k.mem_bytes as f64)),
            col("rounds", num(|(_, k)| k.rounds as f64)),
            col("ratio", num(|(_, k)| k.ratio)),
            col("ratio_ci95_low", num(|(_, k)| k.ratio - k.half_width)),
            col("ratio_ci95_high", num(|(_, k)| k.ratio + k.half_width)),
        ],
    )
    .map_err(|e| crate::replay::ReplayError::Internal(format!("building ratios: {e}")))?;
    Ok(write_table(&mut frame, dir, "ratios")?)
}

/// Each job kind's measured rate over its matrix's, a line per scheme and grant.
pub fn render_ratios(replays: &[Option<SchemeReplay>]) -> String {
    let mut out = String::from(
        "\nrates measured over the matrices' (mean of the rounds after a job's first, 95% \
         interval):\n",
    );
    for r in replays.iter().flatten() {
        let s = &r.run.summary;
        for k in &r.ratios {
            out.push_str(&format!(
                "  {:<24} {:<10} {:>5} CPUs {:>5.2} GB  {:.2} ±{:.2} over {} round(s)\n",
                format!("{}+{}", s.policy, s.mechanism),
                k.model,
                k.cpus,
                k.mem_bytes as f64 / crate::matrix::surface::BYTES_PER_GB,
                k.ratio,
                k.half_width,
                k.rounds
            ));
        }
    }
    out
}
