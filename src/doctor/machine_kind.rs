//! This machine's kind, as a sweep here records it in every matrix: what a replay's cluster
//! names its servers by, and what a deploy compares its matrices with.

use super::Check;
use crate::matrix::MachineInfo;

const NAME: &str = "machine kind";

pub fn check(machine: &MachineInfo) -> Check {
    let mut facts = vec![format!("kind {}", machine.kind_key())];
    if let Some(p) = &machine.processor {
        facts.push(format!(
            "{} ({}, {}): {} socket(s), {} cores, {} threads; {}",
            p.model_name,
            p.vendor,
            p.microarchitecture,
            p.sockets,
            p.cores,
            p.threads,
            if p.extensions.is_empty() {
                "none of AVX2, AVX-512, AMX, SVE".to_string()
            } else {
                p.extensions.join(" ")
            }
        ));
    }
    facts.push(format!(
        "{:.1} GiB of memory, kernel {}, cgroup {}",
        machine.memory_bytes as f64 / crate::units::GIB,
        machine.kernel,
        machine.cgroup
    ));
    for g in &machine.gpu_devices {
        facts.push(format!(
            "{} ({:.0} GiB, driver {})",
            g.name,
            g.memory_bytes as f64 / crate::units::GIB,
            g.driver
        ));
    }
    if machine.kind.is_none() {
        return Check::with(
            NAME,
            super::Verdict::Warn,
            facts,
            "/proc/cpuinfo could not be read: matrices made here record no machine kind, and a \
             deploy cannot tell them from another machine's",
        );
    }
    facts.push(
        "a cluster's [[group]] names servers of this kind with machine_kind = \"<kind>\"".into(),
    );
    Check::pass(NAME, facts)
}
