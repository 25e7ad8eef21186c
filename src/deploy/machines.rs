//! Whether a deploy's matrices were measured on this kind of machine: a rate measured on another
//! processor (or with other GPUs) is a guess here, and a schedule made from guesses is not the
//! replay's.

use super::error::DeployError;
use crate::matrix::MachineInfo;
use crate::replay::profile::ProfileSet;

/// The profiles of `models` whose machine kind is not `here`'s, one line each, and `here`'s
/// description. Empty: every matrix is of this machine's kind.
pub fn other_machines(profiles: &ProfileSet, models: &[&str], here: &MachineInfo) -> Vec<String> {
    let mut lines = Vec::new();
    for model in models {
        let Some(i) = profiles.lookup(model) else {
            continue;
        };
        let p = profiles.get(i);
        if p.machine_kind() == here.kind_key() && here.kind.is_some() {
            continue;
        }
        let there = p.machine.as_ref().map_or_else(
            || "no machine recorded".to_string(),
            |m| match m.kind {
                Some(_) => m.describe(),
                None => format!(
                    "{} (written before machine kinds were recorded)",
                    m.describe()
                ),
            },
        );
        lines.push(format!("  {model} ({}): {there}", p.source));
    }
    lines
}

/// Stops a deploy whose matrices are of another kind of machine, unless `allow`: then returns
/// the warning for its output.
pub fn check(
    profiles: &ProfileSet,
    models: &[&str],
    here: &MachineInfo,
    allow: bool,
) -> Result<Option<String>, DeployError> {
    let lines = other_machines(profiles, models, here);
    if lines.is_empty() {
        return Ok(None);
    }
    let matrices = lines.join("\n");
    if !allow {
        return Err(DeployError::OtherMachine {
            matrices,
            here: here.describe(),
        });
    }
    Ok(Some(format!(
        "warning: --allow-other-machine: deploying with matrices of another kind of machine than \
         this one ({}):\n{matrices}",
        here.describe()
    )))
}
