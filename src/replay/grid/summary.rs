//! The grid's summary table (one row per scenario: its coordinates and its replay's
//! [`Summary`]), the per-task part files a Slurm array writes and their merge, the load plots,
//! and the text table printed at the end.
//!
//! Only deterministic values go into the table: wall times and decision times (which depend on
//! the machine and its load) are left out, so the same grid gives the same bytes wherever and
//! however it runs.

use super::super::error::ReplayError;
use super::super::metrics::Summary;
use super::super::tables::{col, finite, write_table};
use super::error::GridError;
use super::expand::Scenario;
use crate::plot::{Chart, MarkerShape};
use polars::prelude::{DataFrame, ParquetCompression, ParquetReader, ParquetWriter, SerReader};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A scenario and what its replay measured.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub summary: Summary,
}

/// Columns of the summary table, in order (see docs/REPLAY.md, "Scenario grids").
pub const COLUMNS: &[&str] = &[
    "scenario",
    "scenario_id",
    "cluster",
    "jobs_per_hour",
    "trace",
    "split_image",
    "split_language",
    "split_speech",
    "seed",
    "policy",
    "mechanism",
    "jobs_admitted",
    "jobs",
    "unfinished",
    "mean_jct_s",
    "median_jct_s",
    "p99_jct_s",
    "makespan_s",
    "mean_queue_s",
    "mean_ftf_rho",
    "max_ftf_rho",
    "frac_ftf_rho_above_1",
    "gpu_alloc",
    "cpu_alloc",
    "mem_alloc",
    "gpu_use",
    "cpu_use",
    "mem_use",
    "rounds",
    "lp_rounding_ratio",
    "lp_failures",
];

/// One row per result, in the order given.
pub fn frame(results: &[ScenarioResult]) -> Result<DataFrame, ReplayError> {
    let sc =
        |get: fn(&Scenario) -> String| results.iter().map(|r| get(&r.scenario)).collect::<Vec<_>>();
    let f = |get: fn(&Summary) -> f64| {
        results
            .iter()
            .map(|r| finite(get(&r.summary)))
            .collect::<Vec<_>>()
    };
    let u = |get: fn(&ScenarioResult) -> u64| results.iter().map(get).collect::<Vec<u64>>();
    let split = |k: usize| {
        results
            .iter()
            .map(|r| r.scenario.split[k])
            .collect::<Vec<f64>>()
    };
    let columns = vec![
        col("scenario", u(|r| r.scenario.index as u64)),
        col("scenario_id", sc(|s| s.id.clone())),
        col("cluster", sc(|s| s.cluster.clone())),
        col(
            "jobs_per_hour",
            results
                .iter()
                .map(|r| r.scenario.jobs_per_hour)
                .collect::<Vec<_>>(),
        ),
        col(
            "trace",
            results
                .iter()
                .map(|r| r.scenario.trace.clone())
                .collect::<Vec<_>>(),
        ),
        col("split_image", split(0)),
        col("split_language", split(1)),
        col("split_speech", split(2)),
        col("seed", u(|r| r.scenario.seed)),
        col("policy", sc(|s| s.policy.clone())),
        col("mechanism", sc(|s| s.mechanism.clone())),
        col("jobs_admitted", u(|r| r.summary.jobs_admitted as u64)),
        col("jobs", u(|r| r.summary.jobs_measured as u64)),
        col("unfinished", u(|r| r.summary.unfinished as u64)),
        col("mean_jct_s", f(|m| m.mean_jct_s)),
        col("median_jct_s", f(|m| m.median_jct_s)),
        col("p99_jct_s", f(|m| m.p99_jct_s)),
        col("makespan_s", f(|m| m.makespan_s)),
        col("mean_queue_s", f(|m| m.mean_queue_s)),
        col("mean_ftf_rho", f(|m| m.mean_ftf_rho)),
        col("max_ftf_rho", f(|m| m.max_ftf_rho)),
        col("frac_ftf_rho_above_1", f(|m| m.frac_ftf_rho_above_1)),
        col("gpu_alloc", f(|m| m.gpu_alloc)),
        col("cpu_alloc", f(|m| m.cpu_alloc)),
        col("mem_alloc", f(|m| m.mem_alloc)),
        col("gpu_use", f(|m| m.gpu_use)),
        col("cpu_use", f(|m| m.cpu_use)),
        col("mem_use", f(|m| m.mem_use)),
        col("rounds", u(|r| r.summary.rounds as u64)),
        col(
            "lp_rounding_ratio",
            results
                .iter()
                .map(|r| r.summary.lp_rounding_ratio.and_then(finite))
                .collect::<Vec<_>>(),
        ),
        col("lp_failures", u(|r| r.summary.lp_failures)),
    ];
    debug_assert_eq!(columns.len(), COLUMNS.len());
    DataFrame::new(results.len(), columns)
        .map_err(|e| ReplayError::Internal(format!("building the grid summary: {e}")))
}

