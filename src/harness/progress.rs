//! Reading the job's own progress reports: JSON lines in a progress file (recommended), or a
//! regex over stdout. Both are tailed from files, so a chatty job never blocks on a pipe.

use crate::spec::ThroughputSpec;
use regex::Regex;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// One progress report, as cumulative samples at a time (Unix seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    pub t: f64,
    pub samples: f64,
    /// Cumulative iterations, when the job reports them.
    pub iterations: Option<f64>,
}

pub fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

enum Parser {
    Json,
    Regex {
        re: Regex,
        samples_per_iteration: f64,
    },
}

/// Tails a file and turns new complete lines into reports.
pub struct ProgressTail {
    path: PathBuf,
    offset: u64,
    partial: String,
    parser: Parser,
    /// Last cumulative value, used to integrate `rate` captures into samples.
    last: Option<Report>,
    /// Lines that matched nothing useful (first one kept for messages).
    pub bad_lines: u64,
    pub first_bad_line: Option<String>,
}

impl ProgressTail {
    /// `path` is the progress file for the JSON protocol, or the stdout log for the regex one.
    pub fn new(spec: &ThroughputSpec, path: PathBuf) -> Self {
        let parser = match spec {
            ThroughputSpec::ProgressFile => Parser::Json,
            ThroughputSpec::StdoutRegex {
                regex,
                samples_per_iteration,
            } => Parser::Regex {
                // Validated when the spec was loaded.
                re: Regex::new(regex).unwrap_or_else(|_| Regex::new("$^").expect("valid")),
                samples_per_iteration: samples_per_iteration.unwrap_or(1.0),
            },
        };
        ProgressTail {
            path,
            offset: 0,
            partial: String::new(),
            parser,
            last: None,
            bad_lines: 0,
            first_bad_line: None,
        }
    }

    /// What the job is expected to write, for time-out messages.
    pub fn expectation(&self) -> String {
        match &self.parser {
            Parser::Json => format!(
                "JSON lines like {{\"samples\": 1024, \"t\": 1700000000.5}} appended to ${} ({})",
                super::launch::PROGRESS_FILE_ENV,
                self.path.display()
            ),
            Parser::Regex { re, .. } => {
                format!(
                    "stdout lines matching /{}/ ({})",
                    re.as_str(),
                    self.path.display()
                )
            }
        }
    }

    /// Reads what was appended since the last call.
    pub fn poll(&mut self) -> Vec<Report> {
        let mut reports = Vec::new();
        let Ok(mut f) = File::open(&self.path) else {
            return reports;
        };
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return reports;
        }
        self.offset += buf.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        while let Some(nl) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=nl).collect();
            if let Some(r) = self.parse_line(line.trim()) {
                reports.push(r);
            }
        }
        reports
    }

    fn parse_line(&mut self, line: &str) -> Option<Report> {
        if line.is_empty() {
            return None;
        }
        let parsed = match &self.parser {
            Parser::Json => parse_json_line(line),
            Parser::Regex {
                re,
                samples_per_iteration,
            } => re.captures(line).and_then(|c| {
                let num = |n: &str| c.name(n).and_then(|m| m.as_str().parse::<f64>().ok());
                let t = now_unix_s();
                if let Some(s) = num("samples") {
                    Some(Report {
                        t,
                        samples: s,
                        iterations: num("iterations"),
                    })
                } else if let Some(i) = num("iterations") {
                    Some(Report {
                        t,
                        samples: i * samples_per_iteration,
                        iterations: Some(i),
                    })
                } else {
                    // A rate: integrate it since the previous report.
                    let rate = num("rate")?;
                    let samples = self
                        .last
                        .map_or(0.0, |p| p.samples + rate * (t - p.t).max(0.0));
                    Some(Report {
                        t,
                        samples,
                        iterations: None,
                    })
                }
            }),
        };
        match parsed {
            Some(r) => {
                self.last = Some(r);
                Some(r)
            }
            None => {
                // Non-matching stdout lines are normal; malformed progress-file lines are not.
                if matches!(self.parser, Parser::Json) {
                    self.bad_lines += 1;
                    self.first_bad_line
                        .get_or_insert_with(|| line.chars().take(200).collect());
                }
                None
            }
        }
    }
}

fn parse_json_line(line: &str) -> Option<Report> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let samples = v.get("samples")?.as_f64()?;
    let t = v
        .get("t")
        .and_then(|t| t.as_f64())
        .unwrap_or_else(now_unix_s);
    Some(Report {
        t,
        samples,
        iterations: v.get("iterations").and_then(|i| i.as_f64()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn json_protocol_reads_only_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let mut f = File::create(&path).unwrap();
        let mut tail = ProgressTail::new(&ThroughputSpec::ProgressFile, path.clone());
        write!(
            f,
            "{{\"samples\": 10, \"t\": 1.0}}\n{{\"samples\": 20, \"t\""
        )
        .unwrap();
        f.flush().unwrap();
        let r = tail.poll();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].samples, 10.0);
        write!(f, ": 2.0, \"iterations\": 2}}\nnot json\n").unwrap();
        f.flush().unwrap();
        let r = tail.poll();
        assert_eq!(
            r,
            vec![Report {
                t: 2.0,
                samples: 20.0,
                iterations: Some(2.0)
            }]
        );
        assert_eq!(tail.bad_lines, 1);
    }

    #[test]
    fn regex_protocol_counts_iterations() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        std::fs::write(&path, "hello\nstep 3 loss 1.0\nstep 4 loss 0.9\n").unwrap();
        let spec = ThroughputSpec::StdoutRegex {
            regex: r"step (?P<iterations>\d+)".into(),
            samples_per_iteration: Some(32.0),
        };
        let mut tail = ProgressTail::new(&spec, path);
        let r = tail.poll();
        assert_eq!(
            r.iter().map(|r| r.samples).collect::<Vec<_>>(),
            vec![96.0, 128.0]
        );
        assert_eq!(tail.bad_lines, 0);
    }
}
