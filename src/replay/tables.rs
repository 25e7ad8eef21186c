//! Output tables of a replay as polars [`DataFrame`]s, written as CSV and Parquet.
//!
//! This is the only place the replay touches polars: the engine's records stay plain Rust and are
//! turned into one frame per table here, one column per field. Units: times in seconds (`_s`),
//! decision times in milliseconds (`_ms`), resources in GPUs, cores and GB (`_gb`); `*_use` and
//! `*_alloc` are fractions of the cluster (summary) or absolute amounts (rounds, see below).
//! Missing values (a job that never started or finished, a round without an LP) are nulls: empty
//! fields in the CSV, nulls in the Parquet.

use super::RunResult;
use super::engine::RoundRow;
use super::error::ReplayError;
use super::metrics::{JobRecord, Summary};
use polars::prelude::{
    Column, CsvWriter, DataFrame, NamedFrom, ParquetCompression, ParquetWriter, SerWriter, Series,
};
use std::path::Path;

pub(crate) fn col<T, V>(name: &str, values: V) -> Column
where
    Series: NamedFrom<V, T>,
    T: ?Sized,
{
    Series::new(name.into(), values).into()
}

/// A value for a table: undefined values (NaN, infinities) become nulls, never `NaN` in a file.
pub(crate) fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn frame(height: usize, columns: Vec<Column>) -> Result<DataFrame, ReplayError> {
    DataFrame::new(height, columns)
        .map_err(|e| ReplayError::Internal(format!("building an output table: {e}")))
}

/// One row per job (columns of `<policy>-<mechanism>.jobs.*`):
///
/// | column | type | unit |
/// |---|---|---|
/// | `job_id` | u64 | |
/// | `model` | str | |
/// | `gpus` | u32 | GPUs asked for |
/// | `arrival_s`, `start_s`, `finish_s` | f64 | seconds since the trace start; start/finish null if never |
/// | `jct_s`, `queue_s` | f64 | seconds (finish - arrival, first start - arrival); null if never |
/// | `alone_proportional_s`, `alone_best_s` | f64 | seconds run alone at the proportional share / best case |
/// | `ftf_rho` | f64 | finish-time fairness (dimensionless); null if unfinished |
/// | `rounds_run` | u32 | rounds the job ran in |
/// | `gpu_s` | f64 | GPU-seconds used |
/// | `cpu_request`, `mem_request_gb` | f64 | cores / GB the trace asked for (Alibaba); else null |
/// | `failure` | str | why a deployed job stopped before its work ran out; else null |
pub fn jobs_frame(jobs: &[JobRecord]) -> Result<DataFrame, ReplayError> {
    let f = |get: fn(&JobRecord) -> f64| jobs.iter().map(|j| finite(get(j))).collect::<Vec<_>>();
    let o = |get: fn(&JobRecord) -> Option<f64>| {
        jobs.iter()
            .map(|j| get(j).and_then(finite))
            .collect::<Vec<_>>()
    };
    frame(
        jobs.len(),
        vec![
            col("job_id", jobs.iter().map(|j| j.id).collect::<Vec<u64>>()),
            col(
                "model",
                jobs.iter().map(|j| j.model.as_str()).collect::<Vec<_>>(),
            ),
            col("gpus", jobs.iter().map(|j| j.gpus).collect::<Vec<u32>>()),
            col("arrival_s", f(|j| j.arrival_s)),
            col("start_s", o(|j| j.start_s)),
            col("finish_s", o(|j| j.finish_s)),
            col("jct_s", o(|j| j.jct_s)),
            col("queue_s", o(|j| j.queue_s)),
            col("alone_proportional_s", f(|j| j.alone_proportional_s)),
            col("alone_best_s", f(|j| j.alone_best_s)),
            col("ftf_rho", o(|j| j.ftf_rho)),
            col(
                "rounds_run",
                jobs.iter().map(|j| j.rounds_run).collect::<Vec<u32>>(),
            ),
            col("gpu_s", f(|j| j.gpu_s)),
            col("cpu_request", o(|j| j.cpu_request)),
            col("mem_request_gb", o(|j| j.mem_request_gb)),
            col(
                "failure",
                jobs.iter()
                    .map(|j| j.failure.as_deref())
                    .collect::<Vec<_>>(),
            ),
        ],
    )
}

