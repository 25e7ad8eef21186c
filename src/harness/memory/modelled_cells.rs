//! Optimistic profiling's second half: cells at lower memory levels derived from the cell
//! measured at the top level with the MinIO cache model.

use crate::cache_model::{CacheModel, Prediction};
use crate::matrix::{CacheModelInputs, Cell, CellSource, Throughput};

use crate::units::GIB;

/// Cells at `limits` (bytes, below the measured level) for the CPU level and parameters of
/// `measured`. Without cache-model inputs (no dataset) memory only has to hold the job itself:
/// the rate is the measured one above its resident size and infeasible below.
pub fn modelled_cells(
    measured: &Cell,
    limits: &[u64],
    inputs: Option<&CacheModelInputs>,
    dataset_samples: u64,
) -> Vec<Cell> {
    // What competes with the dataset for the limit: not PSS, which counts mapped libraries
    // (hundreds of MB for PyTorch) that the kernel charges as page cache, if at all.
    let resident = measured
        .telemetry
        .as_ref()
        .map_or(0, |t| t.resident_besides_dataset());
    let model = CacheModel::new(inputs.cloned().unwrap_or(no_dataset()));
    limits
        .iter()
        .map(|&limit| {
            let mut cell = empty_cell(measured, limit);
            let (Some(rate), CellSource::Measured) = (measured.samples_per_s(), measured.source)
            else {
                // The top level failed or was infeasible: lower levels cannot do better.
                cell.source = match measured.source {
                    CellSource::Infeasible => CellSource::Infeasible,
                    _ => CellSource::Failed,
                };
                cell.note = Some(format!(
                    "not modelled: the measured cell at this CPU level is {}",
                    measured.source.as_str()
                ));
                return cell;
            };
            match model.predict_samples_per_s(
                rate,
                measured.cpu,
                limit,
                resident,
                dataset_samples,
                measured.telemetry.as_ref().map(|t| t.cpu_cores_used),
            ) {
                Prediction::Feasible {
                    samples_per_s,
                    cached_fraction,
                    hit_ratio,
                } => {
                    cell.throughput = Some(scaled_throughput(measured, rate, samples_per_s));
                    cell.note = Some(match inputs {
                        Some(i) => format!(
                            "{} cache model from the cell measured at {:.2} GiB: cache holds {:.0}% of the dataset, {:.0}% of reads hit",
                            i.kind.as_str(),
                            measured.memory_bytes as f64 / GIB,
                            cached_fraction * 100.0,
                            hit_ratio * 100.0
                        ),
                        None => "no dataset: memory above the job's resident size does not change its rate".into(),
                    });
                }
                Prediction::Infeasible => {
                    cell.source = CellSource::Infeasible;
                    cell.note = Some(format!(
                        "modelled: limit is below the job's resident memory ({:.2} GiB)",
                        resident as f64 / GIB
                    ));
                }
            }
            cell
        })
        .collect()
}

/// The model's inputs for a job without a dataset: nothing to cache, so only the job's own
/// memory decides whether a limit is feasible.
fn no_dataset() -> CacheModelInputs {
    CacheModelInputs::new(crate::matrix::CacheKind::Minio, 0, 0.0, 0.0)
}

/// A modelled cell at `limit` for the CPU level and parameters of `measured`, with nothing
/// modelled yet.
fn empty_cell(measured: &Cell, limit: u64) -> Cell {
    Cell::at(
        measured.cpu,
        limit,
        measured.params.clone(),
        CellSource::Modelled,
    )
}

