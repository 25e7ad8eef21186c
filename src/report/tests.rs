use super::*;
use crate::matrix::fixtures::{header, measured};
use crate::matrix::{Axes, CellSource, Matrix, Throughput};

const GIB: u64 = 1 << 30;

/// Two CPU levels by two memory levels, every rate with an interval of its own.
fn matrix(name: &str) -> Matrix {
    let mut h = header(name);
    h.job.gpus = 1;
    h.axes = Axes {
        cpu: vec![1.0, 4.0],
        memory_bytes: vec![GIB, 4 * GIB],
        params: Default::default(),
    };
    let cell = |cpu: f64, mem: u64, rate: f64, half: f64| {
        let mut c = measured(cpu, mem, rate, None);
        c.throughput = Some(Throughput {
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            windows: 8,
            measured_s: 8.0,
            launches: Vec::new(),
        });
        c
    };
    let mut modelled = cell(4.0, GIB, 300.0, 0.0);
    modelled.source = CellSource::Modelled;
    Matrix {
        header: h,
        cells: vec![
            cell(1.0, GIB, 100.0, 5.0),
            cell(1.0, 4 * GIB, 120.0, 6.0),
            modelled,
            cell(4.0, 4 * GIB, 400.0, 40.0),
        ],
    }
}

fn options(dir: &Path) -> ReportOptions {
    ReportOptions {
        out_dir: dir.to_owned(),
        server: ServerShape {
            cpus: 8.0,
            gpus: 2,
            mem_gb: 16.0,
        },
        eps: 0.02,
        weights: CostWeights::default(),
    }
}

/// The `data-NAME` values of the rows of the cells table, in order.
fn data(html: &str, name: &str) -> Vec<f64> {
    let key = format!("data-{name}=\"");
    html.match_indices(&key)
        .map(|(i, _)| {
            let rest = &html[i + key.len()..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

#[test]
fn a_page_keeps_every_cell_s_rate_and_interval_and_the_demand() {
    let dir = tempfile::tempdir().unwrap();
    let m = matrix("job");
    let (html, summary) = matrix_page::matrix_page(
        Path::new("job.matrix.jsonl"),
        &m,
        "job",
        &options(dir.path()),
    )
    .unwrap();
    let rates: Vec<f64> = m.cells.iter().map(|c| c.samples_per_s().unwrap()).collect();
    assert_eq!(data(&html, "rate"), rates);
    assert_eq!(data(&html, "low"), vec![95.0, 114.0, 300.0, 360.0]);
    assert_eq!(data(&html, "high"), vec![105.0, 126.0, 300.0, 440.0]);
    // The best case is the 4-CPU, 4 GiB cell: nothing else comes within 2% of 400.
    assert_eq!(data(&html, "cpus-per-gpu"), vec![4.0]);
    assert_eq!(summary.cpus_per_gpu, Some(4.0));
    // The widest measured interval is ±10% (400 ± 40); the modelled cell's is not counted.
    assert_eq!(summary.worst_half_width_pct, Some(10.0));
    assert_eq!((summary.measured, summary.cells), (3, 4));
    assert!(html.contains("<svg"), "the charts are inline");
    assert!(html.contains("class=\"modelled\""));
}

#[test]
fn several_matrices_get_an_index_linking_each_page() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    for name in ["a", "b"] {
        let path = inputs.join(format!("{name}.matrix.jsonl"));
        std::fs::write(&path, matrix(name).to_jsonl()).unwrap();
    }
    let out = dir.path().join("out");
    let mut seen = Vec::new();
    let written = write_report(&[inputs], &options(&out), &mut |k, n| seen.push((k, n))).unwrap();
    assert_eq!(seen, vec![(1, 2), (2, 2)]);
    assert_eq!(written[0], out.join("index.html"));
    let index = std::fs::read_to_string(&written[0]).unwrap();
    assert!(index.contains("href=\"a.html\"") && index.contains("href=\"b.html\""));
    assert_eq!(data(&index, "worst"), vec![10.0, 10.0]);
    assert!(out.join("a.html").exists() && out.join("b.html").exists());
}

#[test]
fn a_folder_without_matrices_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = write_report(
        &[dir.path().to_owned()],
        &options(dir.path()),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("no *.matrix.jsonl file"), "{err}");
}
