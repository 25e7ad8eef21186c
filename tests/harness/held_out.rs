//! The page-cache model on a loader it was not built on, measured: the held-out LMDB loader of
//! `workloads/loaders/lmdb.toml` (the `lmdb` library from PyPI, 3 KiB records read in a fresh
//! random order by 2 DataLoader workers), on a smaller dataset, slower storage and one CPU level
//! so that it fits in CI. `profiler validate` measures every memory level and compares each with
//! what the model predicts from the top one and, where the job waited on its reads there, the
//! lowest one (the calibration cell, then left out of the comparison).
//!
//! `cargo test --test harness held_out -- --nocapture` prints the validation's table.

use super::frameworks::venv_python;
use super::*;
use profiler::matrix::{ModelAccuracy, ValidationCell};
use std::io::Write as _;

/// Records of the dataset: 60,000 of 3 KiB, about 247 MB in one `data.mdb`.
const SAMPLES: u64 = 60_000;
/// The storage cap, MB/s. Each miss is one random 4 KiB page read; a cap is only what the
/// cells run at where the disk delivers more than it for such reads. One CI disk delivered
/// 9-11 MB/s of them to this job's two workers, where others deliver 100, and the full
/// validation's 20 MB/s then left the cells to the disk's own speed, which moved between cells:
/// the model, fitted to the lowest cell, was 12-21% too high at the next two. At this cap the
/// top level reads the whole dataset (41 s) within the warm-up. The cap also throttles the
/// job's own start where a build has pushed PyTorch's libraries out of the page cache (its
/// import then reads over 700 MB at 6 MB/s): the test imports them first, uncapped, and the
/// spec allows 300 s for the first progress.
const STORAGE_MB_S: u32 = 6;
/// Median |error| of the page-cache model this short validation must stay within. The full
/// validation (docs/findings/held-out-loaders.md) is held to 5% median and 15% at most; this one
/// has 30-s cells, on a machine where other tests may run beside it. It gave 6.2% where the MinIO
/// model, which keeps a fixed part of the dataset cached, gave 40.1%; that one must stay further
/// off.
const MEDIAN_PCT: f64 = 15.0;
/// How far the share of the dataset the model gives the cache may be off what the kernel held
/// (`mincore`) for the bounds to apply: what `validate` itself names as off. One CI run's cells
/// held 7-9 points more than the model gave them at every level (the job's other memory under
/// the cap stayed about 20 MB below its peak at the top level, the model's input), and the
/// model, fed that share, was 15.6% low in the median.
const SHARE_HELD: f64 = validate::SHARE_TOLERANCE;

fn loader(name: &str) -> String {
    (Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads/loaders")
        .join(name))
    .display()
    .to_string()
}

fn spec(dir: &Path, python: &Path) -> LoadedSpec {
    let data = Path::new(env!("CARGO_TARGET_TMPDIR")).join("loader-lmdb-60k");
    let text = format!(
        r#"schema_version = 1
name = "loader-lmdb-small"
command = [{python:?}, {script:?}, "{{dataset}}", "--workers", "2", "--batch", "256", "--step-ms", "40"]
gpus = 0
batch_size_per_gpu = 256
[dataset]
path = {data:?}
samples = {SAMPLES}
generate = [{python:?}, {make:?}, "lmdb", "{{dataset}}", "--samples", "{SAMPLES}"]
cache = "page-cache"
[throughput]
protocol = "progress-file"
[measure]
warmup_s = 45
settle_s = 12
window_s = 2
steady_windows = 5
steady_cv = 0.05
max_s = 30
startup_timeout_s = 300
launches = 1
[sweep]
cpu = [2]
memory_pct_of_dataset = [5, 25, 50, 100]
memory = "model"
storage_read_mb_s = {STORAGE_MB_S}
mode = "live"
"#,
        python = python.display().to_string(),
        script = loader("lmdb_loader.py"),
        make = loader("make_loader_data.py"),
        data = data.display().to_string(),
    );
    let path = dir.join("loader-lmdb-small.toml");
    std::fs::write(&path, &text).unwrap();
    parse_spec(&text, &path).expect("test spec is valid")
}

