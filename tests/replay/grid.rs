//! Scenario grids (`profiler replay --grid`): the same table for any thread count and through
//! the array path (chunks written as parts, merged), errors that name file and line, and the
//! size limit.

use profiler::replay::grid::{self, GridError, GridSpec, local::Unobserved};
use std::path::{Path, PathBuf};

/// 2 clusters x 5 loads x 5 seeds x 2 schemes = 100 small synthetic scenarios (also run as a
/// Slurm array by `tests/slurm/grid.rs`).
const GRID_100: &str = include_str!("../data/grid-100.toml");

fn write_grid(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("grid.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs a grid's chunks as the array tasks would, in reverse order, then merges them.
fn run_as_chunks(grid: &GridSpec, chunk: usize, out: &Path) {
    let tasks = grid::expand::chunk_count(grid.len(), chunk);
    for i in (0..tasks).rev() {
        grid::run_chunk(grid, chunk, i, 2, &Unobserved, out).unwrap();
    }
    grid::merge(grid, chunk, out).unwrap();
}

#[test]
fn grid_table_is_identical_for_any_thread_count_and_through_chunks() {
    let d = tempfile::tempdir().unwrap();
    let grid = GridSpec::load(&write_grid(d.path(), GRID_100)).unwrap();
    assert_eq!(grid.len(), 100);
    let outs: Vec<PathBuf> = ["t1", "t3", "chunks"]
        .iter()
        .map(|n| d.path().join(n))
        .collect();
    let started = std::time::Instant::now();
    let (results, _) = grid::run_local(&grid, 1, &Unobserved, Some(&outs[0])).unwrap();
    eprintln!(
        "100 scenarios, 1 thread: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    grid::run_local(&grid, 3, &Unobserved, Some(&outs[1])).unwrap();
    run_as_chunks(&grid, 7, &outs[2]);

    let csv = |o: &Path| std::fs::read(o.join("summary.csv")).unwrap();
    assert_eq!(csv(&outs[0]), csv(&outs[1]), "1 vs 3 threads");
    assert_eq!(csv(&outs[0]), csv(&outs[2]), "local vs merged chunks");
    let table = String::from_utf8(csv(&outs[0])).unwrap();
    assert_eq!(table.lines().count(), 101);
    assert!(
        table.starts_with(&grid::summary::COLUMNS.join(",")),
        "{}",
        table.lines().next().unwrap()
    );
    // Rows in expansion order, every scenario measured every job, and the load matters.
    for (k, r) in results.iter().enumerate() {
        assert_eq!(r.scenario.index, k);
        assert_eq!(r.summary.jobs_measured, 15, "{}", r.scenario.id);
    }
    assert_eq!(
        results[0].scenario.id,
        "synergy-1/load=2/split=20:70:10/seed=0/fifo+proportional"
    );
    assert_eq!(
        results[99].scenario.id,
        "synergy-2/load=10/split=20:70:10/seed=4/srtf+tune"
    );
    let mean_jct = |cluster: &str, load: f64| {
        let v: Vec<f64> = results
            .iter()
            .filter(|r| r.scenario.cluster == cluster && r.scenario.jobs_per_hour == Some(load))
            .map(|r| r.summary.mean_jct_s)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(mean_jct("synergy-1", 10.0) > mean_jct("synergy-1", 2.0));
    assert!(mean_jct("synergy-1", 10.0) > mean_jct("synergy-2", 10.0));

    // The Parquet twins hold the same frame.
    use polars::prelude::{ParquetReader, SerReader};
    let pq = |o: &Path| {
        ParquetReader::new(std::fs::File::open(o.join("summary.parquet")).unwrap())
            .finish()
            .unwrap()
    };
    assert!(pq(&outs[0]).equals_missing(&pq(&outs[2])));
    // One pair of load plots per cluster (same split), PNG and SVG.
    for o in &outs {
        for c in ["synergy-1", "synergy-2"] {
            for ext in ["png", "svg"] {
                let f = o.join(format!("mean_jct_vs_load.{c}.20-70-10.{ext}"));
                assert!(f.exists(), "{}", f.display());
            }
        }
    }
    let svg =
        std::fs::read_to_string(outs[0].join("mean_jct_vs_load.synergy-1.20-70-10.svg")).unwrap();
    for text in ["fifo+proportional", "srtf+tune", "load (jobs/hour)"] {
        assert!(svg.contains(text), "plot lacks {text}");
    }
}

#[test]
fn merge_names_missing_and_foreign_parts() {
    let d = tempfile::tempdir().unwrap();
    let text = GRID_100.replace("seeds = [0, 1, 2, 3, 4]", "seeds = [0]");
    let grid = GridSpec::load(&write_grid(d.path(), &text)).unwrap();
    assert_eq!(grid.len(), 20);
    let out = d.path().join("out");
    grid::run_chunk(&grid, 8, 0, 1, &Unobserved, &out).unwrap();
    grid::run_chunk(&grid, 8, 2, 1, &Unobserved, &out).unwrap();
    let e = grid::merge(&grid, 8, &out).unwrap_err().to_string();
    assert!(e.contains("1 of 3 part files missing (tasks 1)"), "{e}");
    // A part of another grid (the seed changed) is refused, naming the file.
    let other = GridSpec::load(&write_grid(d.path(), &text.replace("[0]", "[9]"))).unwrap();
    grid::run_chunk(&other, 8, 1, 1, &Unobserved, &out).unwrap();
    let e = grid::merge(&grid, 8, &out).unwrap_err().to_string();
    assert!(
        e.contains("part-00001.parquet") && e.contains("seed=9"),
        "{e}"
    );
    // Past the last task.
    let e = grid::run_chunk(&grid, 8, 3, 1, &Unobserved, &out).unwrap_err();
    assert!(e.to_string().contains("3 tasks of 8"), "{e}");
}

/// Every bad grid is an error naming the file and the line of the offending value.
#[test]
fn bad_grids_name_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let base = "clusters = [\"synergy-1\"]\nloads = [2]\nseeds = [0]\nschemes = [\"fifo+tune\"]\n[settings]\njobs = 5\n";
    let cases: &[(&str, &str, usize, &str)] = &[
        (
            "schemes = [\"fifo+tune\"]",
            "schemes = [\"fifo+tune\", \"nope+tune\"]",
            4,
            "unknown policy \"nope\"",
        ),
        (
            "schemes = [\"fifo+tune\"]",
            "schemes = [\"fifo+magic\"]",
            4,
            "unknown mechanism",
        ),
        (
            "schemes = [\"fifo+tune\"]",
            "schemes = [\"fifo\"]",
            4,
            "POLICY+MECHANISM",
        ),
        (
            "seeds = [0]",
            "seeds = [0, 1,\n 0]",
            4,
            "lists this value twice",
        ),
        ("seeds = [0]", "seeds = [-1]", 3, ""),
        ("loads = [2]", "loads = []", 2, "`loads` is empty"),
        ("loads = [2]", "loads = [2, nan]", 2, "not in"),
        ("loads = [2]", "loads = [2, 1e9]", 2, "not in"),
        (
            "loads = [2]",
            "traces = [\"missing.csv\"]",
            2,
            "missing.csv is not a file",
        ),
        (
            "clusters = [\"synergy-1\"]",
            "clusters = [\"nope.toml\"]",
            1,
            "neither a built-in",
        ),
        (
            "jobs = 5",
            "jobs = 5\nwindow = \"9..x\"",
            7,
            "expected FIRST..LAST",
        ),
        (
            "jobs = 5",
            "jobs = 5\nround_s = 0",
            7,
            "round_s 0 is not in",
        ),
        (
            "jobs = 5",
            "jobs = 5\nsemantics = \"fast\"",
            7,
            "expected \"exact\" or \"synergy\"",
        ),
        ("jobs = 5", "jobs = 5\nhorizon = \"1x\"", 7, "unit must be"),
        (
            "jobs = 5",
            "jobs = 5\ncolour = 1",
            7,
            "unknown field `colour`",
        ),
        ("jobs = 5", "", 2, "need `jobs = N` or `window"),
        (
            "seeds = [0]",
            "seeds = [0]\nsplits = [[0, 0, 0]]",
            4,
            "not all 0",
        ),
        ("seeds = [0]", "seeds = [0]\nsplits = [[1, 2]]", 4, ""),
        ("loads = [2]", "loads = [2", 3, "missing comma"),
    ];
    for (from, to, line, message) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        let path = write_grid(d.path(), &text);
        let e = GridSpec::load(&path).unwrap_err().to_string();
        let want = format!("{}:{line}: ", path.display());
        assert!(
            e.starts_with(&want) && e.contains(message),
            "{to:?}: want {want}...{message}, got {e}"
        );
    }
    // A cluster file's own error names that file's line.
    std::fs::write(
        d.path().join("c.toml"),
        "[[group]]\ncount = 0\ngpus = 8\ncpus = 24\nmemory_gb = 500\n",
    )
    .unwrap();
    let path = write_grid(d.path(), &base.replace("\"synergy-1\"", "\"c.toml\""));
    let e = GridSpec::load(&path).unwrap_err().to_string();
    assert!(e.contains("c.toml:1:") && e.contains("at least 1"), "{e}");
}

#[test]
fn absurdly_large_grids_are_refused_before_expansion() {
    let d = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let loads: Vec<String> = (1..=60).map(|i| i.to_string()).collect();
    let text = format!(
        "loads = [{}]\nseeds = [{}]\nschemes = [\"fifo+tune\"]\n[settings]\njobs = 5\n",
        loads.join(","),
        seeds.join(",")
    );
    let path = write_grid(d.path(), &text);
    let e = GridSpec::load(&path).unwrap_err().to_string();
    assert!(
        e.contains(":1: the grid has 120000 scenarios (1 clusters x 60 workloads x 1 splits x 2000 seeds x 1 schemes); at most 100000"),
        "{e}"
    );
}

/// Paths in a grid are relative to the grid file; traces are detected by format.
#[test]
fn traces_and_cluster_files_are_relative_to_the_grid() {
    let d = tempfile::tempdir().unwrap();
    let sub = d.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::copy(
        super::repo("workloads/traces/synergy/deploy_dynamic_100job.csv"),
        d.path().join("t.csv"),
    )
    .unwrap();
    std::fs::write(
        d.path().join("c.toml"),
        "name = \"four\"\n[[group]]\ncount = 4\ngpus = 8\ncpus = 24\nmemory_gb = 500\n",
    )
    .unwrap();
    let path = sub.join("g.toml");
    std::fs::write(
        &path,
        "clusters = [\"../c.toml\"]\ntraces = [\"../t.csv\"]\nseeds = [0]\nschemes = [\"srtf+proportional\", \"srtf+tune\"]\n",
    )
    .unwrap();
    let grid = GridSpec::load(&path).unwrap();
    let (r, _) = grid::run_local(&grid, 2, &Unobserved, None).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(
        r[0].scenario.id,
        "../c.toml/trace=../t.csv/split=20:70:10/seed=0/srtf+proportional"
    );
    assert_eq!(r[0].scenario.jobs_per_hour, None);
    assert_eq!(r[1].summary.jobs_measured, 100);
    // The deployment trace's figure (docs/findings/synergy-fidelity.md): SRTF + Tune beats
    // proportional.
    assert!(r[0].summary.mean_jct_s > 1.2 * r[1].summary.mean_jct_s);
    // A failing scenario is named.
    let e: GridError = grid::run_local(
        &GridSpec::parse(
            "clusters = [\"synergy-1\"]\nloads = [1]\nschemes = [\"fifo+tune\"]\n[settings]\njobs = 3\nhorizon = \"1s\"\n",
            &path,
        )
        .unwrap(),
        1,
        &Unobserved,
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("scenario 0 (synergy-1/load=1/"),
        "{e}"
    );
}

/// The command line: a local run prints a line per scenario and writes the table the library
/// writes; array-task flags without --out are refused.
#[test]
fn command_line_grid_run() {
    let d = tempfile::tempdir().unwrap();
    let grid_path = super::repo("tests/data/grid-100.toml");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_profiler"))
            .args(["replay", "--grid"])
            .arg(&grid_path)
            .args(args)
            .output()
            .unwrap()
    };
    let out = d.path().join("cli");
    let o = run(&["--threads", "2", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(stdout.lines().filter(|l| l.contains("/seed=")).count(), 100);
    assert!(
        stdout.contains("wrote ") && stdout.contains("summary.csv"),
        "{stdout}"
    );
    let lib = d.path().join("lib");
    let grid = GridSpec::load(&grid_path).unwrap();
    grid::run_local(&grid, 1, &Unobserved, Some(&lib)).unwrap();
    assert_eq!(
        std::fs::read(out.join("summary.csv")).unwrap(),
        std::fs::read(lib.join("summary.csv")).unwrap()
    );
    for args in [
        &["--chunk-index", "0"][..],
        &["--merge-parts"],
        &["--slurm"],
    ] {
        let o = run(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && e.contains("needs --out DIR"),
            "{args:?}: {e}"
        );
    }
    let o = run(&["--chunk", "0"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--chunk must be at least 1"));
}
