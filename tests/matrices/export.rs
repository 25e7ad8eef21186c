//! `profiler export`: Synergy/Blox golden tables, round trips of every format, the Slurm plugin
//! under a Lua interpreter, invariants on random matrices, and the command line.

use profiler::export::{
    CellChoice, ExportFormat, ExportOptions, Prepared, export, prepare_all, read_json, render,
};
use profiler::matrix::{
    Axes, CacheKind, CacheModelInputs, Cell, CellSource, GpuTelemetry, Interference, JobInfo,
    MATRIX_KIND, Matrix, MatrixHeader, ModelAccuracy, Percentiles, RelativeRate, SCHEMA_VERSION,
    Telemetry, Throughput, Validation, load_matrix,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");
const RESNET18: &str = "matrices/zoo/resnet18.matrix.jsonl";
const MEASURED: &str = "matrices/examples/input-pipeline.measured.matrix.jsonl";

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn zoo_paths() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo("matrices/zoo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".matrix.jsonl"))
        .collect();
    v.sort();
    v
}

fn opts(paths: &[PathBuf], format: ExportFormat) -> ExportOptions {
    ExportOptions::new(paths.to_vec(), format)
}

/// Exports into a fresh directory (or file inside it) and returns the directory.
fn export_to_dir(o: &mut ExportOptions) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    o.output = Some(d.path().to_owned());
    export(o, &mut Vec::new()).unwrap();
    d
}

/// A one-file format rendered to a String through the manager (stdout).
fn export_stdout(o: &ExportOptions) -> String {
    let mut out = Vec::new();
    export(o, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

// ---------------------------------------------------------------- Synergy's published tables

/// Synergy's zoo tables for the default server (3 CPUs per GPU), by Synergy's model name:
/// `(cpu, mem) -> normalized throughput`, and the scalars row.
struct Zoo {
    tput: BTreeMap<String, BTreeMap<(String, String), f64>>,
    scalars: BTreeMap<String, Vec<String>>,
}

fn synergy_zoo() -> Zoo {
    let mut tput: BTreeMap<String, BTreeMap<(String, String), f64>> = BTreeMap::new();
    let text = std::fs::read_to_string(repo("matrices/zoo-source/model_zoo_matrices.csv")).unwrap();
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if f[0] == "3" {
            let key = (num(f[2]).to_string(), num(f[3]).to_string());
            tput.entry(f[1].to_owned())
                .or_default()
                .insert(key, num(f[4]));
        }
    }
    let mut scalars = BTreeMap::new();
    let text = std::fs::read_to_string(repo("matrices/zoo-source/model_zoo_scalars.csv")).unwrap();
    for l in text.lines().skip(1) {
        let f: Vec<String> = l.split(',').map(str::to_owned).collect();
        if f[0] == "3" {
            scalars.insert(f[1].clone(), f);
        }
    }
    Zoo { tput, scalars }
}

fn num(s: &str) -> f64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// Synergy's name for one of our models (`resnet18` is `res18` there).
fn zoo_name(model: &str) -> String {
    profiler::replay::profile::ALIASES
        .iter()
        .find(|(_, ours)| *ours == model)
        .map_or(model, |(theirs, _)| theirs)
        .to_owned()
}

/// What a generated model file says: `self.x = v` scalars and the `tput` rows.
struct ModelFile {
    class: String,
    scalars: BTreeMap<String, String>,
    tput: Vec<Vec<f64>>,
}

fn parse_model_file(text: &str) -> ModelFile {
    let mut scalars = BTreeMap::new();
    let mut tput = Vec::new();
    let mut class = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("class ") {
            class = rest.split('(').next().unwrap().to_owned();
        } else if let Some(rest) = t.strip_prefix("self.") {
            let (k, v) = rest.split_once(" = ").unwrap();
            scalars.insert(k.to_owned(), v.to_owned());
        } else if t.starts_with('[') && t.trim_end_matches(',').ends_with(']') {
            let inner = t
                .trim_end_matches(',')
                .trim_start_matches('[')
                .trim_end_matches(']');
            tput.push(inner.split(',').map(num).collect());
        }
    }
    assert_eq!(
        scalars.get("tput").map(String::as_str),
        Some("np.array(["),
        "{text}"
    );
    ModelFile {
        class,
        scalars,
        tput,
    }
}

const CPUS: [f64; 9] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0, 12.0, 24.0];
const MEMS: [f64; 5] = [20.83, 62.5, 125.0, 187.5, 250.0];

/// Exports the zoo as `format` and checks every file against Synergy's tables, restricted to
/// the memory columns `mems`.
fn check_zoo_golden(format: ExportFormat, mems: &[f64]) {
    let zoo = synergy_zoo();
    let paths = zoo_paths();
    assert_eq!(
        paths.len(),
        zoo.scalars.len(),
        "one matrix per published model"
    );
    let d = export_to_dir(&mut opts(&paths, format));
    for path in &paths {
        let model = load_matrix(path).unwrap().header.job.model;
        let theirs = zoo_name(&model);
        let file = d.path().join(format!("{model}_1.py"));
        let f = parse_model_file(&std::fs::read_to_string(&file).unwrap());
        assert_eq!(f.class, format!("{model}_1"));
        let table = &zoo.tput[&theirs];
        let s = &zoo.scalars[&theirs];
        // The table, exactly (values written to 6 significant digits parse back to the
        // published decimals).
        assert_eq!(f.tput.len(), CPUS.len(), "{model}");
        for (r, &c) in CPUS.iter().enumerate() {
            assert_eq!(f.tput[r].len(), mems.len(), "{model} row {c}");
            for (k, &m) in mems.iter().enumerate() {
                let want = table[&(c.to_string(), m.to_string())];
                assert_eq!(f.tput[r][k], want, "{model} tput at {c} CPUs, {m} GB");
            }
        }
        let got = |k: &str| num(&f.scalars[k]);
        assert_eq!(got("cpus"), num(&s[2]), "{model} cpus");
        // Deliberate difference: Synergy's files write int(62.5/3) = 20 for the smallest
        // column, which is not in its own grid (mem_val has 20.83); ours is the grid value.
        // Blox's grid starts at 62.5.
        let published_mem = if num(&s[3]) == 20.0 {
            20.83
        } else {
            num(&s[3])
        };
        let want_mem = if published_mem < mems[0] {
            mems[0]
        } else {
            published_mem
        };
        assert_eq!(got("mem"), want_mem, "{model} mem");
        assert_eq!(got("speed"), want_mem, "{model} speed");
        // The speed-up is the table's value at (cpus, mem), the published one where the best
        // cell is on this grid.
        let at_best = table[&(got("cpus").to_string(), want_mem.to_string())];
        assert_eq!(got("speedup"), at_best, "{model} speedup");
        if want_mem == published_mem {
            assert_eq!(got("speedup"), num(&s[4]), "{model} published speedup");
        }
        assert_eq!(got("iter_time"), num(&s[5]), "{model} iter_time");
        assert_eq!(got("iter_time_base"), num(&s[5]), "{model} iter_time_base");
        assert_eq!(got("batch"), num(&s[6]), "{model} batch");
        assert_eq!(
            got("placement_penalty"),
            num(&s[7]),
            "{model} placement_penalty"
        );
    }
}