/// `<out>/parts/part-NNNNN.parquet`: the rows of array task `chunk_index`.
pub fn part_path(out: &Path, chunk_index: usize) -> PathBuf {
    out.join("parts")
        .join(format!("part-{chunk_index:05}.parquet"))
}

/// Writes one task's rows (Parquet keeps every f64 bit for bit; written to a temporary name
/// and renamed, so a part that exists is complete).
pub fn write_part(df: &mut DataFrame, path: &Path) -> Result<(), GridError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
    let tmp = path.with_extension("parquet.tmp");
    let part_err = |e: polars::error::PolarsError| GridError::Part {
        path: tmp.clone(),
        message: e.to_string(),
    };
    let file = std::fs::File::create(&tmp).map_err(ReplayError::io(&tmp))?;
    let mut w = std::io::BufWriter::new(file);
    ParquetWriter::new(&mut w)
        .with_compression(ParquetCompression::Zstd(None))
        .finish(df)
        .map_err(part_err)?;
    std::io::Write::flush(&mut w).map_err(ReplayError::io(&tmp))?;
    drop(w);
    std::fs::rename(&tmp, path).map_err(ReplayError::io(path))?;
    Ok(())
}

/// Reads every part of a grid of `scenarios` split into `chunk`-sized tasks and stacks them in
/// scenario order; a missing part, or one whose rows are not its scenarios, is an error naming
/// the file.
pub fn merge_parts(
    out: &Path,
    scenarios: &[Scenario],
    chunk: usize,
) -> Result<DataFrame, GridError> {
    let tasks = super::expand::chunk_count(scenarios.len(), chunk);
    let mut merged: Option<DataFrame> = None;
    let mut missing = Vec::new();
    for i in 0..tasks {
        let path = part_path(out, i);
        if !path.exists() {
            missing.push(i);
            continue;
        }
        let bad = |message: String| GridError::Part {
            path: path.clone(),
            message,
        };
        let file = std::fs::File::open(&path).map_err(ReplayError::io(&path))?;
        let df = ParquetReader::new(file)
            .finish()
            .map_err(|e| bad(e.to_string()))?;
        let range = super::expand::chunk_range(scenarios.len(), chunk, i);
        let ids = df
            .column("scenario_id")
            .and_then(|c| c.str().cloned())
            .map_err(|e| bad(e.to_string()))?;
        let expected: Vec<&str> = scenarios[range.clone()]
            .iter()
            .map(|s| s.id.as_str())
            .collect();
        let found: Vec<&str> = ids.iter().map(|x| x.unwrap_or("")).collect();
        if found != expected {
            return Err(bad(format!(
                "holds scenarios {found:?}, not task {i}'s {expected:?} (scenarios {}..{}): \
                 was the grid file or --chunk changed after the array was submitted?",
                range.start, range.end
            )));
        }
        merged = Some(match merged {
            None => df,
            Some(mut m) => {
                m.vstack_mut(&df).map_err(|e| bad(e.to_string()))?;
                m
            }
        });
    }
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(10).map(|i| i.to_string()).collect();
        return Err(GridError::Part {
            path: out.join("parts"),
            message: format!(
                "{} of {tasks} part files missing (tasks {}{}); see the task logs in {}",
                missing.len(),
                shown.join(", "),
                if missing.len() > 10 { ", ..." } else { "" },
                out.join("slurm").display()
            ),
        });
    }
    let mut df = merged.unwrap_or_else(|| frame(&[]).unwrap_or_default());
    df.rechunk_mut();
    Ok(df)
}

/// Writes `summary.{csv,parquet}` and the load plots into `out`; returns the plot paths.
pub fn write_outputs(df: &mut DataFrame, out: &Path) -> Result<Vec<PathBuf>, GridError> {
    std::fs::create_dir_all(out).map_err(ReplayError::io(out))?;
    df.rechunk_mut();
    write_table(df, out, "summary")?;
    Ok(write_load_plots(df, out)?)
}

/// The columns the plots need, per row.
struct PlotRow {
    cluster: String,
    split: String,
    scheme: String,
    load: f64,
    mean_jct_h: Option<f64>,
    p99_jct_h: Option<f64>,
}

fn plot_rows(df: &DataFrame) -> Result<Vec<PlotRow>, polars::error::PolarsError> {
    let s = |n: &str| df.column(n).and_then(|c| c.str().cloned());
    let f = |n: &str| df.column(n).and_then(|c| c.f64().cloned());
    let (cluster, policy, mechanism) = (s("cluster")?, s("policy")?, s("mechanism")?);
    let (load, mean, p99) = (f("jobs_per_hour")?, f("mean_jct_s")?, f("p99_jct_s")?);
    let splits = [f("split_image")?, f("split_language")?, f("split_speech")?];
    let mut rows = Vec::new();
    for i in 0..df.height() {
        let Some(x) = load.get(i) else { continue };
        let split: Vec<String> = splits
            .iter()
            .map(|c| c.get(i).map_or("-".into(), |v| v.to_string()))
            .collect();
        rows.push(PlotRow {
            cluster: cluster.get(i).unwrap_or("").to_owned(),
            split: split.join(":"),
            scheme: format!(
                "{}+{}",
                policy.get(i).unwrap_or(""),
                mechanism.get(i).unwrap_or("")
            ),
            load: x,
            mean_jct_h: mean.get(i).map(|v| v / 3600.0),
            p99_jct_h: p99.get(i).map(|v| v / 3600.0),
        });
    }
    Ok(rows)
}

