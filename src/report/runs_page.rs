//! A deploy's page: the deploy against its replay scheme by scheme (Synergy's table), the JCT
//! distributions of both, and each job's timeline from the deploy's journal; and a replay's
//! page: its schemes' summary and JCT distributions. Both read the Parquet tables the commands
//! write beside their CSVs.

use super::ReportError;
use super::html::{Td, esc, figure, page, table};
use crate::deploy::journal::{RoundRecord, read_journal};
use crate::plot::{COLORS, Chart};
use polars::prelude::{DataFrame, DataType, ParquetReader, SerReader};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A deploy's `--out`: it holds the comparison with the replay.
pub fn is_deploy(dir: &Path) -> bool {
    dir.join("compare.parquet").is_file()
}

/// A replay's `--out`: it holds the schemes' summary.
pub fn is_replay(dir: &Path) -> bool {
    dir.join("summary.parquet").is_file()
}

fn read(path: &Path) -> Result<DataFrame, ReportError> {
    let file = std::fs::File::open(path).map_err(ReportError::io(path))?;
    ParquetReader::new(file)
        .finish()
        .map_err(|e| table_error(path, e))
}

fn table_error(path: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Table {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// A table's column as numbers (nulls `None`).
fn numbers(df: &DataFrame, name: &str, path: &Path) -> Result<Vec<Option<f64>>, ReportError> {
    let c = (df.column(name))
        .and_then(|c| c.cast(&DataType::Float64))
        .map_err(|e| table_error(path, e))?;
    let f = c.f64().map_err(|e| table_error(path, e))?;
    Ok(f.iter().map(|v| v.filter(|x| x.is_finite())).collect())
}

/// A table's column as text (nulls empty).
fn texts(df: &DataFrame, name: &str, path: &Path) -> Result<Vec<String>, ReportError> {
    let c = (df.column(name))
        .and_then(|c| c.cast(&DataType::String))
        .map_err(|e| table_error(path, e))?;
    let s = c.str().map_err(|e| table_error(path, e))?;
    Ok(s.iter().map(|v| v.unwrap_or("").to_string()).collect())
}

/// One scheme's jobs table, by column.
struct Jobs {
    id: Vec<Option<f64>>,
    model: Vec<String>,
    arrival: Vec<Option<f64>>,
    start: Vec<Option<f64>>,
    finish: Vec<Option<f64>>,
    jct: Vec<Option<f64>>,
    failure: Vec<String>,
}

impl Jobs {
    fn read(path: &Path) -> Result<Jobs, ReportError> {
        let df = read(path)?;
        Ok(Jobs {
            id: numbers(&df, "job_id", path)?,
            model: texts(&df, "model", path)?,
            arrival: numbers(&df, "arrival_s", path)?,
            start: numbers(&df, "start_s", path)?,
            finish: numbers(&df, "finish_s", path)?,
            jct: numbers(&df, "jct_s", path)?,
            failure: texts(&df, "failure", path)?,
        })
    }

    /// The JCTs as a distribution: (JCT, fraction of jobs at most that long).
    fn cdf(&self) -> Vec<(f64, f64)> {
        let mut jct: Vec<f64> = self.jct.iter().flatten().copied().collect();
        jct.sort_by(f64::total_cmp);
        let n = self.jct.len().max(1) as f64;
        (jct.iter().enumerate())
            .map(|(k, &x)| (x, (k + 1) as f64 / n))
            .collect()
    }
}

/// The page of the deploy whose `--out` is `dir`.
pub fn deploy_page(dir: &Path) -> Result<String, ReportError> {
    let compare_path = dir.join("compare.parquet");
    let compare = read(&compare_path)?;
    let policy = texts(&compare, "policy", &compare_path)?;
    let mechanism = texts(&compare, "mechanism", &compare_path)?;
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<h1>Deploy against its replay</h1>\n<p class=\"sub\">{} scheme(s) &middot; \
         <code>{}</code></p>",
        policy.len(),
        esc(&dir.display().to_string())
    );
    if let Ok(checks) = std::fs::read_to_string(dir.join("checks.txt")) {
        let _ = writeln!(
            body,
            "<h2>Checks before the first round</h2>\n<pre>{}</pre>",
            esc(checks.trim_end())
        );
    }
    body.push_str(&compare_table(
        &compare,
        &compare_path,
        &policy,
        &mechanism,
    )?);
    body.push_str(&gap_sources(
        dir,
        &compare,
        &compare_path,
        &policy,
        &mechanism,
    )?);
    for (p, m) in policy.iter().zip(&mechanism) {
        let stem = format!("{p}-{m}");
        let deployed = Jobs::read(&dir.join(format!("{stem}.jobs.parquet")))?;
        let replayed = Jobs::read(&dir.join("replay").join(format!("{stem}.jobs.parquet")))?;
        let _ = writeln!(body, "<h2 id=\"{}\">{}+{}</h2>", esc(&stem), esc(p), esc(m));
        let chart = Chart::new(format!("{p}+{m}: JCT distribution"))
            .x_label("JCT (s)")
            .y_label("fraction of jobs")
            .y_range(0.0, 1.0)
            .line("deployed", deployed.cdf())
            .dashed_line("replayed", replayed.cdf());
        body.push_str(&figure(
            &chart.to_svg_string()?,
            "each job's JCT, deployed (solid) and replayed (dashed)",
        ));
        let journal = dir.join("journal").join(format!("{stem}.jsonl"));
        if journal.is_file() {
            let (_, rounds) = read_journal(&journal)?;
            let rounds: Vec<RoundRecord> = rounds.into_iter().collect();
            body.push_str(&timeline(&deployed, &rounds));
        }
        body.push_str(&jobs_table(&deployed, &replayed));
    }
    Ok(page("deploy against replay", &body))
}

/// A table's columns as numbers, one a `(name, heading, data attribute)`.
fn numeric_columns(
    df: &DataFrame,
    path: &Path,
    columns: &[(&str, &str, &str)],
) -> Result<Vec<Vec<Option<f64>>>, ReportError> {
    (columns.iter())
        .map(|(name, ..)| numbers(df, name, path))
        .collect()
}

/// Row `i` of `values` as cells named by their data attributes: seconds and percents to a
/// tenth, counts whole.
fn numeric_cells(
    columns: &[(&str, &str, &'static str)],
    values: &[Vec<Option<f64>>],
    i: usize,
) -> Vec<Td> {
    (columns.iter().zip(values))
        .map(|((name, _, data), column)| {
            let digits = usize::from(name.ends_with("_s") || name.ends_with("_pct"));
            Td::num(column[i], |v| format!("{v:.digits$}")).named(data)
        })
        .collect()
}

/// Synergy's table: each scheme's makespan, mean and p99 JCT deployed and replayed, the gap,
/// and the gain over the proportional share in both.
fn compare_table(
    df: &DataFrame,
    path: &Path,
    policy: &[String],
    mechanism: &[String],
) -> Result<String, ReportError> {
    let columns: [(&str, &str, &'static str); 13] = [
        ("jobs", "jobs", "jobs"),
        ("unfinished", "unfinished", "unfinished"),
        (
            "makespan_deploy_s",
            "makespan deployed s",
            "makespan-deploy",
        ),
        ("makespan_replay_s", "replayed s", "makespan-replay"),
        ("makespan_gap_pct", "gap %", "makespan-gap"),
        (
            "mean_jct_deploy_s",
            "mean JCT deployed s",
            "mean-jct-deploy",
        ),
        ("mean_jct_replay_s", "replayed s", "mean-jct-replay"),
        ("mean_jct_gap_pct", "gap %", "mean-jct-gap"),
        ("p99_jct_deploy_s", "p99 JCT deployed s", "p99-jct-deploy"),
        ("p99_jct_replay_s", "replayed s", "p99-jct-replay"),
        ("p99_jct_gap_pct", "gap %", "p99-jct-gap"),
        (
            "gain_deploy_pct",
            "gain over proportional, deployed %",
            "gain-deploy",
        ),
        ("gain_replay_pct", "replayed %", "gain-replay"),
    ];
    let values = numeric_columns(df, path, &columns)?;
    let rows: Vec<(String, Vec<Td>)> = (0..policy.len())
        .map(|i| {
            let scheme = format!("{}+{}", policy[i], mechanism[i]);
            let stem = format!("{}-{}", policy[i], mechanism[i]);
            let mut cells = vec![Td::html(format!(
                "<a href=\"#{}\">{}</a>",
                esc(&stem),
                esc(&scheme)
            ))];
            cells.extend(numeric_cells(&columns, &values, i));
            (format!(" data-scheme=\"{}\"", esc(&scheme)), cells)
        })
        .collect();
    let mut heads = vec!["scheme"];
    heads.extend(columns.iter().map(|(_, h, _)| *h));
    Ok(format!(
        "<h2>Schemes</h2>\n{}",
        table("sortable compare", &heads, &rows)
    ))
}

/// Where each scheme's gap comes from, where the deploy replayed itself at its measured rates
/// (docs/DEPLOY.md, "Where a gap comes from"): the engine's part and the matrices', the
/// restarts and slips; each kind's measured rate over its matrix's (`ratios.parquet`); and
/// what was fed back (`feedback.txt`). Empty for a deploy written before those existed.
fn gap_sources(
    dir: &Path,
    compare: &DataFrame,
    path: &Path,
    policy: &[String],
    mechanism: &[String],
) -> Result<String, ReportError> {
    let columns = [
        (
            "engine_gap_makespan_pct",
            "makespan: engine %",
            "engine-makespan",
        ),
        ("matrix_gap_makespan_pct", "matrices %", "matrices-makespan"),
        (
            "engine_gap_mean_jct_pct",
            "mean JCT: engine %",
            "engine-mean-jct",
        ),
        ("matrix_gap_mean_jct_pct", "matrices %", "matrices-mean-jct"),
        ("restarts", "restarts", "restarts"),
        ("slips", "slips", "slips"),
    ];
    if compare.column(columns[0].0).is_err() {
        return Ok(String::new());
    }
    let values = numeric_columns(compare, path, &columns)?;
    if values[0].iter().all(Option::is_none) {
        return Ok(String::new());
    }
    let rows: Vec<(String, Vec<Td>)> = (0..policy.len())
        .map(|i| {
            let mut cells = vec![Td::text(format!("{}+{}", policy[i], mechanism[i]))];
            cells.extend(numeric_cells(&columns, &values, i));
            (String::new(), cells)
        })
        .collect();
    let mut heads = vec!["scheme"];
    heads.extend(columns.iter().map(|(_, h, _)| *h));
    let mut out = format!(
        "<h2>Where the gap comes from</h2>\n<p>The engine's part: the deploy against its replay \
         at the rates it measured. The matrices' part: that replay against the replay on the \
         matrices. Both in percent of the replay.</p>\n{}",
        table("sortable", &heads, &rows)
    );
    out.push_str(&ratios_table(dir)?);
    if let Ok(fed) = std::fs::read_to_string(dir.join("feedback.txt")) {
        let _ = write!(
            out,
            "<h3>Fed back into predicted matrices</h3>\n<pre>{}</pre>\n",
            esc(fed.trim_end())
        );
    }
    Ok(out)
}

/// Each kind's measured rate over its matrix's, per scheme and grant (`ratios.parquet`); empty
/// where the deploy wrote none.
fn ratios_table(dir: &Path) -> Result<String, ReportError> {
    let ratios_path = dir.join("ratios.parquet");
    if !ratios_path.is_file() {
        return Ok(String::new());
    }
    let df = read(&ratios_path)?;
    let (p, m, model) = (
        texts(&df, "policy", &ratios_path)?,
        texts(&df, "mechanism", &ratios_path)?,
        texts(&df, "model", &ratios_path)?,
    );
    let mut nums = Vec::new();
    for name in [
        "cpus",
        "mem_bytes",
        "rounds",
        "ratio",
        "ratio_ci95_low",
        "ratio_ci95_high",
    ] {
        nums.push(numbers(&df, name, &ratios_path)?);
    }
    let rows: Vec<(String, Vec<Td>)> = (0..model.len())
        .map(|i| {
            let gb = nums[1][i].map(|b| b / crate::matrix::surface::BYTES_PER_GB);
            let cells = vec![
                Td::text(format!("{}+{}", p[i], m[i])),
                Td::text(&model[i]),
                Td::num(nums[0][i], |v| format!("{v}")),
                Td::num(gb, |v| format!("{v:.2}")),
                Td::num(nums[2][i], |v| format!("{v:.0}")),
                Td::num(nums[3][i], |v| format!("{v:.2}")),
                Td::num(nums[4][i], |v| format!("{v:.2}")),
                Td::num(nums[5][i], |v| format!("{v:.2}")),
            ];
            (String::new(), cells)
        })
        .collect();
    let heads = [
        "scheme",
        "kind",
        "CPUs",
        "GB",
        "rounds",
        "rate / matrix",
        "low",
        "high",
    ];
    Ok(format!(
        "<h3>Each kind's rate over its matrix's</h3>\n{}",
        table("sortable", &heads, &rows)
    ))
}

/// Each job's arrival, start, finish and JCT, deployed and replayed.
fn jobs_table(deployed: &Jobs, replayed: &Jobs) -> String {
    let replay_of: BTreeMap<u64, usize> = (replayed.id.iter().enumerate())
        .filter_map(|(i, id)| id.map(|id| (id as u64, i)))
        .collect();
    let one = |v: f64| format!("{v:.1}");
    let rows: Vec<(String, Vec<Td>)> = (0..deployed.id.len())
        .map(|i| {
            let r = deployed.id[i].and_then(|id| replay_of.get(&(id as u64)).copied());
            let of = |col: &[Option<f64>]| r.and_then(|r| col[r]);
            (
                String::new(),
                vec![
                    Td::num(deployed.id[i], |v| format!("{v:.0}")),
                    Td::text(&deployed.model[i]),
                    Td::num(deployed.arrival[i], one),
                    Td::num(deployed.start[i], one),
                    Td::num(of(&replayed.start), one),
                    Td::num(deployed.finish[i], one),
                    Td::num(of(&replayed.finish), one),
                    Td::num(deployed.jct[i], one),
                    Td::num(of(&replayed.jct), one),
                    Td::text(&deployed.failure[i]),
                ],
            )
        })
        .collect();
    table(
        "sortable jobs",
        &[
            "job",
            "model",
            "arrival s",
            "start deployed",
            "replayed",
            "finish deployed",
            "replayed",
            "JCT deployed",
            "replayed",
            "failure",
        ],
        &rows,
    )
}

/// Pixels of the timeline: its width, a job's row, the label column.
const TIMELINE_W: f64 = 1000.0;
const ROW_H: f64 = 16.0;
const LABEL_W: f64 = 120.0;

/// Each job on a row: light grey from its arrival to its first round (queued), darker grey
/// from there to its finish (suspended where no bar covers it), a bar for each round it ran
/// (darker for more CPUs, its grant in the tooltip), a black tick where it was re-capped in
/// place and a red one where it was started again on its new grant.
fn timeline(jobs: &Jobs, rounds: &[RoundRecord]) -> String {
    let end = (rounds.iter().map(|r| r.t + r.round_s))
        .chain(jobs.finish.iter().flatten().copied())
        .fold(1.0, f64::max);
    let max_cpus = (rounds.iter().flat_map(|r| &r.jobs))
        .filter_map(|o| o.cpus)
        .fold(0.0, f64::max);
    // Rows in the order of the jobs' ids: id -> (row, index in `jobs`).
    let by_id: BTreeMap<u64, usize> = (jobs.id.iter().enumerate())
        .filter_map(|(i, id)| id.map(|id| (id as u64, i)))
        .collect();
    let row_of: BTreeMap<u64, (usize, usize)> = (by_id.into_iter().enumerate())
        .map(|(row, (id, i))| (id, (row, i)))
        .collect();
    let mut first_run: BTreeMap<u64, f64> = BTreeMap::new();
    for r in rounds {
        for o in &r.jobs {
            first_run.entry(o.id).or_insert(r.t);
        }
    }
    let plot_w = TIMELINE_W - LABEL_W - 10.0;
    let x = |t: f64| LABEL_W + plot_w * (t / end).clamp(0.0, 1.0);
    let height = ROW_H * jobs.id.len() as f64 + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{TIMELINE_W}\" \
         height=\"{height}\" viewBox=\"0 0 {TIMELINE_W} {height}\" font-family=\"sans-serif\" \
         font-size=\"11\">\n"
    );
    for &(row, i) in row_of.values() {
        let y = ROW_H * row as f64;
        let _ = writeln!(
            svg,
            "<text x=\"4\" y=\"{:.1}\">job {} ({})</text>",
            y + ROW_H * 0.75,
            jobs.id[i].unwrap_or(0.0),
            esc(&jobs.model[i])
        );
        if let (Some(a), f) = (jobs.arrival[i], jobs.finish[i].unwrap_or(end)) {
            let started = jobs.id[i].and_then(|id| first_run.get(&(id as u64)).copied());
            let queued_end = started.unwrap_or(f).clamp(a, f);
            for (class, fill, from, to) in [
                ("queued", "#eeeeee", a, queued_end),
                ("suspended", "#c8c8c8", queued_end, f),
            ] {
                if to > from {
                    let _ = writeln!(
                        svg,
                        "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" \
                         height=\"{:.1}\" fill=\"{fill}\"/>",
                        x(from),
                        y + ROW_H * 0.35,
                        (x(to) - x(from)).max(0.5),
                        ROW_H * 0.3
                    );
                }
            }
        }
    }
    round_bars(&mut svg, rounds, &row_of, &x, max_cpus);
    let axis_y = ROW_H * jobs.id.len() as f64 + 14.0;
    for t in crate::plot::nice_ticks(0.0, end, 8) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{axis_y:.1}\" text-anchor=\"middle\">{t} s</text>",
            x(t)
        );
    }
    svg.push_str("</svg>\n");
    figure(
        &svg,
        "each job's rounds: a bar where it ran (darker: more CPUs; its grant in the tooltip), \
         light grey where it waited for its first round, darker grey where it was suspended, a \
         black tick where it was re-capped in place, a red one where it was started again on \
         its new CPUs",
    )
}

/// A bar for each round each job ran, and a tick where it was started again (red) or its CPUs
/// changed from its last round's in place (black).
fn round_bars(
    svg: &mut String,
    rounds: &[RoundRecord],
    row_of: &BTreeMap<u64, (usize, usize)>,
    x: &dyn Fn(f64) -> f64,
    max_cpus: f64,
) {
    let blue = COLORS[0];
    let mut last_cpus: BTreeMap<u64, f64> = BTreeMap::new();
    for r in rounds {
        for o in &r.jobs {
            let Some(&(row, _)) = row_of.get(&o.id) else {
                continue;
            };
            let y = ROW_H * row as f64;
            let share = match (o.cpus, max_cpus > 0.0) {
                (Some(c), true) => 0.3 + 0.7 * c / max_cpus,
                _ => 1.0,
            };
            let tip = match (o.cpus, o.mem_bytes) {
                (Some(c), Some(m)) => format!(
                    "t={:.0} s: ran {:.0} s with {c} CPUs and {:.2} GiB",
                    r.t,
                    o.ran_s,
                    m as f64 / (1u64 << 30) as f64
                ),
                _ => format!("t={:.0} s: ran {:.0} s", r.t, o.ran_s),
            };
            let _ = writeln!(
                *svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"rgb({},{},{})\" \
                 fill-opacity=\"{share:.2}\"><title>{}</title></rect>",
                x(r.t),
                y + 2.0,
                (x(r.t + o.ran_s) - x(r.t)).max(0.5),
                ROW_H - 4.0,
                blue.0,
                blue.1,
                blue.2,
                esc(&tip)
            );
            let recapped = o
                .cpus
                .is_some_and(|c| last_cpus.insert(o.id, c).is_some_and(|before| before != c));
            let mark = match (o.restarted, recapped) {
                (true, _) => Some(("restart", "#d62728")),
                (false, true) => Some(("recap", "#000")),
                (false, false) => None,
            };
            if let Some((class, stroke)) = mark {
                let _ = writeln!(
                    *svg,
                    "<line class=\"{class}\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" \
                     y2=\"{2:.1}\" stroke=\"{stroke}\" stroke-width=\"2\"/>",
                    x(r.t),
                    y,
                    y + ROW_H
                );
            }
        }
    }
}

/// The page of the replay whose `--out` is `dir`: its summary and each scheme's JCTs.
pub fn replay_page(dir: &Path) -> Result<String, ReportError> {
    let path = dir.join("summary.parquet");
    let summary = read(&path)?;
    let policy = texts(&summary, "policy", &path)?;
    let mechanism = texts(&summary, "mechanism", &path)?;
    let mut body = format!(
        "<h1>Replay</h1>\n<p class=\"sub\">{} scheme(s) &middot; <code>{}</code></p>\n",
        policy.len(),
        esc(&dir.display().to_string())
    );
    body.push_str(&generic_table(&summary, &path)?);
    let mut chart = Chart::new("JCT distribution")
        .x_label("JCT (s)")
        .y_label("fraction of jobs")
        .y_range(0.0, 1.0);
    for (p, m) in policy.iter().zip(&mechanism) {
        let jobs: PathBuf = dir.join(format!("{p}-{m}.jobs.parquet"));
        if jobs.is_file() {
            chart = chart.line(format!("{p}+{m}"), Jobs::read(&jobs)?.cdf());
        }
    }
    body.push_str(&figure(&chart.to_svg_string()?, "each scheme's JCTs"));
    Ok(page("replay", &body))
}

/// Every column of `df`, numbers sortable.
fn generic_table(df: &DataFrame, path: &Path) -> Result<String, ReportError> {
    let names: Vec<String> = (df.get_column_names().iter())
        .map(|n| n.to_string())
        .collect();
    let mut columns = Vec::with_capacity(names.len());
    for (name, c) in names.iter().zip(df.columns()) {
        columns.push(match c.dtype().is_primitive_numeric() {
            true => Ok(numbers(df, name, path)?),
            false => Err(texts(df, name, path)?),
        });
    }
    let rows: Vec<(String, Vec<Td>)> = (0..df.height())
        .map(|i| {
            let cells = (columns.iter())
                .map(|c| match c {
                    Ok(n) => Td::num(n[i], crate::plot::sensitivity::num),
                    Err(t) => Td::text(&t[i]),
                })
                .collect();
            (String::new(), cells)
        })
        .collect();
    let heads: Vec<&str> = names.iter().map(String::as_str).collect();
    Ok(table("sortable summary", &heads, &rows))
}