#[test]
fn synergy_export_of_the_zoo_reproduces_synergys_tables() {
    check_zoo_golden(ExportFormat::Synergy, &MEMS);
}

#[test]
fn blox_export_of_the_zoo_is_synergys_without_the_smallest_column() {
    check_zoo_golden(ExportFormat::Blox, &MEMS[1..]);
}

#[test]
fn synergy_file_says_what_was_interpolated_clamped_and_snapped() {
    let d = export_to_dir(&mut opts(&[repo(MEASURED)], ExportFormat::Synergy));
    let text = std::fs::read_to_string(d.path().join("input_pipeline_1.py")).unwrap();
    // The measured grid is 0.5..2 cores and 62..125 MB: rows 1 and 2 are on it, the rest
    // clamped; every column is above it.
    assert!(text.contains("# Rows on the matrix's grid: 1, 2; clamped to the largest level, 2 CPUs: 3, 4, 5, 6, 9, 12, 24."), "{text}");
    assert!(
        text.contains(
            "# Columns clamped to the largest level, 0.125442 GB: 20.83, 62.5, 125, 187.5, 250."
        ),
        "{text}"
    );
    assert!(text.contains("mem 20.83 (snapped up)"), "{text}");
    assert!(text.contains("9 measured"), "{text}");
    let f = parse_model_file(&text);
    // Row 1 CPU: the 1-core cell at the largest memory level over the 2-core one.
    let m = load_matrix(&repo(MEASURED)).unwrap();
    let at = |cpu: f64| {
        m.cells
            .iter()
            .find(|c| c.cpu == cpu && c.memory_bytes == 125442060)
            .unwrap()
            .samples_per_s()
            .unwrap()
    };
    let want: f64 = format!("{:.5e}", at(1.0) / at(2.0)).parse().unwrap();
    assert_eq!(f.tput[0], vec![want; 5]);
    assert_eq!(f.tput[8], vec![1.0; 5]);
    assert_eq!(num(&f.scalars["iter_time"]), {
        let t: f64 = format!("{:.5e}", 16.0 / at(2.0)).parse().unwrap();
        t
    });
}

#[test]
fn synergy_file_of_a_multi_gpu_matrix_carries_its_validation_and_parameters() {
    let d = tempfile::tempdir().unwrap();
    let rich = write_matrix(d.path(), "rich", &rich_matrix());
    let out = export_to_dir(&mut opts(&[rich], ExportFormat::Synergy));
    let text = std::fs::read_to_string(out.path().join("rich_1.py")).unwrap();
    assert!(
        text.contains(
            "# Cache models against measured cells (profiler validate): validated: page-cache \
             model median |error| 3.1% (max 6.0%) over 2 cells; minio 24.0%."
        ),
        "{text}"
    );
    assert!(
        text.contains("Per-GPU table of a 2-GPU job, parameters batch=32."),
        "{text}"
    );
    let f = parse_model_file(&text);
    // Per GPU the grid is 1..2 cores and 4..8 GB: everything from 2 CPUs and 20.83 GB up is
    // the top cell, the proportional share itself, so 1.
    assert_eq!(f.tput[8], vec![1.0; 5]);
    assert_eq!(f.scalars["batch"], "32");
}

// ---------------------------------------------------------------- round trips

/// A matrix with everything a cell can hold: parameters, GPU telemetry, a failed cell, a
/// machine, two GPUs.
fn rich_matrix() -> Matrix {
    let mut cells = Vec::new();
    for (i, &cpu) in [2.0, 4.0].iter().enumerate() {
        for (j, &mem) in [8_000_000_000u64, 16_000_000_000].iter().enumerate() {
            for batch in ["32", "64"] {
                cells.push(rich_cell(i, cpu, j, mem, batch));
            }
        }
    }
    Matrix {
        header: rich_header(),
        cells,
    }
}

/// The rich matrix's cell at CPU level `i` (`cpu`), memory level `j` (`mem`) and `batch`: the
/// first level's batch of 64 failed, the lower memory level modelled, the upper measured.
fn rich_cell(i: usize, cpu: f64, j: usize, mem: u64, batch: &str) -> Cell {
    let rate = 100.0 * (i + 1) as f64 + 10.0 * j as f64 + batch.len() as f64;
    let failed = i == 0 && j == 0 && batch == "64";
    Cell {
        cpu,
        memory_bytes: mem,
        params: BTreeMap::from([("batch".to_owned(), batch.to_owned())]),
        source: if failed {
            CellSource::Failed
        } else if j == 0 {
            CellSource::Modelled
        } else {
            CellSource::Measured
        },
        throughput: (!failed).then_some(Throughput {
            samples_per_s: rate,
            ci95_low: rate - 1.5,
            ci95_high: rate + 1.5,
            windows: 5,
            measured_s: 12.5,
            launches: Vec::new(),
        }),
        iteration_time_s: (!failed).then_some(Percentiles {
            p50: 0.25,
            p95: 0.375,
        }),
        telemetry: (!failed).then_some(Telemetry {
            cpu_cores_used: cpu * 0.9,
            throttled_s_per_s: 0.125,
            rss_peak_bytes: 3_000_000_000,
            page_cache_bytes: 1_000_000,
            storage_read_bytes_per_s: 5e6,
            ..Telemetry::default()
        }),
        gpu: (j == 1).then(|| GpuTelemetry {
            utilization_pct: 87.5,
            sm_clock_mhz: 1410.0,
            memory_used_bytes: 12_000_000_000,
            power_w: 250.5,
            sm_activity_pct: (batch == "64").then_some(61.0),
        }),
        note: failed.then(|| "exit status 1, \"quoted\", comma".to_owned()),
        wall_s: 20.0 + i as f64,
        node: None,
        interference: (j == 1).then(|| Interference {
            other_cores: 0.75,
            idle_cores: 0.0,
            run_wait_cores: Some(0.5),
            discarded_windows: 10,
            disturbed: batch == "64",
            disturbed_by: (batch == "64").then(|| "the job's tasks waiting for a CPU".to_owned()),
            ..Interference::default()
        }),
        measured_unix_s: None,
        left_out_unix_s: Vec::new(),
        relative: (j == 1).then(|| {
            let r = rate / 220.0;
            RelativeRate::unadjusted(r, [0.9 * r, 1.1 * r], 3, 1)
        }),
        visits: Vec::new(),
    }
}

