use super::*;
use crate::matrix::{CacheKind, CacheModelInputs, Throughput};

const MB: u64 = 1_000_000;

/// A cell at 1 CPU and `mem_mb` reading `storage` bytes/s, using `cpu` cores, with `cached_mb`
/// of the dataset in the page cache and `resident_mb` of other memory.
fn cell(mem_mb: u64, rate: f64, storage: f64, cpu: f64, cached_mb: u64, resident_mb: u64) -> Cell {
    Cell {
        telemetry: Some(Telemetry {
            cpu_cores_used: cpu,
            storage_read_bytes_per_s: storage,
            rss_peak_bytes: resident_mb * MB,
            anon_peak_bytes: Some(resident_mb * MB),
            mapped_hot_bytes: Some(0),
            dataset_cached_bytes: Some(cached_mb * MB),
            ..Telemetry::default()
        }),
        throughput: Some(Throughput {
            samples_per_s: rate,
            ci95_low: rate,
            ci95_high: rate,
            windows: 4,
            measured_s: 4.0,
            launches: Vec::new(),
        }),
        wall_s: 5.0,
        ..crate::matrix::fixtures::measured(1.0, mem_mb * MB, rate, None)
    }
}

/// 100 MB of 1,000 samples (100 KB each), storage at 20 MB/s, the page-cache model.
fn model() -> CacheModel {
    CacheModel::new(CacheModelInputs::new(
        CacheKind::PageCache,
        100 * MB,
        20.0 * MB as f64,
        5e9,
    ))
}

#[test]
fn a_cell_that_held_what_the_model_said_is_variation() {
    let top = cell(1000, 400.0, 0.0, 1.0, 100, 50);
    // 100 MB limit, 50 MB resident: half the dataset; LRU hits 15.3%, so 84.7% of 100 KB per
    // sample come from storage.
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    let rate = half_cached_prediction();
    assert!(rate < 400.0, "storage-bound: {rate}");
    let storage = rate * 100_000.0 * (1.0 - h);
    let c = check(
        &cell(100, rate, storage, rate / 400.0, 50, 50),
        &top,
        &model(),
        1000,
    );
    assert!((c.hit_ratio_measured.unwrap() - h).abs() < 1e-9, "{c:?}");
    assert!(
        c.explanation.contains("launch-to-launch variation"),
        "{}",
        c.explanation
    );
}

#[test]
fn the_assumption_furthest_off_is_named_with_both_figures() {
    let top = cell(1000, 400.0, 0.0, 1.0, 100, 50);
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    // The job held 30 MB more besides the dataset here: the cache held 20% less.
    let rate = 150.0;
    let c = check(
        &cell(100, rate, rate * 100_000.0 * (1.0 - 0.05), 0.375, 30, 80),
        &top,
        &model(),
        1000,
    );
    assert!(
        c.explanation
            .contains("the cache held 30% of the dataset, the model gave it 50%")
            && c.explanation.contains("80 MB here, 50 MB at the top level"),
        "{}",
        c.explanation
    );
    // The cache held its share but served far more hits than LRU under shuffles would.
    let c = check(
        &cell(100, 300.0, 300.0 * 100_000.0 * 0.5, 0.75, 50, 50),
        &top,
        &model(),
        1000,
    );
    assert!(
        c.explanation
            .contains("50% of reads hit the cache, the model expects 15%"),
        "{} (h = {h})",
        c.explanation
    );
    // The cache held more than its share, and hit far more: the share is named first, as the
    // cause, with the hits beside it.
    let c = check(
        &cell(100, 300.0, 300.0 * 100_000.0 * 0.5, 0.75, 60, 50),
        &top,
        &model(),
        1000,
    );
    assert!(
        c.explanation
            .starts_with("the cache held 60% of the dataset, the model gave it 50%")
            && c.explanation
                .contains("50% of reads hit the cache, the model expects 15%"),
        "{}",
        c.explanation
    );
    // Everything as modelled but CPU time per sample up by half: reclaim.
    let rate = half_cached_prediction();
    let storage = rate * 100_000.0 * (1.0 - h);
    let c = check(
        &cell(100, rate, storage, 1.5 * rate / 400.0, 50, 50),
        &top,
        &model(),
        1000,
    );
    assert!(c.explanation.contains("+50% CPU time"), "{}", c.explanation);
    // The extra CPU time over the extra pages read: the top cell read nothing.
    let pages = storage / rate / 4096.0;
    let per_page_us = (1.5 - 1.0) / 400.0 / pages * 1e6;
    let used = 1.5 * rate / 400.0;
    assert!(
        c.explanation.contains(&format!(
            "{per_page_us:.0} µs for each 4 KiB page read from storage"
        )) && c
            .explanation
            .contains(&format!("the job used {used:.2} of its 1 CPU")),
        "{} ({per_page_us:.1} µs a page, {used:.2} CPUs)",
        c.explanation
    );
}

