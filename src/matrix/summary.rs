//! Plain-text rendering of a matrix: one CPU x memory table per combination of other parameters.

use super::checks::{check, is_disturbed};
use super::{Cell, CellKey, CellSource, LiveCheck, Matrix};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::units::GIB;

/// Renders the matrix as tables of samples/s. Modelled values are marked `~`, values measured
/// while other processes took the job's CPUs `!`, failed cells `failed`, infeasible cells `OOM`,
/// missing cells `-`; under the tables, curves that fall with more CPU and why cells failed.
pub fn render_summary(matrix: &Matrix) -> String {
    let mut out = String::new();
    write_header(&mut out, matrix);
    write_tables(&mut out, matrix);
    write_checks(&mut out, matrix);
    write_notes(&mut out, matrix, Notes::Full);
    out
}

/// The end of a sweep on one screen: the job and its machine kind, the relative rates' widths
/// against the precision asked for, the tables with each cell's ±, the best-case demand, the
/// checks and one line per cell with a note. `profiler show` and `--verbose` print the rest.
pub fn render_brief(matrix: &Matrix, precision: f64) -> String {
    let mut out = String::new();
    let h = &matrix.header;
    let _ = writeln!(
        out,
        "{}: {} cells on {}",
        h.job.name,
        matrix.cells.len(),
        h.machine
            .as_ref()
            .map_or(super::UNKNOWN_KIND, |m| m.kind_key())
    );
    if let Some(line) = super::cell_model::describe(&matrix.cells) {
        let _ = writeln!(out, "{line}; ±{:.1}% asked", 100.0 * precision);
    }
    write_tables(&mut out, matrix);
    write_checks(&mut out, matrix);
    let demand = super::render_demands(
        matrix,
        &super::ServerShape::default(),
        super::DEFAULT_EPS,
        super::CostWeights::default(),
    );
    if let Ok(demand) = demand {
        out.push_str(&demand);
    }
    write_notes(&mut out, matrix, Notes::OneLine);
    out
}

/// The job, where it was measured, and what the header says of the sweep as a whole.
fn write_header(out: &mut String, matrix: &Matrix) {
    let h = &matrix.header;
    let _ = writeln!(
        out,
        "{} ({}), {} GPU(s), {} cells{}",
        h.job.name,
        h.job.model,
        h.job.gpus,
        matrix.cells.len(),
        h.machine
            .as_ref()
            .map(|m| format!(
                ", measured on {} ({} CPUs, cgroup {})",
                m.hostname, m.cpus, m.cgroup
            ))
            .unwrap_or_default()
    );
    match &h.machine {
        Some(m) => {
            let _ = writeln!(out, "machine kind: {}", m.describe());
        }
        None => {
            let _ = writeln!(out, "machine kind: unknown (the header names no machine)");
        }
    }
    if let Some(p) = &h.provenance {
        let _ = writeln!(out, "provenance: {p}");
    }
    if let Some(v) = &h.validation {
        let _ = writeln!(out, "{}", v.summary(h.cache_model.as_ref().map(|c| c.kind)));
    }
    if let Some(check) = &h.live_check {
        let _ = writeln!(out, "{}", live_check_line(check));
    }
    if let Some(spread) = &h.launch_spread {
        let _ = writeln!(out, "{}", spread.describe());
    }
    if let Some(line) = super::cell_model::describe(&matrix.cells) {
        let _ = writeln!(out, "{line}");
    }
}