/// The rich matrix's header: a job of two GPUs, parameters, a cache model and its validation.
fn rich_header() -> MatrixHeader {
    MatrixHeader {
        kind: MATRIX_KIND.into(),
        schema_version: SCHEMA_VERSION,
        job: JobInfo {
            name: "rich-job".into(),
            model: "rich".into(),
            gpus: 2,
            batch_size_per_gpu: None,
            dataset_bytes: Some(10_000_000_000),
            dataset_samples: Some(50_000),
        },
        machine: Some(rich_machine()),
        axes: Axes {
            cpu: vec![2.0, 4.0],
            memory_bytes: vec![8_000_000_000, 16_000_000_000],
            params: BTreeMap::from([("batch".to_owned(), vec!["32".to_owned(), "64".to_owned()])]),
        },
        created_unix_s: 1_700_000_000,
        provenance: Some("test fixture".into()),
        profiler: None,
        cache_model: Some(CacheModelInputs::new(
            CacheKind::PageCache,
            10_000_000_000,
            2e8,
            5e9,
        )),
        validation: Some(Validation {
            created_unix_s: 1_700_000_100,
            models: vec![
                ModelAccuracy {
                    model: CacheKind::Minio,
                    median_abs_error_pct: 24.0,
                    max_abs_error_pct: 40.0,
                    cells: 2,
                },
                ModelAccuracy {
                    model: CacheKind::PageCache,
                    median_abs_error_pct: 3.125,
                    max_abs_error_pct: 6.0,
                    cells: 2,
                },
            ],
            cells: Vec::new(),
            rerun_median_abs_error_pct: None,
            paired_models: Vec::new(),
            paired_median_half_width_pct: None,
        }),
        live_check: None,
        launch_spread: None,
        blocks: Vec::new(),
        read_at_probe_speed: None,
    }
}

/// A GPU server of two H100s, as a matrix records it.
fn rich_machine() -> profiler::matrix::MachineInfo {
    profiler::matrix::MachineInfo {
        hostname: "gpu-node-1".into(),
        cpus: 64,
        memory_bytes: 512_000_000_000,
        kernel: "6.1.0".into(),
        cgroup: "v2".into(),
        gpus: vec![
            "NVIDIA H100 80GB HBM3".into(),
            "NVIDIA H100 80GB HBM3".into(),
        ],
        processor: Some(profiler::matrix::Processor {
            vendor: "GenuineIntel".into(),
            model_name: "Intel(R) Xeon(R) Platinum 8480+".into(),
            microarchitecture: "Sapphire Rapids".into(),
            extensions: vec!["avx2".into(), "avx512f".into(), "amx_tile".into()],
            sockets: 2,
            cores: 32,
            threads: 64,
        }),
        memory_read_bytes_per_s: Some(1.2e10),
        storage: Some(profiler::matrix::Storage {
            device: "nvme0n1".into(),
            model: Some("SAMSUNG MZ1L2".into()),
            rotational: Some(false),
            filesystem: "ext4".into(),
        }),
        gpu_devices: vec![
            profiler::matrix::GpuDevice {
                name: "NVIDIA H100 80GB HBM3".into(),
                memory_bytes: 85_520_809_984,
                driver: "550.54.15".into(),
            };
            2
        ],
        kind: Some("sapphire-rapids-64t-477g-2xh100-0a1b2c3d".into()),
    }
}

/// Writes `m` as a matrix file in `dir`.
fn write_matrix(dir: &Path, name: &str, m: &Matrix) -> PathBuf {
    let p = dir.join(format!("{name}.matrix.jsonl"));
    std::fs::write(&p, m.to_jsonl()).unwrap();
    p
}

fn f(df: &polars::prelude::DataFrame, c: &str, i: usize) -> Option<f64> {
    df.column(c).unwrap().f64().unwrap().get(i)
}
fn u(df: &polars::prelude::DataFrame, c: &str, i: usize) -> Option<u64> {
    df.column(c).unwrap().u64().unwrap().get(i)
}
fn w(df: &polars::prelude::DataFrame, c: &str, i: usize) -> Option<u32> {
    df.column(c).unwrap().u32().unwrap().get(i)
}
fn s(df: &polars::prelude::DataFrame, c: &str, i: usize) -> Option<String> {
    df.column(c)
        .unwrap()
        .str()
        .unwrap()
        .get(i)
        .map(str::to_owned)
}

/// Row `row` of an exported table against its matrix's header and machine.
fn assert_matrix_columns(
    df: &polars::prelude::DataFrame,
    row: usize,
    p: &profiler::export::Prepared,
) {
    let h = &p.matrix.header;
    assert_eq!(
        s(df, "matrix_file", row),
        Some(p.path.display().to_string())
    );
    assert_eq!(
        s(df, "job_model", row).as_deref(),
        Some(h.job.model.as_str())
    );
    assert_eq!(w(df, "job_gpus", row), Some(h.job.gpus));
    assert_eq!(
        u(df, "job_batch_size_per_gpu", row),
        h.job.batch_size_per_gpu
    );
    assert_eq!(u(df, "job_dataset_samples", row), h.job.dataset_samples);
    let m = h.machine.as_ref();
    assert_eq!(
        s(df, "machine_hostname", row),
        m.map(|m| m.hostname.clone())
    );
    assert_eq!(w(df, "machine_cpus", row), m.map(|m| m.cpus));
    assert_eq!(
        u(df, "machine_memory_bytes", row),
        m.map(|m| m.memory_bytes)
    );
    assert_eq!(s(df, "machine_gpus", row), m.map(|m| m.gpus.join("; ")));
    assert_eq!(
        s(df, "machine_kind", row).as_deref(),
        Some(profiler::matrix::machine::kind_of(m))
    );
    let cpu = m.and_then(|m| m.processor.as_ref());
    assert_eq!(
        s(df, "machine_microarchitecture", row),
        cpu.map(|c| c.microarchitecture.clone())
    );
    assert_eq!(
        s(df, "machine_cpu_extensions", row),
        cpu.map(|c| c.extensions.join(" "))
    );
    assert_eq!(w(df, "machine_threads", row), cpu.map(|c| c.threads));
    assert_eq!(
        s(df, "machine_storage_device", row),
        m.and_then(|m| m.storage.as_ref()).map(|s| s.device.clone())
    );
    assert_eq!(
        u(df, "machine_gpu_memory_bytes", row),
        m.and_then(|m| m.gpu_devices.first())
            .map(|g| g.memory_bytes)
    );
    assert_eq!(
        s(df, "matrix_validation", row),
        h.validation
            .as_ref()
            .map(|v| v.summary(Some(CacheKind::PageCache)))
    );
}

