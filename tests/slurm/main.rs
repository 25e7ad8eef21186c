//! The profiler against a real Slurm: a local single-node cluster (scripts/local-slurm.sh) is
//! brought up once, the scenarios run in sequence against it, and it is torn down at the end with
//! a check that no daemon, cgroup or process is left.
//!
//! Needs root and the Slurm packages; without them the test says `SKIPPED` on stderr, and under
//! CI (`CI` set to anything but `false`/`0`) that is a failure. Run by hand under the measure lock:
//! `flock /tmp/measure.lock cargo test --test slurm`.
#![warn(clippy::too_many_lines)]

mod cluster;
mod deploy;
mod fleet;
mod grid;
mod job_submit;
mod steps;

use cluster::Cluster;

use profiler::test_support::under_ci;

/// Skips (or under CI fails) a test where a local Slurm cannot run.
macro_rules! require_slurm {
    ($test:expr) => {
        if let Some(why) = crate::cluster::unavailable() {
            if crate::under_ci() {
                panic!("{}: CI must run the Slurm tests, but: {why}", $test);
            }
            // Straight to stderr: the test harness hides eprintln! output of passing tests.
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIPPED: {}: {why}\n", $test),
            );
            return;
        }
    };
}

/// One cluster for every scenario: starting Slurm takes seconds and its cgroup names are fixed,
/// so the scenarios share it and run one after another.
#[test]
fn slurm_scenarios() {
    require_slurm!("slurm_scenarios");
    let cluster = Cluster::up(job_submit::install_plugin);
    steps::node_is_idle_with_fake_gpus(&cluster);
    steps::steps_are_confined_by_cgroups(&cluster);
    job_submit::demands_applied_by_slurmctld(&cluster);
    fleet::fractional_levels_are_refused(&cluster);
    fleet::steps_check_their_caps(&cluster);
    fleet::interrupt_cancels_the_jobs(&cluster);
    fleet::resume_finishes_an_interrupted_sweep(&cluster);
    fleet::an_oom_in_a_job_is_an_infeasible_cell(&cluster);
    fleet::input_pipeline_through_slurm(&cluster);
    deploy::a_short_trace_through_slurm(&cluster);
    grid::grid_as_job_array_matches_the_local_run(&cluster);
    grid::ctrl_c_cancels_the_array_and_the_merge(&cluster);
    grid::a_failed_task_fails_the_submission(&cluster);
    cluster.down();
}
