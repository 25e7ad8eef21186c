//! One point measured on several launches of the job. A scheduler that reads a cell starts the
//! job again on that allocation, so what it needs is where another launch lands: the launches'
//! mean, with an interval that holds both the variation within a launch (its windows) and the
//! variation between launches (where the job's threads and pages land, what else ran).

use crate::matrix::visits::{LaunchOfVisits, launch_of_visits};
use crate::matrix::{Cell, CellSource, LaunchRate, LaunchSpread, Throughput, Visit};

/// The spread of one launch's rate around the mean of `rates`, as a standard deviation in
/// samples/s: the launches' sample standard deviation, but never less than what their own
/// intervals say a single launch varies by (two launches that happen to agree prove no
/// tighter spread than either measured). `None` for fewer than two launches.
pub fn launch_sd(rates: &[Throughput]) -> Option<f64> {
    let (between, within) = variances(rates)?;
    Some(between.max(within).sqrt())
}

/// The sample variance of the launches' rates, and the mean variance one launch's own
/// interval says it has (samples/s squared); `None` for fewer than two launches.
fn variances(rates: &[Throughput]) -> Option<(f64, f64)> {
    let k = rates.len();
    if k < 2 {
        return None;
    }
    let levels: Vec<f64> = rates.iter().map(|t| t.samples_per_s).collect();
    let between = crate::stats::mean_sd(&levels).1.powi(2);
    let within = rates
        .iter()
        .map(|t| ((t.ci95_high - t.ci95_low) / 2.0 / 1.96).powi(2))
        .sum::<f64>()
        / k as f64;
    Some((between, within))
}

/// The throughput of one point from the throughputs of its launches: their mean, and a 95%
/// interval for where one more launch lands (`mean ± 1.96 · sd · sqrt(1 + 1/k)`, a normal
/// approximation: with two or three launches a Student-t interval would be several times wider
/// than any launch ever lands). One launch is returned as it is.
pub fn combine_throughputs(launches: &[Throughput]) -> Option<Throughput> {
    let (first, k) = (launches.first()?, launches.len());
    let Some(sd) = launch_sd(launches) else {
        return Some(first.clone());
    };
    let mean = launches.iter().map(|t| t.samples_per_s).sum::<f64>() / k as f64;
    let half = 1.96 * sd * (1.0 + 1.0 / k as f64).sqrt();
    Some(Throughput {
        samples_per_s: mean,
        ci95_low: (mean - half).max(0.0),
        ci95_high: mean + half,
        windows: launches.iter().map(|t| t.windows).sum(),
        measured_s: launches.iter().map(|t| t.measured_s).sum(),
        launches: launches
            .iter()
            .map(|t| LaunchRate {
                samples_per_s: t.samples_per_s,
                ci95_low: t.ci95_low,
                ci95_high: t.ci95_high,
                measured_unix_s: None,
                left_out_unix_s: Vec::new(),
            })
            .collect(),
    })
}

/// The interval one launch measured and the spans inside it its rate leaves out.
type Span = (Option<[f64; 2]>, Vec<[f64; 2]>);

/// Records in `t`'s launches the interval each measured (`spans`, in launch order).
fn with_spans(mut t: Throughput, spans: impl IntoIterator<Item = Span>) -> Throughput {
    for (launch, (span, left_out)) in t.launches.iter_mut().zip(spans) {
        launch.measured_unix_s = span;
        launch.left_out_unix_s = left_out;
    }
    t
}

/// The intervals the launches behind `cell`'s rate measured, in launch order: the cell's own
/// where it is one launch.
fn launch_spans(cell: &Cell) -> Vec<Span> {
    (cell.launches().into_iter())
        .map(|l| (l.measured_unix_s, l.left_out_unix_s))
        .collect()
}