/// Row `row` of an exported table against its cell's rate, relative rate and the cell's
/// best-case demand.
fn assert_cell_columns(
    df: &polars::prelude::DataFrame,
    row: usize,
    p: &profiler::export::Prepared,
    c: &Cell,
) {
    assert_eq!(f(df, "cpu", row), Some(c.cpu));
    assert_eq!(u(df, "memory_bytes", row), Some(c.memory_bytes));
    assert_eq!(s(df, "param_batch", row), c.params.get("batch").cloned());
    assert_eq!(s(df, "source", row).as_deref(), Some(c.source.as_str()));
    let t = c.throughput.as_ref();
    assert_eq!(f(df, "samples_per_s", row), t.map(|t| t.samples_per_s));
    assert_eq!(f(df, "ci95_low", row), t.map(|t| t.ci95_low));
    assert_eq!(f(df, "ci95_high", row), t.map(|t| t.ci95_high));
    assert_eq!(w(df, "windows", row), t.map(|t| t.windows));
    assert_eq!(f(df, "measured_s", row), t.map(|t| t.measured_s));
    let r = c.relative.as_ref();
    assert_eq!(f(df, "relative", row), r.map(|r| r.rate));
    assert_eq!(f(df, "relative_ci95_low", row), r.map(|r| r.ci95_low));
    assert_eq!(f(df, "relative_ci95_high", row), r.map(|r| r.ci95_high));
    assert_eq!(w(df, "relative_blocks", row), r.map(|r| r.blocks));
    assert_eq!(s(df, "demand_server", row).as_deref(), Some("24:8:500"));
    assert_eq!(
        f(df, "demand_cpus_per_gpu", row),
        Some(p.demand.cpus_per_gpu)
    );
    assert_eq!(
        f(df, "demand_mem_gb_per_gpu", row),
        Some(p.demand.mem_gb_per_gpu)
    );
    assert_eq!(
        f(df, "demand_speedup_over_proportional", row),
        Some(p.demand.speedup_over_proportional)
    );
}

/// Row `row` of an exported table against its cell's telemetry, GPU and interference.
fn assert_telemetry_columns(df: &polars::prelude::DataFrame, row: usize, c: &Cell) {
    let it = c.iteration_time_s.as_ref();
    assert_eq!(f(df, "iteration_p50_s", row), it.map(|i| i.p50));
    assert_eq!(f(df, "iteration_p95_s", row), it.map(|i| i.p95));
    let te = c.telemetry.as_ref();
    assert_eq!(f(df, "cpu_cores_used", row), te.map(|t| t.cpu_cores_used));
    assert_eq!(
        f(df, "throttled_s_per_s", row),
        te.map(|t| t.throttled_s_per_s)
    );
    assert_eq!(u(df, "rss_peak_bytes", row), te.map(|t| t.rss_peak_bytes));
    assert_eq!(
        u(df, "page_cache_bytes", row),
        te.map(|t| t.page_cache_bytes)
    );
    assert_eq!(
        f(df, "storage_read_bytes_per_s", row),
        te.map(|t| t.storage_read_bytes_per_s)
    );
    let g = c.gpu.as_ref();
    assert_eq!(
        f(df, "gpu_utilization_pct", row),
        g.map(|g| g.utilization_pct)
    );
    assert_eq!(f(df, "gpu_sm_clock_mhz", row), g.map(|g| g.sm_clock_mhz));
    assert_eq!(
        u(df, "gpu_memory_used_bytes", row),
        g.map(|g| g.memory_used_bytes)
    );
    assert_eq!(f(df, "gpu_power_w", row), g.map(|g| g.power_w));
    assert_eq!(
        f(df, "gpu_sm_activity_pct", row),
        g.and_then(|g| g.sm_activity_pct)
    );
    let i = c.interference.as_ref();
    assert_eq!(f(df, "other_cores", row), i.map(|i| i.other_cores));
    assert_eq!(
        f(df, "run_wait_cores", row),
        i.and_then(|i| i.run_wait_cores)
    );
    assert_eq!(
        df.column("disturbed").unwrap().bool().unwrap().get(row),
        i.map(|i| i.disturbed)
    );
    assert_eq!(
        s(df, "disturbed_by", row),
        i.and_then(|i| i.disturbed_by.clone())
    );
    assert_eq!(
        w(df, "launches", row),
        c.throughput.as_ref().map(|_| 1),
        "a rate from one launch"
    );
    assert_eq!(s(df, "note", row), c.note.clone());
    assert_eq!(f(df, "wall_s", row), Some(c.wall_s));
}

#[test]
fn csv_and_parquet_read_back_with_every_cell_value() {
    use polars::prelude::{CsvReadOptions, ParquetReader, SerReader};
    use std::sync::Arc;
    let d = tempfile::tempdir().unwrap();
    let rich = write_matrix(d.path(), "rich", &rich_matrix());
    let inputs = vec![repo(RESNET18), repo(MEASURED), rich];

    let mut o = opts(&inputs, ExportFormat::Parquet);
    o.output = Some(d.path().join("cells.parquet"));
    export(&o, &mut Vec::new()).unwrap();
    let pq = ParquetReader::new(std::fs::File::open(d.path().join("cells.parquet")).unwrap())
        .finish()
        .unwrap();
    let mut o = opts(&inputs, ExportFormat::Csv);
    o.output = Some(d.path().join("cells.csv"));
    export(&o, &mut Vec::new()).unwrap();
    let csv = CsvReadOptions::default()
        .with_has_header(true)
        .with_schema(Some(Arc::new(pq.schema().as_ref().clone())))
        .try_into_reader_with_file_path(Some(d.path().join("cells.csv")))
        .unwrap()
        .finish()
        .unwrap();
    assert!(csv.equals_missing(&pq), "CSV and Parquet differ");

    let prepared = prepare_all(&opts(&inputs, ExportFormat::Csv)).unwrap();
    let total: usize = prepared.iter().map(|p| p.matrix.cells.len()).sum();
    assert_eq!(pq.height(), total);

    let mut row = 0;
    for p in &prepared {
        for c in &p.matrix.cells {
            assert_matrix_columns(&pq, row, p);
            assert_cell_columns(&pq, row, p, c);
            assert_telemetry_columns(&pq, row, c);
            row += 1;
        }
    }
    // The zoo's resnet18 rows carry Synergy's best case: 9 CPUs, 62.5 GB, 2.4x.
    assert_eq!(f(&pq, "demand_cpus_per_gpu", 0), Some(9.0));
    assert_eq!(f(&pq, "demand_mem_gb_per_gpu", 0), Some(62.5));
    assert!((f(&pq, "demand_speedup_over_proportional", 0).unwrap() - 2.4).abs() < 1e-12);
    // Only the rich matrix has a batch parameter, and its demand says which combination.
    assert_eq!(
        s(&pq, "demand_params", total - 1).as_deref(),
        Some("batch=32")
    );
    assert_eq!(s(&pq, "demand_params", 0), None);
}

