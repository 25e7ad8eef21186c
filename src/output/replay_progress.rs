//! Progress bars for `profiler replay`: one per scheme (they run in parallel), counting finished
//! jobs; drawn on stderr only when it is a terminal.

use crate::replay::ReplayObserver;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Mutex;

pub struct ReplayProgress {
    multi: MultiProgress,
    bars: Mutex<BTreeMap<usize, ProgressBar>>,
}

impl ReplayProgress {
    pub fn new() -> Self {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        ReplayProgress {
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(BTreeMap::new()),
        }
    }

    fn with_bar(&self, k: usize, f: impl FnOnce(&ProgressBar)) {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bar) = bars.get(&k) {
            f(bar);
        }
    }

    /// Removes the bars (before the summary is printed).
    pub fn finish(&self) {
        let _ = self.multi.clear();
    }
}

impl Default for ReplayProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplayObserver for ReplayProgress {
    fn scheme_started(&self, k: usize, label: &str, total: Option<u64>) {
        let bar = self.multi.add(ProgressBar::new(total.unwrap_or(0)));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>24} [{elapsed_precise}] {bar:30} {pos}/{len} jobs finished (ETA {eta})",
            )
            .expect("valid template"),
        );
        bar.set_prefix(label.to_string());
        self.bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(k, bar);
    }

    fn jobs_finished(&self, k: usize, finished: u64) {
        self.with_bar(k, |bar| bar.set_position(finished));
    }

    fn scheme_done(&self, k: usize) {
        self.with_bar(k, |bar| bar.finish());
    }
}