/// A table of rates for each parameter combination (and of relative rates, where the cells
/// have them), over every level of the axes and of the cells.
fn write_tables(out: &mut String, matrix: &Matrix) {
    let h = &matrix.header;
    let by_key: BTreeMap<CellKey, &super::Cell> =
        matrix.cells.iter().map(|c| (c.key(), c)).collect();
    let mut cpus: BTreeSet<u64> = h
        .axes
        .cpu
        .iter()
        .map(|c| (c * 1000.0).round() as u64)
        .collect();
    let mut mems: BTreeSet<u64> = h.axes.memory_bytes.iter().copied().collect();
    let mut param_sets: BTreeSet<BTreeMap<String, String>> = BTreeSet::new();
    for k in by_key.keys() {
        cpus.insert(k.cpu_milli);
        mems.insert(k.memory_bytes);
        param_sets.insert(k.params.clone());
    }
    if param_sets.is_empty() {
        param_sets.insert(BTreeMap::new());
    }
    for params in &param_sets {
        if !params.is_empty() {
            let label: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "\n[{}]", label.join(", "));
        } else {
            out.push('\n');
        }
        let grid = Grid {
            cpus: &cpus,
            mems: &mems,
            params,
            cells: &by_key,
        };
        grid.write(out, rate_text);
        if matrix.cells.iter().any(|c| c.relative.is_some()) {
            let _ = writeln!(
                out,
                "\nrelative to the reference, the top cell (95% interval of another sweep's, ± %):"
            );
            grid.write(out, relative_text);
        }
    }
}

/// The tables' legend, and what the checks of the matrix found.
fn write_checks(out: &mut String, matrix: &Matrix) {
    let _ = writeln!(
        out,
        "\nsamples/s; ~ = modelled by the cache model, OOM = infeasible (OOM-killed), - = not run"
    );
    if (matrix.cells.iter()).any(|c| c.source == CellSource::Predicted) {
        let _ = writeln!(
            out,
            "? = predicted from the measured cells and other jobs' matrices (profiler predict)"
        );
    }
    let findings = check(matrix);
    if !findings.disturbed.is_empty() {
        let _ = writeln!(
            out,
            "! = disturbed: other processes took CPU from the job while it was measured, more \
             often than it could be measured again; the rate is not the job's own"
        );
    }
    if !findings.falling.is_empty() {
        let _ = writeln!(out, "\nchecks:");
        for m in findings.messages() {
            let _ = writeln!(out, "  {m}");
        }
    }
}

/// How much of each cell's note a summary prints.
#[derive(Clone, Copy, PartialEq)]
enum Notes {
    /// A line of 120 characters a cell, for the one-screen end of a sweep.
    OneLine,
    /// Three lines of 300 characters, with the cell's source.
    Full,
}

/// Why cells failed, and measured cells to read with care: the reasons, not just the marks.
fn write_notes(out: &mut String, matrix: &Matrix, notes: Notes) {
    let notable: Vec<&Cell> = matrix
        .cells
        .iter()
        .filter(|c| !matches!(c.source, CellSource::Modelled | CellSource::Predicted))
        .filter(|c| c.note.is_some())
        .collect();
    if notable.is_empty() {
        return;
    }
    let _ = match notes {
        Notes::OneLine => writeln!(out, "notes (`profiler show --cells` for each in full):"),
        Notes::Full => writeln!(out, "\nnotes (`profiler show --cells` for every detail):"),
    };
    for c in notable {
        let note = c.note.as_deref().unwrap_or_default();
        let _ = match notes {
            Notes::OneLine => writeln!(out, "  {}: {}", cell_label(c), shorten(note, 1, 120)),
            Notes::Full => writeln!(
                out,
                "  {} {}: {}",
                cell_label(c),
                c.source.as_str(),
                shorten(note, 3, 300)
            ),
        };
    }
}

/// One parameter combination's cells as a CPU x memory table.
struct Grid<'a> {
    cpus: &'a BTreeSet<u64>,
    mems: &'a BTreeSet<u64>,
    params: &'a BTreeMap<String, String>,
    cells: &'a BTreeMap<CellKey, &'a Cell>,
}