#[test]
fn json_reads_back_to_the_same_matrices_with_their_demand() {
    let d = tempfile::tempdir().unwrap();
    let rich = write_matrix(d.path(), "rich", &rich_matrix());
    let inputs = vec![repo(RESNET18), repo(MEASURED), rich];
    let mut o = opts(&inputs, ExportFormat::Json);
    o.output = Some(d.path().join("m.json"));
    export(&o, &mut Vec::new()).unwrap();
    let back = read_json(&d.path().join("m.json")).unwrap();
    let prepared = prepare_all(&o).unwrap();
    assert_eq!(back.len(), inputs.len());
    for (b, p) in back.iter().zip(&prepared) {
        assert_eq!(b.matrix(), p.matrix, "{}", p.path.display());
        assert_eq!(b.matrix(), load_matrix(&p.path).unwrap());
        assert_eq!(b.file, p.path.display().to_string());
        assert_eq!(b.demand.cpus_per_gpu, p.demand.cpus_per_gpu);
        assert_eq!(b.demand.mem_gb_per_gpu, p.demand.mem_gb_per_gpu);
        assert_eq!(
            b.demand.speedup_over_proportional,
            Some(p.demand.speedup_over_proportional)
        );
        assert_eq!(b.demand.server, "24:8:500");
    }
    // Each element is also a plain Matrix to serde.
    let text = std::fs::read_to_string(d.path().join("m.json")).unwrap();
    let plain: Vec<Matrix> = serde_json::from_str(&text).unwrap();
    assert_eq!(plain[0], load_matrix(&repo(RESNET18)).unwrap());
    assert!(text.starts_with("[\n  {\n"), "pretty-printed");
    // A file that is not an export names itself and the line.
    let e = read_json(&repo(RESNET18)).unwrap_err().to_string();
    assert!(e.contains("resnet18.matrix.jsonl: line"), "{e}");
}

#[test]
fn gavel_keys_parse_with_gavels_regex_and_hold_steps_per_second() {
    let key_re = regex::Regex::new(r"\('(.*)', (\d+)\)").unwrap();
    let d = tempfile::tempdir().unwrap();
    let rich = write_matrix(d.path(), "rich", &rich_matrix());
    let inputs = vec![
        repo(RESNET18),
        repo("matrices/zoo/alexnet.matrix.jsonl"),
        rich,
    ];
    for (cell, worker) in [
        (CellChoice::Best, "v100"),
        (CellChoice::Proportional, "k80"),
        (
            CellChoice::At {
                cpus_per_gpu: 3.5,
                mem_gb_per_gpu: 62.5,
            },
            "p100",
        ),
    ] {
        let mut o = opts(&inputs, ExportFormat::Gavel);
        o.cell = cell;
        o.gavel_worker = Some(worker.into());
        let text = export_stdout(&o);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let entries = v[worker].as_object().unwrap();
        assert_eq!(v.as_object().unwrap().len(), 1);
        assert_eq!(entries.len(), 3);
        let prepared = prepare_all(&o).unwrap();
        for p in &prepared {
            let batch = p.batch_size().unwrap();
            let (key, val) = entries
                .iter()
                .find(|(k, _)| k.contains(&format!("'{} (batch", p.model())))
                .unwrap();
            let caps = key_re.captures(key).unwrap();
            assert_eq!(&caps[0], key.as_str(), "the whole key matches");
            assert_eq!(&caps[1], format!("{} (batch size {batch})", p.model()));
            assert_eq!(caps[2].parse::<u32>().unwrap(), p.gpus());
            let steps = val["null"].as_f64().unwrap();
            let want = cell.pick(p, &o.server).samples_per_s_per_gpu / batch as f64;
            assert_eq!(steps, want, "{key} at --cell {cell}");
        }
        let r18 = entries["('resnet18 (batch size 512)', 1)"]["null"]
            .as_f64()
            .unwrap();
        let want = match cell {
            // 2.4 x 800 samples/s, 1.0 x 800, and halfway between 1.0 and 1.3 x 800, over 512.
            CellChoice::Best => 2.4 * 800.0 / 512.0,
            CellChoice::Proportional => 800.0 / 512.0,
            CellChoice::At { .. } => 1.15 * 800.0 / 512.0,
        };
        assert!((r18 - want).abs() < 1e-12, "{r18} vs {want}");
    }
    // The rich matrix's batch comes from its `batch` parameter (first combination: 32) and
    // its key says 2 GPUs.
    let text = export_stdout(&opts(&inputs, ExportFormat::Gavel));
    assert!(text.contains("\"('rich (batch size 32)', 2)\""), "{text}");
}

/// The `resources` blocks of the generated YAML: model -> (requests, limits), each a map.
type Resources = BTreeMap<String, (BTreeMap<String, String>, BTreeMap<String, String>)>;