/// One row per scheduling round (columns of `<policy>-<mechanism>.rounds.*`):
///
/// | column | type | unit |
/// |---|---|---|
/// | `t_s` | f64 | round start, seconds since the trace start |
/// | `active`, `running` | u64 | jobs present / jobs placed |
/// | `gpus`, `cpus`, `mem_gb` | u32, f64, f64 | allocated GPUs, cores, GB |
/// | `gpu_use`, `cpu_use`, `mem_use` | f64 | used GPUs (weighted by throughput / best case), cores, GB |
/// | `decision_s` | f64 | wall seconds the policy and mechanism took |
/// | `lp_bound`, `lp_rounded` | f64 | `opt` only: LP objective bound and rounded value; else null |
pub fn rounds_frame(rounds: &[RoundRow]) -> Result<DataFrame, ReplayError> {
    let f = |get: fn(&RoundRow) -> f64| rounds.iter().map(|r| finite(get(r))).collect::<Vec<_>>();
    let u = |get: fn(&RoundRow) -> usize| rounds.iter().map(|r| get(r) as u64).collect::<Vec<_>>();
    let o = |get: fn(&RoundRow) -> Option<f64>| {
        rounds
            .iter()
            .map(|r| get(r).and_then(finite))
            .collect::<Vec<_>>()
    };
    frame(
        rounds.len(),
        vec![
            col("t_s", f(|r| r.t)),
            col("active", u(|r| r.active)),
            col("running", u(|r| r.running)),
            col("gpus", rounds.iter().map(|r| r.gpus).collect::<Vec<u32>>()),
            col("cpus", f(|r| r.cpus)),
            col("mem_gb", f(|r| r.mem_gb)),
            col("gpu_use", f(|r| r.gpu_use)),
            col("cpu_use", f(|r| r.cpu_use)),
            col("mem_use", f(|r| r.mem_use)),
            col("decision_s", f(|r| r.decision_s)),
            col("lp_bound", o(|r| r.lp_bound)),
            col("lp_rounded", o(|r| r.lp_rounded)),
        ],
    )
}

/// One row per scheme (columns of `summary.*`): `policy`, `mechanism`, `jobs` (measured),
/// `mean_jct_s`, `median_jct_s`, `p99_jct_s`, `makespan_s`, `mean_queue_s` (seconds),
/// `mean_ftf_rho`, `max_ftf_rho`, `gpu_alloc`, `cpu_alloc`, `mem_alloc`, `gpu_use`, `cpu_use`,
/// `mem_use` (time-averaged fractions of the cluster), `rounds`, `mean_decision_ms`,
/// `max_decision_ms` (milliseconds), `wall_s` (seconds).
pub fn summary_frame<'a>(
    summaries: impl IntoIterator<Item = &'a Summary>,
) -> Result<DataFrame, ReplayError> {
    let s: Vec<&Summary> = summaries.into_iter().collect();
    let f = |get: fn(&Summary) -> f64| s.iter().map(|m| finite(get(m))).collect::<Vec<_>>();
    let u = |get: fn(&Summary) -> usize| s.iter().map(|m| get(m) as u64).collect::<Vec<_>>();
    let t = |get: fn(&Summary) -> &str| s.iter().map(|m| get(m)).collect::<Vec<_>>();
    frame(
        s.len(),
        vec![
            col("policy", t(|m| &m.policy)),
            col("mechanism", t(|m| &m.mechanism)),
            col("jobs", u(|m| m.jobs_measured)),
            col("mean_jct_s", f(|m| m.mean_jct_s)),
            col("median_jct_s", f(|m| m.median_jct_s)),
            col("p99_jct_s", f(|m| m.p99_jct_s)),
            col("makespan_s", f(|m| m.makespan_s)),
            col("mean_queue_s", f(|m| m.mean_queue_s)),
            col("mean_ftf_rho", f(|m| m.mean_ftf_rho)),
            col("max_ftf_rho", f(|m| m.max_ftf_rho)),
            col("gpu_alloc", f(|m| m.gpu_alloc)),
            col("cpu_alloc", f(|m| m.cpu_alloc)),
            col("mem_alloc", f(|m| m.mem_alloc)),
            col("gpu_use", f(|m| m.gpu_use)),
            col("cpu_use", f(|m| m.cpu_use)),
            col("mem_use", f(|m| m.mem_use)),
            col("rounds", u(|m| m.rounds)),
            col("mean_decision_ms", f(|m| m.mean_decision_ms)),
            col("max_decision_ms", f(|m| m.max_decision_ms)),
            col("wall_s", f(|m| m.wall_s)),
        ],
    )
}

