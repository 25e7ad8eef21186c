//! Feedback from where a job ran: cells its matrix predicted, measured while it ran (a
//! deploy's rounds at that grant), are written back as measured cells, and the rest of the
//! matrix is predicted again from them.

use super::library::Library;
use super::{PredictError, Prediction, Settings, predict_matrix};
use crate::matrix::{Cell, CellSource, Matrix, RelativeRate, Throughput};

/// Fewest runs at a grant that make a measured cell where no grant was seen twice: one run
/// alone has no spread to give an interval. Where some grant was, one run is enough: its
/// interval takes the spread the runs showed at the grants seen more than once.
pub const MIN_RUNS: usize = 2;

/// What a job did at one grant while it ran: its rate over each stretch it held the grant.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub cpu: f64,
    pub memory_bytes: u64,
    /// Samples/s over each stretch (a deploy's round), start-ups left out.
    pub rates: Vec<f64>,
    /// Seconds the rates span, in all.
    pub seconds: f64,
    /// Where it was seen, for the cell's note (`a deploy's rounds beside other jobs`).
    pub seen: String,
}

/// A cell of the top memory level that was predicted, before and after the feedback.
#[derive(Debug, Clone, PartialEq)]
pub struct FedCell {
    pub cpu: f64,
    pub before: Throughput,
    pub after: Throughput,
    /// Measured by the feedback itself (else predicted again from it).
    pub measured: bool,
}

/// A matrix after feedback, and what changed.
#[derive(Debug, Clone)]
pub struct FedBack {
    pub prediction: Prediction,
    pub cells: Vec<FedCell>,
}

impl FedBack {
    /// The CPU levels the feedback measured.
    pub fn measured_cpus(&self) -> Vec<f64> {
        (self.cells.iter())
            .filter(|c| c.measured)
            .map(|c| c.cpu)
            .collect()
    }
}

/// `matrix` with each predicted cell of its top memory level that `observed` saw (at its CPU
/// level, with that memory or more; once, where some grant was seen [`MIN_RUNS`] times, else
/// that often) made a measured cell, and the rest predicted again from `library`. `None` where no predicted cell was seen so, or
/// the matrix holds several parameter combinations (a grant does not say which one ran).
pub fn feed_back(
    matrix: &Matrix,
    observed: &[Observation],
    library: &Library,
    settings: &Settings,
) -> Result<Option<FedBack>, PredictError> {
    let mut params = matrix.cells.iter().map(|c| &c.params);
    let first = params.next();
    if params.any(|p| Some(p) != first) {
        return Ok(None);
    }
    let Some(top) = matrix.cells.iter().map(|c| c.memory_bytes).max() else {
        return Ok(None);
    };
    let predicted_top: Vec<&Cell> = (matrix.cells.iter())
        .filter(|c| c.source == CellSource::Predicted && c.memory_bytes == top)
        .collect();
    let reference = (matrix.cells.iter())
        .filter(|c| c.source == CellSource::Measured && c.memory_bytes == top)
        .filter_map(|c| Some((c.cpu, c.samples_per_s()?)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, rate)| rate);
    let spread = pooled_log_spread(observed);
    let min_runs = if spread.is_some() { 1 } else { MIN_RUNS };
    let mut fed = matrix.clone();
    let mut measured = Vec::new();
    for cell in &predicted_top {
        let seen: Vec<&Observation> = (observed.iter())
            .filter(|o| same_level(o.cpu, cell.cpu) && o.memory_bytes as f64 >= top as f64 * 0.999)
            .collect();
        let rates: Vec<f64> = seen.iter().flat_map(|o| o.rates.iter().copied()).collect();
        if rates.len() < min_runs {
            continue;
        }
        let seconds = seen.iter().map(|o| o.seconds).sum();
        let mut wheres: Vec<&str> = seen.iter().map(|o| o.seen.as_str()).collect();
        wheres.dedup();
        let new = measured_cell(cell, &rates, spread, seconds, reference, &wheres.join("; "));
        measured.push(cell.cpu);
        if let Some(slot) =
            (fed.cells.iter_mut()).find(|c| c.memory_bytes == top && c.cpu == cell.cpu)
        {
            *slot = new;
        }
    }
    if measured.is_empty() {
        return Ok(None);
    }
    let prediction = predict_matrix(&fed, &[], library, settings)?;
    let after_at = |cpu: f64| {
        (prediction.matrix.cells.iter())
            .find(|c| c.memory_bytes == top && c.cpu == cpu)
            .and_then(|c| c.throughput.clone())
    };
    let cells = (predicted_top.iter())
        .filter_map(|c| {
            Some(FedCell {
                cpu: c.cpu,
                before: c.throughput.clone()?,
                after: after_at(c.cpu)?,
                measured: measured.contains(&c.cpu),
            })
        })
        .collect();
    Ok(Some(FedBack { prediction, cells }))
}