/// A cell whose samples took half again the top cell's CPU time: the system time says how much
/// of the extra the kernel spent (faults, reads, reclaim) and how much the job's own threads.
#[test]
fn the_extra_cpu_time_is_split_between_the_kernel_and_the_job() {
    let with_system = |mut c: Cell, system_cores: f64| {
        c.telemetry.as_mut().unwrap().cpu_system_cores = Some(system_cores);
        c
    };
    // The top cell: 1 core at 400 samples/s, a tenth of it system time.
    let top = with_system(cell(1000, 400.0, 0.0, 1.0, 100, 50), 0.1);
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    // The rate the model predicts, so that the CPU time is what is off.
    let rate = half_cached_prediction();
    let storage = rate * 100_000.0 * (1.0 - h);
    // 2.5 ms of CPU a sample at the top, 3.75 ms here: 1.25 ms more.
    let cores = 1.5 * rate / 400.0;
    for (kernel, words) in [
        (
            0.8,
            "80% of the extra in the kernel (system time: faults, reads, reclaim)",
        ),
        (
            0.2,
            "20% of the extra in the kernel and the rest in the job's own code (user time",
        ),
    ] {
        // System time per sample: the top's 0.25 ms plus `kernel` of the 1.25 ms extra.
        let system = rate * (0.1 / 400.0 + kernel * 1.25e-3);
        let c = check(
            &with_system(cell(100, rate, storage, cores, 50, 50), system),
            &top,
            &model(),
            1000,
        );
        let k = c.extra_cpu_in_kernel.expect("both cells have system time");
        assert!((k - kernel).abs() < 1e-9, "{k}");
        assert!(c.explanation.contains(words), "{}", c.explanation);
    }
    // Without the top cell's system time nothing is said of it.
    let c = check(
        &with_system(cell(100, rate, storage, cores, 50, 50), 0.5),
        &cell(1000, 400.0, 0.0, 1.0, 100, 50),
        &model(),
        1000,
    );
    assert_eq!(c.extra_cpu_in_kernel, None);
    assert!(!c.explanation.contains("kernel"), "{}", c.explanation);
}

/// What the model predicts from the top cell (1 GB, 400 samples/s) for a cell at half the
/// dataset (100 MB limit, 50 MB besides it).
fn half_cached_prediction() -> f64 {
    model()
        .predict_samples_per_s(400.0, 1.0, 100 * MB, 50 * MB, 1000, None)
        .samples_per_s()
        .unwrap()
}

/// The check against the top cell (1 GB, 400 samples/s) of a cell at half the dataset (100 MB
/// limit, 50 MB besides it, 50 MB cached) taking `rate` samples/s at the top cell's CPU time per
/// sample and reading `storage` bytes/s.
fn check_half_cached(rate: f64, storage: f64) -> CellCheck {
    let top = cell(1000, 400.0, 0.0, 1.0, 100, 50);
    check(
        &cell(100, rate, storage, rate / 400.0, 50, 50),
        &top,
        &model(),
        1000,
    )
}

#[test]
fn slow_storage_is_named_where_reads_matter() {
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    // Storage delivered 12 MB/s where the model assumes 20: fewer samples, as many misses each.
    let storage = 12.0 * MB as f64;
    let c = check_half_cached(storage / (100_000.0 * (1.0 - h)), storage);
    assert!(
        c.explanation
            .contains("storage delivered 12.0 MB/s, the model assumes 20.0 MB/s"),
        "{}",
        c.explanation
    );
}

#[test]
fn no_telemetry_says_so() {
    let mut bare = cell(100, 100.0, 0.0, 1.0, 0, 0);
    bare.telemetry = None;
    let top = cell(1000, 400.0, 0.0, 1.0, 100, 50);
    let c = check(&bare, &top, &model(), 1000);
    assert!(c.explanation.contains("cache held") || c.explanation.contains("no telemetry"));
}

