//! Progress bar with ETA for sweeps (indicatif), drawn on stderr only when it is a terminal.

use crate::harness::sweep::SweepObserver;
use crate::matrix::Cell;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// The total is known (a grid) ...
const EXACT: &str =
    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cells (ETA {eta}) {prefix}{msg}";
/// ... or bounded (a CPU search decides as it goes): total and ETA are upper bounds.
const AT_MOST: &str = "{spinner} [{elapsed_precise}] {bar:30} {pos}/at most {len} cells (ETA at \
                       most {eta}) {prefix}{msg}";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).expect("valid template")
}

/// A sweep's progress: a bar on a terminal, lines otherwise. At the default verbosity only
/// warnings are printed (a terminal also shows the current step on the bar); `verbose` prints
/// every step, each cell as it is recorded, and each finding's arithmetic.
pub struct SweepProgress {
    bar: ProgressBar,
    interactive: bool,
    verbose: bool,
}

impl SweepProgress {
    /// The default verbosity, or every line with `verbose`.
    pub fn with_verbosity(verbose: bool) -> Self {
        SweepProgress {
            verbose,
            ..Self::new()
        }
    }

    /// Every line: the verbosity of `profiler validate` and `doctor`.
    pub fn new() -> Self {
        let interactive = std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(0),
            if interactive {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(style(EXACT));
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        SweepProgress {
            bar,
            interactive,
            verbose: true,
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Default for SweepProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl SweepObserver for SweepProgress {
    fn planned(&mut self, total: usize, done: usize) {
        self.bar.set_style(style(EXACT));
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
        self.bar.reset_eta();
    }

    fn planned_at_most(&mut self, max_cells: usize, done: usize) {
        self.bar.set_style(style(AT_MOST));
        self.bar.set_length(max_cells as u64);
        self.bar.set_position(done as u64);
        self.bar.reset_eta();
    }

    fn status(&mut self, message: &str) {
        if self.interactive {
            self.bar.set_message(message.to_string());
        } else if self.verbose {
            eprintln!("{message}");
        }
    }

    fn precision(&mut self, widest: f64, asked: f64) {
        self.bar.set_prefix(format!(
            "widest ±{:.1}% of ±{:.1}%: ",
            100.0 * widest,
            100.0 * asked
        ));
    }

    fn cell_done(&mut self, cell: &Cell) {
        self.bar.inc(1);
        let rate = cell
            .samples_per_s()
            .map_or_else(String::new, |r| format!(" {r:.1} samples/s"));
        let line = format!(
            "cell cpu={} mem={:.2}GiB {}{}",
            cell.cpu,
            cell.memory_bytes as f64 / crate::units::GIB,
            cell.source.as_str(),
            rate
        );
        match (self.verbose, self.interactive) {
            (false, _) => {}
            (true, true) => self.bar.println(line),
            (true, false) => eprintln!("{line}"),
        }
    }

    fn note(&mut self, message: &str) {
        match (self.verbose, self.interactive) {
            (false, true) => self.bar.set_message(message.to_string()),
            (false, false) => {}
            (true, true) => self.bar.println(message),
            (true, false) => eprintln!("{message}"),
        }
    }

    fn warn(&mut self, message: &str) {
        if self.interactive {
            self.bar.println(format!("warning: {message}"));
        } else {
            eprintln!("warning: {message}");
        }
    }
}
