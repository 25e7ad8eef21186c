use super::grid::fractional_index;
use super::units::file_stem;
use super::*;
use crate::matrix::fixtures;
use crate::matrix::{Cell, Throughput};
use crate::plot::MarkerShape;

fn cell(cpu: f64, gb: f64, source: CellSource, v: Option<f64>) -> Cell {
    let mut c = fixtures::cell(cpu);
    c.memory_bytes = (gb * 1e9) as u64;
    c.source = source;
    c.throughput = v.map(|samples_per_s| Throughput {
        samples_per_s,
        ci95_low: samples_per_s,
        ci95_high: samples_per_s,
        windows: 1,
        measured_s: 1.0,
        launches: Vec::new(),
    });
    c
}

/// Two GPUs; 2 and 6 cores x 62.5 and 125 GB; one failed cell, one modelled.
fn matrix() -> Matrix {
    let mut header = fixtures::header("job");
    header.job.gpus = 2;
    Matrix {
        header,
        cells: vec![
            cell(2.0, 62.5, CellSource::Failed, None),
            cell(2.0, 125.0, CellSource::Measured, Some(200.0)),
            cell(6.0, 62.5, CellSource::Modelled, Some(300.0)),
            cell(6.0, 125.0, CellSource::Measured, Some(600.0)),
        ],
    }
}

#[test]
fn view_per_gpu_and_normalised() {
    let opts = PlotOptions {
        normalize: true,
        server: "24:8:500".parse().unwrap(),
        eps: 0.0,
        ..PlotOptions::default()
    };
    let v = view(
        Path::new("m"),
        &matrix(),
        &BTreeMap::new(),
        "job".into(),
        &opts,
    )
    .unwrap();
    // Per GPU: 1 and 3 cores, 31.25 and 62.5 GB.
    assert_eq!(v.cpu, vec![1.0, 3.0]);
    assert_eq!(v.mem, vec![31.25, 62.5]);
    assert_eq!((v.share_cpu, v.share_mem), (3.0, 62.5));
    // 600 samples/s for the job = 300 per GPU at the share: 1.
    assert_eq!(v.cell(1, 1).value, Some(1.0));
    assert_eq!(v.cell(0, 1).value, Some(200.0 / 600.0));
    assert_eq!(
        v.cell(0, 0),
        ViewCell {
            value: None,
            source: Some(CellSource::Failed),
            disturbed: false,
            interval: None,
        }
    );
    assert_eq!((v.best.ci, v.best.mi), (1, 1));
    assert_eq!(v.best.label, "best: 3 CPUs/GPU, 62.5 GB/GPU");
    assert_eq!(v.overview, vec![(1.0, 200.0 / 600.0), (3.0, 1.0)]);
}

#[test]
fn view_in_the_matrix_units() {
    let v = view(
        Path::new("m"),
        &matrix(),
        &BTreeMap::new(),
        "job".into(),
        &PlotOptions::default(),
    )
    .unwrap();
    assert_eq!(v.cpu, vec![2.0, 6.0]);
    assert_eq!(v.mem_unit, "GiB");
    assert!((v.mem[1] - 125e9 / GIB).abs() < 1e-9);
    assert_eq!(v.cell(1, 1).value, Some(600.0));
    assert_eq!((v.share_cpu, v.best.value), (6.0, 600.0));
    let chart = cpu_chart(&v);
    assert_eq!(chart.series.len(), 2);
    // The failed cell is a gap in its line.
    let line = &chart.series[0].points;
    assert!(line.len() == 2 && line[0].0 == 2.0 && line[0].1.is_nan());
    assert_eq!(line[1], (6.0, 300.0));
    assert_eq!(chart.series[0].estimated, vec![false, true]);
    let fails: Vec<_> = chart
        .marks
        .iter()
        .filter(|m| m.shape == MarkerShape::Cross)
        .collect();
    assert_eq!(fails.len(), 1);
    assert_eq!(fails[0].at, (2.0, 0.0));
}

/// The error bars of an SVG's series in `stroke`: each vertical `<line>`'s x and its length.
fn error_bars(svg: &str, stroke: &str) -> Vec<(i64, i64)> {
    let attr = |tag: &str, name: &str| -> Option<i64> {
        let key = format!(" {name}=\"");
        let at = tag.find(&key)? + key.len();
        tag[at..].split('"').next()?.parse().ok()
    };
    svg.split("<line")
        .skip(1)
        .map(|t| &t[..t.find("/>").unwrap_or(t.len())])
        .filter(|t| t.contains(&format!("stroke=\"{stroke}\"")))
        .filter_map(|t| {
            let (x1, y1, x2, y2) = (
                attr(t, "x1")?,
                attr(t, "y1")?,
                attr(t, "x2")?,
                attr(t, "y2")?,
            );
            (x1 == x2 && y1 != y2).then_some((x1, (y2 - y1).abs()))
        })
        .collect()
}

