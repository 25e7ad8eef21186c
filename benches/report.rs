//! How long `profiler report` takes: one matrix's page (the validated input pipeline, every
//! section and chart), and the pages and index of a fleet of 100 matrices (the zoo's copied
//! under job names of their own).
//!
//! Run with `cargo bench --bench report`. Chromium's time to render a 1,000-row index is
//! `scripts/bench-report-index.sh`'s.

use criterion::{Criterion, criterion_group, criterion_main};
use profiler::matrix::{CostWeights, DEFAULT_EPS, ServerShape};
use profiler::report::{ReportOptions, write_report};
use std::path::{Path, PathBuf};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `n` matrices of the zoo, each under a job name of its own, in `dir`.
fn fleet(dir: &Path, n: usize) -> Vec<PathBuf> {
    let mut zoo: Vec<PathBuf> = std::fs::read_dir(repo("matrices/zoo"))
        .expect("matrices/zoo")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".matrix.jsonl"))
        .collect();
    zoo.sort();
    (0..n)
        .map(|i| {
            let text = std::fs::read_to_string(&zoo[i % zoo.len()]).expect("zoo matrix");
            let (header, cells) = text.split_once('\n').expect("a header line");
            let mut header: serde_json::Value = serde_json::from_str(header).expect("header");
            let name = format!("{}-{i}", header["job"]["name"].as_str().expect("job name"));
            header["job"]["name"] = name.clone().into();
            let path = dir.join(format!("{name}.matrix.jsonl"));
            std::fs::write(&path, format!("{header}\n{cells}")).expect("write matrix");
            path
        })
        .collect()
}

fn bench_report(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = |name: &str| ReportOptions {
        out_dir: dir.path().join(name),
        server: ServerShape::default(),
        eps: DEFAULT_EPS,
        weights: CostWeights::default(),
    };
    let one = [repo(
        "matrices/examples/input-pipeline.validated.matrix.jsonl",
    )];
    let opts = out("one");
    c.bench_function("report: one validated matrix's page", |b| {
        b.iter(|| write_report(&one, &opts, &mut |_, _| {}).expect("report"))
    });
    let matrices = dir.path().join("fleet");
    std::fs::create_dir_all(&matrices).expect("fleet dir");
    let fleet = fleet(&matrices, 100);
    let opts = out("fleet");
    let mut group = c.benchmark_group("report");
    group.sample_size(10);
    group.bench_function("100 matrices' pages and their index", |b| {
        b.iter(|| write_report(&fleet, &opts, &mut |_, _| {}).expect("report"))
    });
    group.finish();
}

criterion_group!(benches, bench_report);
criterion_main!(benches);
