//! Pollux's workloads (OSDI'21, petuum/adaptdl `simulator/workloads/*.csv`):
//! `name,time,application,num_replicas,batch_size`.
//!
//! A row is a job of one of Pollux's six applications arriving at `time` seconds, asking for
//! `num_replicas` GPUs at the fixed global batch `batch_size` ([`BatchRule::Fixed`]; a
//! batch-adaptive scheduler may choose any batch within the application's validated range).
//! Its work is the progress every validation curve of the application reaches.

use super::{MAX_GPUS, check_header, columns, count_in, finish, number_in};
use crate::replay::bounds;
use crate::replay::elastic::job::{BatchRule, Completion, ElasticJobSpec};
use crate::replay::elastic::model::calibration::Calibration;
use crate::replay::error::ReplayError;
use crate::replay::workload::{field, for_each_line};
use std::path::Path;

pub const HEADER: &str = "name,time,application,num_replicas,batch_size";

/// Reads `path` with the applications of `cal`.
pub fn read(path: &Path, cal: &Calibration) -> Result<Vec<ElasticJobSpec>, ReplayError> {
    let mut jobs = Vec::new();
    for_each_line(path, |n, line| {
        if n == 1 {
            return check_header(path, n, line, HEADER);
        }
        let f: Vec<&str> = line.split(',').collect();
        columns(path, n, &f, 5)?;
        let name = f[0].trim();
        if name.is_empty() || name.len() > 256 {
            return Err(ReplayError::parse(
                path,
                n,
                "name is empty or longer than 256 bytes",
            ));
        }
        let arrival_s = number_in(path, n, &f, 1, "time", 0.0, bounds::MAX_TIME_S)?;
        let app_name = f[2].trim();
        let Some(app) = cal.pollux_app(app_name) else {
            let known: Vec<&str> = cal.pollux.iter().map(|a| a.name.as_str()).collect();
            return Err(ReplayError::parse(
                path,
                n,
                format!(
                    "unknown application {app_name:?}; known: {}",
                    known.join(", ")
                ),
            ));
        };
        let gpus = count_in(path, n, &f, 3, "num_replicas", 1, MAX_GPUS)?;
        let batch: u32 = field(path, n, &f, 4, "batch_size")?;
        if batch < app.base_batch || batch > app.max_batch {
            return Err(ReplayError::parse(
                path,
                n,
                format!(
                    "batch_size {batch} is outside {app_name}'s validated range [{}, {}]",
                    app.base_batch, app.max_batch
                ),
            ));
        }
        jobs.push(ElasticJobSpec {
            id: jobs.len() as u64,
            name: name.to_owned(),
            app: app.name.clone(),
            arrival_s,
            requested_gpus: gpus,
            base_batch: app.base_batch,
            batch_rule: BatchRule::Fixed(batch),
            min_batch: app.base_batch,
            max_batch: app.max_batch,
            epoch_samples: app.epoch_samples,
            completion: Completion::Progress {
                samples: app.work_samples,
            },
            origin: Some((path.to_owned(), n)),
        });
        Ok(())
    })?;
    Ok(finish(jobs))
}
