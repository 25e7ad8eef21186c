//! Arguments of `profiler colocate`.

use crate::deploy::colocation::{ColocateOptions, ColocationOptions};
use crate::matrix::surface::BYTES_PER_GB;
use std::path::PathBuf;

pub const EXAMPLES: &str = "\
Examples:
  # The shipped deploy's four kinds at the proportional share of its cluster (half a CPU and
  # 1 GB a slot): each alone, then all four at once, twice
  profiler colocate --grant light=0.5 --grant decode=0.5 --grant cache=0.5 --grant torch=0.5

  # Longer runs, the cache job with 2 GB
  profiler colocate --grant cache=0.5:2 --grant decode=1 --seconds 120 --out results/coloc/

A matrix is swept with its job alone on the machine; a deploy runs the kinds side by side. This
measures the difference at the grants a deploy gives (a deploy's replay-of-deploy/ratios.csv
lists them): each kind alone at its grant, then every kind at once, each at the same grant and
on the same CPUs. The alternation is made --repeats times, so a slow spell of the host falls on
both sides. Each run drops its first --warmup-s seconds and cuts the rest into windows, the
units of the 95% intervals.

Writes to --out: colocation.csv (every window's rate, written as measured, so Ctrl-C keeps
them), colocation.txt (a line a kind: alone, beside, and beside over alone), and logs/.";

/// Measure job kinds alone and beside each other at one grant each: what a deploy's rates lose
/// to co-location.
#[derive(clap::Args, Debug, Clone, PartialEq)]
#[command(after_long_help = EXAMPLES)]
pub struct ColocateArgs {
    /// A kind and its grant, MODEL=CPUS or MODEL=CPUS:GB (memory default 1 GB); repeat for
    /// each kind, two or more.
    #[arg(long = "grant", value_name = "MODEL=CPUS[:GB]", value_parser = parse_grant, required = true)]
    pub grants: Vec<(String, f64, f64)>,
    /// Job specs (`*.toml`), one per model, as `profiler deploy --jobs` reads them.
    #[arg(long, default_value = "workloads/deploy/jobs")]
    pub jobs: PathBuf,
    /// Seconds each run is measured, after its warm-up.
    #[arg(long, default_value_t = 60.0, value_parser = parse_seconds)]
    pub seconds: f64,
    /// Seconds each run starts with, left out.
    #[arg(long, default_value_t = 15.0, value_parser = parse_seconds)]
    pub warmup_s: f64,
    /// Seconds a window is, at least (longer where a job reports less often).
    #[arg(long, default_value_t = 5.0, value_parser = parse_seconds)]
    pub window_s: f64,
    /// Times each kind is run alone and all of them together.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeats: u32,
    #[arg(long, default_value = "results/colocate")]
    pub out: PathBuf,
    #[command(flatten)]
    pub cgroup_parent: super::CgroupParentArg,
}

impl ColocateArgs {
    pub fn to_options(&self) -> Result<ColocateOptions, String> {
        if self.grants.len() < 2 {
            return Err("--grant: give two kinds or more; one alone has nothing beside it".into());
        }
        for (i, (model, ..)) in self.grants.iter().enumerate() {
            if self.grants[..i].iter().any(|g| &g.0 == model) {
                return Err(format!(
                    "--grant: {model} is given twice; give each kind once"
                ));
            }
        }
        Ok(ColocateOptions {
            jobs_dir: self.jobs.clone(),
            kinds: (self.grants.iter())
                .map(|(m, cpus, gb)| (m.clone(), *cpus, (gb * BYTES_PER_GB).round() as u64))
                .collect(),
            cgroup_parent: self.cgroup_parent.name.clone(),
            out_dir: self.out.clone(),
            measure: ColocationOptions {
                warmup_s: self.warmup_s,
                measure_s: self.seconds,
                window_s: self.window_s,
                repeats: self.repeats,
            },
        })
    }
}

/// `MODEL=CPUS[:GB]`.
fn parse_grant(s: &str) -> Result<(String, f64, f64), String> {
    let expected = || format!("{s:?}: expected MODEL=CPUS or MODEL=CPUS:GB, e.g. light=0.5:1");
    let (model, grant) = s.split_once('=').ok_or_else(expected)?;
    if model.is_empty() {
        return Err(expected());
    }
    let (cpus, gb) = grant.split_once(':').unwrap_or((grant, "1"));
    let positive = |v: &str| v.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0);
    match (positive(cpus), positive(gb)) {
        (Some(c), Some(g)) => Ok((model.to_owned(), c, g)),
        _ => Err(expected()),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0 && *x <= 86_400.0)
        .ok_or_else(|| format!("{s:?}: expected seconds, more than 0 and at most a day"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn grants_read_with_and_without_memory() {
        assert_eq!(
            parse_grant("light=0.5").unwrap(),
            ("light".into(), 0.5, 1.0)
        );
        assert_eq!(
            parse_grant("cache=1:2.5").unwrap(),
            ("cache".into(), 1.0, 2.5)
        );
        for bad in [
            "light",
            "=0.5",
            "light=",
            "light=0",
            "light=-1",
            "light=1:0",
            "light=x:1",
        ] {
            assert!(
                parse_grant(bad).unwrap_err().contains("MODEL=CPUS"),
                "{bad}"
            );
        }
    }

    proptest! {
        /// No input makes the parser panic, and what it accepts is positive and finite.
        #[test]
        fn any_grant_text_is_read_or_refused(s in ".{0,40}") {
            if let Ok((model, cpus, gb)) = parse_grant(&s) {
                prop_assert!(!model.is_empty());
                prop_assert!(cpus > 0.0 && cpus.is_finite() && gb > 0.0 && gb.is_finite());
            }
        }
    }
}
