//! `profiler plot`: the data the sensitivity charts draw, the marks in the SVGs they render,
//! the PNG files and the command line.

use profiler::matrix::{
    CacheKind, CacheModelInputs, CellSource, Matrix, ModelAccuracy, Validation, load_matrix,
};
use profiler::plot::sensitivity::{
    PlotOptions, View, cpu_chart, heatmap, memory_chart, overview_chart, views, write_plots,
};
use profiler::plot::{FAILED_RED, Figure, HeatCellKind, MarkerShape, STAR_GOLD};
use std::path::{Path, PathBuf};

fn zoo() -> Vec<(PathBuf, Matrix)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("matrices/zoo")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".matrix.jsonl"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 12);
    paths
        .into_iter()
        .map(|p| {
            let m = load_matrix(&p).unwrap();
            (p, m)
        })
        .collect()
}

fn normalized() -> PlotOptions {
    PlotOptions {
        normalize: true,
        server: "24:8:500".parse().unwrap(),
        ..PlotOptions::default()
    }
}

fn example(name: &str) -> (PathBuf, Matrix) {
    let p = PathBuf::from(format!("matrices/examples/{name}.matrix.jsonl"));
    let m = load_matrix(&p).unwrap();
    (p, m)
}

/// The measured input-pipeline example with two GPUs (so per-GPU levels differ from the
/// job's), one infeasible cell, one failed cell and a recorded validation.
fn failing() -> (PathBuf, Matrix) {
    let (p, mut m) = example("input-pipeline.measured");
    m.header.job.name = "failing job/1".into();
    m.header.job.gpus = 2;
    for c in &mut m.cells {
        let (cpu, mem) = (c.cpu, c.memory_bytes);
        if cpu == 0.5 && mem == 61_933_827 {
            c.source = CellSource::Infeasible;
            c.throughput = None;
        } else if cpu == 1.0 && mem == 83_103_238 {
            c.source = CellSource::Failed;
            c.throughput = None;
        }
    }
    m.header.cache_model = Some(CacheModelInputs::new(
        CacheKind::PageCache,
        84_677_644,
        2e7,
        3e10,
    ));
    m.header.validation = Some(Validation {
        created_unix_s: 0,
        models: vec![
            ModelAccuracy {
                model: CacheKind::PageCache,
                median_abs_error_pct: 3.1,
                max_abs_error_pct: 6.0,
                cells: 6,
            },
            ModelAccuracy {
                model: CacheKind::Minio,
                median_abs_error_pct: 24.0,
                max_abs_error_pct: 41.0,
                cells: 6,
            },
        ],
        cells: Vec::new(),
        rerun_median_abs_error_pct: None,
        paired_models: Vec::new(),
        paired_median_half_width_pct: None,
    });
    (p, m)
}

fn view_of(matrices: &[(PathBuf, Matrix)], opts: &PlotOptions, name: &str) -> View {
    views(matrices, opts)
        .unwrap()
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no view {name}"))
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
}

/// `<line .../>` elements of `svg` stroked in `color` (e.g. `#E8000B`).
fn lines_in(svg: &str, color: &str) -> usize {
    svg.split("<line")
        .skip(1)
        .filter(|e| {
            e.split("/>")
                .next()
                .is_some_and(|e| e.contains(&format!("stroke=\"{color}\"")))
        })
        .count()
}

/// `<polygon .../>` elements filled with `color`.
fn polygons_in(svg: &str, color: &str) -> usize {
    svg.split("<polygon")
        .skip(1)
        .filter(|e| {
            e.split("/>")
                .next()
                .is_some_and(|e| e.contains(&format!("fill=\"{color}\"")))
        })
        .count()
}

