//! The rates a deploy saw: each job's progress over each round it ran, from the journal, by
//! job and grant; pooled by job kind for feedback, and read by the replay of the deploy.

use super::journal::RoundRecord;
use crate::replay::engine::MeasuredRates;
use crate::replay::job::JobSpec;
use std::collections::BTreeMap;

/// What a job (or a job kind) did at one grant: its rate over each round it ran at it.
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

impl GrantRates {
    pub fn mean(&self) -> f64 {
        crate::stats::mean(&self.rates)
    }
}

/// A grant as a key: cores to a millionth, and bytes as the journal writes them.
type Grant = (u64, u64);

fn grant(cpus: f64, mem_bytes: u64) -> Grant {
    ((cpus * 1e6).round() as u64, mem_bytes)
}

/// The rates of one deploy's rounds, by job and grant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    by_job: BTreeMap<(u64, Grant), GrantRates>,
}

impl Observed {
    /// The rates of `rounds` (one scheme's journal, in order), each job's kind from `trace`.
    /// A job's first round and the rounds it was started again in are left out: their
    /// start-up is not its rate. So are failed rounds and rounds of older journals that do
    /// not record the grant.
    pub fn from_rounds(trace: &[JobSpec], rounds: &[RoundRecord]) -> Observed {
        let model_of: BTreeMap<u64, &str> =
            trace.iter().map(|j| (j.id, j.model.as_str())).collect();
        let mut remaining: BTreeMap<u64, f64> = BTreeMap::new();
        let mut by_job: BTreeMap<(u64, Grant), GrantRates> = BTreeMap::new();
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
                let entry = by_job.entry((o.id, grant(cpus, mem_bytes)));
                let g = entry.or_insert_with(|| GrantRates {
                    model: (*model).to_owned(),
                    cpus,
                    mem_bytes,
                    rates: Vec::new(),
                    seconds: 0.0,
                });
                g.rates.push(rate);
                g.seconds += o.ran_s;
            }
        }
        Observed { by_job }
    }

    /// The rates pooled by job kind and grant, over the jobs of each kind.
    pub fn by_kind(&self) -> Vec<GrantRates> {
        pooled_by_kind([self])
    }
}

/// The rates of several deploys' rounds (each scheme's) pooled by job kind and grant.
pub fn pooled_by_kind<'a>(observed: impl IntoIterator<Item = &'a Observed>) -> Vec<GrantRates> {
    let mut kinds: BTreeMap<(String, Grant), GrantRates> = BTreeMap::new();
    for g in observed.into_iter().flat_map(|o| o.by_job.values()) {
        let key = (g.model.clone(), grant(g.cpus, g.mem_bytes));
        match kinds.get_mut(&key) {
            Some(k) => {
                k.rates.extend(&g.rates);
                k.seconds += g.seconds;
            }
            None => {
                kinds.insert(key, g.clone());
            }
        }
    }
    kinds.into_values().collect()
}

/// A job runs at its own mean rate at the grant where it ran there, else at its kind's.
impl MeasuredRates for Observed {
    fn rate(&self, job: &JobSpec, cpus: f64, mem_gb: f64) -> Option<f64> {
        let at = grant(
            cpus,
            (mem_gb * crate::matrix::surface::BYTES_PER_GB).round() as u64,
        );
        if let Some(own) = self.by_job.get(&(job.id, at)) {
            return Some(own.mean());
        }
        let kind: Vec<f64> = (self.by_job.iter())
            .filter(|((_, g), r)| *g == at && r.model == job.model)
            .flat_map(|(_, r)| r.rates.iter().copied())
            .collect();
        (!kind.is_empty()).then(|| crate::stats::mean(&kind))
    }
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
        let observed = Observed::from_rounds(&trace, &rounds);
        let seen = observed.by_kind();
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
        // The replay of the deploy: a job at its own rate, else its kind's, else none.
        let gb = 1.0;
        assert_eq!(observed.rate(&trace[1], 1.0, gb), Some(12.0));
        assert_eq!(observed.rate(&job(5, "decode"), 1.0, gb), Some(11.0));
        assert_eq!(observed.rate(&trace[2], 1.0, gb), None);
    }
}