impl Grid<'_> {
    /// Writes the table, each cell as `text` gives it.
    fn write(&self, out: &mut String, text: fn(&Cell) -> String) {
        let _ = write!(out, "{:>8} |", "CPU\\mem");
        for m in self.mems {
            let _ = write!(out, " {:>10}", format!("{:.2}G", *m as f64 / GIB));
        }
        out.push('\n');
        let _ = writeln!(out, "{}", "-".repeat(10 + 11 * self.mems.len()));
        for &c in self.cpus {
            let _ = write!(out, "{:>8} |", format!("{:.2}", c as f64 / 1000.0));
            for &m in self.mems {
                let key = CellKey {
                    cpu_milli: c,
                    memory_bytes: m,
                    params: self.params.clone(),
                };
                let shown = self.cells.get(&key).map_or("-".to_string(), |c| text(c));
                let _ = write!(out, " {shown:>10}");
            }
            out.push('\n');
        }
    }
}

/// A cell's rate in the summary's table, marked as modelled, disturbed, failed or infeasible.
fn rate_text(cell: &Cell) -> String {
    match (cell.source, cell.samples_per_s()) {
        (CellSource::Failed, _) => "failed".into(),
        (CellSource::Infeasible, _) => "OOM".into(),
        (CellSource::Modelled, Some(v)) => format!("~{v:.1}"),
        (CellSource::Predicted, Some(v)) => format!("?{v:.1}"),
        (_, Some(v)) if is_disturbed(cell) => format!("!{v:.1}"),
        (_, Some(v)) => format!("{v:.1}"),
        (_, None) => "?".into(),
    }
}

/// What the probe of the host's speed did to a measured cell: how its CPU level follows the
/// probe, its raw relative rate and the share of its ratios' spread explained, and its rate
/// at the quiet host's speed; `None` where the cell has no word of the probe.
fn host_line(cell: &Cell, quiet: Option<f64>) -> Option<String> {
    let r = cell
        .relative
        .as_ref()
        .filter(|_| cell.source == CellSource::Measured)?;
    let model = r.host_model?;
    let mut parts = vec![format!("host: {}", model.describe())];
    if let Some(raw) = r.raw_rate {
        parts.push(format!("relative {raw:.3} raw"));
    }
    if let Some(e) = r.host_explained {
        parts.push(format!("{:.0}% of its ratios' spread explained", 100.0 * e));
    }
    if let Some(q) = quiet {
        parts.push(format!("{q:.1} samples/s at the quiet host's speed"));
    }
    Some(parts.join(", "))
}

/// A cell's relative rate with its interval's half-width in percent.
fn relative_text(cell: &Cell) -> String {
    let Some(r) = &cell.relative else {
        return "-".into();
    };
    let mark = match cell.source {
        CellSource::Modelled => "~",
        CellSource::Predicted => "?",
        _ => "",
    };
    match r.ci95_high > r.ci95_low {
        true => format!("{mark}{:.3}±{:.0}", r.rate, 100.0 * r.half_width()),
        false => format!("{mark}{:.3}", r.rate),
    }
}

/// What the live check of a live sweep found.
/// The live check in one line: what it compared, its verdict and what the sweep did then.
pub fn live_check_line(c: &LiveCheck) -> String {
    if c.outcome == super::LiveCheckOutcome::Unproven {
        return format!(
            "live check at {} CPUs unproven: {}; the sweep went on re-capping the running job, \
             which mismeasures a job that sizes itself from the CPUs it sees at start",
            c.cpu, c.reason
        );
    }
    let gap =
        (c.live_samples_per_s / c.compared_samples_per_s().max(f64::MIN_POSITIVE) - 1.0) * 100.0;
    let (verdict, then) = if c.outcome == super::LiveCheckOutcome::Live {
        ("within", "re-capping the running job was valid")
    } else {
        (
            "beyond",
            "the rest of the sweep relaunched the job at every point",
        )
    };
    let (fresh, reason) = (c.fresh_label(), c.reason_suffix());
    format!(
        "live check at {} CPUs: re-capped {:.1} vs {fresh} {:.1} samples/s ({gap:+.1}%, \
         {verdict} ±{:.1}%): {then}{reason}",
        c.cpu,
        c.live_samples_per_s,
        c.compared_samples_per_s(),
        c.tolerance * 100.0
    )
}

