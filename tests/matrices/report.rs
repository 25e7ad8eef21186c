//! `profiler report` in a real browser: Debian's Chromium opens each page from `file://`
//! headless. A page prints no console message (a request its policy blocked would be one), the
//! numbers in the rendered DOM are the matrix's, and a screenshot is kept under
//! `target/tmp/report/`.

use profiler::matrix::{CellSource, CostWeights, DEFAULT_EPS, Matrix, demands, load_matrix};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");

/// Debian's Chromium, which scripts/test.sh installs; `None` (with a message) where it is
/// missing outside CI.
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: the report's browser tests need Chromium (scripts/test.sh installs it)"
        );
        eprintln!("skipped: no Chromium (apt-get install chromium, or run scripts/test.sh)");
    }
    found
}

fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn report(inputs: &[&str], out: &Path) {
    let run = Command::new(PROFILER)
        .arg("report")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "profiler report failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// What Chromium made of a page: the DOM after its script ran, and the console messages.
struct Rendered {
    dom: String,
    console: Vec<String>,
}

fn browser_args(browser: &Path, profile: &Path) -> Command {
    let mut c = Command::new("timeout");
    c.arg("120").arg(browser).args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

fn render(browser: &Path, page: &Path, screenshot: &Path) -> Rendered {
    let page = std::fs::canonicalize(page).unwrap();
    let url = format!("file://{}", page.display());
    let profile = tempfile::tempdir().unwrap();
    let out = browser_args(browser, profile.path())
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shot = browser_args(browser, profile.path())
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg("--window-size=1280,2000")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        shot.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let png = std::fs::read(screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        screenshot.display()
    );
    Rendered {
        dom: String::from_utf8(out.stdout).unwrap(),
        console: String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
    }
}

/// The `data-*` attributes of each `<tr>` that has `key`, with those of its cells.
fn rows(dom: &str, key: &str) -> Vec<HashMap<String, String>> {
    dom.split("<tr")
        .skip(1)
        .map(|row| &row[..row.find("</tr>").unwrap_or(row.len())])
        .filter(|row| row.contains(&format!("{key}=\"")))
        .map(|row| {
            let mut attrs = HashMap::new();
            for piece in row.split(" data-").skip(1) {
                if let Some((name, rest)) = piece.split_once("=\"") {
                    let value = rest.split('"').next().unwrap_or_default();
                    attrs.insert(name.to_string(), value.to_string());
                }
            }
            attrs
        })
        .collect()
}

fn number(row: &HashMap<String, String>, name: &str) -> f64 {
    row.get(name)
        .unwrap_or_else(|| panic!("no data-{name} in {row:?}"))
        .parse()
        .unwrap()
}

fn shape() -> profiler::matrix::ServerShape {
    "24:8:500".parse().unwrap()
}

#[test]
fn a_matrix_page_shows_every_measured_cell_s_rate_and_interval_and_the_demand() {
    let Some(browser) = chromium() else { return };
    let path = "matrices/examples/input-pipeline.validated.matrix.jsonl";
    let out = out_dir("validated");
    report(&[path], &out);
    let page = out.join("input-pipeline.validated.html");
    let shown = render(&browser, &page, &out.with_extension("png"));
    assert!(shown.console.is_empty(), "console: {:?}", shown.console);
    let m: Matrix = load_matrix(Path::new(path)).unwrap();
    let cells = rows(&shown.dom, "data-cpu");
    assert_eq!(cells.len(), m.cells.len());
    let mut measured = 0;
    for (c, row) in m.cells.iter().zip(&cells) {
        assert_eq!(number(row, "cpu"), c.cpu);
        assert_eq!(number(row, "memory-bytes"), c.memory_bytes as f64);
        if c.source != CellSource::Measured {
            continue;
        }
        let t = c.throughput.as_ref().unwrap();
        assert_eq!(number(row, "rate"), t.samples_per_s, "{row:?}");
        assert_eq!(number(row, "low"), t.ci95_low, "{row:?}");
        assert_eq!(number(row, "high"), t.ci95_high, "{row:?}");
        measured += 1;
    }
    assert!(measured >= 4, "{measured} measured cells");
    let demand = &demands(&m, &shape(), DEFAULT_EPS, CostWeights::default()).unwrap()[0].1;
    let verdict = &rows(&shown.dom.replace("<div", "<tr"), "data-speedup")[0];
    assert_eq!(number(verdict, "cpus-per-gpu"), demand.cpus_per_gpu);
    assert_eq!(number(verdict, "mem-gb-per-gpu"), demand.mem_gb_per_gpu);
    assert_eq!(number(verdict, "speedup"), demand.speedup_over_proportional);
    // The charts are inline SVG with an error bar per measured cell, and nothing is fetched.
    assert!(shown.dom.matches("<svg").count() >= 3);
    assert!(!shown.dom.contains("src=\"http"));
}

#[test]
fn the_zoo_s_index_links_every_job_with_its_demand() {
    let Some(browser) = chromium() else { return };
    let out = out_dir("zoo");
    report(&["matrices/zoo"], &out);
    let shown = render(
        &browser,
        &out.join("index.html"),
        &out.with_extension("png"),
    );
    assert!(shown.console.is_empty(), "console: {:?}", shown.console);
    let listed = rows(&shown.dom, "data-page");
    assert_eq!(listed.len(), 12);
    for row in &listed {
        let page = &row["page"];
        let stem = page.strip_suffix(".html").unwrap();
        let m =
            load_matrix(&Path::new("matrices/zoo").join(format!("{stem}.matrix.jsonl"))).unwrap();
        let demand = &demands(&m, &shape(), DEFAULT_EPS, CostWeights::default()).unwrap()[0].1;
        assert_eq!(
            number(row, "speedup"),
            demand.speedup_over_proportional,
            "{page}"
        );
        assert_eq!(number(row, "cpus-per-gpu"), demand.cpus_per_gpu, "{page}");
        assert!(out.join(page).exists(), "{page}");
    }
    // One overview chart for twelve jobs.
    assert_eq!(shown.dom.matches("<svg").count(), 1);
}

#[test]
fn a_deploy_s_page_shows_synergy_s_table_from_its_comparison() {
    let Some(browser) = chromium() else { return };
    // A real deploy's tables and journals: the shipped workload, four schemes (tests/data).
    let run = Path::new("tests/data/deploy-run");
    let out = out_dir("deploy");
    report(&[run.to_str().unwrap()], &out);
    let shown = render(
        &browser,
        &out.join("deploy-run.run.html"),
        &out.with_extension("png"),
    );
    assert!(shown.console.is_empty(), "console: {:?}", shown.console);
    use polars::prelude::{ParquetReader, SerReader};
    let file = std::fs::File::open(run.join("compare.parquet")).unwrap();
    let df = ParquetReader::new(file).finish().unwrap();
    let column = |name: &str| -> Vec<f64> {
        let c = df.column(name).unwrap().f64().unwrap();
        c.iter().map(|v| v.unwrap()).collect()
    };
    let rows = rows(&shown.dom, "data-scheme");
    assert_eq!(rows.len(), df.height());
    for (name, data) in [
        ("makespan_deploy_s", "makespan-deploy"),
        ("makespan_replay_s", "makespan-replay"),
        ("mean_jct_deploy_s", "mean-jct-deploy"),
        ("mean_jct_replay_s", "mean-jct-replay"),
    ] {
        let shown: Vec<f64> = rows.iter().map(|r| number(r, data)).collect();
        assert_eq!(shown, column(name), "{name}");
    }
    // One timeline a scheme, each job's rounds a bar.
    assert_eq!(shown.dom.matches("class=\"timeline\"").count(), df.height());
}