/// A file-name-safe form of a label.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Per (cluster, split) with synthetic loads: mean and p99 JCT (hours, averaged over seeds)
/// against the load, one line per scheme (Synergy's load figure). Named
/// `{mean,p99}_jct_vs_load.{png,svg}`, with `.<cluster>.<split>` before the extension when the
/// grid has several clusters or splits.
fn write_load_plots(df: &DataFrame, out: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    let rows = plot_rows(df).map_err(|e| ReplayError::Table {
        path: out.join("summary.parquet"),
        message: e.to_string(),
    })?;
    let mut figures: Vec<Figure> = Vec::new();
    for r in &rows {
        let fi = match figures
            .iter()
            .position(|f| f.cluster == r.cluster && f.split == r.split)
        {
            Some(i) => i,
            None => {
                figures.push(Figure {
                    cluster: r.cluster.clone(),
                    split: r.split.clone(),
                    schemes: Vec::new(),
                });
                figures.len() - 1
            }
        };
        let schemes = &mut figures[fi].schemes;
        let si = match schemes.iter().position(|(s, _)| *s == r.scheme) {
            Some(i) => i,
            None => {
                schemes.push((r.scheme.clone(), BTreeMap::new()));
                schemes.len() - 1
            }
        };
        // Keyed by the load's bits: loads are positive, so bit order is numeric order.
        let at = schemes[si].1.entry(r.load.to_bits()).or_insert(AtLoad {
            load: r.load,
            mean: Vec::new(),
            p99: Vec::new(),
        });
        at.mean.extend(r.mean_jct_h);
        at.p99.extend(r.p99_jct_h);
    }
    let mut written = Vec::new();
    let several = figures.len() > 1;
    let average = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    for f in &figures {
        for stat in ["mean", "p99"] {
            let mut chart = Chart::new(format!(
                "{stat} JCT vs load, {}, split {}",
                f.cluster, f.split
            ))
            .x_label("load (jobs/hour)")
            .y_label(format!("{stat} JCT (hours), mean over seeds"));
            let mut y_max: f64 = 0.0;
            for (scheme, loads) in &f.schemes {
                let pts: Vec<(f64, f64)> = loads
                    .values()
                    .filter_map(|p| {
                        average(if stat == "mean" { &p.mean } else { &p.p99 }).map(|y| (p.load, y))
                    })
                    .collect();
                y_max = pts.iter().map(|p| p.1).fold(y_max, f64::max);
                chart = chart.line(scheme.clone(), pts).markers(MarkerShape::Circle);
            }
            if y_max > 0.0 {
                chart = chart.y_range(0.0, y_max * 1.05);
            }
            let name = if several {
                format!("{stat}_jct_vs_load.{}.{}", slug(&f.cluster), slug(&f.split))
            } else {
                format!("{stat}_jct_vs_load")
            };
            written.extend(chart.save_png_and_svg(out, &name)?);
        }
    }
    Ok(written)
}

/// One scheme at one load: mean and p99 JCT (hours) of each seed.
struct AtLoad {
    load: f64,
    mean: Vec<f64>,
    p99: Vec<f64>,
}

/// The lines of one (cluster, split) figure: per scheme (in table order), its loads.
struct Figure {
    cluster: String,
    split: String,
    schemes: Vec<(String, BTreeMap<u64, AtLoad>)>,
}

fn hours(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}", x / 3600.0)
    } else {
        "-".into()
    }
}

/// The text table printed at the end of a local run: one line per scenario.
pub fn render(results: &[ScenarioResult]) -> String {
    let mut o = String::new();
    let w = results
        .iter()
        .map(|r| r.scenario.id.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = writeln!(
        o,
        "{:>6} {:<w$} {:>6} {:>9} {:>9} {:>9} {:>10} {:>5}",
        "#", "scenario", "jobs", "mean JCT", "med JCT", "p99 JCT", "makespan", "GPU%"
    );
    for r in results {
        let m = &r.summary;
        let _ = writeln!(
            o,
            "{:>6} {:<w$} {:>6} {:>8}h {:>8}h {:>8}h {:>9}h {:>5}",
            r.scenario.index,
            r.scenario.id,
            m.jobs_measured,
            hours(m.mean_jct_s),
            hours(m.median_jct_s),
            hours(m.p99_jct_s),
            hours(m.makespan_s),
            if m.gpu_alloc.is_finite() {
                format!("{:.1}", m.gpu_alloc * 100.0)
            } else {
                "-".into()
            }
        );
    }
    o
}
