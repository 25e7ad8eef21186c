//! A corpus of recorded sweeps as the cell model's test bed. Each sweep of a job is fitted
//! on its own, and its intervals are held against every other sweep's estimates of the same
//! cells (coverage); the widths say how precise one sweep is. A sequential stop is replayed
//! by refitting each sweep on the visits it had made by each moment.

use super::ReadAt;
use crate::matrix::{
    Cell, CellSource, Matrix, MatrixError, RelativeRate, UNKNOWN_KIND, load_matrix, matrix_files,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The quantile of a machine kind's pooled probe speeds its corpus is read at.
pub const KIND_QUANTILE: f64 = 0.75;

/// Recorded sweeps by machine kind and job.
pub type Corpus = BTreeMap<(String, String), Vec<Matrix>>;

/// Every `*.matrix.jsonl` in `dirs` and their subfolders (one level down: a corpus keeps a
/// folder per machine kind), by the machine kind and job their headers name.
pub fn load(dirs: &[PathBuf]) -> Result<Corpus, MatrixError> {
    let mut files = Vec::new();
    for dir in dirs {
        files.extend(matrix_files(dir, 2)?);
    }
    files.sort();
    let mut out = Corpus::new();
    for f in files {
        let m = load_matrix(&f)?;
        let kind = (m.header.machine.as_ref())
            .map_or(UNKNOWN_KIND, |machine| machine.kind_key())
            .to_owned();
        out.entry((kind, m.header.job.name.clone()))
            .or_default()
            .push(m);
    }
    Ok(out)
}

/// How the cell model and the recorded estimator fare on one job's sweeps of one kind.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub kind: String,
    pub job: String,
    pub sweeps: usize,
    /// The probe speed every sweep was read at: the kind's pooled [`KIND_QUANTILE`].
    pub read_at: Option<f64>,
    /// The cell model's intervals against the other sweeps' model estimates.
    pub model: Coverage,
    /// The intervals the sweeps recorded against the other sweeps' recorded rates.
    pub recorded: Coverage,
    /// The recorded intervals' median half-width once widened to hold the model's share of
    /// pairs: the two estimators' widths at one coverage.
    pub recorded_at_model_share: f64,
    /// For each sweep, its seconds of visits and where the precision asked would have stopped
    /// it (`None`: never within it).
    pub stops: Vec<(f64, Option<f64>)>,
}

impl Judgement {
    /// A few lines a person reads.
    pub fn describe(&self, precision: f64) -> String {
        let mut out = format!(
            "{} on {}: {} sweep(s){}\n  cell model   {}\n  as recorded  {}",
            self.job,
            self.kind,
            self.sweeps,
            self.read_at
                .map(|s| format!(", read at probe speed {s:.3e}"))
                .unwrap_or_default(),
            self.model.describe(),
            self.recorded.describe()
        );
        out.push_str(&format!(
            ", ±{:.1}% median widened to the model's share",
            100.0 * self.recorded_at_model_share
        ));
        let stopped: Vec<f64> = (self.stops.iter())
            .filter_map(|(span, stop)| Some(stop.as_ref()? / span.max(f64::MIN_POSITIVE)))
            .collect();
        out.push_str(&format!(
            "\n  stop at ±{:.1}%: {} of {} sweep(s) reach it, after {:.0}% of their visits' time (median)",
            100.0 * precision,
            stopped.len(),
            self.stops.len(),
            100.0 * crate::stats::median(&stopped)
        ));
        out
    }
}

/// Judges every job of `corpus` with two sweeps or more: each read at its kind's pooled speed,
/// and stopped where `precision` would have stopped it.
pub fn judge(corpus: &Corpus, precision: f64) -> Vec<Judgement> {
    let mut out = Vec::new();
    for ((kind, job), sweeps) in corpus {
        if sweeps.len() < 2 {
            continue;
        }
        let of_kind: Vec<&Matrix> = (corpus.iter())
            .filter(|((k, _), _)| k == kind)
            .flat_map(|(_, m)| m.iter())
            .collect();
        let speed = pooled_speed(&of_kind, KIND_QUANTILE);
        let read_at = speed.map_or(super::DEFAULT_READ_AT, ReadAt::Speed);
        let model: Vec<Estimates> = (sweeps.iter())
            .map(|m| modelled(m, &m.cells, read_at))
            .collect();
        let recorded: Vec<Estimates> = sweeps.iter().map(recorded).collect();
        let model = Coverage::of(&model);
        out.push(Judgement {
            kind: kind.clone(),
            job: job.clone(),
            sweeps: sweeps.len(),
            read_at: speed,
            recorded_at_model_share: width_at_share(&recorded, model.share()),
            model,
            recorded: Coverage::of(&recorded),
            stops: (sweeps.iter())
                .map(|m| (visit_span(m), stop_at(m, precision, read_at)))
                .collect(),
        });
    }
    out
}

