//! `[elastic]`: how an elastic scheme's decisions reach a job. An elastic scheduler (ONES,
//! Pollux) changes a running job's batch size and its accelerator slots. A job takes a new
//! batch size live where it re-reads `{control_file}` at iteration boundaries; it takes a new
//! size or slot count by a restart from its own checkpoint where `restart_command` says how.

use super::{JobSpec, LoadedSpec};
use serde::Deserialize;

/// `[elastic]` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElasticSpec {
    /// The job re-reads its batch size from the file `{control_file}` names at iteration
    /// boundaries, while it runs; its command or environment must pass `{control_file}` on.
    /// The file is the profiler's, in the run's log folder; a sweep never writes it.
    #[serde(default)]
    pub control_file: bool,
    /// The command that starts the job again from its own checkpoint, with `{batch}` (samples
    /// an iteration over all its slots) and `{slots}` filled in.
    pub restart_command: Option<Vec<String>>,
}

/// How an elastic scheme's changes reach a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElasticControl {
    /// A new batch size is written to its control file, live.
    pub live_batch: bool,
    /// A new batch size or slot count starts it again from its checkpoint.
    pub restart: bool,
}

/// The keys of `[elastic]` that say something: a control file the command reads, a restart
/// command that takes the new size or slots.
pub(super) fn validate_elastic(spec: &JobSpec) -> Result<(), String> {
    let Some(e) = &spec.elastic else {
        return Ok(());
    };
    let names = |text: &String, name: &str| text.contains(&format!("{{{name}}}"));
    if e.control_file
        && !(spec.command.iter().chain(spec.env.values())).any(|a| names(a, "control_file"))
    {
        return Err(
            "elastic.control_file = true, but neither command nor env passes \
                    {control_file} to the job: add it where the job reads its batch size, \
                    e.g. \"--batch-file\", \"{control_file}\""
                .into(),
        );
    }
    if let Some(cmd) = &e.restart_command {
        if cmd.is_empty() {
            return Err(
                "elastic.restart_command is empty: expected the command that starts \
                        the job again from its checkpoint"
                    .into(),
            );
        }
        if !cmd.iter().any(|a| names(a, "batch") || names(a, "slots")) {
            return Err(
                "elastic.restart_command takes neither {batch} nor {slots}: a restart \
                        could not change what the scheme decided"
                    .into(),
            );
        }
    }
    Ok(())
}

/// How an elastic deploy changes `spec`'s job, or why it cannot: the message names the keys
/// to add.
pub fn elastic_control(spec: &LoadedSpec) -> Result<ElasticControl, String> {
    let e = spec.spec.elastic.clone().unwrap_or_default();
    let control = ElasticControl {
        live_batch: e.control_file,
        restart: e.restart_command.is_some(),
    };
    if control.live_batch || control.restart {
        return Ok(control);
    }
    Err(format!(
        "{}: an elastic scheme changes this job's batch size and slots while it runs, and its \
         spec says neither how. Add an [elastic] table with control_file = true (the job \
         re-reads its batch size from {{control_file}} at iteration boundaries; pass it in \
         command) or restart_command = [...] (the job started again from its own checkpoint, \
         with {{batch}} and {{slots}})",
        spec.path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;
    use std::path::Path;

    fn spec(command: &str, elastic: &str) -> Result<LoadedSpec, String> {
        let text = format!(
            "schema_version = 1\nname = \"e\"\ncommand = {command}\n\
             [throughput]\nprotocol = \"progress-file\"\n[sweep]\ncpu = [1]\n{elastic}"
        );
        parse_spec(&text, Path::new("e.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_job_that_can_neither_is_refused_with_the_keys_to_add() {
        let plain = spec(r#"["train"]"#, "").unwrap();
        let e = elastic_control(&plain).unwrap_err();
        for key in [
            "e.toml",
            "[elastic]",
            "control_file = true",
            "restart_command",
            "{batch}",
        ] {
            assert!(e.contains(key), "{key}: {e}");
        }
    }

    #[test]
    fn a_live_job_and_a_restarting_one_are_told_apart() {
        let live = spec(
            r#"["train", "--batch-file", "{control_file}"]"#,
            "[elastic]\ncontrol_file = true\n",
        )
        .unwrap();
        assert_eq!(
            elastic_control(&live),
            Ok(ElasticControl {
                live_batch: true,
                restart: false
            })
        );
        let restarts = spec(
            r#"["train"]"#,
            "[elastic]\nrestart_command = [\"train\", \"--batch\", \"{batch}\", \"--resume\"]\n",
        )
        .unwrap();
        assert_eq!(
            elastic_control(&restarts),
            Ok(ElasticControl {
                live_batch: false,
                restart: true
            })
        );
    }

    #[test]
    fn keys_that_cannot_work_are_errors_at_load() {
        let e = spec(r#"["train"]"#, "[elastic]\ncontrol_file = true\n").unwrap_err();
        assert!(e.contains("e.toml:") && e.contains("{control_file}"), "{e}");
        let e = spec(r#"["train"]"#, "[elastic]\nrestart_command = [\"train\"]\n").unwrap_err();
        assert!(e.contains("neither {batch} nor {slots}"), "{e}");
        let e = spec(
            r#"["train"]"#,
            "[elastic]\nrestart_command = [\"t\", \"{batch}\", \"{bacth}\"]\n",
        )
        .unwrap_err();
        assert!(e.contains("bacth"), "{e}");
        let e = spec(r#"["train"]"#, "[elastic]\nlive = true\n").unwrap_err();
        assert!(e.contains("live"), "{e}");
    }
}
