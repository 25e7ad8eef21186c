//! Progress reporting: the profiler's progress-file protocol plus a human
//! line on stdout.
//!
//! Protocol: when `PROFILER_PROGRESS_FILE` is set, after every iteration one
//! JSON line is appended to that file:
//! `{"samples": <cumulative samples, integer>, "iterations": <cumulative
//! iterations, integer>, "t": <unix time in seconds, float>}`.  The file is
//! opened in append mode and each line is written with a single `write`
//! call.  Independently, about every 2 s a line such as
//! `iter 120 samples 3840 rate 512.3 samples/s` goes to stdout.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

pub const PROGRESS_ENV: &str = "PROFILER_PROGRESS_FILE";
pub const HUMAN_INTERVAL: Duration = Duration::from_secs(2);

/// One protocol line (with trailing newline).
pub fn protocol_line(samples: u64, iterations: u64, unix_t: f64) -> String {
    format!("{{\"samples\": {samples}, \"iterations\": {iterations}, \"t\": {unix_t:.6}}}\n")
}

/// One human-readable stdout line (without newline).
pub fn human_line(iterations: u64, samples: u64, rate: f64) -> String {
    format!("iter {iterations} samples {samples} rate {rate:.1} samples/s")
}

pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub struct Reporter {
    file: Option<File>,
    samples: u64,
    iterations: u64,
    last_print: Instant,
    last_print_samples: u64,
    interval: Duration,
}

impl Reporter {
    /// Reporter configured from the environment.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(PROGRESS_ENV) {
            Some(p) if !p.is_empty() => Self::with_file(Some(Path::new(&p)), HUMAN_INTERVAL),
            _ => Self::with_file(None, HUMAN_INTERVAL),
        }
    }

    pub fn with_file(path: Option<&Path>, interval: Duration) -> Result<Self> {
        let file = match path {
            Some(p) => Some(
                OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(p)
                    .with_context(|| {
                        format!("cannot open {PROGRESS_ENV}={} for appending", p.display())
                    })?,
            ),
            None => None,
        };
        Ok(Reporter {
            file,
            samples: 0,
            iterations: 0,
            last_print: Instant::now(),
            last_print_samples: 0,
            interval,
        })
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// Record one finished iteration of `n` samples.
    pub fn step(&mut self, n: u64) -> Result<()> {
        self.samples += n;
        self.iterations += 1;
        if let Some(f) = self.file.as_mut() {
            let line = protocol_line(self.samples, self.iterations, unix_now());
            // A single write(2) of the whole line: O_APPEND keeps it atomic
            // with respect to the reader and other writers.
            let written = f
                .write(line.as_bytes())
                .context("cannot write progress file")?;
            if written != line.len() {
                f.write_all(&line.as_bytes()[written..])
                    .context("cannot write progress file")?;
            }
            f.flush().context("cannot flush progress file")?;
        }
        let now = Instant::now();
        let dt = now.duration_since(self.last_print);
        if dt >= self.interval {
            let rate = (self.samples - self.last_print_samples) as f64 / dt.as_secs_f64();
            println!("{}", human_line(self.iterations, self.samples, rate));
            self.last_print = now;
            self.last_print_samples = self.samples;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_line_format() {
        let line = protocol_line(3840, 120, 1_700_000_000.25);
        assert_eq!(
            line,
            "{\"samples\": 3840, \"iterations\": 120, \"t\": 1700000000.250000}\n"
        );
        assert_eq!(line.matches('\n').count(), 1);
        let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 3);
        assert!(v["samples"].is_u64());
        assert!(v["iterations"].is_u64());
        assert!(v["t"].is_f64());
        assert_eq!(v["samples"].as_u64(), Some(3840));
    }

    #[test]
    fn human_line_format() {
        assert_eq!(
            human_line(120, 3840, 512.34),
            "iter 120 samples 3840 rate 512.3 samples/s"
        );
    }

    #[test]
    fn reporter_appends_cumulative_lines() {
        let path = std::env::temp_dir().join(format!(
            "input-pipeline-progress-{}.jsonl",
            std::process::id()
        ));
        std::fs::write(&path, "{\"samples\": 0, \"iterations\": 0, \"t\": 1.0}\n").unwrap();
        let before = unix_now();
        let mut r = Reporter::with_file(Some(&path), Duration::from_secs(3600)).unwrap();
        r.step(32).unwrap();
        r.step(32).unwrap();
        r.step(7).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4, "appends, never truncates");
        let last = &lines[3];
        assert_eq!(last["samples"].as_u64(), Some(71));
        assert_eq!(last["iterations"].as_u64(), Some(3));
        assert!(last["t"].as_f64().unwrap() >= before - 1.0);
        assert_eq!(lines[1]["samples"].as_u64(), Some(32));
        let _ = std::fs::remove_file(&path);
    }
}
