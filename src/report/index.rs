//! The index of a report of several matrices: every job's demand, speed-up and worst interval
//! in one sortable table, each linking to its page, and the overview chart.

use super::html::{Td, esc, figure, page, table};
use super::{PageSummary, ReportError, ReportOptions};
use crate::plot::sensitivity::overview_chart;
use std::fmt::Write;

/// Above this many matrices the overview chart (one line each) is left out: it could not be
/// read, and the table says the same.
pub const OVERVIEW_MAX_LINES: usize = 40;

/// The index of the matrices' `pages` and of the deploys' and replays' pages `runs` (file
/// names beside it).
pub fn index_page(
    pages: &[PageSummary],
    runs: &[String],
    opts: &ReportOptions,
) -> Result<String, ReportError> {
    let mut body = String::new();
    if !runs.is_empty() {
        body.push_str("<h1>Deploys and replays</h1>\n<ul>\n");
        for r in runs {
            let _ = writeln!(body, "<li><a href=\"{0}\">{0}</a></li>", esc(r));
        }
        body.push_str("</ul>\n");
    }
    if pages.is_empty() {
        return Ok(page("report", &body));
    }
    let _ = writeln!(
        body,
        "<h1>{} profiles</h1>\n<p class=\"sub\">best case within {}% of the best throughput, \
         speed-up over the proportional share of a {} server; click a column's name to sort by \
         it, a job's name for its page</p>",
        pages.len(),
        crate::plot::sensitivity::num(100.0 * opts.eps),
        opts.server
    );
    let lines: Vec<_> = pages.iter().filter_map(|p| p.overview.clone()).collect();
    if !lines.is_empty() && lines.len() <= OVERVIEW_MAX_LINES {
        let svg = overview_chart(&lines, &opts.plot_options()).to_svg_string()?;
        body.push_str(&figure(
            &svg,
            "throughput over the proportional share's against CPUs per GPU, one line per job",
        ));
    }
    let rows: Vec<(String, Vec<Td>)> = pages.iter().map(row).collect();
    body.push_str(&table(
        "sortable index",
        &[
            "job",
            "model",
            "machine kind",
            "CPUs per GPU",
            "GB per GPU",
            "speed-up",
            "alike",
            "worst ±%",
            "measured",
            "cells",
        ],
        &rows,
    ));
    Ok(page("profiles", &body))
}

fn row(p: &PageSummary) -> (String, Vec<Td>) {
    let link = format!("<a href=\"{}\">{}</a>", esc(&p.page), esc(&p.job));
    let two = |v: f64| format!("{v:.2}");
    (
        format!(" data-page=\"{}\"", esc(&p.page)),
        vec![
            Td::html(link),
            Td::text(&p.model),
            Td::text(&p.machine_kind),
            Td::num(p.cpus_per_gpu, crate::plot::sensitivity::num).named("cpus-per-gpu"),
            Td::num(p.mem_gb_per_gpu, crate::plot::sensitivity::num).named("mem-gb-per-gpu"),
            Td::num(p.speedup, two).named("speedup"),
            Td::num(Some(p.alike as f64), |v| format!("{v:.0}")),
            Td::num(p.worst_half_width_pct, |v| format!("{v:.1}")).named("worst"),
            Td::num(Some(p.measured as f64), |v| format!("{v:.0}")),
            Td::num(Some(p.cells as f64), |v| format!("{v:.0}")),
        ],
    )
}
