//! The rates a deploy saw: each job's progress over each round it ran, from the journal,
//! pooled by job kind and grant.

use super::journal::RoundRecord;
use crate::replay::job::JobSpec;
use std::collections::BTreeMap;

/// What one job kind did at one grant: its rate over each round a job of that kind ran at it.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRates {
    pub model: String,
    pub cpus: f64,
    pub mem_bytes: u64,
    /// Samples/s over each round.
    pub rates: Vec<f64>,
    /// Seconds those rounds ran, in all.
    pub seconds: f64,
}

/// The rates of `rounds` (a journal's, in order) by job kind and grant, each job's kind from
/// `trace`. A job's first round and the rounds it was started again in are left out: their
/// start-up is not its rate. So are failed rounds and rounds of older journals that do not
/// record the grant.
pub fn observed_rates(trace: &[JobSpec], rounds: &[RoundRecord]) -> Vec<GrantRates> {
    let model_of: BTreeMap<u64, &str> = trace.iter().map(|j| (j.id, j.model.as_str())).collect();
    let mut remaining: BTreeMap<u64, f64> = BTreeMap::new();
    let mut groups: BTreeMap<(String, u64, u64), GrantRates> = BTreeMap::new();
    for round in rounds {
        for o in &round.jobs {
            let before = remaining.insert(o.id, o.remaining);
            let (Some(before), Some(cpus), Some(mem_bytes), Some(model)) =
                (before, o.cpus, o.mem_bytes, model_of.get(&o.id))
            else {
                continue;
            };
            if o.restarted || o.failure.is_some() || o.ran_s <= 0.0 {
                continue;
            }
            let rate = (before - o.remaining) / o.ran_s;
            if !(rate.is_finite() && rate > 0.0) {
                continue;
            }
            let key = ((*model).to_owned(), (cpus * 1e6).round() as u64, mem_bytes);
            let group = groups.entry(key).or_insert_with(|| GrantRates {
                model: (*model).to_owned(),
                cpus,
                mem_bytes,
                rates: Vec::new(),
                seconds: 0.0,
            });
            group.rates.push(rate);
            group.seconds += o.ran_s;
        }
    }
    groups.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::journal::JobOutcome;

    fn job(id: u64, model: &str) -> JobSpec {
        JobSpec {
            id,
            model: model.into(),
            arrival_s: 0.0,
            gpus: 1,
            work_samples: 1000.0,
            cpu_request: None,
            mem_request_gb: None,
        }
    }

    fn ran(id: u64, remaining: f64, cpus: f64, restarted: bool) -> JobOutcome {
        JobOutcome {
            id,
            remaining,
            ran_s: 10.0,
            finish: None,
            failure: None,
            cpus: Some(cpus),
            mem_bytes: Some(1_000_000_000),
            restarted,
        }
    }

    #[test]
    fn rounds_after_the_first_give_rates_by_kind_and_grant() {
        let trace = [job(0, "decode"), job(1, "decode"), job(2, "light")];
        let round = |t: f64, jobs: Vec<JobOutcome>| RoundRecord {
            t,
            round_s: 10.0,
            jobs,
        };
        let rounds = [
            // First rounds: start-up, left out.
            round(
                0.0,
                vec![ran(0, 950.0, 1.0, false), ran(2, 990.0, 0.5, false)],
            ),
            round(
                10.0,
                vec![ran(0, 850.0, 1.0, false), ran(1, 960.0, 1.0, false)],
            ),
            // Job 0 restarted at 2 CPUs: left out; job 1's second round counts.
            round(
                20.0,
                vec![ran(0, 800.0, 2.0, true), ran(1, 840.0, 1.0, false)],
            ),
            round(
                30.0,
                vec![ran(0, 600.0, 2.0, false), ran(2, 970.0, 0.5, false)],
            ),
        ];
        let seen = observed_rates(&trace, &rounds);
        let at = |model: &str, cpus: f64| {
            (seen.iter())
                .find(|g| g.model == model && g.cpus == cpus)
                .map(|g| g.rates.clone())
        };
        assert_eq!(at("decode", 1.0), Some(vec![10.0, 12.0]));
        assert_eq!(at("decode", 2.0), Some(vec![20.0]));
        // Job 2 was frozen a round between: its rate is over the round it ran.
        assert_eq!(at("light", 0.5), Some(vec![2.0]));
        assert_eq!(seen.len(), 3);
    }
}
