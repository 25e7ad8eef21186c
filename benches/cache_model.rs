//! Benchmarks of the cache model, plus a one-off report of the bandwidths it is fed with on this
//! machine (memory read bandwidth per core, storage read bandwidth of a freshly written file).
//!
//! Run with `cargo bench --bench cache_model`.

use criterion::{Criterion, criterion_group, criterion_main};
use profiler::cache_model::CacheModel;
use profiler::harness::memory::bandwidth::{
    measure_memory_read_bandwidth_per_core, measure_storage_read_bandwidth,
};
use profiler::matrix::CacheModelInputs;
use std::hint::black_box;
use std::io::Write;

fn report_bandwidths() {
    let mem = measure_memory_read_bandwidth_per_core();
    eprintln!("memory read bandwidth per core: {:.2} GB/s", mem / 1e9);

    // 256 MiB file on the same filesystem as the build (not /tmp, which may be tmpfs).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let path = dir.path().join("storage-probe.bin");
    let mut file = std::fs::File::create(&path).expect("create probe file");
    let chunk: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    for _ in 0..256 {
        file.write_all(&chunk).expect("write probe file");
    }
    file.sync_all().expect("sync probe file");
    drop(file);
    let disk = measure_storage_read_bandwidth(&[path], 256 << 20).expect("storage bandwidth");
    eprintln!("storage read bandwidth: {:.1} MB/s", disk / 1e6);
}

fn bench_predict(c: &mut Criterion) {
    report_bandwidths();
    let model = CacheModel::new(CacheModelInputs::new(
        profiler::matrix::CacheKind::Minio,
        150 << 30,
        500e6,
        10e9,
    ));
    c.bench_function("predict_samples_per_s (one cell)", |b| {
        b.iter(|| {
            model.predict_samples_per_s(
                black_box(2000.0),
                black_box(8.0),
                black_box(64 << 30),
                black_box(8 << 30),
                black_box(1_281_167),
                black_box(None),
            )
        })
    });
    c.bench_function("predict_samples_per_s (16x16 grid)", |b| {
        b.iter(|| {
            let mut acc = 0.0;
            for cpu in 1..=16 {
                for mem_gb in 1..=16u64 {
                    let p = model.predict_samples_per_s(
                        black_box(250.0 * cpu as f64),
                        cpu as f64,
                        mem_gb * (16 << 30),
                        8 << 30,
                        1_281_167,
                        None,
                    );
                    acc += p.samples_per_s().unwrap_or(0.0);
                }
            }
            acc
        })
    });
}

criterion_group!(benches, bench_predict);
criterion_main!(benches);