fn hex(c: plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[test]
fn resnet18_normalised_cpu_curve_is_synergys() {
    let v = view_of(&zoo(), &normalized(), "resnet18");
    assert_eq!(v.cpu, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0, 12.0, 24.0]);
    assert_eq!((v.share_cpu, v.share_mem), (3.0, 62.5));
    let chart = cpu_chart(&v);
    // 62.5 GB and every level above it give the same curve: one line for them.
    let labels: Vec<&str> = chart.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["20.8 GB", "62.5 to 250 GB"]);
    let curve = &chart.series[1];
    let ys: Vec<f64> = curve.points.iter().map(|p| p.1).collect();
    assert!(
        close(&ys, &[0.37, 0.72, 1.0, 1.3, 1.53, 1.75, 2.4, 2.4, 2.4]),
        "{ys:?}"
    );
    // Every zoo cell is modelled (Synergy's memory axis).
    assert!(curve.estimated.iter().all(|&e| e));
    assert_eq!(curve.marker, Some(MarkerShape::for_series(1)));
    // The best case: 9 CPUs, 62.5 GB, 2.4 times the share.
    let stars: Vec<_> = chart
        .marks
        .iter()
        .filter(|m| m.shape == MarkerShape::Star)
        .collect();
    assert_eq!(stars.len(), 1);
    assert!((stars[0].at.0 - 9.0).abs() < 1e-9 && (stars[0].at.1 - 2.4).abs() < 1e-9);
    assert_eq!(
        stars[0].label.as_deref(),
        Some("best: 9 CPUs, 62.5 GB (2.4x the share)")
    );
    assert_eq!(chart.vlines.len(), 1);
    assert_eq!(chart.vlines[0].x, 3.0);
    assert_eq!(chart.vlines[0].label, "proportional share: 3 CPUs");
    // Drawn: the labels are in the SVG, and no failure mark.
    let svg = chart.to_svg_string().unwrap();
    for text in [
        "best: 9 CPUs, 62.5 GB (2.4x the share)",
        "proportional share: 3 CPUs",
        "62.5 to 250 GB",
        "CPUs per GPU, log scale",
        "1 = at the proportional share of 24:8:500",
    ] {
        assert!(svg.contains(text), "{text}");
    }
    assert_eq!(
        polygons_in(&svg, &hex(STAR_GOLD)),
        2,
        "star in the plot and the legend"
    );
    assert_eq!(lines_in(&svg, &hex(FAILED_RED)), 0);
    assert!(!svg.contains("NaN"));
}

#[test]
fn zoo_overview_has_synergys_shapes() {
    let matrices = zoo();
    let opts = normalized();
    let all = views(&matrices, &opts).unwrap();
    let chart = overview_chart(&all, &opts);
    let curve = |name: &str| {
        chart
            .series
            .iter()
            .find(|s| s.label.split([',', '\n', ' ']).any(|n| n == name))
            .unwrap_or_else(|| panic!("no line for {name}"))
    };
    // gnmt is flat at 1, and shares its line with the other models that are.
    let gnmt = curve("gnmt");
    assert!(gnmt.points.iter().all(|p| (p.1 - 1.0).abs() < 1e-9));
    assert!(gnmt.label.contains("bert") && gnmt.label.contains("transformer"));
    let r18: Vec<f64> = curve("resnet18").points.iter().map(|p| p.1).collect();
    assert!(close(
        &r18,
        &[0.37, 0.72, 1.0, 1.3, 1.53, 1.75, 2.4, 2.4, 2.4]
    ));
    // Twelve models, seven distinct curves; every model named once.
    assert_eq!(chart.series.len(), 7);
    let named: usize = chart
        .series
        .iter()
        .map(|s| s.label.split(',').count())
        .sum();
    assert_eq!(named, 12);
    let svg = chart.to_svg_string().unwrap();
    assert!(svg.contains("Throughput vs CPUs per GPU, by model"));
    assert!(!svg.contains("NaN"));
}