/// A reader for exactly the block layout the exporter writes (two-space indents), so the test
/// needs no YAML library; anything else in the file fails it.
fn parse_resources_yaml(text: &str) -> Resources {
    let mut out = Resources::new();
    let (mut model, mut side) = (String::new(), String::new());
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let (k, v) = line.trim().split_once(':').unwrap();
        let v = v.trim();
        match indent {
            0 => {
                model = serde_json::from_str(k).unwrap();
                assert_eq!(v, "", "{line}");
                out.insert(model.clone(), Default::default());
            }
            2 => assert_eq!((k, v), ("resources", ""), "{line}"),
            4 => {
                assert!(k == "requests" || k == "limits", "{line}");
                side = k.to_owned();
            }
            6 => {
                let e = out.get_mut(&model).unwrap();
                let m = if side == "requests" {
                    &mut e.0
                } else {
                    &mut e.1
                };
                m.insert(k.to_owned(), v.to_owned());
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    out
}

#[test]
fn kubernetes_requests_equal_limits_with_whole_cpus() {
    let d = tempfile::tempdir().unwrap();
    let rich = write_matrix(d.path(), "rich", &rich_matrix());
    let inputs = vec![repo(RESNET18), repo(MEASURED), rich];
    let text = export_stdout(&opts(&inputs, ExportFormat::Kubernetes));
    let res = parse_resources_yaml(&text);
    assert_eq!(res.len(), 3);
    for (model, (req, lim)) in &res {
        assert_eq!(req, lim, "{model}: Guaranteed QoS needs requests == limits");
        let cpu = req["cpu"].trim_matches('"');
        assert!(
            cpu.parse::<u64>().unwrap() >= 1,
            "{model}: whole CPUs, got {cpu}"
        );
        let mem = req["memory"].strip_suffix("Mi").unwrap();
        assert!(mem.parse::<u64>().unwrap() >= 1, "{model}: memory in Mi");
    }
    // resnet18: 9 CPUs, 62.5 GB = 59604.6 Mi rounded up, one GPU.
    let r = &res["resnet18"].0;
    assert_eq!(r["cpu"], "\"9\"");
    assert_eq!(r["memory"], "59605Mi");
    assert_eq!(r["nvidia.com/gpu"], "1");
    // A CPU-only job asks for no GPU.
    assert!(!res["input-pipeline"].0.contains_key("nvidia.com/gpu"));
    // Two GPUs: the whole job's CPUs and memory, twice the per-GPU demand.
    let p = prepare_all(&opts(&inputs, ExportFormat::Kubernetes)).unwrap();
    let rich = &p[2];
    let r = &res["rich"].0;
    assert_eq!(r["nvidia.com/gpu"], "2");
    assert_eq!(
        r["cpu"],
        format!("\"{}\"", (rich.demand.cpus_per_gpu * 2.0).ceil())
    );
    // With --cell proportional every GPU model gets the 3-CPU share.
    let mut o = opts(&[repo(RESNET18)], ExportFormat::Kubernetes);
    o.cell = CellChoice::Proportional;
    let res = parse_resources_yaml(&export_stdout(&o));
    assert_eq!(res["resnet18"].1["cpu"], "\"3\"");
}

#[test]
fn synergy_profile_has_iter_times_perf_and_storage() {
    let mut o = opts(&[repo(MEASURED)], ExportFormat::SynergyProfile);
    let d = export_to_dir(&mut o);
    let text = std::fs::read_to_string(d.path().join("input-pipeline/profile.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let parts = v.as_array().unwrap();
    assert_eq!(parts.len(), 3, "[iter_times, perf, storage]");
    let (iter_times, perf, storage) = (&parts[0], &parts[1], &parts[2]);
    let m = load_matrix(&repo(MEASURED)).unwrap();
    let top = *m.header.axes.memory_bytes.iter().max().unwrap();
    let samples = m.header.job.dataset_samples.unwrap() as f64;
    let keys: Vec<&String> = iter_times.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 3);
    for (key, cpu) in [("2", 2.0), ("1", 1.0), ("0.5", 0.5)] {
        let full = m
            .cells
            .iter()
            .find(|c| c.cpu == cpu && c.memory_bytes == top)
            .unwrap()
            .samples_per_s()
            .unwrap();
        // Seconds per iteration of a 16-sample batch, and the epoch with everything cached.
        let it = iter_times[key].as_f64().unwrap();
        assert!((it - 16.0 / full).abs() < 1e-12, "{key}: {it}");
        let row = perf[key].as_object().unwrap();
        let pcts: Vec<&String> = row.keys().collect();
        assert_eq!(pcts.len(), 11, "0, 10, ..., 100 % cached");
        assert!(row.keys().all(|k| k.parse::<u32>().unwrap() % 10 == 0));
        let epoch_100 = row["100"].as_f64().unwrap();
        assert!((epoch_100 - samples / full).abs() < 1e-9);
        // Less cached never makes an epoch shorter.
        let mut prev = f64::INFINITY;
        for pct in (0..=100).step_by(10) {
            let e = row[&pct.to_string()].as_f64().unwrap();
            assert!(
                e > 0.0 && e <= prev + 1e-12,
                "{key} {pct}%: {e} after {prev}"
            );
            prev = e;
            let mb = storage[key][&pct.to_string()].as_f64().unwrap();
            assert!(mb >= 0.0 && mb.is_finite());
        }
        assert_eq!(storage[key]["100"].as_f64(), Some(0.0));
    }
    // The zoo records no dataset: an error that says what is missing.
    o.matrices = vec![repo(RESNET18)];
    let e = export(&o, &mut Vec::new()).unwrap_err().to_string();
    assert!(
        e.contains("resnet18.matrix.jsonl") && e.contains("job.dataset_bytes"),
        "{e}"
    );
}

// ---------------------------------------------------------------- Slurm plugin under Lua

/// Runs `script` with `lua5.1`, or says why it cannot: None when the interpreter is missing
/// outside CI (the test then skips, visibly).
fn lua(script: &Path) -> Option<String> {
    let found = Command::new("lua5.1").arg("-v").output().is_ok();
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "CI must run the Slurm plugin test, but lua5.1 is not installed (.ci/run installs it)"
            );
        }
        // Straight to stderr: the test harness hides eprintln! output of passing tests.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED: lua5.1 is not installed (apt-get install lua5.1); the job_submit.lua test did not run\n",
        );
        return None;
    }
    let out = Command::new("lua5.1").arg(script).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "lua5.1 failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(text)
}

/// Fake job descriptions through the generated plugin, with a stub of the `slurm` table that
/// slurmctld provides; prints one line per job: its fields after submission and the messages.
const LUA_DRIVER: &str = r#"
local msgs = {}
slurm = {
  SUCCESS = 0, ERROR = -1, NO_VAL = 4294967294, NO_VAL16 = 65534,
  log_user = function(fmt, ...) table.insert(msgs, "user: " .. string.format(fmt, ...)) end,
  log_info = function(fmt, ...) table.insert(msgs, "info: " .. string.format(fmt, ...)) end,
  log_debug = function(fmt, ...) end,
  log_error = function(fmt, ...) table.insert(msgs, "error: " .. string.format(fmt, ...)) end,
}
local rc = dofile(arg[1] or PLUGIN)
assert(rc == slurm.SUCCESS, "the script returns slurm.SUCCESS when loaded")
local function show(name, job)
  msgs = {}
  local r = slurm_job_submit(job, {}, 1000)
  print(name .. "|rc=" .. tostring(r) .. "|cpus_per_tres=" .. tostring(job.cpus_per_tres) ..
    "|mem_per_tres=" .. tostring(job.mem_per_tres) .. "|cpus_per_task=" ..
    tostring(job.cpus_per_task) .. "|msgs=" .. table.concat(msgs, " / "))