/// A cell's identity across sweeps of one job: its CPU level, its memory level's rank from
/// the top (sweeps size their memory levels from what the job held, so the bytes differ) and
/// its parameters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CellId {
    pub cpu_milli: u64,
    pub memory_rank: usize,
    pub params: BTreeMap<String, String>,
}

/// One estimator's relative rates for one sweep: `(log rate, log half-width)` per cell
/// other than the reference.
pub type Estimates = BTreeMap<CellId, (f64, f64)>;

/// How one estimator fares on one job's sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Pairs (a sweep's interval, another sweep's estimate of the same cell).
    pub pairs: usize,
    /// Of those, the pairs whose interval holds the estimate.
    pub inside: usize,
    /// Median relative half-width over every sweep's cells.
    pub median_half_width: f64,
    /// The widest.
    pub max_half_width: f64,
}

impl Coverage {
    /// Holds every sweep's intervals against every other sweep's estimates.
    pub fn of(sweeps: &[Estimates]) -> Coverage {
        let (mut pairs, mut inside) = (0, 0);
        let mut widths = Vec::new();
        for (i, own) in sweeps.iter().enumerate() {
            for (id, (rate, half)) in own {
                widths.push(half.sinh());
                for other in (sweeps.iter().enumerate()).filter(|(j, _)| *j != i) {
                    if let Some((theirs, _)) = other.1.get(id) {
                        pairs += 1;
                        inside += usize::from((theirs - rate).abs() <= *half);
                    }
                }
            }
        }
        let finite: Vec<f64> = widths.iter().copied().filter(|w| w.is_finite()).collect();
        Coverage {
            pairs,
            inside,
            median_half_width: crate::stats::median(&finite),
            max_half_width: finite.iter().copied().fold(0.0, f64::max),
        }
    }

    /// The share of pairs inside.
    pub fn share(&self) -> f64 {
        self.inside as f64 / self.pairs.max(1) as f64
    }

    /// `94% of 90 pairs inside, ±5.1% median (±9.0% at most)`.
    pub fn describe(&self) -> String {
        format!(
            "{:.0}% of {} pairs inside, ±{:.1}% median (±{:.1}% at most)",
            100.0 * self.share(),
            self.pairs,
            100.0 * self.median_half_width,
            100.0 * self.max_half_width
        )
    }
}

/// The median half-width of `sweeps`' intervals once each is widened, by the least factor a
/// bisection finds, to hold at least `share` of the pairs.
pub fn width_at_share(sweeps: &[Estimates], share: f64) -> f64 {
    let widened = |factor: f64| -> Coverage {
        let scaled: Vec<Estimates> = (sweeps.iter())
            .map(|e| {
                (e.iter())
                    .map(|(id, (rate, half))| (id.clone(), (*rate, half * factor)))
                    .collect()
            })
            .collect();
        Coverage::of(&scaled)
    };
    let (mut low, mut high) = (0.25, 16.0);
    for _ in 0..30 {
        let mid = (low + high) / 2.0;
        match widened(mid).share() >= share {
            true => high = mid,
            false => low = mid,
        }
    }
    widened(high).median_half_width
}

/// The cells' identities in one sweep, by the cell's key.
fn identities(matrix: &Matrix) -> impl Fn(&Cell) -> CellId + '_ {
    let mut levels = matrix.header.axes.memory_bytes.clone();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    move |c: &Cell| CellId {
        cpu_milli: c.key().cpu_milli,
        memory_rank: levels
            .iter()
            .position(|m| *m == c.memory_bytes)
            .unwrap_or(usize::MAX),
        params: c.params.clone(),
    }
}

/// The relative rates a sweep recorded in its file, as the estimator that wrote it made them.
pub fn recorded(matrix: &Matrix) -> Estimates {
    let rates: Vec<Option<&RelativeRate>> =
        matrix.cells.iter().map(|c| c.relative.as_ref()).collect();
    estimates(matrix, &matrix.cells, &rates)
}

/// The cell model's relative rates for a sweep (or for the cells it holds: a sweep cut short).
pub fn modelled(matrix: &Matrix, cells: &[Cell], read_at: ReadAt) -> Estimates {
    let rates = super::relative_rates(cells, read_at);
    estimates(
        matrix,
        cells,
        &rates.iter().map(Option::as_ref).collect::<Vec<_>>(),
    )
}

