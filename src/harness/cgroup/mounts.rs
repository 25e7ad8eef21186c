//! Where each controller's hierarchy is mounted, and a cgroup's directory in each.

use super::{CapsError, CgroupVersion};
use cgroups_rs::fs::Controllers;
use cgroups_rs::fs::hierarchies::{self, V1};
use std::path::PathBuf;

/// Where each controller's directory for a given cgroup lives.
#[derive(Debug, Clone)]
pub(super) struct ControllerDirs {
    pub(super) cpu: PathBuf,
    pub(super) cpuacct: PathBuf,
    pub(super) cpuset: PathBuf,
    pub(super) memory: PathBuf,
    pub(super) io: PathBuf,
    /// The freezer's directory: v1's freezer hierarchy where it is mounted, v2's unified one
    /// (`cgroup.freeze` is in every v2 cgroup). Sweeps never freeze; a deploy suspends with it.
    pub(super) freezer: Option<PathBuf>,
}

impl ControllerDirs {
    /// One directory for every controller (v2, and fixtures of it).
    pub(super) fn unified(dir: PathBuf) -> ControllerDirs {
        ControllerDirs {
            cpu: dir.clone(),
            cpuacct: dir.clone(),
            cpuset: dir.clone(),
            memory: dir.clone(),
            io: dir.clone(),
            freezer: Some(dir),
        }
    }

    /// Every distinct directory (v1 may mount several controllers together; v2 has one).
    pub(super) fn all(&self) -> Vec<PathBuf> {
        let mut dirs = vec![
            self.cpu.clone(),
            self.cpuacct.clone(),
            self.cpuset.clone(),
            self.memory.clone(),
            self.io.clone(),
        ];
        dirs.extend(self.freezer.clone());
        dirs.sort();
        dirs.dedup();
        dirs
    }

    pub(super) fn join(&self, rel: &str) -> ControllerDirs {
        ControllerDirs {
            cpu: self.cpu.join(rel),
            cpuacct: self.cpuacct.join(rel),
            cpuset: self.cpuset.join(rel),
            memory: self.memory.join(rel),
            io: self.io.join(rel),
            freezer: self.freezer.as_ref().map(|f| f.join(rel)),
        }
    }
}

/// The cgroup version and where each controller is mounted; checks the controllers exist.
pub(super) fn mounts() -> Result<(CgroupVersion, ControllerDirs), CapsError> {
    Ok(if hierarchies::is_cgroup2_unified_mode() {
        let root = PathBuf::from(hierarchies::UNIFIED_MOUNTPOINT);
        let available =
            std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        // The same four as on v1 (where blkio plays io's part); cgroups-rs would refuse to
        // create the parent with an obscure error if one were missing.
        for (c, why) in [
            ("cpu", "CPU quota"),
            ("cpuset", "core pinning"),
            ("memory", "memory caps"),
            ("io", "storage read accounting"),
        ] {
            if !available.split_whitespace().any(|a| a == c) {
                return Err(CapsError::MissingController(c, why));
            }
        }
        (CgroupVersion::V2, ControllerDirs::unified(root))
    } else {
        let v1 = V1::new();
        let mount = |c: Controllers, name: &'static str, why: &'static str| {
            v1.get_mount_point(c)
                .map(|(p, _)| p)
                .ok_or(CapsError::MissingController(name, why))
        };
        let dirs = ControllerDirs {
            cpu: mount(Controllers::Cpu, "cpu", "CPU quota")?,
            cpuacct: mount(Controllers::CpuAcct, "cpuacct", "CPU time accounting")?,
            cpuset: mount(Controllers::CpuSet, "cpuset", "core pinning")?,
            memory: mount(Controllers::Mem, "memory", "memory caps")?,
            io: mount(Controllers::BlkIo, "blkio", "storage read accounting")?,
            freezer: v1.get_mount_point(Controllers::Freezer).map(|(p, _)| p),
        };
        (CgroupVersion::V1, dirs)
    })
}

/// The directories of parent cgroup `parent` in every hierarchy runs are created in (v2: one),
/// whether or not they exist: where to look for what a sweep may have left.
pub fn parent_dirs_of(parent: &str) -> Result<Vec<PathBuf>, CapsError> {
    Ok(mounts()?.1.join(parent).all())
}

/// The controllers a cgroup is created with: v1's freezer where it is mounted.
pub(super) fn controllers(version: CgroupVersion, dirs: &ControllerDirs) -> Vec<String> {
    let mut names: Vec<&str> = match version {
        CgroupVersion::V1 => vec!["cpu", "cpuacct", "cpuset", "memory", "blkio"],
        CgroupVersion::V2 => vec!["cpu", "cpuset", "memory", "io"],
    };
    if version == CgroupVersion::V1 && dirs.freezer.is_some() {
        names.push("freezer");
    }
    names.iter().map(|s| s.to_string()).collect()
}