/// The cell of one point measured on `cells`' launches: the first launch's cell (its telemetry
/// and notes) with the combined throughput and the wall time of all. Launches without a rate
/// are left out; `None` when none has one.
pub fn combine_cells(cells: &[Cell]) -> Option<Cell> {
    let measured: Vec<&Cell> = cells.iter().filter(|c| c.throughput.is_some()).collect();
    let first = *measured.first()?;
    let rates: Vec<Throughput> = measured
        .iter()
        .filter_map(|c| c.throughput.clone())
        .collect();
    let mut cell = first.clone();
    // One rate per cell (each cell's combined rate, if it had several): one interval each.
    let spans = measured
        .iter()
        .map(|c| (c.measured_unix_s, c.left_out_unix_s.clone()));
    cell.throughput = combine_throughputs(&rates).map(|t| with_spans(t, spans));
    cell.wall_s = cells.iter().map(|c| c.wall_s).sum();
    Some(cell)
}

/// Each launch behind `t` as a throughput of its own: `t` itself where it is one launch.
pub fn launch_rates(t: &Throughput) -> Vec<Throughput> {
    if t.launches.is_empty() {
        return vec![t.clone()];
    }
    t.launches
        .iter()
        .map(|l| Throughput {
            samples_per_s: l.samples_per_s,
            ci95_low: l.ci95_low,
            ci95_high: l.ci95_high,
            windows: 0,
            measured_s: 0.0,
            launches: Vec::new(),
        })
        .collect()
}

/// `cell` with one more launch, `new`, measured at the same point: the throughput of all
/// launches ([`combine_throughputs`]), the windows, measuring time and wall time of both.
/// A launch without a rate (it failed) adds nothing.
pub fn add_launch(cell: &Cell, new: &Cell) -> Cell {
    let (Some(old), Some(more)) = (&cell.throughput, &new.throughput) else {
        return cell.clone();
    };
    let mut rates = launch_rates(old);
    rates.push(more.clone());
    let spans = launch_spans(cell).into_iter().chain(launch_spans(new));
    combined(cell.clone(), (old, more), &rates, spans, new.wall_s)
}

/// `out` with the throughput of `rates` (the launches' spans recorded), the windows and
/// measuring time of `old` and `more` together, and `more`'s wall time added.
fn combined(
    mut out: Cell,
    (old, more): (&Throughput, &Throughput),
    rates: &[Throughput],
    spans: impl IntoIterator<Item = Span>,
    wall_s: f64,
) -> Cell {
    out.throughput = combine_throughputs(rates).map(|t| Throughput {
        windows: old.windows + more.windows,
        measured_s: old.measured_s + more.measured_s,
        ..with_spans(t, spans)
    });
    out.wall_s += wall_s;
    out
}

/// `cell` with `new`'s visits added, where both have visits (a live launch walking its points
/// in rounds): each launch's rate from its visits ([`launch_of_visits`]), the cell's from its
/// launches ([`combine_throughputs`]), so a launch counts once however many visits it made.
/// Disturbed visits are kept in the record but left out of the rate wherever the cell has
/// undisturbed ones; a first measurement that was disturbed gives way to an undisturbed one's
/// interference and note.
/// Otherwise `new` is another launch ([`add_launch`]). A measured visit replaces a failed cell.
pub fn add_visits(cell: &Cell, new: &Cell) -> Cell {
    let (Some(old), Some(more)) = (&cell.throughput, &new.throughput) else {
        // A visit that measured stands for a point whose earlier one failed (re-capped, the
        // job stalled there): the live check reads the failure from the missing ratio.
        if cell.throughput.is_none() && !new.visits.is_empty() {
            return Cell {
                wall_s: cell.wall_s + new.wall_s,
                ..new.clone()
            };
        }
        return cell.clone();
    };
    if cell.visits.is_empty() || new.visits.is_empty() {
        return add_launch(cell, new);
    }
    let mut out = cell.clone();
    out.visits.extend(new.visits.iter().cloned());
    let quiet = |c: &Cell| c.visits.iter().all(|v| !v.disturbed);
    if !quiet(cell) && quiet(new) {
        out.interference = new.interference.clone();
        out.note = new.note.clone();
    }
    let undisturbed = out.visits.iter().any(|v| !v.disturbed);
    let counted: Vec<&Visit> = (out.visits.iter())
        .filter(|v| !(undisturbed && v.disturbed))
        .collect();
    let mut ids: Vec<u32> = Vec::new();
    for v in &counted {
        if !ids.contains(&v.launch) {
            ids.push(v.launch);
        }
    }
    let launches: Vec<LaunchOfVisits> = (ids.iter())
        .filter_map(|id| {
            let of_launch: Vec<&Visit> = (counted.iter().copied())
                .filter(|v| v.launch == *id)
                .collect();
            launch_of_visits(&of_launch)
        })
        .collect();
    let rates: Vec<Throughput> = (launches.iter())
        .map(|l| Throughput {
            samples_per_s: l.samples_per_s,
            ci95_low: l.ci95_low,
            ci95_high: l.ci95_high,
            windows: 0,
            measured_s: l.measured_s,
            launches: Vec::new(),
        })
        .collect();
    if let [only] = &launches[..] {
        out.measured_unix_s = Some(only.measured_unix_s);
        out.left_out_unix_s = only.left_out_unix_s.clone();
    }
    let spans = (launches.iter()).map(|l| (Some(l.measured_unix_s), l.left_out_unix_s.clone()));
    combined(out, (old, more), &rates, spans, new.wall_s)
}