end
-- Slurm 22.05 writes TRES as "gres:gpu:N", later releases as "gres/gpu:N".
show("named", { comment = "resnet18", tres_per_job = "gres:gpu:2", cpus_per_task = slurm.NO_VAL16 })
show("newer", { comment = "resnet18", tres_per_node = "gres/gpu:1" })
show("padded", { comment = " alexnet ", tres_per_node = "gres:gpu:2" })
show("none", { tres_per_job = "gres:gpu:1", cpus_per_task = slurm.NO_VAL16 })
show("empty", { comment = "", tres_per_job = "gres:gpu:1" })
show("unknown", { comment = "gpt-17", tres_per_job = "gres:gpu:1" })
show("no-gpu", { comment = "resnet18" })
show("own-cpus", { comment = "resnet18", tres_per_job = "gres:gpu:1", cpus_per_task = 4 })
show("own-mem", { comment = "resnet18", tres_per_job = "gres:gpu:1", min_mem_per_node = 8192 })
print("modify|rc=" .. tostring(slurm_job_modify({}, {}, {}, 1000)))
"#;

#[test]
fn slurm_plugin_applies_the_table_to_jobs_whose_comment_names_a_model() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("slurm");
    let table = out.join("profiler_demands.csv");
    let mut o = opts(
        &[
            repo(RESNET18),
            repo("matrices/zoo/alexnet.matrix.jsonl"),
            repo(MEASURED),
        ],
        ExportFormat::Slurm,
    );
    o.output = Some(out.clone());
    o.slurm_table = table.display().to_string();
    let report = export(&o, &mut Vec::new()).unwrap();
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("input-pipeline: CPU-only"))
    );
    let csv = std::fs::read_to_string(&table).unwrap();
    assert_eq!(
        csv,
        "model,cpus_per_gpu,mem_mb_per_gpu\nresnet18,9,59605\nalexnet,12,119210\n"
    );
    let plugin = out.join("job_submit.lua");
    let driver = d.path().join("driver.lua");
    std::fs::write(&driver, LUA_DRIVER).unwrap();
    let Some(text) = lua_with(&driver, &plugin) else {
        return;
    };
    let line = |name: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}|")))
            .unwrap_or_else(|| panic!("no {name} line in\n{text}"))
            .to_owned()
    };
    assert_eq!(
        line("named"),
        "named|rc=0|cpus_per_tres=gres:gpu:9|mem_per_tres=gres:gpu:59605|cpus_per_task=65534|\
         msgs=user: profiler demands: resnet18: --cpus-per-gpu=9 --mem-per-gpu=59605"
    );
    assert!(line("newer").contains("cpus_per_tres=gres/gpu:9|mem_per_tres=gres/gpu:59605"));
    assert!(line("padded").contains("cpus_per_tres=gres:gpu:12|mem_per_tres=gres:gpu:119210"));
    assert_eq!(
        line("none"),
        "none|rc=0|cpus_per_tres=nil|mem_per_tres=nil|cpus_per_task=65534|msgs="
    );
    assert_eq!(
        line("empty"),
        "empty|rc=0|cpus_per_tres=nil|mem_per_tres=nil|cpus_per_task=nil|msgs="
    );
    let unknown = line("unknown");
    assert!(
        unknown.starts_with("unknown|rc=0|cpus_per_tres=nil|mem_per_tres=nil|"),
        "{unknown}"
    );
    assert!(
        unknown.contains("user: profiler demands: no profile for model 'gpt-17'"),
        "{unknown}"
    );
    let no_gpu = line("no-gpu");
    assert!(
        no_gpu.starts_with("no-gpu|rc=0|cpus_per_tres=nil|mem_per_tres=nil|"),
        "{no_gpu}"
    );
    assert!(no_gpu.contains("the job asks for no GPU"), "{no_gpu}");
    let own = line("own-cpus");
    assert!(
        own.contains("cpus_per_tres=nil|mem_per_tres=gres:gpu:59605|cpus_per_task=4"),
        "{own}"
    );
    assert!(own.contains("sets --cpus-per-task"), "{own}");
    let own = line("own-mem");
    assert!(
        own.contains("cpus_per_tres=gres:gpu:9|mem_per_tres=nil"),
        "{own}"
    );
    assert_eq!(line("modify"), "modify|rc=0");

    // Without its table the plugin leaves jobs alone and says why in slurmctld's log.
    std::fs::remove_file(&table).unwrap();
    let text = lua_with(&driver, &plugin).unwrap();
    let named = text.lines().find(|l| l.starts_with("named|")).unwrap();
    assert!(
        named.contains("cpus_per_tres=nil|mem_per_tres=nil"),
        "{named}"
    );
    assert!(
        named.contains("info: profiler demands: cannot read"),
        "{named}"
    );
}

/// The driver with the plugin's path as its argument.
fn lua_with(driver: &Path, plugin: &Path) -> Option<String> {
    let wrapper = driver.with_extension("run.lua");
    std::fs::write(
        &wrapper,
        format!(
            "PLUGIN = {:?}\narg = {{}}\ndofile({:?})\n",
            plugin.display().to_string(),
            driver.display().to_string()
        ),
    )
    .unwrap();
    lua(&wrapper)
}

