//! How a cell's CPU level followed the host probe, as sweeps before the cell model recorded
//! it beside each relative rate (`host_model`). The cell model records the slope itself
//! (`host_slope`); this keeps older matrix files readable and their exports whole.

use serde::{Deserialize, Serialize};

/// How a CPU level's rates followed the probe's speed, and so how they were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostModel {
    /// The fitted slope's interval held one: rates proportional to the host's speed.
    Proportional,
    /// The fitted slope, its bias for the probe's noise corrected.
    Fitted,
    /// The probe's spread was mostly its own noise: not adjusted.
    Noisy,
    /// The rates did not follow the probe's speed: not adjusted.
    NotFollowing,
    /// Too few visits with a probe speed for a slope: not adjusted.
    TooFew,
    /// Read at the quiet host's speed, the cell's ratios spread more than raw: not adjusted.
    Misleads,
}

impl HostModel {
    /// The name the matrix file and the exports use.
    pub fn as_str(self) -> &'static str {
        match self {
            HostModel::Proportional => "proportional",
            HostModel::Fitted => "fitted",
            HostModel::Noisy => "noisy",
            HostModel::NotFollowing => "not_following",
            HostModel::TooFew => "too_few",
            HostModel::Misleads => "misleads",
        }
    }

    /// Words for a person.
    pub fn describe(self) -> &'static str {
        match self {
            HostModel::Proportional => "read at the quiet host's speed (rate proportional)",
            HostModel::Fitted => "read at the quiet host's speed (fitted slope)",
            HostModel::Noisy => "not adjusted: the probe's spread there is mostly its own noise",
            HostModel::NotFollowing => "not adjusted: the job's rate does not follow the probe",
            HostModel::TooFew => "not adjusted: too few visits with the probe's speed",
            HostModel::Misleads => "not adjusted: the probe's speed widened the ratios",
        }
    }
}