/// The measured throughput (`rate` samples/s) at the modelled rate, its interval scaled with
/// it. A job measured at 0 samples/s stays at 0 with less memory (and 0/0 must not become a
/// NaN in the file).
fn scaled_throughput(measured: &Cell, rate: f64, samples_per_s: f64) -> Throughput {
    let samples_per_s = if rate > 0.0 && samples_per_s.is_finite() {
        samples_per_s.max(0.0)
    } else {
        0.0
    };
    let scale = if rate > 0.0 {
        samples_per_s / rate
    } else {
        0.0
    };
    let mut tp = measured
        .throughput
        .clone()
        .expect("measured has throughput");
    tp.samples_per_s = samples_per_s;
    tp.ci95_low *= scale;
    tp.ci95_high *= scale;
    tp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{Telemetry, Throughput};

    const MIB: u64 = 1 << 20;

    fn measured(rate: f64) -> Cell {
        Cell {
            throughput: Some(Throughput {
                samples_per_s: rate,
                ci95_low: rate * 0.9,
                ci95_high: rate * 1.1,
                windows: 5,
                measured_s: 10.0,
                launches: Vec::new(),
            }),
            telemetry: Some(Telemetry {
                rss_peak_bytes: 100 * MIB,
                ..Telemetry::default()
            }),
            wall_s: 12.0,
            ..Cell::at(2.0, 1024 * MIB, Default::default(), CellSource::Measured)
        }
    }

    #[test]
    fn slow_storage_makes_small_caches_slower_and_tiny_limits_infeasible() {
        // 1000 samples of 1 MiB each, 10 MiB/s storage: with nothing cached an epoch takes
        // 100 s (10 samples/s), far below the measured 500 samples/s.
        let inputs = CacheModelInputs::new(
            crate::matrix::CacheKind::Minio,
            1000 * MIB,
            10.0 * MIB as f64,
            10e9,
        );
        let cells = modelled_cells(
            &measured(500.0),
            &[600 * MIB, 150 * MIB, 50 * MIB],
            Some(&inputs),
            1000,
        );
        let rates: Vec<Option<f64>> = cells.iter().map(Cell::samples_per_s).collect();
        assert_eq!(cells[0].source, CellSource::Modelled);
        assert!(rates[0].unwrap() > rates[1].unwrap(), "{rates:?}");
        assert!(rates[0].unwrap() <= 500.0);
        let tp = cells[1].throughput.as_ref().unwrap();
        assert!(tp.ci95_low < tp.samples_per_s && tp.samples_per_s < tp.ci95_high);
        assert_eq!(
            cells[2].source,
            CellSource::Infeasible,
            "50 MiB < 100 MiB resident"
        );
        assert!(cells.iter().all(|c| c.cpu == 2.0 && c.wall_s == 0.0));
    }

    /// A PyTorch-like job: 900 MiB PSS, of which 400 MiB are mapped libraries the kernel
    /// charges as page cache, 100 MiB of them touched while measured; 500 MiB anonymous.
    #[test]
    fn the_cache_left_for_the_dataset_leaves_out_mapped_libraries() {
        let inputs = CacheModelInputs::new(
            crate::matrix::CacheKind::Minio,
            400 * MIB,
            10.0 * MIB as f64,
            10e9,
        );
        let mut top = measured(500.0);
        top.telemetry = Some(Telemetry {
            rss_peak_bytes: 900 * MIB,
            page_cache_bytes: 500 * MIB,
            anon_peak_bytes: Some(500 * MIB),
            dataset_cached_bytes: Some(400 * MIB),
            mapped_hot_bytes: Some(100 * MIB),
            ..Telemetry::default()
        });
        assert_eq!(
            top.telemetry.as_ref().unwrap().resident_besides_dataset(),
            600 * MIB
        );
        // 800 MiB leaves 200 MiB for the dataset: half of it cached (MinIO: half the reads hit).
        let cells = modelled_cells(
            &top,
            &[800 * MIB, 1000 * MIB, 550 * MIB],
            Some(&inputs),
            400,
        );
        let x = |c: &Cell| c.samples_per_s().unwrap();
        // 400 samples, 200 MiB from storage at 10 MiB/s: 20 s an epoch.
        assert!((x(&cells[0]) - 20.0).abs() < 0.1, "{:?}", cells[0]);
        assert_eq!(x(&cells[1]), 500.0, "the whole dataset fits");
        assert_eq!(
            cells[2].source,
            CellSource::Infeasible,
            "below anonymous memory and the job's own files"
        );
        // Batches a loader's workers hand over in shared memory hold their share of the limit
        // too: 100 MiB of them leave the dataset 100 MiB of the 800 (a quarter cached, 30 s an
        // epoch).
        top.telemetry.as_mut().unwrap().shmem_peak_bytes = Some(100 * MIB);
        let with_shmem = modelled_cells(&top, &[800 * MIB], Some(&inputs), 400);
        assert!(
            (x(&with_shmem[0]) - 400.0 / 30.0).abs() < 0.1,
            "{:?}",
            with_shmem[0]
        );
        // A cell from before these fields were recorded falls back to PSS.
        top.telemetry.as_mut().unwrap().anon_peak_bytes = None;
        assert_eq!(
            top.telemetry.as_ref().unwrap().resident_besides_dataset(),
            900 * MIB
        );
    }

    #[test]
    fn without_a_dataset_only_resident_memory_matters() {
        let cells = modelled_cells(&measured(500.0), &[512 * MIB, 64 * MIB], None, 0);
        assert_eq!(cells[0].samples_per_s(), Some(500.0));
        assert!(cells[0].note.as_deref().unwrap().contains("no dataset"));
        assert_eq!(cells[1].source, CellSource::Infeasible);
    }

    #[test]
    fn a_failed_top_level_propagates() {
        let mut top = measured(500.0);
        top.source = CellSource::Failed;
        top.throughput = None;
        let cells = modelled_cells(&top, &[512 * MIB], None, 0);
        assert_eq!(cells[0].source, CellSource::Failed);
        assert!(cells[0].samples_per_s().is_none());
    }

    #[test]
    fn a_zero_rate_models_to_zero_not_nan() {
        let inputs = CacheModelInputs::new(
            crate::matrix::CacheKind::PageCache,
            1000 * MIB,
            10.0 * MIB as f64,
            10e9,
        );
        for inputs in [Some(&inputs), None] {
            let cells = modelled_cells(&measured(0.0), &[600 * MIB, 150 * MIB], inputs, 1000);
            for c in &cells {
                let tp = c.throughput.as_ref().expect("feasible");
                assert_eq!(
                    (tp.samples_per_s, tp.ci95_low, tp.ci95_high),
                    (0.0, 0.0, 0.0),
                    "{c:?}"
                );
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("m.matrix.jsonl");
            let (mut w, _) =
                crate::matrix::MatrixWriter::create(&path, &crate::matrix::fixtures::header("j"))
                    .unwrap();
            for c in &cells {
                w.append(c).unwrap();
            }
            assert_eq!(crate::matrix::load_matrix(&path).unwrap().cells, cells);
        }
    }
}