// ---------------------------------------------------------------- invariants

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A small random matrix with at least one cell that ran.
    fn arb_matrix() -> impl Strategy<Value = Matrix> {
        (
            prop::collection::btree_set(1u32..64, 1..4),
            prop::collection::btree_set(1u64..400, 1..4),
            0u32..4,
            prop::collection::vec((0u8..5, 0.0f64..5000.0), 16),
            prop::option::of(1u64..1024),
        )
            .prop_map(|(cpus, mems, gpus, draws, batch)| {
                let cpus: Vec<f64> = cpus.into_iter().map(|c| c as f64 / 4.0).collect();
                let mems: Vec<u64> = mems.into_iter().map(|m| m * 250_000_000).collect();
                let mut cells = Vec::new();
                let mut k = 0;
                for &cpu in &cpus {
                    for &mem in &mems {
                        let (kind, rate) = draws[k % draws.len()];
                        k += 1;
                        // One cell in five failed or infeasible, the first always ran.
                        let ran = kind != 0 || cells.is_empty();
                        let source = match kind {
                            0 if ran => CellSource::Measured,
                            0 => CellSource::Failed,
                            1 => CellSource::Modelled,
                            _ => CellSource::Measured,
                        };
                        cells.push(Cell {
                            throughput: ran.then_some(Throughput {
                                samples_per_s: rate + 1.0,
                                ci95_low: rate,
                                ci95_high: rate + 2.0,
                                windows: 3,
                                measured_s: 6.0,
                                launches: Vec::new(),
                            }),
                            wall_s: 1.0,
                            ..Cell::at(cpu, mem, BTreeMap::new(), source)
                        });
                    }
                }
                let mut m = rich_matrix();
                m.header.job = JobInfo {
                    name: "random".into(),
                    model: "random".into(),
                    gpus,
                    batch_size_per_gpu: batch.or(Some(32)),
                    dataset_bytes: Some(1_000_000_000),
                    dataset_samples: Some(10_000),
                };
                m.header.axes = Axes {
                    cpu: cpus,
                    memory_bytes: mems,
                    params: BTreeMap::new(),
                };
                m.cells = cells;
                m
            })
    }

    fn no_nan_or_inf(name: &str, text: &str) {
        let re = regex::Regex::new(r"(?i)\b(nan|inf|infinity)\b").unwrap();
        assert!(
            !re.is_match(text),
            "{name} holds a non-finite number:\n{text}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn every_format_writes_finite_numbers_and_csv_one_row_per_cell(m in arb_matrix()) {
            use polars::prelude::{DataType, ParquetReader, SerReader};
            let d = tempfile::tempdir().unwrap();
            let path = write_matrix(d.path(), "random", &m);
            for format in [
                ExportFormat::Csv, ExportFormat::Parquet, ExportFormat::Json,
                ExportFormat::Synergy, ExportFormat::SynergyProfile, ExportFormat::Blox,
                ExportFormat::Gavel, ExportFormat::Slurm, ExportFormat::Kubernetes,
            ] {
                let o = opts(std::slice::from_ref(&path), format);
                let prepared = prepare_all(&o).unwrap();
                let rendered = match render(&prepared, &o) {
                    Ok(r) => r,
                    // Allowed refusals, each for a reason the matrix really has.
                    Err(e) => {
                        let e = e.to_string();
                        let prop = prepared[0].surface.at(3.0, 62.5, profiler::matrix::Interp::Bilinear);
                        prop_assert!(
                            (format == ExportFormat::Slurm && m.header.job.gpus == 0)
                                || ((format == ExportFormat::Synergy || format == ExportFormat::Blox)
                                    && prop <= 0.0)
                                || (format == ExportFormat::Gavel && e.contains("no throughput")),
                            "{format:?}: {e}"
                        );
                        continue;
                    }
                };
                for a in &rendered.artifacts {
                    if format == ExportFormat::Parquet {
                        let df = ParquetReader::new(std::io::Cursor::new(a.bytes.clone())).finish().unwrap();
                        prop_assert_eq!(df.height(), m.cells.len());
                        for c in df.columns() {
                            if c.dtype() == &DataType::Float64 {
                                let ca = c.f64().unwrap();
                                prop_assert!((0..ca.len()).filter_map(|i| ca.get(i)).all(f64::is_finite), "{}", c.name());
                            }
                        }
                    } else {
                        let text = String::from_utf8(a.bytes.clone()).unwrap();
                        no_nan_or_inf(&a.name, &text);
                        if format == ExportFormat::Csv {
                            prop_assert_eq!(text.lines().count(), m.cells.len() + 1);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_matrix_without_a_positive_cell_is_refused_with_its_path() {
    let d = tempfile::tempdir().unwrap();
    let mut m = rich_matrix();
    for c in &mut m.cells {
        c.source = CellSource::Failed;
        c.throughput = None;
    }
    let path = write_matrix(d.path(), "dead", &m);
    let e = Prepared::new(&path, m, &opts(&[], ExportFormat::Csv))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dead.matrix.jsonl") && e.contains("no cell with a positive throughput"),
        "{e}"
    );
}

// ---------------------------------------------------------------- the command line

fn run_cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(PROFILER)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("export")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_writes_every_format_and_explains_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().display().to_string();

    let (ok, _, err) = run_cli(&[RESNET18, "--format", "synergy", "-o", &dir]);
    assert!(ok, "{err}");
    assert!(
        err.contains("wrote ") && err.contains("resnet18_1.py"),
        "{err}"
    );
    assert!(d.path().join("resnet18_1.py").is_file());

    let (ok, out, err) = run_cli(&[RESNET18, "--format", "gavel", "--cell", "proportional"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\"('resnet18 (batch size 512)', 1)\": {\"null\": 1.5625}"),
        "{out}"
    );

    let pq = d.path().join("c.parquet").display().to_string();
    let (ok, _, err) = run_cli(&[RESNET18, MEASURED, "-f", "parquet", "-o", &pq]);
    assert!(ok, "{err}");

    for (args, expect) in [
        (
            vec![RESNET18, "--format", "gavel", "--cell", "6"],
            "--cell \"6\": expected best, proportional, or CPUS,GB",
        ),
        (
            vec![RESNET18, "--format", "synergy"],
            "--format synergy writes several files: give -o DIR",
        ),
        (
            vec![RESNET18, "--format", "parquet"],
            "--format parquet writes binary data",
        ),
        (
            vec![RESNET18, "--format", "synergy", "-o", "-"],
            "give a directory",
        ),
        (
            vec![RESNET18, "--format", "csv", "--eps", "1.5"],
            "--eps 1.5 must be in [0, 1)",
        ),
        (
            vec![RESNET18, "--format", "csv", "--server", "24:0:500"],
            "--server",
        ),
        (vec![RESNET18, "--format", "yaml"], "invalid value 'yaml'"),
        (
            vec!["no/such.matrix.jsonl", "--format", "csv"],
            "no/such.matrix.jsonl",
        ),
        (
            vec![
                MEASURED,
                "--format",
                "synergy-profile",
                "-o",
                &dir,
                "--gavel-worker",
                "v100\"",
            ],
            "--gavel-worker",
        ),
        (
            vec![RESNET18, "--format", "synergy-profile", "-o", &dir],
            "no job.dataset_bytes in the header",
        ),
    ] {
        let (ok, _, err) = run_cli(&args);
        assert!(!ok, "{args:?} should fail");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

#[test]
fn help_teaches_with_examples() {
    let out = Command::new(PROFILER)
        .args(["export", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for s in [
        "Examples:",
        "--format synergy -o",
        "job_submit.lua",
        "synergy-profile",
        "--cell",
    ] {
        assert!(help.contains(s), "{s} missing from\n{help}");
    }
}