#[test]
fn failures_gaps_and_validation_are_drawn() {
    let matrices = vec![failing()];
    let opts = PlotOptions::default();
    let v = view_of(&matrices, &opts, "failing-job-1");
    // The job's own units: cores and MiB (every level is below a GiB); 2 GPUs.
    assert_eq!(v.cpu, vec![0.5, 1.0, 2.0]);
    assert_eq!(v.mem_unit, "MiB");
    assert_eq!(
        (v.share_cpu, v.best.label.as_str()),
        (6.0, "best: 2 CPUs, 119.6 MiB")
    );
    let cpu = cpu_chart(&v);
    // Failed and infeasible cells: gaps in their lines, one red x per CPU level.
    let crosses: Vec<(f64, f64)> = cpu
        .marks
        .iter()
        .filter(|m| m.shape == MarkerShape::Cross)
        .map(|m| m.at)
        .collect();
    assert_eq!(crosses, vec![(0.5, 0.0), (1.0, 0.0)]);
    let gaps: usize = cpu
        .series
        .iter()
        .map(|s| s.points.iter().filter(|p| p.1.is_nan()).count())
        .sum();
    assert_eq!(gaps, 2);
    // The share (6 cores for 2 GPUs) lies far beyond the grid's 0.5 to 2 cores: drawing it
    // would squash the data, so the legend names it.
    assert!(cpu.vlines.is_empty());
    assert!(
        cpu.keys
            .iter()
            .any(|k| k.label == "proportional share: 6 CPUs\n(off the axis)")
    );
    // Memory: the share (116.4 GiB) is far off the MiB axis, so only the legend names it.
    let mem = memory_chart(&v);
    assert!(mem.vlines.is_empty());
    assert!(
        mem.keys
            .iter()
            .any(|k| k.label == "proportional share: 116.4 GiB\n(off the axis)")
    );
    let validated =
        "validated: page-cache model median |error| 3.1% (max 6.0%) over 6 cells; minio 24.0%";
    for chart in [&cpu, &mem] {
        let svg = chart.to_svg_string().unwrap();
        // Two crosses in the plot (two lines each) and one in the legend.
        assert_eq!(lines_in(&svg, &hex(FAILED_RED)), 6);
        assert!(svg.contains(validated));
        assert!(svg.contains("failed / infeasible"));
        assert!(!svg.contains("NaN"), "a gap leaked into the SVG");
    }
    let hm = heatmap(&v);
    let kinds: Vec<HeatCellKind> = hm.cells.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == HeatCellKind::Failed).count(),
        2
    );
    let texts: Vec<&str> = hm.cells.iter().map(|c| c.text.as_str()).collect();
    assert!(texts.contains(&"OOM") && texts.contains(&"failed"));
    assert_eq!(hm.best.as_ref().unwrap().0, (2, 2));
    let reference = hm.reference.as_ref().unwrap();
    assert_eq!((reference.column, reference.row), (None, None));
    let svg = hm.to_svg_string().unwrap();
    assert!(svg.contains(validated));
    // Cell texts (the legend says "failed / infeasible").
    for text in ["OOM", "failed"] {
        assert!(svg.lines().any(|l| l.trim() == text), "{text}");
    }
    assert!(svg.contains("(off the grid)"));
    assert!(!svg.contains("NaN"));
}

#[test]
fn heatmap_marks_modelled_cells_best_and_share() {
    let v = view_of(&zoo(), &normalized(), "resnet18");
    let hm = heatmap(&v);
    assert_eq!((hm.columns.len(), hm.rows.len()), (9, 5));
    assert_eq!(hm.rows[1], "62.5");
    // Row 1 (62.5 GB), column 0 (1 CPU): 0.37, modelled.
    let c = &hm.cells[9];
    assert_eq!(
        (c.text.as_str(), c.kind),
        ("~0.37", HeatCellKind::Estimated)
    );
    assert_eq!(hm.best.as_ref().unwrap().0, (6, 1));
    let r = hm.reference.as_ref().unwrap();
    assert_eq!((r.column, r.row), (Some(2.5), Some(1.5)));
    let svg = hm.to_svg_string().unwrap();
    for text in [
        "~2.4",
        "best: 9 CPUs, 62.5 GB",
        "proportional share: 3 CPUs, 62.5 GB",
    ] {
        assert!(svg.contains(text), "{text}");
    }
    assert!(!svg.contains("NaN"));
}

#[test]
fn cpu_only_example_counts_as_one_accelerator() {
    let matrices = vec![
        example("input-pipeline.measured"),
        example("input-pipeline.modelled"),
    ];
    let all = views(&matrices, &normalized()).unwrap();
    // The two files share a job name: the file names tell them apart.
    let names: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["input-pipeline.measured", "input-pipeline.modelled"]
    );
    let v = &all[0];
    // gpus = 0: levels per GPU are the job's.
    assert_eq!(v.cpu, vec![0.5, 1.0, 2.0]);
    // The share (3 CPUs, 62.5 GB) is beyond the grid, where the surface is clamped to its
    // best: the best cell is 1.
    assert!((v.best.value - 1.0).abs() < 1e-9);
    let measured = cpu_chart(v);
    assert!(
        measured
            .series
            .iter()
            .all(|s| s.estimated.iter().all(|e| !e))
    );
    let modelled = cpu_chart(&all[1]);
    assert!(modelled.series.iter().any(|s| s.estimated.contains(&true)));
    assert!(modelled.keys.iter().any(|k| k.label == "modelled"));
}

