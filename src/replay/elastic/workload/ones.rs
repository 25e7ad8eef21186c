//! ONES's trace (SC'21, kurisusnowdeng/ones_sc21 `traces/*.csv`):
//! `time,model,task,epoch_size,patience,batch_size,lr,max_lr,target_acc,num_gpus`.
//!
//! A row is a job of type `model-task` (one of the calibrated ONES types) arriving at `time`
//! seconds, asking for `num_gpus` GPUs, with per-GPU base batch `batch_size`. Its batch follows
//! ONES's rule: GPUs x base while the linearly scaled learning rate stays under `max_lr`, so
//! at most `max_lr / lr` x base ([`BatchRule::LinearScaling`]). Its work is the progress the
//! history's runs of that type and dataset size needed (see
//! [`crate::replay::elastic::model::calibration::OnesType::work_for`]); `patience` and
//! `target_acc` are checked but the plateau rule is not replayed (its outcome is in the work).

use super::{MAX_BATCH, MAX_GPUS, check_header, columns, count_in, finish, number_in};
use crate::replay::bounds;
use crate::replay::elastic::job::{BatchRule, Completion, ElasticJobSpec};
use crate::replay::elastic::model::calibration::Calibration;
use crate::replay::error::ReplayError;
use crate::replay::workload::for_each_line;
use std::path::Path;

pub const HEADER: &str =
    "time,model,task,epoch_size,patience,batch_size,lr,max_lr,target_acc,num_gpus";

/// Largest learning-rate cap over base learning rate (ONES's trace uses 4 to 16).
pub const MAX_SCALE: f64 = 65536.0;

/// Reads `path` with the job types of `cal`.
pub fn read(path: &Path, cal: &Calibration) -> Result<Vec<ElasticJobSpec>, ReplayError> {
    let mut jobs = Vec::new();
    for_each_line(path, |n, line| {
        if n == 1 {
            return check_header(path, n, line, HEADER);
        }
        let f: Vec<&str> = line.split(',').collect();
        columns(path, n, &f, 10)?;
        let arrival_s = number_in(path, n, &f, 0, "time", 0.0, bounds::MAX_TIME_S)?;
        let key = format!("{}-{}", f[1].trim(), f[2].trim());
        let Some(ty) = cal.ones_type(&key) else {
            let known: Vec<&str> = cal.ones.iter().map(|t| t.key.as_str()).collect();
            return Err(ReplayError::parse(
                path,
                n,
                format!(
                    "unknown job type {key:?} (model-task); known: {}",
                    known.join(", ")
                ),
            ));
        };
        let epoch_size = number_in(path, n, &f, 3, "epoch_size", 1.0, 1e12)?;
        count_in(path, n, &f, 4, "patience", 0, 1_000_000)?;
        let base = count_in(path, n, &f, 5, "batch_size", 1, MAX_BATCH)?;
        let lr = number_in(path, n, &f, 6, "lr", f64::MIN_POSITIVE, 1e6)?;
        let max_lr = number_in(path, n, &f, 7, "max_lr", f64::MIN_POSITIVE, 1e6)?;
        let max_scale = max_lr / lr;
        if !(1.0..=MAX_SCALE).contains(&max_scale) {
            return Err(ReplayError::parse(
                path,
                n,
                format!("max_lr / lr = {max_scale} is outside [1, {MAX_SCALE}]"),
            ));
        }
        let max_batch = (max_scale * base as f64).floor();
        if max_batch > MAX_BATCH as f64 {
            return Err(ReplayError::parse(
                path,
                n,
                format!(
                    "the largest batch, {max_batch} (max_lr / lr x batch_size), is over {MAX_BATCH}"
                ),
            ));
        }
        number_in(path, n, &f, 8, "target_acc", 0.0, 1.0)?;
        let gpus = count_in(path, n, &f, 9, "num_gpus", 1, MAX_GPUS)?;
        let work = ty
            .work_for(epoch_size)
            .filter(|w| w.is_finite() && *w > 0.0 && *w <= bounds::MAX_WORK_SAMPLES)
            .ok_or_else(|| {
                ReplayError::parse(
                    path,
                    n,
                    format!("no usable work for {key} at epoch_size {epoch_size}"),
                )
            })?;
        jobs.push(ElasticJobSpec {
            id: jobs.len() as u64,
            name: format!("{key}-{}", jobs.len()),
            app: key,
            arrival_s,
            requested_gpus: gpus,
            base_batch: base,
            batch_rule: BatchRule::LinearScaling { max_scale },
            min_batch: base,
            max_batch: max_batch as u32,
            epoch_samples: epoch_size,
            completion: Completion::Progress { samples: work },
            origin: Some((path.to_owned(), n)),
        });
        Ok(())
    })?;
    Ok(finish(jobs))
}