/// The measured cells' relative rates `rates` (in `cells`' order) other than the references,
/// in log space.
fn estimates(matrix: &Matrix, cells: &[Cell], rates: &[Option<&RelativeRate>]) -> Estimates {
    let id = identities(matrix);
    (cells.iter().zip(rates))
        .filter(|(c, _)| c.source == CellSource::Measured)
        .filter_map(|(c, r)| {
            let r = (*r)?;
            let log = r.rate.ln();
            let half = (r.ci95_high.ln() - log).max(log - r.ci95_low.ln());
            (half > 0.0 && log.is_finite()).then(|| (id(c), (log, half)))
        })
        .collect()
}

/// The probe speed pooled over every visit of `matrices`: its `quantile`. A corpus of one
/// machine kind read at one speed compares its sweeps at the same host.
pub fn pooled_speed(matrices: &[&Matrix], quantile: f64) -> Option<f64> {
    let speeds: Vec<f64> = (matrices.iter())
        .flat_map(|m| m.cells.iter())
        .flat_map(|c| c.visits.iter())
        .filter_map(|v| v.host.as_ref().map(|h| h.speed))
        .filter(|s| *s > 0.0 && s.is_finite())
        .collect();
    super::quantile(speeds, quantile)
}

/// The sweep as it stood after its first `seconds` of measuring: each cell keeps the visits
/// that had ended by then (in the order the sweep made them).
pub fn cut_after(matrix: &Matrix, seconds: f64) -> Vec<Cell> {
    let start = first_visit_start(matrix);
    (matrix.cells.iter())
        .map(|c| Cell {
            visits: (c.visits.iter())
                .filter(|v| v.measured_unix_s[1] - start <= seconds)
                .cloned()
                .collect(),
            ..c.clone()
        })
        .filter(|c| c.source != CellSource::Measured || !c.visits.is_empty())
        .collect()
}

/// Seconds from the sweep's first visit to its last.
pub fn visit_span(matrix: &Matrix) -> f64 {
    let end = (matrix.cells.iter())
        .flat_map(|c| c.visits.iter())
        .map(|v| v.measured_unix_s[1])
        .fold(f64::NEG_INFINITY, f64::max);
    (end - first_visit_start(matrix)).max(0.0)
}

fn first_visit_start(matrix: &Matrix) -> f64 {
    (matrix.cells.iter())
        .flat_map(|c| c.visits.iter())
        .map(|v| v.measured_unix_s[0])
        .fold(f64::INFINITY, f64::min)
}

/// Where a sweep would have stopped at a precision: the seconds into its visits at which
/// every cell's relative half-width was within `precision` (refitted at each visit's end),
/// or `None` where it never was.
pub fn stop_at(matrix: &Matrix, precision: f64, read_at: ReadAt) -> Option<f64> {
    let start = first_visit_start(matrix);
    let mut ends: Vec<f64> = (matrix.cells.iter())
        .flat_map(|c| c.visits.iter())
        .map(|v| v.measured_unix_s[1] - start)
        .collect();
    ends.sort_by(f64::total_cmp);
    let all: usize = (matrix.cells.iter())
        .filter(|c| c.source == CellSource::Measured && !c.visits.is_empty())
        .count();
    ends.into_iter().find(|t| {
        let est = modelled(matrix, &cut_after(matrix, *t), read_at);
        est.len() + 1 >= all && est.values().all(|(_, half)| half.sinh() <= precision)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimates(cells: &[(u64, f64, f64)]) -> Estimates {
        cells
            .iter()
            .map(|(cpu, rate, half)| {
                (
                    CellId {
                        cpu_milli: *cpu,
                        memory_rank: 0,
                        params: BTreeMap::new(),
                    },
                    (*rate, *half),
                )
            })
            .collect()
    }

    /// Three sweeps, one of them off: each pair is counted once a direction, and the off
    /// sweep's estimate falls outside both others' intervals.
    #[test]
    fn coverage_counts_each_direction() {
        let sweeps = [
            estimates(&[(500, -1.0, 0.05)]),
            estimates(&[(500, -1.02, 0.05)]),
            estimates(&[(500, -1.2, 0.05)]),
        ];
        let c = Coverage::of(&sweeps);
        assert_eq!(c.pairs, 6);
        assert_eq!(c.inside, 2);
        assert!((c.median_half_width - 0.05f64.sinh()).abs() < 1e-12);
        // Widened to hold every pair: the off sweep's 0.2 from the others needs 4 times.
        let all = width_at_share(&sweeps, 1.0);
        assert!((all - 0.2f64.sinh()).abs() < 1e-6, "{all}");
    }
}