fn table_err(path: &Path) -> impl FnOnce(polars::error::PolarsError) -> ReplayError + '_ {
    move |e| ReplayError::Table {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

/// Writes `df` as `<dir>/<stem>.csv` (header, empty fields for nulls) and `<dir>/<stem>.parquet`
/// (zstd-compressed).
pub fn write_table(df: &mut DataFrame, dir: &Path, stem: &str) -> Result<(), ReplayError> {
    let csv = dir.join(format!("{stem}.csv"));
    let file = std::fs::File::create(&csv).map_err(ReplayError::io(&csv))?;
    let mut w = std::io::BufWriter::new(file);
    CsvWriter::new(&mut w)
        .include_header(true)
        .finish(df)
        .map_err(table_err(&csv))?;
    std::io::Write::flush(&mut w).map_err(ReplayError::io(&csv))?;

    let pq = dir.join(format!("{stem}.parquet"));
    let file = std::fs::File::create(&pq).map_err(ReplayError::io(&pq))?;
    let mut w = std::io::BufWriter::new(file);
    ParquetWriter::new(&mut w)
        .with_compression(ParquetCompression::Zstd(None))
        .finish(df)
        .map_err(table_err(&pq))?;
    std::io::Write::flush(&mut w).map_err(ReplayError::io(&pq))
}

/// Jobs per batch a [`JobTableWriter`] writes.
const BATCH: usize = 8192;

type File = std::io::BufWriter<std::fs::File>;

/// `<dir>/<stem>.{csv,parquet}` written a batch of jobs at a time as they come (the same
/// columns as [`jobs_frame`]), so a replay of millions of jobs never holds their rows.
pub struct JobTableWriter {
    csv_path: std::path::PathBuf,
    pq_path: std::path::PathBuf,
    csv: polars::io::csv::write::BatchedWriter<File>,
    parquet: Option<polars::io::parquet::write::BatchedWriter<File>>,
    pending: Vec<JobRecord>,
    /// Rows written so far.
    pub rows: u64,
}

impl JobTableWriter {
    pub fn create(dir: &Path, stem: &str) -> Result<JobTableWriter, ReplayError> {
        std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
        let csv_path = dir.join(format!("{stem}.csv"));
        let pq_path = dir.join(format!("{stem}.parquet"));
        let open = |p: &Path| -> Result<File, ReplayError> {
            let f = std::fs::File::create(p).map_err(ReplayError::io(p))?;
            Ok(std::io::BufWriter::new(f))
        };
        let schema = jobs_frame(&[])?.schema().as_ref().clone();
        let csv = CsvWriter::new(open(&csv_path)?)
            .include_header(true)
            .batched(&schema)
            .map_err(table_err(&csv_path))?;
        let parquet = ParquetWriter::new(open(&pq_path)?)
            .with_compression(ParquetCompression::Zstd(None))
            .batched(&schema)
            .map_err(table_err(&pq_path))?;
        Ok(JobTableWriter {
            csv_path,
            pq_path,
            csv,
            parquet: Some(parquet),
            pending: Vec::with_capacity(BATCH),
            rows: 0,
        })
    }

    pub fn push(&mut self, job: JobRecord) -> Result<(), ReplayError> {
        self.pending.push(job);
        if self.pending.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ReplayError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let df = jobs_frame(&self.pending)?;
        self.csv
            .write_batch(&df)
            .map_err(table_err(&self.csv_path))?;
        if let Some(pq) = &mut self.parquet {
            pq.write_batch(&df).map_err(table_err(&self.pq_path))?;
        }
        self.rows += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Writes what is pending and closes both files.
    pub fn finish(mut self) -> Result<u64, ReplayError> {
        self.flush()?;
        if let Some(pq) = self.parquet.take() {
            pq.finish().map_err(table_err(&self.pq_path))?;
        }
        Ok(self.rows)
    }
}

/// Per run `<dir>/<policy>-<mechanism>.jobs.{csv,parquet}` (unless the run streamed them there
/// already) and `.rounds.{csv,parquet}`, and `<dir>/summary.{csv,parquet}` with one row per run.
pub fn write_tables(runs: &[RunResult], dir: &Path) -> Result<(), ReplayError> {
    std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
    for r in runs {
        let stem = format!("{}-{}", r.summary.policy, r.summary.mechanism);
        if !r.streamed {
            write_table(&mut jobs_frame(&r.jobs)?, dir, &format!("{stem}.jobs"))?;
        }
        write_table(
            &mut rounds_frame(&r.rounds)?,
            dir,
            &format!("{stem}.rounds"),
        )?;
    }
    write_table(
        &mut summary_frame(runs.iter().map(|r| &r.summary))?,
        dir,
        "summary",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, finished: bool) -> JobRecord {
        JobRecord {
            id,
            model: "res18".into(),
            gpus: 2,
            arrival_s: 10.0 * id as f64,
            start_s: finished.then_some(10.0 * id as f64 + 5.0),
            finish_s: finished.then_some(10.0 * id as f64 + 65.0),
            jct_s: finished.then_some(65.0),
            queue_s: finished.then_some(5.0),
            alone_proportional_s: 60.0,
            alone_best_s: 30.0,
            ftf_rho: finished.then_some(1.25),
            rounds_run: 3,
            gpu_s: 120.0,
            cpu_request: None,
            mem_request_gb: Some(62.5),
            failure: (!finished).then(|| "exit status 1".to_string()),
        }
    }

    #[test]
    fn jobs_frame_has_one_row_per_job_and_nulls_for_missing() {
        let df = jobs_frame(&[job(1, true), job(2, false)]).unwrap();
        assert_eq!(df.shape(), (2, 16));
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(names[..4], ["job_id", "model", "gpus", "arrival_s"]);
        let jct = df.column("jct_s").unwrap().f64().unwrap();
        assert_eq!((jct.get(0), jct.get(1)), (Some(65.0), None));
        assert_eq!(df.column("job_id").unwrap().u64().unwrap().get(1), Some(2));
        assert_eq!(df.column("gpus").unwrap().u32().unwrap().get(0), Some(2));
        assert_eq!(
            df.column("model").unwrap().str().unwrap().get(0),
            Some("res18")
        );
        assert_eq!(df.column("cpu_request").unwrap().null_count(), 2);
        assert_eq!(df.column("mem_request_gb").unwrap().null_count(), 0);
    }

    #[test]
    fn rounds_and_summary_frames() {
        let row = RoundRow {
            t: 300.0,
            active: 4,
            running: 3,
            gpus: 6,
            cpus: 18.5,
            mem_gb: 200.0,
            gpu_use: 5.5,
            cpu_use: 17.0,
            mem_use: 190.0,
            decision_s: 0.002,
            lp_bound: None,
            lp_rounded: Some(0.9),
        };
        let df = rounds_frame(&[row.clone(), row]).unwrap();
        assert_eq!(df.shape(), (2, 12));
        assert_eq!(df.column("active").unwrap().u64().unwrap().get(1), Some(4));
        assert_eq!(df.column("cpus").unwrap().f64().unwrap().get(0), Some(18.5));
        assert_eq!(df.column("lp_bound").unwrap().null_count(), 2);

        let s = Summary {
            policy: "srtf".into(),
            mechanism: "tune".into(),
            jobs_measured: 7,
            mean_jct_s: 3600.0,
            ..Default::default()
        };
        let df = summary_frame([&s]).unwrap();
        assert_eq!(df.shape(), (1, 20));
        assert_eq!(df.column("jobs").unwrap().u64().unwrap().get(0), Some(7));
        let mean = df.column("mean_jct_s").unwrap().f64().unwrap().get(0);
        assert_eq!(mean, Some(3600.0));
        assert_eq!(jobs_frame(&[]).unwrap().height(), 0);
    }

    #[test]
    fn write_table_writes_csv_and_parquet() {
        let d = tempfile::tempdir().unwrap();
        let mut df = jobs_frame(&[job(1, true), job(2, false)]).unwrap();
        write_table(&mut df, d.path(), "x.jobs").unwrap();
        let csv = std::fs::read_to_string(d.path().join("x.jobs.csv")).unwrap();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some(
                "job_id,model,gpus,arrival_s,start_s,finish_s,jct_s,queue_s,alone_proportional_s,\
                 alone_best_s,ftf_rho,rounds_run,gpu_s,cpu_request,mem_request_gb,failure"
            )
        );
        assert_eq!(lines.count(), 2);
        assert!(d.path().join("x.jobs.parquet").metadata().unwrap().len() > 0);
        // A missing directory is an error naming the file.
        let e = write_table(&mut df, &d.path().join("no/such"), "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no/such/x.csv"), "{e}");
    }
}
