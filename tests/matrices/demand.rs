//! Best-case demands of Synergy's model zoo against its published scalars.

use profiler::matrix::{CostWeights, DEFAULT_EPS, ServerShape, Surface, best_case, load_matrix};
use std::path::Path;

/// Rows of `model_zoo_scalars.csv` for the default server (3 CPUs per GPU):
/// (model, ideal CPUs, ideal GB, speed-up at ideal).
fn published_scalars() -> Vec<(String, f64, f64, f64)> {
    let text = std::fs::read_to_string("matrices/zoo-source/model_zoo_scalars.csv").unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[0] == "3")
        .map(|f| {
            let name = match f[1] {
                "res18" => "resnet18",
                "res50" => "resnet50",
                n => n,
            };
            (
                name.to_string(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn zoo_best_case_demands_are_synergys_published_ones() {
    let scalars = published_scalars();
    assert_eq!(scalars.len(), 12);
    for eps in [0.0, DEFAULT_EPS] {
        for (model, cpus, gb, speedup) in &scalars {
            let path = format!("matrices/zoo/{model}.matrix.jsonl");
            let m = load_matrix(Path::new(&path)).unwrap();
            let s = Surface::from_matrix(&m).unwrap();
            let d = best_case(&s, &ServerShape::default(), eps, CostWeights::default());
            assert_eq!(d.cpus_per_gpu, *cpus, "{model} eps {eps}");
            // Synergy writes int(62.5 / 3) = 20 for its smallest memory column, 20.83 GB.
            let published_gb = if *gb == 20.0 { 20.83 } else { *gb };
            assert!(
                (d.mem_gb_per_gpu - published_gb).abs() < 1e-9,
                "{model}: {d}"
            );
            assert!(
                (d.speedup_over_proportional - speedup).abs() < 1e-9,
                "{model}: {} vs {speedup}",
                d.speedup_over_proportional
            );
        }
    }
}

#[test]
fn a_cheaper_memory_price_never_asks_for_less_memory() {
    // Lowering memory's price can only move the demand towards more memory and fewer CPUs.
    for entry in std::fs::read_dir("matrices/zoo").unwrap() {
        let m = load_matrix(&entry.unwrap().path()).unwrap();
        let s = Surface::from_matrix(&m).unwrap();
        let shape = ServerShape::default();
        let even = best_case(&s, &shape, 0.0, CostWeights::default());
        let cheap_mem = best_case(
            &s,
            &shape,
            0.0,
            CostWeights {
                cpu: 1.0,
                mem: 0.01,
            },
        );
        assert!(
            cheap_mem.mem_gb_per_gpu >= even.mem_gb_per_gpu,
            "{}",
            m.header.job.model
        );
        assert!(
            cheap_mem.cpus_per_gpu <= even.cpus_per_gpu,
            "{}",
            m.header.job.model
        );
    }
}
