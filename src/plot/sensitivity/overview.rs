//! Several matrices at once: throughput against CPUs per GPU at the share's memory, one line
//! per model (Synergy's sensitivity figure).

use super::curves::x_axis;
use super::units::{amount, num, with_scale};
use super::{LOG_SPREAD, PlotOptions, SHARE_LABEL, View};
use crate::matrix::surface::same_level;
use crate::plot::{Chart, MarkerShape, REFERENCE_COLOR};

/// Models with the same overview curve.
type SameCurve<'a> = (Vec<&'a str>, &'a [(f64, f64)]);

/// Names joined by commas, broken into lines of about `width` characters (legend labels).
pub(super) fn wrap_names(names: &[&str], width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for (i, n) in names.iter().enumerate() {
        let piece = if i + 1 < names.len() {
            format!("{n},")
        } else {
            n.to_string()
        };
        let cur = lines.last_mut().expect("a line");
        if !cur.is_empty() && cur.len() + 1 + piece.len() > width {
            lines.push(piece);
        } else {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(&piece);
        }
    }
    lines.join("\n")
}

/// Every view's throughput against CPUs per GPU at the share's memory per GPU, one line per
/// model (Synergy's sensitivity figure).
pub fn overview_chart(views: &[View], opts: &PlotOptions) -> Chart {
    let share_cpus = opts.server.share_cpus();
    let share_mem = opts.server.share_mem_gb();
    let levels: Vec<f64> = views
        .iter()
        .flat_map(|v| v.overview.iter().map(|p| p.0))
        .collect();
    let (lo, hi) = levels
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let log = lo > 0.0 && hi.max(share_cpus) / lo.min(share_cpus) >= LOG_SPREAD;
    let y_max = views
        .iter()
        .flat_map(|v| v.overview.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (y_label, note) = if opts.normalize {
        (
            "throughput / throughput at the share",
            format!("1 = at the proportional share of {}", opts.server),
        )
    } else {
        ("samples/s per GPU", format!("server {}", opts.server))
    };
    let mut chart = Chart::new("Throughput vs CPUs per GPU, by model")
        .subtitle(format!(
            "memory at the proportional share ({} GB per GPU); {note}",
            num(share_mem)
        ))
        .x_label(with_scale("CPUs per GPU", log))
        .y_label(y_label)
        .y_range(0.0, (y_max * 1.08).max(1e-9))
        .size(1000, 600);
    // Models with the same curve (Synergy's zoo has six flat at 1) share one line.
    let mut groups: Vec<SameCurve> = Vec::new();
    for v in views {
        let same_curve = |c: &[(f64, f64)]| {
            c.len() == v.overview.len()
                && c.iter()
                    .zip(&v.overview)
                    .all(|(p, q)| same_level(p.0, q.0) && same_level(p.1, q.1))
        };
        match groups.iter_mut().find(|(_, c)| same_curve(c)) {
            Some((names, _)) => names.push(&v.title),
            None => groups.push((vec![&v.title], &v.overview)),
        }
    }
    for (k, (names, curve)) in groups.into_iter().enumerate() {
        let shape = MarkerShape::for_series(k);
        chart = chart
            .line(wrap_names(&names, 24), curve.to_vec())
            .markers(shape);
    }
    let mut ticks = levels.clone();
    ticks.push(share_cpus);
    chart = x_axis(
        chart,
        log,
        lo.min(share_cpus),
        hi.max(share_cpus),
        &mut ticks,
    );
    ticks.sort_by(f64::total_cmp);
    ticks.dedup_by(|a, b| same_level(*a, *b));
    chart.x_ticks(ticks).vline(
        share_cpus,
        format!("{SHARE_LABEL}: {}", amount(share_cpus, "CPUs")),
        REFERENCE_COLOR,
    )
}