/// `cell` as its first visit measured it: the rate, interval and span of that visit alone
/// (the wall time stays the cell's). A cell without visits is kept as it is.
pub fn first_visit_only(cell: &Cell) -> Cell {
    let Some(v) = cell.visits.first() else {
        return cell.clone();
    };
    Cell {
        throughput: Some(Throughput {
            samples_per_s: v.samples_per_s,
            ci95_low: v.ci95_low,
            ci95_high: v.ci95_high,
            windows: v.windows,
            measured_s: v.measured_s,
            launches: Vec::new(),
        }),
        measured_unix_s: Some(v.measured_unix_s),
        left_out_unix_s: v.left_out_unix_s.clone(),
        visits: vec![v.clone()],
        ..cell.clone()
    }
}

/// A measured cell's measurement as a visit on launch `launch`; `None` without a rate or span.
pub fn visit_of(cell: &Cell, launch: u32) -> Option<Visit> {
    let t = cell.throughput.as_ref()?;
    Some(Visit {
        launch,
        samples_per_s: t.samples_per_s,
        ci95_low: t.ci95_low,
        ci95_high: t.ci95_high,
        measured_s: t.measured_s,
        windows: t.windows,
        measured_unix_s: cell.measured_unix_s?,
        left_out_unix_s: cell.left_out_unix_s.clone(),
        disturbed: cell.interference.as_ref().is_some_and(|i| i.disturbed),
        host: None,
    })
}

/// The spread between launches, pooled over the measured cells that had several launches (a
/// modelled cell repeats its measured cell's launches and adds nothing): the standard
/// deviation of a launch's rate relative to its cell's mean. `None` where no measured cell has
/// two launches.
pub fn pooled_spread(cells: &[Cell]) -> Option<LaunchSpread> {
    let (mut squares, mut df, mut launches) = (0.0, 0u32, 0u32);
    let measured = cells.iter().filter(|c| c.source == CellSource::Measured);
    for t in measured.filter_map(|c| c.throughput.as_ref()) {
        let k = t.launches.len();
        let mean = t.launches.iter().map(|l| l.samples_per_s).sum::<f64>() / k.max(1) as f64;
        if k < 2 || mean.is_nan() || mean <= 0.0 {
            continue;
        }
        squares += t
            .launches
            .iter()
            .map(|l| (l.samples_per_s / mean - 1.0).powi(2))
            .sum::<f64>();
        df += k as u32 - 1;
        launches += k as u32;
    }
    let relative_sd = (squares / df.max(1) as f64).sqrt();
    (df > 0 && relative_sd.is_finite()).then_some(LaunchSpread {
        relative_sd,
        degrees_of_freedom: df,
        launches,
    })
}