/// `cpu 2, 1.29G, batch=16`.
fn cell_label(c: &Cell) -> String {
    let mut label = format!("cpu {}, {:.2}G", c.cpu, c.memory_bytes as f64 / GIB);
    for (k, v) in &c.params {
        let _ = write!(label, ", {k}={v}");
    }
    label
}

/// The first `lines` lines of `text`, at most `chars` characters, continuation lines indented.
fn shorten(text: &str, lines: usize, chars: usize) -> String {
    let mut s: String = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(lines)
        .collect::<Vec<_>>()
        .join("\n      ");
    if s.chars().count() > chars {
        s = s.chars().take(chars).collect::<String>() + "...";
    } else if text.lines().filter(|l| !l.trim().is_empty()).count() > lines {
        s.push_str(" ...");
    }
    s
}

/// One line per cell with everything it measured (`profiler show --cells`).
pub fn render_cells(matrix: &Matrix) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<26} {:<10} {:>9} {:>7} {:>10} {:>13} {:>6} {:>5} {:>6} {:>6} {:>8} {:>9} {:>9} {:>6} {:>6} {:>7}",
        "cell",
        "source",
        "samples/s",
        "ci95 %",
        "relative",
        "iter p50/p95",
        "cores",
        "sys",
        "thr/s",
        "other",
        "RSS MiB",
        "cache MiB",
        "read MB/s",
        "GPU %",
        "SM %",
        "wall s"
    );
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    let read_at = super::cell_model::read_at_of(&matrix.header);
    let quiet = super::cell_model::absolute_rates(&matrix.cells, read_at);
    for (c, quiet) in matrix.cells.iter().zip(quiet) {
        let tp = c.throughput.as_ref();
        let t = c.telemetry.as_ref();
        let ci = tp
            .filter(|t| t.samples_per_s > 0.0)
            .map(|t| (t.ci95_high - t.ci95_low) / 2.0 / t.samples_per_s * 100.0);
        // Other processes' cores on the job's CPUs, `!` when they disturbed the cell.
        let other = c.interference.as_ref().map_or("-".to_string(), |i| {
            format!("{}{:.2}", if i.disturbed { "!" } else { "" }, i.other_cores)
        });
        let iter = c
            .iteration_time_s
            .as_ref()
            .map_or("-".to_string(), |p| format!("{:.3}/{:.3}", p.p50, p.p95));
        let _ = writeln!(
            out,
            "{:<26} {:<10} {:>9} {:>7} {:>10} {:>13} {:>6} {:>5} {:>6} {:>6} {:>8} {:>9} {:>9} {:>6} {:>6} {:>7.1}",
            cell_label(c),
            c.source.as_str(),
            opt(tp.map(|t| t.samples_per_s), 1),
            opt(ci.map(f64::abs), 1),
            relative_text(c),
            iter,
            opt(t.map(|t| t.cpu_cores_used), 2),
            opt(t.and_then(|t| t.cpu_system_cores), 2),
            opt(t.map(|t| t.throttled_s_per_s), 2),
            other,
            opt(t.map(|t| t.rss_peak_bytes as f64 / (1u64 << 20) as f64), 0),
            opt(
                t.map(|t| t.page_cache_bytes as f64 / (1u64 << 20) as f64),
                0
            ),
            opt(t.map(|t| t.storage_read_bytes_per_s / 1e6), 2),
            opt(c.gpu.as_ref().map(|g| g.utilization_pct), 0),
            opt(c.gpu.as_ref().and_then(|g| g.sm_activity_pct), 0),
            c.wall_s
        );
        if let Some(line) = host_line(c, quiet) {
            let _ = writeln!(out, "  {line}");
        }
        // A point measured on several launches: each launch on a line of its own.
        for (k, l) in tp.map_or(&[][..], |t| &t.launches[..]).iter().enumerate() {
            let half = (l.ci95_high - l.ci95_low) / 2.0;
            let pct = (l.samples_per_s > 0.0).then(|| half / l.samples_per_s * 100.0);
            let _ = writeln!(
                out,
                "  launch {:<17} {:<10} {:>9} {:>7}",
                k + 1,
                "",
                opt(Some(l.samples_per_s), 1),
                opt(pct, 1)
            );
        }
    }
    let _ = writeln!(
        out,
        "\nci95 %: half-width of the 95% interval in % of the rate; relative: the rate over the top\n\
         cell's in the same block, ± the half-width in % of where another sweep's lands (blocks:\n\
         docs/MATRIX.md); cores: CPU seconds per second;\n\
         sys: of them, system time (the kernel's work for the job: faults, reads, reclaim);\n\
         thr/s: CFS-throttled seconds per second; other: cores other processes used on the job's\n\
         CPUs (! = disturbed, more often than the cell could be measured again); launch N: one\n\
         launch of a cell measured on several (the cell's rate is their mean, its interval where\n\
         another launch lands); RSS: peak\n\
         resident memory of the job's processes (sum of PSS); cache: page cache charged to the\n\
         run's cgroup; GPU %: NVML utilisation; SM %: GPM SM activity (Hopper and later)"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Throughput;
    use crate::matrix::fixtures::{cell, header};

    fn matrix() -> Matrix {
        let mut failed = cell(2.0);
        failed.note = Some(
            "job exited with status 1 during start-up and warm-up; stderr tail:\n\
             Traceback (most recent call last):\n  File \"train.py\", line 3\nImportError: torch"
                .into(),
        );
        let mut oom = cell(1.0);
        oom.source = CellSource::Infeasible;
        oom.note = Some("OOM-killed under the memory cap during measurement".into());
        let mut modelled = cell(0.5);
        modelled.source = CellSource::Modelled;
        modelled.note = Some("MinIO cache model: 40% cached".into());
        modelled.throughput = Some(Throughput {
            samples_per_s: 100.0,
            ci95_low: 90.0,
            ci95_high: 110.0,
            windows: 4,
            measured_s: 8.0,
            launches: Vec::new(),
        });
        Matrix {
            header: header("j"),
            cells: vec![failed, oom, modelled],
        }
    }

    #[test]
    fn the_summary_says_why_cells_failed() {
        let text = render_summary(&matrix());
        assert!(
            text.contains("  cpu 2, 1.00G failed: job exited with status 1"),
            "{text}"
        );
        // Long notes are cut to their first lines.
        assert!(text.contains("line 3 ..."), "{text}");
        assert!(!text.contains("ImportError"), "{text}");
        assert!(
            text.contains("cpu 1, 1.00G infeasible: OOM-killed"),
            "{text}"
        );
        // Modelled cells' notes are the model's, not problems: not listed.
        assert!(!text.contains("MinIO"), "{text}");
        assert!(text.contains("~100.0"), "{text}");
    }

    fn measured(cpu: f64, rate: f64) -> Cell {
        let mut c = cell(cpu);
        c.source = CellSource::Measured;
        c.note = None;
        c.throughput = Some(Throughput {
            samples_per_s: rate,
            ci95_low: rate - 1.0,
            ci95_high: rate + 1.0,
            windows: 5,
            measured_s: 10.0,
            launches: Vec::new(),
        });
        c
    }

    #[test]
    fn disturbed_cells_and_falling_curves_are_marked() {
        let mut hogged = measured(2.0, 12.2);
        hogged.interference = Some(crate::matrix::Interference {
            other_cores: 0.9,
            idle_cores: 0.0,
            cpu_pressure_pct: Some(40.0),
            discarded_windows: 10,
            disturbed: true,
            ..Default::default()
        });
        let m = Matrix {
            header: header("j"),
            cells: vec![measured(1.0, 51.2), hogged],
        };
        let text = render_summary(&m);
        assert!(text.contains("!12.2") && text.contains(" 51.2"), "{text}");
        assert!(!text.contains("!51.2"), "{text}");
        assert!(text.contains("! = disturbed"), "{text}");
        assert!(
            text.contains(
                "checks:\n  at 1 GiB: 2 CPUs (12.2 samples/s) < 1 CPU (51.2): the curve falls \
                 with more CPU"
            ),
            "{text}"
        );
        let cells = render_cells(&m);
        assert!(cells.contains("!0.90"), "{cells}");

        // A clean matrix has neither the legend line nor the checks.
        let clean = render_summary(&Matrix {
            header: header("j"),
            cells: vec![measured(1.0, 51.2), measured(2.0, 90.0)],
        });
        assert!(
            !clean.contains("! =") && !clean.contains("checks:"),
            "{clean}"
        );
    }

    #[test]
    fn the_spread_between_launches_is_shown() {
        let mut m = matrix();
        m.header.launch_spread = Some(crate::matrix::LaunchSpread {
            relative_sd: 0.063,
            degrees_of_freedom: 2,
            launches: 3,
        });
        let text = render_summary(&m);
        assert!(
            text.contains("launches of the job land 6.3% apart (one standard deviation, from 3 launches, 2 degrees of freedom); every cell's interval holds 4.30 times that spread"),
            "{text}"
        );
    }

    #[test]
    fn the_live_check_is_shown() {
        let mut m = matrix();
        m.header.live_check = Some(crate::matrix::LiveCheck {
            cpu: 1.0,
            live_samples_per_s: 4.6,
            relaunch_samples_per_s: 66.2,
            tolerance: 0.07,
            outcome: crate::matrix::LiveCheckOutcome::Relaunch,
            fresh_samples_per_s: Vec::new(),
            between_launch_spread: None,
            reference_ratio: None,
            reason: String::new(),
        });
        let text = render_summary(&m);
        assert!(
            text.contains(
                "live check at 1 CPUs: re-capped 4.6 vs fresh start 66.2 samples/s (-93.1%, \
                 beyond ±7.0%): the rest of the sweep relaunched the job at every point"
            ),
            "{text}"
        );
    }

    #[test]
    fn cells_view_has_a_row_per_cell_with_its_interval() {
        let text = render_cells(&matrix());
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("cpu ")).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(
            rows[2].contains("modelled") && rows[2].contains("100.0"),
            "{text}"
        );
        assert!(rows[2].contains("10.0"), "ci95 half-width 10 %: {text}");
        assert!(rows[0].contains("failed"), "{text}");
    }

    /// A cell measured on two launches lists each under its row.
    #[test]
    fn cells_view_lists_each_launch_of_a_cell() {
        let mut m = matrix();
        let launches = [(90.0, 1.0), (110.0, 2.0)].map(|(r, h)| crate::matrix::LaunchRate {
            samples_per_s: r,
            ci95_low: r - h,
            ci95_high: r + h,
            measured_unix_s: None,
            left_out_unix_s: Vec::new(),
        });
        let mut c = measured(2.0, 100.0);
        c.throughput.as_mut().unwrap().launches = launches.to_vec();
        m.cells.push(c);
        let text = render_cells(&m);
        let launch_rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  launch "))
            .collect();
        assert_eq!(launch_rows.len(), 2, "{text}");
        assert!(
            launch_rows[0].contains("90.0") && launch_rows[0].contains("1.1"),
            "{text}"
        );
        assert!(
            launch_rows[1].contains("110.0") && launch_rows[1].contains("1.8"),
            "{text}"
        );
    }
}
