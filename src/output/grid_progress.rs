//! Progress bar of `profiler replay --grid`: scenarios finished of the grid (or of the array
//! task's chunk), with an ETA; drawn on stderr only when it is a terminal.

use crate::replay::grid::GridObserver;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub struct GridProgress {
    bar: ProgressBar,
}

impl GridProgress {
    pub fn new() -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        if std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_style(
            ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} {pos}/{len} scenarios (ETA {eta}) {msg}",
            )
            .expect("valid template"),
        );
        GridProgress { bar }
    }

    /// Removes the bar (before the table is printed).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Default for GridProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl GridObserver for GridProgress {
    fn started(&self, total: usize) {
        self.bar.set_length(total as u64);
    }

    fn scenario_done(&self, done: usize, id: &str) {
        self.bar.set_position(done as u64);
        self.bar.set_message(id.to_owned());
    }
}
