//! The screen of `profiler deploy`: a line per scheme as it starts, and one per round (the
//! round, its jobs running, suspended, queued and done, and the time left by the replay's
//! estimate), on stderr, so the tables on stdout stay clean.

use crate::deploy::DeployProgress;
use crate::deploy::work::DeployObserver;
use std::sync::Mutex;

#[derive(Default)]
pub struct DeployLines {
    /// (scheme, jobs, the replay's makespan), of the scheme running.
    scheme: Mutex<Option<(String, usize, f64)>>,
}

impl DeployLines {
    pub fn new() -> Self {
        Self::default()
    }
}

impl DeployObserver for DeployLines {
    fn round_done(&self, t: f64, active: usize, placed: usize, suspended: usize, over: usize) {
        let scheme = self.scheme.lock().unwrap_or_else(|e| e.into_inner());
        let Some((name, jobs, makespan)) = scheme.as_ref() else {
            return;
        };
        let left = if makespan.is_finite() && *makespan > t {
            format!("~{:.0} s left by the replay", makespan - t)
        } else {
            "past the replay's makespan".to_string()
        };
        eprintln!(
            "{name}  t={t:>6.0} s  running {placed}  suspended {suspended}  queued {}  done \
             {over}/{jobs}  {left}",
            active.saturating_sub(placed + suspended)
        );
    }
}

impl DeployProgress for DeployLines {
    fn scheme_started(&self, label: &str, jobs: usize, replay_makespan_s: f64) {
        eprintln!(
            "deploying {label}: {jobs} jobs; the replay finishes them in {replay_makespan_s:.0} s"
        );
        *self.scheme.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((label.to_string(), jobs, replay_makespan_s));
    }

    fn resumed(&self, rounds: usize, t: f64) {
        eprintln!("  resumed: {rounds} round(s) taken from the journal; going on at t={t:.0} s");
    }

    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
}
