//! The predictor judged on a library, each job held out in turn and predicted from the rest:
//! from given CPU levels ([`leave_one_out`]), and as `sweep --predict` would measure it, one
//! cell at a time until every predicted cell is within a precision ([`sequential`]).

use super::library::Library;
use super::next_level;
use super::transfer::{CellPrediction, Settings, Transfer};
use std::collections::BTreeSet;

/// How the predictions of held-out jobs' cells fared against their true rates.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// Jobs held out.
    pub jobs: usize,
    /// Cells predicted.
    pub cells: usize,
    /// Mean of `|predicted / true − 1|`.
    pub mean_error: f64,
    /// The largest, with its job and CPU level.
    pub max_error: (f64, String, f64),
    /// Share of the cells whose interval holds the true rate.
    pub coverage: f64,
    /// Median relative half-width of the intervals.
    pub median_half_width: f64,
}

/// [`Scores`] with the cells each held-out job had measured, as the sequential stop chose.
#[derive(Debug, Clone, PartialEq)]
pub struct SequentialScores {
    pub scores: Scores,
    /// Each job's CPU levels measured before every other was within the precision.
    pub measured: Vec<(String, Vec<f64>)>,
    /// Mean of the measured cells a job, and the CPU levels a job has.
    pub mean_measured: f64,
    pub levels: usize,
}

/// Each distinct job of `library` held out (its copies with it: jobs of the same name) and its
/// cells at `given` CPU levels revealed; its other levels predicted from the rest.
pub fn leave_one_out(library: &Library, given: &[f64], settings: &Settings) -> Scores {
    let mut tally = Tally::default();
    for name in names(library) {
        let Some(held) = library.jobs().iter().find(|j| j.name == name) else {
            continue;
        };
        let rest = library.without(&name);
        let levels: Vec<f64> = held.curve.cpus().collect();
        let measured: Vec<(f64, f64)> = (levels.iter())
            .filter(|c| given.iter().any(|g| (*g - **c).abs() < 1e-9))
            .map(|&c| (c, held.curve.at(c.ln()).exp()))
            .collect();
        let Some(t) = Transfer::fit(&measured, &rest, settings) else {
            continue;
        };
        tally.jobs += 1;
        for &c in levels
            .iter()
            .filter(|c| !measured.iter().any(|m| m.0 == **c))
        {
            tally.add(&name, c, &t.at(c), held.curve.at(c.ln()));
        }
    }
    tally.scores()
}

/// Each distinct job of `library` held out and measured as `sweep --predict` measures
/// ([`next_level`]): its highest CPU level first, then, while a predicted cell is wider than
/// `precision`, the widest.
pub fn sequential(library: &Library, precision: f64, settings: &Settings) -> SequentialScores {
    let mut tally = Tally::default();
    let mut measured_by_job = Vec::new();
    let mut levels_seen = 0;
    for name in names(library) {
        let Some(held) = library.jobs().iter().find(|j| j.name == name) else {
            continue;
        };
        let rest = library.without(&name);
        let levels: Vec<f64> = held.curve.cpus().collect();
        levels_seen = levels_seen.max(levels.len());
        let truth = |c: f64| held.curve.at(c.ln());
        let mut measured: Vec<(f64, f64)> = Vec::new();
        while let Some(c) = next_level(&measured, &levels, &rest, settings, precision) {
            measured.push((c, truth(c).exp()));
        }
        let predictions: Vec<(f64, CellPrediction)> =
            match Transfer::fit(&measured, &rest, settings) {
                Some(t) => (levels.iter())
                    .filter(|c| !measured.iter().any(|m| m.0 == **c))
                    .map(|&c| (c, t.at(c)))
                    .collect(),
                None => Vec::new(),
            };
        tally.jobs += 1;
        for (c, p) in &predictions {
            tally.add(&name, *c, p, truth(*c));
        }
        let mut cpus: Vec<f64> = measured.iter().map(|m| m.0).collect();
        cpus.sort_by(f64::total_cmp);
        measured_by_job.push((name, cpus));
    }
    let total: usize = measured_by_job.iter().map(|(_, m)| m.len()).sum();
    SequentialScores {
        mean_measured: total as f64 / measured_by_job.len().max(1) as f64,
        levels: levels_seen,
        measured: measured_by_job,
        scores: tally.scores(),
    }
}

/// The distinct job names of `library`, in order.
fn names(library: &Library) -> Vec<String> {
    let mut seen = BTreeSet::new();
    (library.jobs().iter())
        .filter(|j| seen.insert(j.name.clone()))
        .map(|j| j.name.clone())
        .collect()
}

#[derive(Default)]
struct Tally {
    jobs: usize,
    errors: Vec<(f64, String, f64)>,
    inside: usize,
    half_widths: Vec<f64>,
}

impl Tally {
    fn add(&mut self, job: &str, cpu: f64, p: &CellPrediction, truth: f64) {
        self.errors
            .push(((p.log_rate - truth).exp_m1().abs(), job.to_owned(), cpu));
        self.inside += usize::from(p.holds(truth));
        self.half_widths.push(p.half_width());
    }

    fn scores(mut self) -> Scores {
        let n = self.errors.len();
        self.half_widths.sort_by(f64::total_cmp);
        Scores {
            jobs: self.jobs,
            cells: n,
            mean_error: self.errors.iter().map(|e| e.0).sum::<f64>() / n.max(1) as f64,
            max_error: (self.errors.iter())
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .cloned()
                .unwrap_or((0.0, String::new(), 0.0)),
            coverage: self.inside as f64 / n.max(1) as f64,
            median_half_width: self.half_widths.get(n / 2).copied().unwrap_or(0.0),
        }
    }
}

impl Scores {
    /// Two lines: the error and the intervals' coverage and width.
    pub fn describe(&self) -> String {
        format!(
            "{} cells of {} held-out jobs: mean error {:.1}%, at most {:.0}% ({} at {} CPUs)\n\
             95% intervals hold the truth in {:.0}% of cells, ±{:.1}% median",
            self.cells,
            self.jobs,
            100.0 * self.mean_error,
            100.0 * self.max_error.0,
            self.max_error.1,
            self.max_error.2,
            100.0 * self.coverage,
            100.0 * self.median_half_width
        )
    }
}
