//! What `--out` writes: CSV and Parquet twins that hold what the summary says, kept or
//! streamed as jobs finish.

use super::*;

/// `--out` tables: every CSV has a Parquet twin holding the same data, and both hold what the
/// in-memory summary says.
#[test]
fn out_dir_tables_csv_and_parquet_match_the_summary() {
    use polars::prelude::{CsvReadOptions, DataFrame, ParquetReader, SerReader};
    use std::sync::Arc;
    let d = tempfile::tempdir().unwrap();
    let mut opts = synth_opts(11, 40);
    opts.schemes = vec![
        ("srtf".into(), "proportional".into()),
        ("las".into(), "tune".into()),
    ];
    opts.out_dir = Some(d.path().to_owned());
    let s = run(&opts).unwrap();

    let read = |stem: &str| -> DataFrame {
        let pq = d.path().join(format!("{stem}.parquet"));
        let pq = ParquetReader::new(std::fs::File::open(&pq).unwrap())
            .finish()
            .unwrap();
        // The CSV read back with the Parquet schema equals the Parquet frame, nulls included.
        let csv = CsvReadOptions::default()
            .with_has_header(true)
            .with_schema(Some(Arc::new(pq.schema().as_ref().clone())))
            .try_into_reader_with_file_path(Some(d.path().join(format!("{stem}.csv"))))
            .unwrap()
            .finish()
            .unwrap();
        assert!(csv.equals_missing(&pq), "{stem}: CSV and Parquet differ");
        pq
    };

    let summary = read("summary");
    assert_eq!(summary.height(), 2);
    assert_eq!(summary.width(), 20);
    let mean = summary.column("mean_jct_s").unwrap().f64().unwrap();
    let mech = summary.column("mechanism").unwrap().str().unwrap();
    for (i, r) in s.runs.iter().enumerate() {
        assert_eq!(mech.get(i), Some(r.summary.mechanism.as_str()));
        assert_eq!(mean.get(i), Some(r.summary.mean_jct_s));

        let stem = format!("{}-{}", r.summary.policy, r.summary.mechanism);
        let jobs = read(&format!("{stem}.jobs"));
        assert_eq!(jobs.height(), r.jobs.len());
        assert_eq!(jobs.height(), 40);
        let ids = jobs.column("job_id").unwrap().u64().unwrap();
        let jct = jobs.column("jct_s").unwrap().f64().unwrap();
        let gpu_s = jobs.column("gpu_s").unwrap().f64().unwrap();
        for (k, j) in r.jobs.iter().enumerate() {
            assert_eq!(ids.get(k), Some(j.id));
            assert_eq!(jct.get(k), j.jct_s, "{stem} job {}", j.id);
            assert_eq!(gpu_s.get(k), Some(j.gpu_s));
        }
        // Mean JCT of the table is the summary's (all jobs are measured here).
        let m = (0..jct.len()).filter_map(|k| jct.get(k)).sum::<f64>() / jct.len() as f64;
        assert!((m - r.summary.mean_jct_s).abs() <= 1e-9 * m, "{m}");

        let rounds = read(&format!("{stem}.rounds"));
        assert_eq!(rounds.height(), r.rounds.len());
        assert_eq!(rounds.height(), r.summary.rounds);
        let t = rounds.column("t_s").unwrap().f64().unwrap();
        assert_eq!(t.get(0), Some(r.rounds[0].t));
        assert_eq!(
            t.get(r.rounds.len() - 1),
            Some(r.rounds[r.rounds.len() - 1].t)
        );
    }
}

/// `--stream`: jobs written as they finish (more than one batch of rows here) give the same
/// tables, row for row once sorted by id, and the same summary as a replay that keeps them all;
/// the run keeps no job records.
#[test]
fn streamed_jobs_give_the_same_tables_and_summary() {
    use polars::prelude::{DataFrame, ParquetReader, SerReader, SortMultipleOptions};
    let mut opts = synth_opts(5, 9000);
    opts.cluster = ClusterSpec::synergy(8);
    if let WorkloadSpec::Synthetic(w) = &mut opts.workload {
        w.jobs_per_hour = 30.0;
    }
    opts.schemes = vec![("fifo".into(), "tune".into())];
    let (kept, streamed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    opts.out_dir = Some(kept.path().to_owned());
    let a = run(&opts).unwrap();
    opts.out_dir = Some(streamed.path().to_owned());
    opts.stream = true;
    let b = run(&opts).unwrap();
    assert!(b.runs[0].streamed && b.runs[0].jobs.is_empty());
    assert_eq!(a.runs[0].finished_jct_s, b.runs[0].finished_jct_s);
    let (mut sa, mut sb) = (a.runs[0].summary.clone(), b.runs[0].summary.clone());
    for s in [&mut sa, &mut sb] {
        (s.wall_s, s.mean_decision_ms, s.max_decision_ms) = (0.0, 0.0, 0.0);
    }
    // Sums over jobs taken in finishing order rather than by id: equal to rounding.
    for (x, y) in [
        (&mut sa.mean_queue_s, sb.mean_queue_s),
        (&mut sa.mean_ftf_rho, sb.mean_ftf_rho),
    ] {
        assert!((*x - y).abs() <= 1e-12 * y.abs(), "{x} {y}");
        *x = y;
    }
    assert_eq!(sa, sb);
    let read = |dir: &std::path::Path| -> (String, DataFrame) {
        let csv = std::fs::read_to_string(dir.join("fifo-tune.jobs.csv")).unwrap();
        let mut lines: Vec<&str> = csv.lines().collect();
        lines[1..].sort_by_key(|l| l.split(',').next().unwrap().parse::<u64>().unwrap());
        let pq =
            ParquetReader::new(std::fs::File::open(dir.join("fifo-tune.jobs.parquet")).unwrap())
                .finish()
                .unwrap()
                .sort(["job_id"], SortMultipleOptions::default())
                .unwrap();
        (lines.join("\n"), pq)
    };
    let ((csv_a, pq_a), (csv_b, pq_b)) = (read(kept.path()), read(streamed.path()));
    assert_eq!(pq_b.height(), 9000);
    assert_eq!(csv_a, csv_b);
    assert!(pq_a.equals_missing(&pq_b));
    // Without an output directory there is nowhere to stream to.
    opts.out_dir = None;
    let e = run(&opts).unwrap_err().to_string();
    assert!(e.contains("--stream") && e.contains("--out"), "{e}");
}
