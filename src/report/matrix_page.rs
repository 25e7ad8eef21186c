//! One matrix's page: its best-case demand, its charts with every measured cell's interval,
//! each cell's story, how the sweep went and where it was measured.

use super::html::{Td, esc, facts, figure, table, utc};
use super::{PageSummary, ReportError, ReportOptions};
use crate::matrix::{
    Cell, CellSource, Matrix, ValidationCell, demands, is_disturbed, live_check_line,
};
use crate::plot::Figure;
use crate::plot::sensitivity::{
    PlotOptions, SensitivityError, View, cpu_chart, heatmap, memory_chart, view,
};
use crate::units::GIB;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

const MIB: f64 = (1u64 << 20) as f64;

/// The page of `m` (read from `path`) under the name `name`, and what the index says of it.
pub fn matrix_page(
    path: &Path,
    m: &Matrix,
    name: &str,
    opts: &ReportOptions,
) -> Result<(String, PageSummary), ReportError> {
    let h = &m.header;
    let mut body = String::new();
    let kind = h.machine.as_ref().map_or("unknown", |mi| mi.kind_key());
    let _ = writeln!(body, "<h1>{}</h1>", esc(&h.job.model));
    let _ = writeln!(
        body,
        "<p class=\"sub\">job <b>{}</b>, {} GPU(s), {} cells, measured {} on a machine of kind \
         <code>{}</code> &middot; <code>{}</code></p>",
        esc(&h.job.name),
        h.job.gpus,
        m.cells.len(),
        utc(h.created_unix_s),
        esc(kind),
        esc(&path.display().to_string())
    );
    let summary = demand_section(&mut body, m, name, opts)?;
    let views = charts_section(&mut body, path, m, opts)?;
    cells_section(&mut body, m);
    sweep_section(&mut body, m);
    validation_section(&mut body, m);
    provenance_section(&mut body, path, m);
    let overview = views.into_iter().next();
    Ok((
        super::html::page(&format!("{}: profile", h.job.model), &body),
        PageSummary {
            overview,
            ..summary
        },
    ))
}

/// The best case of every parameter combination, the allocations its intervals cannot tell
/// apart from it, and the speed-up over the proportional share.
fn demand_section(
    body: &mut String,
    m: &Matrix,
    name: &str,
    opts: &ReportOptions,
) -> Result<PageSummary, ReportError> {
    let h = &m.header;
    let all = demands(m, &opts.server, opts.eps, opts.weights).map_err(|source| {
        ReportError::Surface {
            job: h.job.name.clone(),
            source,
        }
    })?;
    body.push_str("<h2>Best-case demand</h2>\n");
    for (params, d) in &all {
        let label = params_label(params);
        let _ = write!(
            body,
            "<div class=\"verdict\" data-cpus-per-gpu=\"{}\" data-mem-gb-per-gpu=\"{}\" \
             data-speedup=\"{}\">",
            d.cpus_per_gpu, d.mem_gb_per_gpu, d.speedup_over_proportional
        );
        if !label.is_empty() {
            let _ = write!(body, "<b>{}</b>: ", esc(&label));
        }
        let _ = writeln!(body, "{}</div>", esc(&d.to_string()));
    }
    let first = all.first().map(|(_, d)| d);
    Ok(PageSummary {
        page: format!("{name}.html"),
        job: h.job.name.clone(),
        model: h.job.model.clone(),
        machine_kind: (h.machine.as_ref())
            .map_or_else(|| "unknown".into(), |mi| mi.kind_key().to_string()),
        cpus_per_gpu: first.map(|d| d.cpus_per_gpu),
        mem_gb_per_gpu: first.map(|d| d.mem_gb_per_gpu),
        speedup: first.map(|d| d.speedup_over_proportional),
        alike: first.map_or(0, |d| d.alike.len()),
        worst_half_width_pct: worst_half_width_pct(&m.cells),
        measured: (m.cells.iter())
            .filter(|c| c.source == CellSource::Measured)
            .count(),
        cells: m.cells.len(),
        overview: None,
    })
}

/// The widest 95% interval of a measured cell, in percent of its rate either way.
pub fn worst_half_width_pct(cells: &[Cell]) -> Option<f64> {
    (cells.iter())
        .filter(|c| c.source == CellSource::Measured)
        .filter_map(half_width_pct)
        .fold(None, |worst, w| Some(worst.map_or(w, |x: f64| x.max(w))))
}

fn half_width_pct(c: &Cell) -> Option<f64> {
    let t = c.throughput.as_ref()?;
    (t.samples_per_s > 0.0).then(|| 50.0 * (t.ci95_high - t.ci95_low) / t.samples_per_s)
}

