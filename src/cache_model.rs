//! MinIO cache model used by optimistic profiling to fill the memory axis. (stub until merge)
use crate::matrix::CacheModelInputs;
use std::path::PathBuf;
#[derive(Debug, thiserror::Error)]
#[error("stub")]
pub struct CacheModelError;
pub enum Prediction {
    Feasible {
        samples_per_s: f64,
        cached_fraction: f64,
    },
    Infeasible,
}
pub struct CacheModel {
    pub inputs: CacheModelInputs,
}
impl CacheModel {
    pub fn new(inputs: CacheModelInputs) -> Self {
        CacheModel { inputs }
    }
    pub fn predict_samples_per_s(
        &self,
        r: f64,
        _c: f64,
        _m: u64,
        _res: u64,
        _s: u64,
    ) -> Prediction {
        Prediction::Feasible {
            samples_per_s: r,
            cached_fraction: 1.0,
        }
    }
}
pub fn measure_storage_read_bandwidth(_f: &[PathBuf], _b: u64) -> Result<f64, CacheModelError> {
    Ok(1e8)
}
pub fn measure_memory_read_bandwidth_per_core() -> f64 {
    1e10
}