#[test]
fn every_measured_cell_s_interval_is_an_error_bar_of_its_width() {
    let mut header = fixtures::header("job");
    header.job.gpus = 1;
    let with_interval = |cpu: f64, rate: f64, half: f64| {
        let mut c = cell(cpu, 1.0, CellSource::Measured, Some(rate));
        let t = c.throughput.as_mut().unwrap();
        (t.ci95_low, t.ci95_high) = (rate - half, rate + half);
        c
    };
    let mut modelled = with_interval(8.0, 350.0, 50.0);
    modelled.source = CellSource::Modelled;
    let m = Matrix {
        header,
        cells: vec![
            with_interval(1.0, 100.0, 5.0),
            with_interval(2.0, 200.0, 10.0),
            with_interval(4.0, 300.0, 60.0),
            modelled,
        ],
    };
    let v = view(
        Path::new("m"),
        &m,
        &BTreeMap::new(),
        "job".into(),
        &PlotOptions::default(),
    )
    .unwrap();
    assert_eq!(v.cell(2, 0).interval, Some((240.0, 360.0)));
    assert_eq!(
        v.cell(3, 0).interval,
        None,
        "a modelled cell has no interval"
    );
    let chart = cpu_chart(&v);
    let svg = chart.to_svg_string().unwrap();
    let bars = error_bars(&svg, "#1F77B4");
    // One bar a measured cell, left to right, as long as its interval is wide: 10, 20 and 120
    // samples/s on one linear axis.
    assert_eq!(bars.len(), 3, "{bars:?}");
    assert!(bars[0].0 < bars[1].0 && bars[1].0 < bars[2].0);
    // Pixels per sample/s, fitted over the three (each length is rounded to a pixel).
    let unit = bars.iter().map(|b| b.1 as f64).sum::<f64>() / 150.0;
    for (bar, width) in bars.iter().zip([10.0, 20.0, 120.0]) {
        assert!((bar.1 as f64 - width * unit).abs() <= 1.5, "{bars:?}");
    }
    // The highest bar's top is inside the plot: the y axis reaches 360.
    let top = chart.y_range.unwrap().1;
    assert!(top >= 360.0, "{top}");
    // The heat map gives the half-width under each measured value.
    let h = heatmap(&v);
    let texts: Vec<_> = h.cells.iter().map(|c| c.detail.clone()).collect();
    assert_eq!(
        texts,
        vec![
            Some("±5%".into()),
            Some("±5%".into()),
            Some("±20%".into()),
            None
        ]
    );
}

#[test]
fn names_and_levels() {
    assert_eq!(sanitize("res/net 18"), "res-net-18");
    assert_eq!(sanitize("../x"), "x");
    assert_eq!(sanitize(""), "matrix");
    assert_eq!(
        file_stem(Path::new("a/b.measured.matrix.jsonl")),
        "b.measured"
    );
    assert_eq!(num(20.83), "20.8");
    assert_eq!(num(0.5), "0.5");
    assert_eq!(num(187.5), "187.5");
    assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 2.0), Some(1.5));
    assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 3.0), Some(2.0));
    assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 5.0), None);
    assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 0.5), None);
}

/// A disturbed cell is ringed on both curves and marked in the heat map; identical lines
/// that differ only in it are not merged.
#[test]
fn disturbed_cells_are_ringed() {
    let mut m = matrix();
    for c in &mut m.cells {
        if c.cpu == 2.0 && c.source == CellSource::Measured {
            c.interference = Some(crate::matrix::Interference {
                other_cores: 1.0,
                idle_cores: 0.0,
                cpu_pressure_pct: None,
                discarded_windows: 10,
                disturbed: true,
                ..Default::default()
            });
        }
    }
    let v = view(
        Path::new("m"),
        &m,
        &BTreeMap::new(),
        "job".into(),
        &PlotOptions::default(),
    )
    .unwrap();
    assert!(v.cell(0, 1).disturbed && !v.cell(1, 1).disturbed && !v.cell(0, 0).disturbed);
    for chart in [cpu_chart(&v), memory_chart(&v)] {
        let rings: Vec<_> = chart
            .marks
            .iter()
            .filter(|m| m.shape == MarkerShape::Ring)
            .collect();
        assert_eq!(rings.len(), 1, "{}", chart.title);
        assert_eq!(rings[0].color, crate::plot::FAILED_RED);
        assert!(chart.keys.iter().any(|k| k.label.starts_with("disturbed")));
    }
    assert_eq!(
        cpu_chart(&v)
            .marks
            .iter()
            .find(|m| m.shape == MarkerShape::Ring)
            .unwrap()
            .at,
        (2.0, 200.0)
    );
    let hm = heatmap(&v);
    let marked: Vec<_> = hm
        .cells
        .iter()
        .filter(|c| c.kind == crate::plot::HeatCellKind::Disturbed)
        .collect();
    assert_eq!(marked.len(), 1);
    assert_eq!(marked[0].text, "!200");

    let clean = view(
        Path::new("m"),
        &matrix(),
        &BTreeMap::new(),
        "job".into(),
        &PlotOptions::default(),
    )
    .unwrap();
    assert!(
        !cpu_chart(&clean)
            .keys
            .iter()
            .any(|k| k.label.starts_with("disturbed"))
    );
}
