//! Cells measured while other processes took the job's CPUs, and CPU curves that fall with
//! more CPU: `profiler show` and `profiler plot` mark them.

use profiler::matrix::{Interference, Matrix, check_matrix, load_matrix};
use std::path::{Path, PathBuf};
use std::process::Command;

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");

/// The measured example with its 2-CPU cell at the top memory level measured beside a hog: far
/// below the 1-CPU cell, and still disturbed after its re-measurements.
fn hogged() -> Matrix {
    let mut m = load_matrix(Path::new(
        "matrices/examples/input-pipeline.measured.matrix.jsonl",
    ))
    .unwrap();
    let cell = m
        .cells
        .iter_mut()
        .find(|c| c.cpu == 2.0 && c.memory_bytes == 125_442_060)
        .unwrap();
    let t = cell.throughput.as_mut().unwrap();
    (t.samples_per_s, t.ci95_low, t.ci95_high) = (300.0, 290.0, 310.0);
    cell.interference = Some(Interference {
        other_cores: 1.1,
        idle_cores: 0.0,
        cpu_pressure_pct: Some(55.0),
        discarded_windows: 8,
        disturbed: true,
        ..Default::default()
    });
    m
}

fn write(dir: &Path, m: &Matrix) -> PathBuf {
    let path = dir.join("hogged.matrix.jsonl");
    let mut text = serde_json::to_string(&m.header).unwrap() + "\n";
    for c in &m.cells {
        text.push_str(&serde_json::to_string(c).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn run(args: &[&str], path: &Path) -> String {
    let out = Command::new(PROFILER)
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_checks_find_the_hogged_cell_and_the_falling_curve() {
    let m = hogged();
    let f = check_matrix(&m);
    assert_eq!(f.disturbed.len(), 1);
    assert_eq!(
        f.messages(),
        vec![
            "at 0.12 GiB: 2 CPUs (300.0 samples/s) < 1 CPU (961.6): the curve falls with more \
             CPU; re-measure on a quiet machine"
        ]
    );
    // The shipped example is clean.
    let clean = load_matrix(Path::new(
        "matrices/examples/input-pipeline.measured.matrix.jsonl",
    ))
    .unwrap();
    assert!(check_matrix(&clean).is_empty());
}

#[test]
fn show_marks_disturbed_cells_and_lists_falling_curves() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &hogged());
    let text = run(&["show"], &path);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("2.00 |"))
        .unwrap_or_else(|| panic!("no 2-CPU row: {text}"));
    assert!(row.contains("!300.0") && !row.contains("!847.9"), "{row}");
    assert!(text.contains("\n! = disturbed: other processes"), "{text}");
    assert!(
        text.contains("checks:\n  at 0.12 GiB: 2 CPUs (300.0 samples/s) < 1 CPU (961.6)"),
        "{text}"
    );
    let cells = run(&["show", "--cells"], &path);
    assert!(cells.contains("!1.10"), "{cells}");
}

#[test]
fn plot_rings_disturbed_cells_in_the_curves_and_the_heat_map() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &hogged());
    let out = dir.path().join("plots");
    let listed = run(&["plot", "-o", out.to_str().unwrap()], &path);
    assert!(
        listed.contains("hogged") || listed.contains("input-pipeline"),
        "{listed}"
    );
    let svg = |what: &str| {
        std::fs::read_to_string(out.join(format!("input-pipeline.{what}.svg")))
            .unwrap_or_else(|e| panic!("{what}: {e}"))
    };
    for what in ["cpu", "memory"] {
        let s = svg(what);
        assert!(s.contains("disturbed: other processes"), "{what}: legend");
        assert!(s.contains("took the job"), "{what}: legend's second line");
    }
    let heat = svg("heatmap");
    assert!(
        heat.lines().any(|l| l.trim() == "!300"),
        "the cell's value is marked"
    );
    assert!(!heat.lines().any(|l| l.trim() == "!962"));
    assert!(heat.contains("! disturbed: other processes"), "legend");
    assert!(out.join("input-pipeline.cpu.png").is_file());

    // A clean matrix has no such legend.
    let clean_out = dir.path().join("clean");
    run(
        &["plot", "-o", clean_out.to_str().unwrap()],
        Path::new("matrices/examples/input-pipeline.measured.matrix.jsonl"),
    );
    let clean = std::fs::read_to_string(clean_out.join("input-pipeline.cpu.svg")).unwrap();
    assert!(!clean.contains("disturbed"));
}

/// Every export names the disturbed cells on stderr; the table formats mark them per row.
#[test]
fn exports_name_disturbed_cells() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = hogged();
    for c in &mut m.cells {
        if let Some(i) = c.interference.as_mut() {
            i.disturbed_by = Some("the job's tasks waiting for a CPU".into());
        }
    }
    let path = write(dir.path(), &m);
    for (format, out) in [
        ("gavel", dir.path().join("gavel.json")),
        ("csv", dir.path().join("cells.csv")),
        ("synergy", dir.path().join("synergy")),
    ] {
        let o = Command::new(PROFILER)
            .args(["export", "--format", format, "-o"])
            .arg(&out)
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{format}: {stderr}");
        assert!(
            stderr.contains("1 cell(s) measured while other load disturbed the job")
                && stderr.contains("2 CPUs, 0.13 GB (by the job's tasks waiting for a CPU)"),
            "{format}: {stderr}"
        );
    }
    let csv = std::fs::read_to_string(dir.path().join("cells.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "disturbed").unwrap();
    let marked = csv
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(col) == Some("true"))
        .count();
    assert_eq!(marked, 1, "{csv}");
    // A clean matrix exports without the note.
    let o = Command::new(PROFILER)
        .args(["export", "--format", "gavel"])
        .arg("matrices/examples/input-pipeline.measured.matrix.jsonl")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("disturbed"));
}
