//! `--cell`: which allocation a one-cell format (Gavel, Slurm, Kubernetes) exports per matrix.

use super::{ExportError, Prepared};
use crate::matrix::{Interp, ServerShape};
use std::fmt;
use std::str::FromStr;

/// The allocation, per GPU, that a one-cell format exports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum CellChoice {
    /// The best-case demand: the cheapest grid point within `--eps` of the best throughput.
    #[default]
    Best,
    /// The GPU-proportional share of `--server` (3 CPUs and 62.5 GB per GPU by default).
    Proportional,
    /// A given allocation, CPUs and GB per GPU; off-grid values are interpolated.
    At {
        cpus_per_gpu: f64,
        mem_gb_per_gpu: f64,
    },
}

/// The cell a [`CellChoice`] resolves to for one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct ChosenCell {
    pub cpus_per_gpu: f64,
    pub mem_gb_per_gpu: f64,
    pub samples_per_s_per_gpu: f64,
}

impl CellChoice {
    pub fn pick(&self, p: &Prepared, server: &ServerShape) -> ChosenCell {
        let (cpus_per_gpu, mem_gb_per_gpu) = match *self {
            CellChoice::Best => {
                return ChosenCell {
                    cpus_per_gpu: p.demand.cpus_per_gpu,
                    mem_gb_per_gpu: p.demand.mem_gb_per_gpu,
                    samples_per_s_per_gpu: p.demand.samples_per_s_per_gpu,
                };
            }
            CellChoice::Proportional => (server.share_cpus(), server.share_mem_gb()),
            CellChoice::At {
                cpus_per_gpu,
                mem_gb_per_gpu,
            } => (cpus_per_gpu, mem_gb_per_gpu),
        };
        ChosenCell {
            cpus_per_gpu,
            mem_gb_per_gpu,
            samples_per_s_per_gpu: p.surface.at(cpus_per_gpu, mem_gb_per_gpu, Interp::Bilinear),
        }
    }
}

impl FromStr for CellChoice {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |message: &str| ExportError::Cell {
            given: s.to_owned(),
            message: message.to_owned(),
        };
        match s.trim() {
            "best" => return Ok(CellChoice::Best),
            "proportional" => return Ok(CellChoice::Proportional),
            _ => {}
        }
        let Some((c, m)) = s.split_once(',') else {
            return Err(bad(
                "expected best, proportional, or CPUS,GB per GPU (for example 6,62.5)",
            ));
        };
        let num = |v: &str, what: &str| -> Result<f64, ExportError> {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| bad(&format!("{what} {:?} is not a positive number", v.trim())))
        };
        Ok(CellChoice::At {
            cpus_per_gpu: num(c, "CPUs per GPU")?,
            mem_gb_per_gpu: num(m, "GB per GPU")?,
        })
    }
}

impl fmt::Display for CellChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellChoice::Best => f.write_str("best"),
            CellChoice::Proportional => f.write_str("proportional"),
            CellChoice::At {
                cpus_per_gpu,
                mem_gb_per_gpu,
            } => write!(f, "{cpus_per_gpu},{mem_gb_per_gpu}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms_and_rejects_the_rest() {
        assert_eq!("best".parse::<CellChoice>().unwrap(), CellChoice::Best);
        assert_eq!(
            "proportional".parse::<CellChoice>().unwrap(),
            CellChoice::Proportional
        );
        assert_eq!(
            " 6, 62.5".parse::<CellChoice>().unwrap(),
            CellChoice::At {
                cpus_per_gpu: 6.0,
                mem_gb_per_gpu: 62.5
            }
        );
        for bad in [
            "", "fastest", "6", "6,", "0,62.5", "6,-1", "x,1", "6,NaN", "1,inf",
        ] {
            let e = bad.parse::<CellChoice>().unwrap_err().to_string();
            assert!(e.starts_with("--cell"), "{bad}: {e}");
        }
        let e = "6,x".parse::<CellChoice>().unwrap_err().to_string();
        assert!(e.contains("GB per GPU \"x\""), "{e}");
    }
}