/// `t` with an interval at least as wide as the spread between launches says another launch
/// may land: `q · relative_sd · rate · sqrt(1 + 1/k)` on each side, `k` the launches behind `t`
/// and `q` the 95% Student-t quantile for the spread's degrees of freedom. The spread is an
/// estimate from a few launches, so the interval for the next launch is Student's, not the
/// normal's: with three degrees of freedom `q` is 3.18, not 1.96 (measured: 86% of reruns
/// inside the normal's intervals, where 95% was claimed). Never narrower than it was, and the
/// same when applied twice.
pub fn hold_launch_spread(t: &Throughput, spread: &LaunchSpread) -> Throughput {
    let k = t.launches.len().max(1) as f64;
    let rate = t.samples_per_s;
    let half = spread.quantile() * spread.relative_sd * rate * (1.0 + 1.0 / k).sqrt();
    let mut held = t.clone();
    if half.is_finite() {
        held.ci95_low = t.ci95_low.min(rate - half).max(0.0);
        held.ci95_high = t.ci95_high.max(rate + half);
    }
    held
}

/// Holds the spread pooled over `cells` ([`pooled_spread`]) in every one of their intervals
/// ([`hold_launch_spread`]); the spread, where one was measured.
pub fn hold_pooled_spread(cells: &mut [Cell]) -> Option<LaunchSpread> {
    let spread = pooled_spread(cells)?;
    for cell in cells.iter_mut() {
        if let Some(t) = &cell.throughput {
            cell.throughput = Some(hold_launch_spread(t, &spread));
        }
    }
    Some(spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(rate: f64, half: f64) -> Throughput {
        Throughput {
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            windows: 5,
            measured_s: 10.0,
            launches: Vec::new(),
        }
    }

    #[test]
    fn one_launch_is_kept_as_it_is() {
        assert_eq!(combine_throughputs(&[tp(100.0, 2.0)]), Some(tp(100.0, 2.0)));
        assert_eq!(combine_throughputs(&[]), None);
    }

    /// Two launches 20% apart with tight intervals each: the combined interval holds both, and
    /// one more launch as far out as either.
    #[test]
    fn launches_apart_widen_the_interval_to_hold_them() {
        let t = combine_throughputs(&[tp(90.0, 1.0), tp(110.0, 1.0)]).unwrap();
        assert_eq!(t.samples_per_s, 100.0);
        assert!(t.ci95_low < 90.0 && t.ci95_high > 110.0, "{t:?}");
        assert_eq!(t.launches.len(), 2);
        assert_eq!(t.windows, 10);
    }

    /// Two launches that agree exactly: the interval is still as wide as one launch's own.
    #[test]
    fn agreeing_launches_keep_the_width_one_launch_measured() {
        let t = combine_throughputs(&[tp(100.0, 4.0), tp(100.0, 4.0)]).unwrap();
        let half = (t.ci95_high - t.ci95_low) / 2.0;
        assert!(half >= 4.0, "{t:?}");
    }

    /// A measured cell of one visit at `rate` on `launch`, measured from `start` for 4 s.
    fn visited(launch: u32, rate: f64, start: f64) -> Cell {
        let mut c = cell(&[rate]);
        c.measured_unix_s = Some([start, start + 4.0]);
        c.throughput.as_mut().unwrap().measured_s = 4.0;
        c.visits = visit_of(&c, launch).into_iter().collect();
        c
    }

    /// Three visits on one launch and one on another: two launches, the first its visits'
    /// mean over their span with the gaps left out; every visit kept for the blocks.
    #[test]
    fn visits_of_one_launch_make_one_launch() {
        let mut c = visited(1, 100.0, 0.0);
        for (launch, rate, start) in [(1, 104.0, 10.0), (1, 96.0, 20.0), (2, 120.0, 40.0)] {
            c = add_visits(&c, &visited(launch, rate, start));
            if launch == 1 {
                assert_eq!(c.launches().len(), 1);
                assert_eq!(c.measured_unix_s, Some([0.0, start + 4.0]));
            }
        }
        assert_eq!(c.visits.len(), 4);
        let launches = c.launches();
        assert_eq!(launches.len(), 2, "{launches:?}");
        assert!((launches[0].samples_per_s - 100.0).abs() < 1e-9);
        assert_eq!(launches[0].measured_unix_s, Some([0.0, 24.0]));
        assert_eq!(launches[0].left_out_unix_s, vec![[4.0, 10.0], [14.0, 20.0]]);
        assert_eq!(launches[1].samples_per_s, 120.0);
        assert_eq!(c.samples_per_s(), Some(110.0));
        // A cell without visits (a relaunched sweep's) takes another launch.
        let plain = add_launch(&cell(&[100.0]), &cell(&[110.0]));
        assert_eq!(add_visits(&cell(&[100.0]), &cell(&[110.0])), plain);
    }

    /// A cell cut back to its first visit is that visit's measurement: a visit added to it
    /// gives what the two visits give together, and nothing of the visits cut is left.
    #[test]
    fn a_cell_cut_to_its_first_visit_is_that_visit() {
        let first = visited(1, 100.0, 0.0);
        let mut c = add_visits(&first, &visited(1, 60.0, 10.0));
        c = add_visits(&c, &visited(2, 120.0, 20.0));
        let cut = first_visit_only(&c);
        assert_eq!(cut.visits, first.visits);
        assert_eq!(cut.samples_per_s(), Some(100.0));
        assert_eq!(cut.measured_unix_s, Some([0.0, 4.0]));
        assert!(cut.launches().len() <= 1, "{cut:?}");
        assert_eq!(cut.wall_s, c.wall_s, "the time spent stays");
        let again = add_visits(&cut, &visited(2, 120.0, 20.0));
        assert_eq!(again.samples_per_s(), Some(110.0));
    }

    /// Visits a hog disturbed are kept in the record, left out of the rate while undisturbed
    /// ones exist, and stand for the cell where none does.
    #[test]
    fn disturbed_visits_leave_the_rate_to_the_undisturbed_ones() {
        let hogged = |launch: u32, rate: f64, start: f64| {
            let mut v = visited(launch, rate, start);
            v.visits[0].disturbed = true;
            v.note = Some("disturbed".into());
            v
        };
        let mut c = add_visits(&visited(1, 100.0, 0.0), &hogged(2, 50.0, 10.0));
        c = add_visits(&c, &hogged(3, 55.0, 20.0));
        assert_eq!(c.visits.len(), 3);
        assert_eq!(c.launches().len(), 1, "{:?}", c.launches());
        assert_eq!(c.samples_per_s(), Some(100.0));
        assert_eq!(c.note, None);
        // Disturbed from the start: the first undisturbed visit takes over, note and all.
        let mut d = add_visits(&hogged(1, 50.0, 0.0), &hogged(1, 52.0, 10.0));
        assert!((d.samples_per_s().unwrap() - 51.0).abs() < 1e-9, "{d:?}");
        d = add_visits(&d, &visited(2, 100.0, 20.0));
        assert_eq!((d.samples_per_s(), d.note.clone()), (Some(100.0), None));
    }

    fn cell(launches: &[f64]) -> Cell {
        let rates: Vec<Throughput> = launches.iter().map(|&r| tp(r, 1.0)).collect();
        Cell {
            memory_bytes: 1,
            source: crate::matrix::CellSource::Measured,
            throughput: combine_throughputs(&rates),
            note: None,
            ..crate::matrix::fixtures::cell(1.0)
        }
    }

    /// Two points, launched 3 and 2 times: the pooled relative spread is the root of the summed
    /// squared relative deviations over the launches beyond each point's first.
    #[test]
    fn the_spread_pools_relative_deviations_over_points() {
        let cells = [
            cell(&[90.0, 100.0, 110.0]),
            cell(&[190.0, 210.0]),
            cell(&[50.0]),
        ];
        let s = pooled_spread(&cells).unwrap();
        let squares = 0.01 + 0.0 + 0.01 + 0.0025 + 0.0025;
        assert!(
            (s.relative_sd - (squares / 3.0f64).sqrt()).abs() < 1e-12,
            "{s:?}"
        );
        assert_eq!((s.degrees_of_freedom, s.launches), (3, 5));
        assert_eq!(pooled_spread(&[cell(&[50.0])]), None);
        // A modelled copy of a measured cell counts nothing twice.
        let mut modelled = cell(&[190.0, 210.0]);
        modelled.source = CellSource::Modelled;
        assert_eq!(
            pooled_spread(&[
                cells[0].clone(),
                cells[1].clone(),
                cells[2].clone(),
                modelled
            ]),
            Some(s)
        );
    }

    /// A one-launch cell of 100 with a tight interval, under a 10% spread measured with two
    /// degrees of freedom: the interval now holds where another launch lands (Student's 4.3027
    /// * 10 * sqrt 2 on each side).
    #[test]
    fn a_one_launch_cell_is_widened_by_the_spread() {
        let spread = LaunchSpread {
            relative_sd: 0.1,
            degrees_of_freedom: 2,
            launches: 3,
        };
        let t = hold_launch_spread(&tp(100.0, 1.0), &spread);
        let half = crate::stats::t_975(2) * 10.0 * 2f64.sqrt();
        assert!((crate::stats::t_975(2) - 4.3027).abs() < 1e-4);
        assert!((t.ci95_high - (100.0 + half)).abs() < 1e-9, "{t:?}");
        assert!((t.ci95_low - (100.0 - half)).abs() < 1e-9, "{t:?}");
        assert_eq!(t.samples_per_s, 100.0);
    }

    /// A point measured once, then once more: the cell is the two launches' mean with both
    /// listed; a failed launch adds nothing.
    #[test]
    fn another_launch_joins_the_cell() {
        let spanned = |rate: f64, start: f64| Cell {
            measured_unix_s: Some([start, start + 10.0]),
            ..cell(&[rate])
        };
        let one = spanned(100.0, 1000.0);
        let mut two = spanned(120.0, 2000.0);
        two.wall_s = 2.0;
        let joined = add_launch(&one, &two);
        let t = joined.throughput.as_ref().unwrap();
        assert_eq!(t.samples_per_s, 110.0);
        assert_eq!(t.launches.len(), 2);
        assert_eq!((t.windows, joined.wall_s), (10, 3.0));
        let three = add_launch(&joined, &spanned(110.0, 3000.0));
        let spans: Vec<_> = (three.throughput.as_ref().unwrap().launches.iter())
            .map(|l| l.measured_unix_s.map(|s| s[0]))
            .collect();
        assert_eq!(spans, [Some(1000.0), Some(2000.0), Some(3000.0)]);
        // The cell keeps its first launch's interval.
        assert_eq!(three.measured_unix_s, Some([1000.0, 1010.0]));
        // Cells combined at once list each one's interval too.
        let combined = combine_cells(&[one.clone(), two.clone()]).unwrap();
        let first = &combined.throughput.as_ref().unwrap().launches;
        assert_eq!(first[1].measured_unix_s, Some([2000.0, 2010.0]));
        let mut failed = cell(&[1.0]);
        failed.throughput = None;
        assert_eq!(add_launch(&joined, &failed), joined);
    }

    proptest::proptest! {
        /// Holding the spread never narrows an interval, keeps the rate inside it, and
        /// changes nothing when applied again (a resumed sweep applies it to cells it already
        /// widened).
        #[test]
        fn holding_the_spread_widens_once_and_only_widens(
            rate in 0.0f64..1e6,
            below in 0.0f64..1.0,
            above in 0.0f64..1.0,
            sd in 0.0f64..2.0,
            extra in 0usize..4,
        ) {
            let mut t = Throughput {
                samples_per_s: rate,
                ci95_low: rate * (1.0 - below),
                ci95_high: rate * (1.0 + above),
                windows: 3,
                measured_s: 1.0,
                launches: Vec::new(),
            };
            t.launches = (0..extra).map(|_| LaunchRate { samples_per_s: rate, ci95_low: rate, ci95_high: rate, measured_unix_s: None, left_out_unix_s: Vec::new() }).collect();
            let spread = LaunchSpread { relative_sd: sd, degrees_of_freedom: 2, launches: 3 };
            let once = hold_launch_spread(&t, &spread);
            proptest::prop_assert!(once.ci95_low <= t.ci95_low && once.ci95_high >= t.ci95_high);
            proptest::prop_assert!(once.ci95_low <= rate && rate <= once.ci95_high);
            proptest::prop_assert!(once.ci95_low >= 0.0);
            proptest::prop_assert_eq!(hold_launch_spread(&once, &spread), once);
        }
    }
}