fn same_level(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// The variance of a run's log rate about its grant's mean, pooled over the grants seen more
/// than once, with its degrees of freedom; `None` where none was.
fn pooled_log_spread(observed: &[Observation]) -> Option<(f64, usize)> {
    let (mut ss, mut df) = (0.0, 0);
    for o in observed.iter().filter(|o| o.rates.len() >= 2) {
        let logs: Vec<f64> = o.rates.iter().map(|r| r.ln()).collect();
        let m = crate::stats::mean(&logs);
        ss += logs.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        df += logs.len() - 1;
    }
    (df > 0).then(|| (ss / df as f64, df))
}

/// The measured cell `rates` make of the predicted `cell`: their mean with its Student-t 95%
/// interval (the rates are independent stretches of the running job), from the spread pooled
/// over every grant seen twice or more (`spread`, a log variance and its degrees of freedom)
/// where there is one, else from their own; relative to `reference` where the matrix has one.
fn measured_cell(
    cell: &Cell,
    rates: &[f64],
    spread: Option<(f64, usize)>,
    seconds: f64,
    reference: Option<f64>,
    seen: &str,
) -> Cell {
    let (mean, half) = match spread {
        Some((variance, df)) => {
            let mean = crate::stats::mean(rates);
            let h = crate::stats::t_975(df) * (variance / rates.len() as f64).sqrt();
            (mean, mean * (h.exp() - 1.0))
        }
        None => crate::stats::mean_ci95(rates),
    };
    let mut out = Cell::at(
        cell.cpu,
        cell.memory_bytes,
        cell.params.clone(),
        CellSource::Measured,
    );
    out.throughput = Some(Throughput {
        samples_per_s: mean,
        ci95_low: (mean - half).max(0.0),
        ci95_high: mean + half,
        windows: rates.len() as u32,
        measured_s: seconds,
        launches: Vec::new(),
    });
    out.relative = reference.filter(|r| *r > 0.0).map(|r| {
        RelativeRate::unadjusted(
            mean / r,
            [(mean - half).max(0.0) / r, (mean + half) / r],
            0,
            0,
        )
    });
    out.note = Some(format!(
        "measured where the job ran, {} stretch(es) over {seconds:.0} s ({seen}); predicted \
         before at {:.4} samples/s",
        rates.len(),
        cell.samples_per_s().unwrap_or(0.0)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::SETTINGS;

    /// The zoo's resnet50 predicted from its 3- and 24-CPU cells, the other models its library.
    fn predicted_resnet50() -> (Matrix, Matrix, Library) {
        let zoo = crate::matrix::shipped_zoo();
        let truth = (zoo.iter())
            .find(|(name, _, _)| *name == "resnet50")
            .map(|(_, _, m)| m.clone())
            .expect("the zoo holds resnet50");
        let top = truth.cells.iter().map(|c| c.memory_bytes).max().unwrap();
        let mut partial = truth.clone();
        partial
            .cells
            .retain(|c| c.memory_bytes == top && (c.cpu == 3.0 || c.cpu == 24.0));
        for c in &mut partial.cells {
            c.source = CellSource::Measured;
        }
        let library = Library::zoo().without("resnet50");
        let predicted = predict_matrix(&partial, &[], &library, &SETTINGS).unwrap();
        (truth, predicted.matrix, library)
    }

    fn rate_at(m: &Matrix, cpu: f64) -> f64 {
        let top = m.cells.iter().map(|c| c.memory_bytes).max().unwrap();
        (m.cells.iter())
            .find(|c| c.memory_bytes == top && c.cpu == cpu)
            .and_then(Cell::samples_per_s)
            .unwrap()
    }

    #[test]
    fn cells_seen_running_become_measured_and_the_rest_moves_toward_the_truth() {
        let (truth, predicted, library) = predicted_resnet50();
        let top = truth.cells.iter().map(|c| c.memory_bytes).max().unwrap();
        // Seen at 6 and 9 CPUs, three rounds each, within 2% of the truth.
        let observed: Vec<Observation> = [6.0, 9.0]
            .iter()
            .map(|&cpu| {
                let r = rate_at(&truth, cpu);
                Observation {
                    cpu,
                    memory_bytes: top,
                    rates: vec![r * 0.98, r, r * 1.02],
                    seconds: 60.0,
                    seen: "test".into(),
                }
            })
            .collect();
        let fed = feed_back(&predicted, &observed, &library, &SETTINGS)
            .unwrap()
            .expect("two predicted cells were seen");
        assert_eq!(fed.measured_cpus(), vec![6.0, 9.0]);
        let after = &fed.prediction.matrix;
        for cpu in [6.0, 9.0] {
            let cell = (after.cells.iter())
                .find(|c| c.memory_bytes == top && c.cpu == cpu)
                .unwrap();
            assert_eq!(cell.source, CellSource::Measured);
            let t = cell.throughput.as_ref().unwrap();
            assert!(t.ci95_low < rate_at(&truth, cpu) && rate_at(&truth, cpu) < t.ci95_high);
        }
        let error = |m: &Matrix| {
            let cells: Vec<f64> = [1.0, 2.0, 4.0, 5.0, 12.0]
                .iter()
                .map(|&c| (rate_at(m, c) / rate_at(&truth, c) - 1.0).abs())
                .collect();
            crate::stats::mean(&cells)
        };
        assert!(
            error(after) <= error(&predicted) + 1e-9,
            "mean error of the cells left predicted: {:.3} after, {:.3} before",
            error(after),
            error(&predicted)
        );
    }

    #[test]
    fn one_round_alone_or_another_memory_level_is_not_a_measurement() {
        let (truth, predicted, library) = predicted_resnet50();
        let top = truth.cells.iter().map(|c| c.memory_bytes).max().unwrap();
        let seen = |rates: Vec<f64>, memory_bytes: u64| Observation {
            cpu: 6.0,
            memory_bytes,
            rates,
            seconds: 20.0,
            seen: "test".into(),
        };
        let once = [seen(vec![rate_at(&truth, 6.0)], top)];
        assert!(
            feed_back(&predicted, &once, &library, &SETTINGS)
                .unwrap()
                .is_none()
        );
        let below = [seen(vec![1.0, 1.1], top / 2)];
        assert!(
            feed_back(&predicted, &below, &library, &SETTINGS)
                .unwrap()
                .is_none()
        );
        // Once, beside a grant seen three times: the spread of those gives it an interval.
        let thrice = Observation {
            cpu: 3.0,
            ..seen(vec![1.0, 1.02, 0.98], top)
        };
        let with_spread = [once[0].clone(), thrice];
        let fed = feed_back(&predicted, &with_spread, &library, &SETTINGS)
            .unwrap()
            .expect("one round is a measurement where the spread is known");
        assert_eq!(fed.measured_cpus(), vec![6.0]);
        let cell = fed.cells.iter().find(|c| c.measured).unwrap();
        let t = &cell.after;
        let half = (t.ci95_high - t.ci95_low) / 2.0 / t.samples_per_s;
        assert!(half > 0.02 && half < 0.5, "±{:.1}%", 100.0 * half);
    }
}
