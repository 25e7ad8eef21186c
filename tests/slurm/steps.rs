//! The local cluster itself: its node and the caps its steps run under.

use crate::cluster::Cluster;

pub fn node_is_idle_with_fake_gpus(c: &Cluster) {
    let line = c.run("sinfo", &["-h", "-N", "-o", "%t %c %G"]);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(line.trim(), format!("idle {cpus} gpu:4"), "sinfo: {line}");
}

/// A step gets exactly the cores and memory it asked for, through Slurm's own cgroups.
pub fn steps_are_confined_by_cgroups(c: &Cluster) {
    let script = r#"
        cs=$(grep -E '^[0-9]+:cpuset:' /proc/self/cgroup | cut -d: -f3)
        mem=$(grep -E '^[0-9]+:memory:' /proc/self/cgroup | cut -d: -f3)
        echo "cpus=$(cat /sys/fs/cgroup/cpuset$cs/cpuset.cpus)"
        echo "mem=$(cat /sys/fs/cgroup/memory$(dirname $mem)/memory.limit_in_bytes)"
        echo "cgroup=$cs""#;
    let out = c.run("srun", &["-n1", "-c1", "--mem=300M", "bash", "-c", script]);
    let field = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in {out}"))
            .to_string()
    };
    let cpus = field("cpus");
    assert!(
        cpus.parse::<u32>().is_ok(),
        "one core expected, cpuset {cpus}"
    );
    assert_eq!(field("mem"), (300u64 << 20).to_string());
    // Slurm's own cgroup for this cluster's node, below which each job has its own.
    let prefix = format!("/slurm_{}/", c.node());
    assert!(field("cgroup").starts_with(&prefix), "{out}");
    assert!(field("cgroup").contains("/job_"), "{out}");
}