#[test]
fn data_read_twice_is_named_as_reads_per_sample() {
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    // Storage at the modelled 20 MB/s, the cache holding the modelled half, but 1.8 samples
    // read for each sample taken: a hit ratio clamped at 0 would read "0% of reads hit".
    let storage = 20.0 * MB as f64;
    let c = check_half_cached(storage / (100_000.0 * 1.8), storage);
    assert!(
        c.explanation.contains(&format!(
            "storage read 1.80 samples' worth for each sample the job took, the model expects \
             {:.2}: data read ahead of its use was evicted before it was used",
            1.0 - h
        )),
        "{}",
        c.explanation
    );
    assert_eq!(
        c.hit_ratio_measured,
        Some(0.0),
        "the recorded ratio stays in [0, 1]"
    );
}

/// A job that used its CPU: where the calibration cell showed what a read costs in CPU time,
/// a cell that took that much more is as modelled, and one that took more than that is named
/// with both figures.
#[test]
fn cpu_time_the_calibration_cell_predicts_is_not_blamed() {
    let top = cell(1000, 400.0, 0.0, 1.0, 100, 50);
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    // The calibration cell (nothing cached, a whole sample read per sample) took 1.5 times the
    // top level's 2.5 ms of CPU per sample: 1.25 ms a read. Storage is far faster than the job.
    let mut m = model();
    m.inputs.storage_bytes_per_s = 1e12;
    m.inputs.miss_calibration = Some(crate::matrix::MissCalibration {
        cpu: 1.0,
        memory_bytes: 50 * MB,
        resident_bytes: 50 * MB,
        samples_per_s: 1.0 / 3.75e-3,
        cached_samples_per_s: 400.0,
        storage_read_bytes_per_s: Some(20.0 * MB as f64),
        cpu_s_per_sample: Some(3.75e-3),
        cached_cpu_s_per_sample: Some(2.5e-3),
        system_s_per_sample: None,
        cached_system_s_per_sample: None,
    });
    let reads = 1.0 - h;
    let expected = 1.0 + reads * 1.25e-3 / 2.5e-3;
    let rate = m
        .predict_samples_per_s(400.0, 1.0, 100 * MB, 50 * MB, 1000, Some(1.0))
        .samples_per_s()
        .unwrap();
    assert!((rate - 1.0 / (expected * 2.5e-3)).abs() < 1e-6, "{rate}");
    let at = |k: f64| {
        let cpu = k * 2.5e-3 * rate;
        check(
            &cell(100, rate, rate * 100_000.0 * reads, cpu, 50, 50),
            &top,
            &m,
            1000,
        )
    };
    let as_modelled = at(expected);
    assert!(
        as_modelled.explanation.starts_with("every assumption held"),
        "{}",
        as_modelled.explanation
    );
    let more = at(expected + 0.3);
    assert!(
        more.explanation.contains(&format!(
            "CPU time against the top memory level, the model expects {:+.0}%",
            100.0 * (expected - 1.0)
        )),
        "{}",
        more.explanation
    );
}

/// A cell measured while the machine's CPUs ran slower than during its top cell: a CPU-bound
/// job took more CPU time per sample, and the explanation says the machine slowed down as well
/// as what the job's counters show; at the top cell's speed nothing is said of the machine.
#[test]
fn a_machine_that_slowed_down_between_cells_is_named() {
    let with_loop = |mut c: Cell, ns: f64| {
        c.telemetry.as_mut().unwrap().reference_loop_ns = Some(ns);
        c
    };
    let top = with_loop(cell(1000, 400.0, 0.0, 1.0, 100, 50), 4.0e6);
    let h = crate::cache_model::page_cache_hit_ratio(0.5);
    let rate = half_cached_prediction();
    // The job ran at the share LRU gives, 40% slower, using its whole CPU: 1.67 times the CPU
    // time a sample, as the loop took 1.67 times its time.
    let slow = rate / 1.6667;
    let storage = slow * 100_000.0 * (1.0 - h);
    let c = check(
        &with_loop(cell(100, slow, storage, 1.0, 50, 50), 6.6667e6),
        &top,
        &model(),
        1000,
    );
    assert!((c.cpu_speed_vs_top.unwrap() - 0.6).abs() < 1e-3, "{c:?}");
    assert!(
        c.explanation.contains(
            "the machine's CPUs ran 40% slower than while the top cell was measured (the \
             profiler's reference loop took 1.67 times the CPU time it took there)"
        ),
        "{}",
        c.explanation
    );
    // The same cell at the top cell's speed: as modelled.
    let storage = rate * 100_000.0 * (1.0 - h);
    let c = check(
        &with_loop(cell(100, rate, storage, rate / 400.0, 50, 50), 4.1e6),
        &top,
        &model(),
        1000,
    );
    assert!(
        c.explanation.contains("launch-to-launch variation") && !c.explanation.contains("machine"),
        "{}",
        c.explanation
    );
}