#[test]
fn held_out_lmdb_loader_is_within_the_bounds() {
    require_caps!("held_out_lmdb_loader_is_within_the_bounds");
    let python = require_python!("held_out_lmdb_loader_is_within_the_bounds");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.matrix.jsonl");
    // The job's libraries read once uncapped, as an operator's first run would: under the cap
    // a cold PyTorch import alone reads over 700 MB.
    let warm = std::process::Command::new(&python)
        .args(["-c", "import lmdb, numpy, torch"])
        .status()
        .expect("python runs");
    assert!(warm.success(), "the loader's libraries import: {warm}");
    let started = Instant::now();
    let outcome = run_validate(
        &options(
            spec(dir.path(), &python),
            out.clone(),
            "profiler-test-held-out",
        ),
        &[],
        &mut Silent,
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|e| {
        // What each cell recorded, and the job's own output, say why nothing could be compared.
        let cells = std::fs::read_to_string(&out).unwrap_or_default();
        let logs = std::fs::read_dir(out.with_extension("logs"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|f| f.path().extension().is_some_and(|x| x == "log"))
            .map(|f| {
                let text = std::fs::read_to_string(f.path()).unwrap_or_default();
                let from = (text.len().saturating_sub(3000)..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                let tail = &text[from..];
                format!("{}:\n{tail}", f.path().display())
            })
            .collect::<Vec<_>>()
            .join("\n");
        panic!("validate: {e}\n{cells}\n{logs}")
    });
    let v = outcome.matrix.header.validation.expect("recorded");
    eprint!("{}", validate::render(&v, None));
    eprintln!("validated in {:.0} s", started.elapsed().as_secs_f64());
    // The lowest level is the calibration cell: left out of the comparison where the model's
    // wait per read was fitted to it.
    let inputs = outcome
        .matrix
        .header
        .cache_model
        .as_ref()
        .expect("a cache model");
    let calibration = inputs
        .miss_calibration
        .expect("a calibration cell at four levels");
    let samples = outcome.matrix.header.job.dataset_samples.unwrap_or(0);
    let fitted = profiler::cache_model::CacheModel::new(inputs.clone())
        .wait_per_read_s(samples)
        .is_some();
    assert_eq!(v.cells.len(), 3 - usize::from(fitted), "{v:?}");
    assert!(
        (v.cells.iter()).all(|c| !fitted || c.memory_bytes != calibration.memory_bytes),
        "{v:?}"
    );
    // The model's one input a run moves: the job's other memory at the top level, which it takes
    // off each limit to give the cache its share of the dataset. Two runs on this machine put it
    // at 378 MB and 416 MB (a peak the kernel did not keep under the cap: 106 MB of the dataset
    // stayed cached under 478 MB). Where the share the model gave is off what the kernel held,
    // the validation must say so; the bounds hold the model where its input held.
    let share_off = |c: &&ValidationCell| {
        (c.check.as_ref())
            .and_then(|k| Some(k.cache_share_measured? - k.cache_share_modelled?))
            .is_some_and(|d| d.abs() > SHARE_HELD)
    };
    let off: Vec<&ValidationCell> = v.cells.iter().filter(share_off).collect();
    if !off.is_empty() {
        let why: Vec<&str> = (off.iter())
            .filter_map(|c| c.check.as_ref().map(|k| k.explanation.as_str()))
            .collect();
        assert!(
            why.iter().any(|w| w.contains("the cache held")),
            "the cache's share was off at {} cell(s), and no explanation says so: {why:?}",
            off.len()
        );
        eprintln!(
            "the cache held another share of the dataset than the model gave it (its input, the \
             job's other memory, moved): the explanation says so, and the bounds are not applied"
        );
        return;
    }
    let model = |kind: CacheKind| -> &ModelAccuracy {
        (v.models.iter().find(|m| m.model == kind))
            .unwrap_or_else(|| panic!("no {kind:?} in {v:?}"))
    };
    let page_cache = model(CacheKind::PageCache);
    let minio = model(CacheKind::Minio);
    assert!(
        page_cache.median_abs_error_pct < minio.median_abs_error_pct,
        "the page-cache model ({:.1}%) must be closer than MinIO's ({:.1}%)",
        page_cache.median_abs_error_pct,
        minio.median_abs_error_pct
    );
    assert!(
        page_cache.median_abs_error_pct <= MEDIAN_PCT,
        "page-cache model: median |error| {:.1}% (max {:.1}%), bound {MEDIAN_PCT}%",
        page_cache.median_abs_error_pct,
        page_cache.max_abs_error_pct
    );
}
