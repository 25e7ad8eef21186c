//! What replay inputs are, before any option is applied: a trace's format (named or detected
//! from its first bytes) and the small values options carry (job-id windows, splits, horizons).
//! The command line and scenario grids both read them.

use super::error::ReplayError;
use std::path::Path;

/// A trace's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    Auto,
    Synergy,
    Philly,
    PhillyJson,
    Alibaba,
    Canonical,
}

/// Guesses a trace's format from its first bytes.
pub fn detect(path: &Path) -> Result<TraceFormat, ReplayError> {
    use std::io::Read;
    let mut buf = [0u8; 256];
    let mut f = std::fs::File::open(path).map_err(ReplayError::io(path))?;
    let n = f.read(&mut buf).map_err(ReplayError::io(path))?;
    let head = String::from_utf8_lossy(&buf[..n]);
    let head = head.trim_start();
    Ok(if head.starts_with(super::workload::canonical::MAGIC) {
        TraceFormat::Canonical
    } else if head.starts_with('[') {
        TraceFormat::PhillyJson
    } else if head.starts_with("timestamp,") {
        TraceFormat::Philly
    } else if head.starts_with("name,cpu_milli") {
        TraceFormat::Alibaba
    } else {
        TraceFormat::Synergy
    })
}

/// Parses `--split` (`image,language,speech` weights).
pub fn parse_split(s: &str) -> Result<[f64; 3], ReplayError> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            ReplayError::Options(format!(
                "--split {s:?}: expected three numbers, image,language,speech"
            ))
        })?;
    <[f64; 3]>::try_from(v).map_err(|_| {
        ReplayError::Options(format!(
            "--split {s:?}: expected three numbers, image,language,speech"
        ))
    })
}

/// Parses `A..B` (inclusive), `A <= B <= MAX_JOB_ID`.
pub fn parse_window(s: &str) -> Result<(u64, u64), ReplayError> {
    let bad = || {
        ReplayError::Options(format!(
            "--window {s:?}: expected FIRST..LAST job ids, FIRST <= LAST <= {}, e.g. 4000..4999",
            super::bounds::MAX_JOB_ID
        ))
    };
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let b = b.strip_prefix('=').unwrap_or(b);
    let (a, b): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b || b > super::bounds::MAX_JOB_ID {
        return Err(bad());
    }
    Ok((a, b))
}

/// Parses `--horizon` (see [`super::bounds::parse_duration_s`]).
pub fn parse_horizon(s: &str) -> Result<f64, ReplayError> {
    super::bounds::parse_duration_s(s).map_err(|e| ReplayError::Options(format!("--horizon: {e}")))
}