/// The heat map and the curves, as measured and relative to the proportional share; returns
/// the normalised views (the index's overview draws them).
fn charts_section(
    body: &mut String,
    path: &Path,
    m: &Matrix,
    opts: &ReportOptions,
) -> Result<Vec<View>, ReportError> {
    let combos: BTreeSet<&BTreeMap<String, String>> = m.cells.iter().map(|c| &c.params).collect();
    body.push_str(
        "<h2>Throughput</h2>\n<p>Filled symbols are measured cells with their 95% interval \
         (error bars; in the heat map the half-width under the value), hollow ones and dashed \
         lines are the cache model's, a red x is a failed cell, a red ring a cell other \
         processes disturbed; the star is the best case, the dashed line the proportional \
         share.</p>\n",
    );
    let mut normalized = Vec::new();
    for params in combos {
        let label = params_label(params);
        if !label.is_empty() {
            let _ = writeln!(body, "<h3>{}</h3>", esc(&label));
        }
        let plain = PlotOptions {
            normalize: false,
            ..opts.plot_options()
        };
        let v = view(path, m, params, String::new(), &plain)?;
        push_svg(
            body,
            heatmap(&v).to_svg_string(),
            "samples/s by CPU and memory",
        )?;
        push_svg(
            body,
            cpu_chart(&v).to_svg_string(),
            "samples/s against CPUs",
        )?;
        if v.mem.len() > 1 {
            push_svg(
                body,
                memory_chart(&v).to_svg_string(),
                "samples/s against memory",
            )?;
        }
        let relative = PlotOptions {
            normalize: true,
            ..opts.plot_options()
        };
        match view(path, m, params, String::new(), &relative) {
            Ok(v) => {
                push_svg(
                    body,
                    cpu_chart(&v).to_svg_string(),
                    "throughput over the proportional share's, against CPUs per GPU",
                )?;
                normalized.push(v);
            }
            Err(SensitivityError::ZeroAtShare { .. }) => {
                body.push_str(
                    "<p>No relative view: the throughput at the proportional share is 0.</p>\n",
                );
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(normalized)
}

fn push_svg(
    body: &mut String,
    svg: Result<String, crate::plot::PlotError>,
    caption: &str,
) -> Result<(), ReportError> {
    body.push_str(&figure(&svg?, caption));
    Ok(())
}

/// Every cell on a row (sortable, its numbers kept in `data-*` attributes), then the story of
/// each that has one to tell.
fn cells_section(body: &mut String, m: &Matrix) {
    let validated: BTreeMap<_, &ValidationCell> = (m.header.validation.iter())
        .flat_map(|v| &v.cells)
        .map(|v| ((v.cpu.to_bits(), v.memory_bytes, &v.params), v))
        .collect();
    let columns = [
        "CPUs",
        "memory GiB",
        "parameters",
        "source",
        "samples/s",
        "95% low",
        "95% high",
        "±%",
        "relative",
        "relative 95%",
        "blocks",
        "visits",
        "cores used",
        "throttled s/s",
        "RSS MiB",
        "page cache MiB",
        "reads MB/s",
        "GPU %",
    ];
    let rows: Vec<(String, Vec<Td>)> = m.cells.iter().map(cell_row).collect();
    body.push_str("<h2>Cells</h2>\n<p>Click a column's name to sort by it.</p>\n");
    body.push_str(&table("sortable cells", &columns, &rows));
    let stories: Vec<String> = (m.cells.iter())
        .map(|c| {
            let v = validated.get(&(c.cpu.to_bits(), c.memory_bytes, &c.params));
            cell_story(c, v.copied())
        })
        .collect();
    if stories.iter().any(|s| !s.is_empty()) {
        body.push_str("<h3>Each cell's story</h3>\n");
        for (c, story) in m.cells.iter().zip(stories) {
            if !story.is_empty() {
                let _ = writeln!(
                    body,
                    "<details><summary>{}</summary><div class=\"story\">{story}</div></details>",
                    esc(&cell_name(c))
                );
            }
        }
    }
}

fn cell_name(c: &Cell) -> String {
    let mut s = format!(
        "{} CPUs, {} GiB",
        trim(c.cpu),
        trim(c.memory_bytes as f64 / GIB)
    );
    let p = params_label(&c.params);
    if !p.is_empty() {
        let _ = write!(s, ", {p}");
    }
    let _ = write!(s, " ({})", c.source.as_str());
    s
}

fn cell_row(c: &Cell) -> (String, Vec<Td>) {
    let t = c.throughput.as_ref();
    let tel = c.telemetry.as_ref();
    let mut class = c.source.as_str().to_string();
    if is_disturbed(c) {
        class.push_str(" disturbed");
    }
    if matches!(c.source, CellSource::Infeasible) {
        class.push_str(" failed");
    }
    let attrs = format!(
        " class=\"{class}\" data-cpu=\"{}\" data-memory-bytes=\"{}\" data-params=\"{}\"",
        c.cpu,
        c.memory_bytes,
        esc(&params_label(&c.params))
    );
    let rate = |v: f64| trim(v);
    let r = c.relative.as_ref();
    let cells = vec![
        Td::num(Some(c.cpu), trim),
        Td::num(Some(c.memory_bytes as f64 / GIB), |v| format!("{v:.2}")),
        Td::text(params_label(&c.params)),
        Td::text(c.source.as_str()),
        Td::num(t.map(|t| t.samples_per_s), rate).named("rate"),
        Td::num(t.map(|t| t.ci95_low), rate).named("low"),
        Td::num(t.map(|t| t.ci95_high), rate).named("high"),
        Td::num(half_width_pct(c), |v| format!("{v:.1}")),
        Td::num(r.map(|r| r.rate), |v| format!("{v:.3}")).named("relative"),
        Td::text(r.map_or("-".into(), |r| {
            format!("{:.3} - {:.3}", r.ci95_low, r.ci95_high)
        })),
        Td::text(r.map_or("-".into(), |r| match r.dropped_blocks {
            0 => r.blocks.to_string(),
            d => format!("{} ({d} left out)", r.blocks),
        })),
        Td::num(Some(c.visits.len() as f64), |v| format!("{v:.0}")),
        Td::num(tel.map(|t| t.cpu_cores_used), |v| format!("{v:.2}")),
        Td::num(tel.map(|t| t.throttled_s_per_s), |v| format!("{v:.2}")),
        Td::num(tel.map(|t| t.rss_peak_bytes as f64 / MIB), |v| {
            format!("{v:.0}")
        }),
        Td::num(tel.map(|t| t.page_cache_bytes as f64 / MIB), |v| {
            format!("{v:.0}")
        }),
        Td::num(tel.map(|t| t.storage_read_bytes_per_s / 1e6), |v| {
            format!("{v:.2}")
        }),
        Td::num(c.gpu.as_ref().map(|g| g.utilization_pct), |v| {
            format!("{v:.0}")
        }),
    ];
    (attrs, cells)
}

/// What a cell's row cannot say: why it failed or was modelled, its visits, the blocks it was
/// measured in, the host's speed taken out, what the cache model predicted and why it missed.
fn cell_story(c: &Cell, validated: Option<&ValidationCell>) -> String {
    let mut s = String::new();
    if let Some(note) = &c.note {
        let _ = writeln!(s, "<p>{}</p>", esc(note).replace('\n', "<br>"));
    }
    if let Some(i) = &c.interference {
        let _ = writeln!(
            s,
            "<p>Other processes took {:.2} cores of the job's CPUs{}.</p>",
            i.other_cores,
            if i.disturbed {
                ": disturbed, more often than the cell could be measured again"
            } else {
                ""
            }
        );
    }
    if let Some(r) = &c.relative {
        let mut line = format!(
            "Relative to the reference (the top cell): {:.3} [{:.3}, {:.3}] over {} visit(s)",
            r.rate, r.ci95_low, r.ci95_high, r.blocks
        );
        if r.dropped_blocks > 0 {
            let _ = write!(
                line,
                "; {} block(s) left out (their reference drifted or other processes disturbed them)",
                r.dropped_blocks
            );
        }
        match (r.raw_rate, r.host_slope) {
            (Some(raw), Some(slope)) => {
                let _ = write!(
                    line,
                    "; {raw:.3} before the host's speed on the job's CPUs was taken out (slope \
                     {slope:.2})"
                );
            }
            (None, Some(slope)) => {
                let _ = write!(
                    line,
                    "; its CPU level follows the host's speed with slope {slope:.2}"
                );
            }
            _ => {}
        }
        let _ = writeln!(s, "<p>{}.</p>", esc(&line));
    }
    if c.visits.len() > 1 || c.visits.iter().any(|v| v.disturbed) {
        let rows: Vec<(String, Vec<Td>)> = (c.visits.iter())
            .map(|v| {
                (
                    String::new(),
                    vec![
                        Td::num(Some(f64::from(v.launch)), |x| format!("{x:.0}")),
                        Td::num(Some(v.samples_per_s), trim),
                        Td::text(format!("{} - {}", trim(v.ci95_low), trim(v.ci95_high))),
                        Td::num(Some(v.measured_s), |x| format!("{x:.1}")),
                        Td::text(if v.disturbed {
                            "disturbed, left out"
                        } else {
                            ""
                        }),
                        Td::num(v.host.as_ref().map(|h| h.speed), |x| format!("{x:.3e}")),
                    ],
                )
            })
            .collect();
        s.push_str(&table(
            "visits",
            &["launch", "samples/s", "95%", "seconds", "", "host speed"],
            &rows,
        ));
    }
    if let Some(v) = validated {
        let mut line = format!(
            "Validated: measured {} samples/s",
            trim(v.measured_samples_per_s)
        );
        for (model, p) in &v.predicted {
            let err = 100.0 * (p - v.measured_samples_per_s) / v.measured_samples_per_s;
            let _ = write!(
                line,
                "; {} predicted {} ({err:+.1}%)",
                model.as_str(),
                trim(*p)
            );
        }
        if let Some(r) = v.rerun_error_pct {
            let _ = write!(line, "; reruns alone move the error by up to ±{r:.1}%");
        }
        let _ = writeln!(s, "<p>{}.</p>", esc(&line));
        if let Some(check) = &v.check {
            let _ = writeln!(s, "<p>Why: {}</p>", esc(&check.explanation));
        }
    }
    s
}

/// The live check, the spread between launches, the blocks and the host's speed.
fn sweep_section(body: &mut String, m: &Matrix) {
    let h = &m.header;
    let mut lines = Vec::new();
    if let Some(c) = &h.live_check {
        lines.push(live_check_line(c));
    }
    if let Some(s) = &h.launch_spread {
        lines.push(s.describe());
    }
    lines.extend(crate::matrix::cell_model::describe(&m.cells));
    if lines.is_empty() && h.blocks.is_empty() {
        return;
    }
    body.push_str("<h2>How the sweep went</h2>\n");
    for l in &lines {
        let _ = writeln!(body, "<p>{}</p>", esc(l));
    }
    if h.blocks.is_empty() {
        return;
    }
    let rows: Vec<(String, Vec<Td>)> = (h.blocks.iter())
        .map(|b| {
            let why = if b.drifted {
                "left out: its reference drifted"
            } else if b.disturbed {
                "left out: other processes disturbed it"
            } else {
                ""
            };
            (
                String::new(),
                vec![
                    Td::num(Some(f64::from(b.index)), |x| format!("{x:.0}")),
                    Td::text(params_label(&b.params)),
                    Td::num(b.opening.as_ref().map(|r| r.samples_per_s), trim),
                    Td::num(b.closing.as_ref().map(|r| r.samples_per_s), trim),
                    Td::num(Some(b.span_unix_s[1] - b.span_unix_s[0]), |x| {
                        format!("{x:.0}")
                    }),
                    Td::text(why),
                ],
            )
        })
        .collect();
    body.push_str(&table(
        "blocks",
        &[
            "block",
            "parameters",
            "reference at its start",
            "at its end",
            "seconds",
            "",
        ],
        &rows,
    ));
}

/// How well each cache model predicted the memory axis, where the matrix was validated.
fn validation_section(body: &mut String, m: &Matrix) {
    let h = &m.header;
    let Some(v) = &h.validation else { return };
    body.push_str("<h2>Cache model</h2>\n");
    let _ = writeln!(
        body,
        "<p>{}</p>",
        esc(&v.summary(h.cache_model.as_ref().map(|c| c.kind)))
    );
    let rows: Vec<(String, Vec<Td>)> = (v.models.iter())
        .map(|a| {
            (
                String::new(),
                vec![
                    Td::text(a.model.as_str()),
                    Td::num(Some(a.median_abs_error_pct), |x| format!("{x:.1}")),
                    Td::num(Some(a.max_abs_error_pct), |x| format!("{x:.1}")),
                    Td::num(Some(f64::from(a.cells)), |x| format!("{x:.0}")),
                ],
            )
        })
        .collect();
    body.push_str(&table(
        "models",
        &["model", "median |error| %", "max |error| %", "cells"],
        &rows,
    ));
}

/// The spec, the machine and when.
fn provenance_section(body: &mut String, path: &Path, m: &Matrix) {
    let h = &m.header;
    let mut rows = vec![
        ("file", path.display().to_string()),
        ("job", format!("{} ({})", h.job.name, h.job.model)),
        ("measured", utc(h.created_unix_s)),
    ];
    if let Some(p) = &h.provenance {
        rows.push(("provenance", p.clone()));
    }
    if let Some(v) = &h.profiler {
        rows.push(("profiler", v.clone()));
    }
    match &h.machine {
        Some(mi) => {
            rows.push(("machine", mi.describe()));
            rows.push(("host", mi.hostname.clone()));
            rows.push(("kernel", mi.kernel.clone()));
            rows.push(("cgroup", mi.cgroup.clone()));
        }
        None => rows.push(("machine", "not recorded".into())),
    }
    if let Some(c) = &h.cache_model {
        rows.push(("cache model", c.kind.as_str().to_string()));
    }
    body.push_str("<h2>Provenance</h2>\n");
    body.push_str(&facts(&rows));
}

fn params_label(params: &BTreeMap<String, String>) -> String {
    let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    p.join(", ")
}

/// A number with few digits and no float noise.
fn trim(v: f64) -> String {
    crate::plot::sensitivity::num(v)
}