#[test]
fn pngs_and_svgs_are_written_for_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let opts = PlotOptions {
        out_dir: dir.path().join("plots"),
        ..normalized()
    };
    let matrices = vec![
        zoo()
            .into_iter()
            .find(|(p, _)| p.ends_with("resnet18.matrix.jsonl"))
            .unwrap(),
        example("input-pipeline.measured"),
    ];
    let all = views(&matrices, &opts).unwrap();
    let written = write_plots(&all, &opts).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut expected = Vec::new();
    for view in ["resnet18", "input-pipeline"] {
        for chart in ["cpu", "memory", "heatmap"] {
            for ext in ["png", "svg"] {
                expected.push(format!("{view}.{chart}.normalized.{ext}"));
            }
        }
    }
    expected.push("overview.normalized.png".into());
    expected.push("overview.normalized.svg".into());
    assert_eq!(names, expected);
    for p in &written {
        if p.extension().is_some_and(|e| e == "png") {
            let img = image::open(p).unwrap();
            let size = (img.width(), img.height());
            let want = if names_of(p).starts_with("overview") {
                (1000, 600)
            } else {
                (1000, 560)
            };
            assert_eq!(size, want, "{}", p.display());
        } else {
            let svg = std::fs::read_to_string(p).unwrap();
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            assert!(!svg.contains("NaN"), "{}", p.display());
        }
    }
}

fn names_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn normalising_needs_throughput_at_the_share() {
    let (p, mut m) = zoo()
        .into_iter()
        .find(|(p, _)| p.ends_with("resnet18.matrix.jsonl"))
        .unwrap();
    // Every cell at or below the share's 3 CPUs failed: nothing to divide by.
    for c in &mut m.cells {
        if c.cpu <= 3.0 {
            c.source = CellSource::Failed;
            c.throughput = None;
        }
    }
    let err = views(&[(p.clone(), m.clone())], &normalized())
        .unwrap_err()
        .to_string();
    assert!(err.contains("resnet18.matrix.jsonl"), "{err}");
    assert!(err.contains("without --normalize"), "{err}");
    // Without normalising it plots, failures and all.
    let v = &views(&[(p, m)], &PlotOptions::default()).unwrap()[0];
    assert_eq!(
        cpu_chart(v).marks.len(),
        3 + 1,
        "three failed CPU levels and the star"
    );
}

#[test]
fn command_line_plots_the_zoo_and_lists_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_profiler"))
        .args([
            "plot",
            "matrices/zoo/resnet18.matrix.jsonl",
            "matrices/zoo/gnmt.matrix.jsonl",
            "--normalize",
            "proportional",
            "-o",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let listed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("wrote "))
        .collect();
    assert_eq!(listed.len(), 2 * 3 * 2 + 2);
    for f in listed {
        assert!(Path::new(f).is_file(), "{f}");
    }
    // A missing file is an error that names it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_profiler"))
        .args(["plot", "no/such.matrix.jsonl", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such.matrix.jsonl"));
}

#[test]
fn each_parameter_combination_gets_its_own_charts() {
    let (p, mut m) = example("input-pipeline.measured");
    let mut doubled = m.cells.clone();
    for c in &mut m.cells {
        c.params.insert("batch".into(), "16".into());
    }
    for c in &mut doubled {
        c.params.insert("batch".into(), "32".into());
        if let Some(t) = c.throughput.as_mut() {
            t.samples_per_s *= 2.0;
        }
    }
    m.cells.extend(doubled);
    let all = views(&[(p, m)], &PlotOptions::default()).unwrap();
    let names: Vec<(&str, &str)> = all
        .iter()
        .map(|v| (v.name.as_str(), v.title.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("input-pipeline.batch=16", "input-pipeline [batch=16]"),
            ("input-pipeline.batch=32", "input-pipeline [batch=32]"),
        ]
    );
    assert!((all[1].best.value - 2.0 * all[0].best.value).abs() < 1e-6);
}

#[test]
fn shipped_validated_example_says_how_good_its_model_is() {
    let shipped = example("input-pipeline.validated");
    let recorded = shipped.1.header.validation.clone().unwrap();
    let page_cache = recorded
        .models
        .iter()
        .find(|m| m.model == CacheKind::PageCache)
        .unwrap();
    let v = view_of(&[shipped], &PlotOptions::default(), "input-pipeline");
    let line = v.validation.clone().unwrap();
    let expected = format!(
        "validated: page-cache model median |error| {:.1}% (max {:.1}%)",
        page_cache.median_abs_error_pct, page_cache.max_abs_error_pct
    );
    assert!(line.starts_with(&expected), "{line} vs {expected}");
    let svg = memory_chart(&v).to_svg_string().unwrap();
    assert!(svg.contains(&line));
}
