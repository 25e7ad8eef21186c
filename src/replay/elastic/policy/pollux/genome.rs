//! Pollux's search as its simulator runs it: NSGA-II (population 100, 100 generations, the
//! first being the starting population) over a jobs x servers matrix of GPU counts, started
//! from the current allocation and the previous decision's Pareto front. Two objectives, both
//! minimised (the caller's: Pollux's power mean of speed-ups and the cluster's utility); binary
//! tournament by domination then crowding; Pollux's own operators:
//!
//! - crossover (probability 0.9): one point over the job axis, whole rows swapped;
//! - mutation: each job's row reset to the current allocation with probability 0.1; each row,
//!   with probability 0.1, has each of its entries zeroed with probability 0.1; each (job,
//!   server with a free GPU) raised to a uniform count between its own and the server's GPUs
//!   with probability p1 + p2 - p1 p2, p1 = 1 / servers with a free GPU, p2 = 1 / those of
//!   them the job already uses (0 if none);
//! - repair, in Pollux's order: at most one multi-server job per server (the first in job
//!   order keeps it), each job clipped to its most replicas over its servers in a random order,
//!   then each server's GPUs given in job order (earlier rows win).
//!
//! Rows are in the caller's job order (Pollux's: least attained service first), which the
//! repair favours. The work per decision is bounded: a large problem runs fewer generations
//! ([`CELL_BUDGET`]), carried forward by the warm start.

use super::super::sampling::{below, unit};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// Pollux's population size.
pub const POPULATION: usize = 100;
/// Pollux's generations (pymoo counts the starting population as the first).
pub const GENERATIONS: usize = 100;
/// Matrix entries touched per decision at most (population x generations x jobs x servers);
/// Pollux's 100 x 100 on its 64-GPU cluster with 40 jobs is 6.4 million.
pub const CELL_BUDGET: usize = 40_000_000;
const CROSSOVER: f64 = 0.9;
const RESET_ROW: f64 = 0.1;
const ZERO_ROW: f64 = 0.1;
const ZERO_ENTRY: f64 = 0.1;

/// One search: `jobs` rows of `servers` GPU counts, row-major.
pub struct Problem<'a> {
    pub jobs: usize,
    pub servers: usize,
    /// GPUs each server has.
    pub capacity: &'a [u8],
    /// The current allocation.
    pub base: &'a [u8],
    /// Most GPUs each job may hold.
    pub max_replicas: &'a [u32],
    /// The two objectives of a state, both minimised.
    pub objectives: &'a dyn Fn(&[u8]) -> [f64; 2],
}

struct Individual {
    x: Vec<u8>,
    f: [f64; 2],
    rank: usize,
    crowding: f64,
}

/// A 64-bit hash of a state, to drop duplicate offspring (a collision drops one child).
fn fingerprint(x: &[u8]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ x.len() as u64;
    for chunk in x.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 32;
    }
    h
}

fn dominates(a: &[f64; 2], b: &[f64; 2]) -> bool {
    a[0] <= b[0] && a[1] <= b[1] && (a[0] < b[0] || a[1] < b[1])
}

/// Fronts of `pop` (indices), best first; sets each individual's rank and crowding distance.
/// Two objectives: sorted by the first, a point joins the first front whose latest member does
/// not dominate it (that member has the front's smallest second objective so far).
fn sort_fronts(pop: &mut [Individual]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..pop.len()).collect();
    order.sort_by(|&a, &b| {
        pop[a].f[0]
            .total_cmp(&pop[b].f[0])
            .then(pop[a].f[1].total_cmp(&pop[b].f[1]))
    });
    let mut fronts: Vec<Vec<usize>> = Vec::new();
    for i in order {
        let k = fronts
            .iter()
            .position(|f| !dominates(&pop[f[f.len() - 1]].f, &pop[i].f))
            .unwrap_or(fronts.len());
        if k == fronts.len() {
            fronts.push(Vec::new());
        }
        pop[i].rank = k;
        fronts[k].push(i);
    }
    for f in &fronts {
        crowding(pop, f);
    }
    fronts
}

fn crowding(pop: &mut [Individual], front: &[usize]) {
    for &i in front {
        pop[i].crowding = 0.0;
    }
    if front.len() <= 2 {
        for &i in front {
            pop[i].crowding = f64::INFINITY;
        }
        return;
    }
    for m in 0..2 {
        let mut order = front.to_vec();
        order.sort_by(|&a, &b| pop[a].f[m].total_cmp(&pop[b].f[m]));
        let (lo, hi) = (pop[order[0]].f[m], pop[order[order.len() - 1]].f[m]);
        pop[order[0]].crowding = f64::INFINITY;
        pop[order[order.len() - 1]].crowding = f64::INFINITY;
        if hi > lo {
            for w in 1..order.len() - 1 {
                let d = (pop[order[w + 1]].f[m] - pop[order[w - 1]].f[m]) / (hi - lo);
                pop[order[w]].crowding += d;
            }
        }
    }
}

impl Problem<'_> {
    fn row<'s>(&self, x: &'s [u8], j: usize) -> &'s [u8] {
        &x[j * self.servers..(j + 1) * self.servers]
    }

    fn evaluate(&self, x: Vec<u8>) -> Individual {
        let f = (self.objectives)(&x);
        Individual {
            x,
            f,
            rank: 0,
            crowding: 0.0,
        }
    }

    fn crossover(&self, a: &[u8], b: &[u8], rng: &mut ChaCha8Rng) -> (Vec<u8>, Vec<u8>) {
        let cut = below(rng, self.jobs.max(1)) * self.servers;
        let mut c = a.to_vec();
        let mut d = b.to_vec();
        c[cut..].copy_from_slice(&b[cut..]);
        d[cut..].copy_from_slice(&a[cut..]);
        (c, d)
    }

    fn mutate(&self, x: &mut [u8], rng: &mut ChaCha8Rng) {
        let s = self.servers;
        for j in 0..self.jobs {
            let row = j * s..(j + 1) * s;
            if unit(rng) < RESET_ROW {
                x[row.clone()].copy_from_slice(&self.base[row.clone()]);
            }
            if unit(rng) < ZERO_ROW {
                for v in &mut x[row] {
                    if unit(rng) < ZERO_ENTRY {
                        *v = 0;
                    }
                }
            }
        }
        let mut used = vec![0u32; s];
        for j in 0..self.jobs {
            for (u, &v) in used.iter_mut().zip(self.row(x, j)) {
                *u += v as u32;
            }
        }
        let free: Vec<bool> = (0..s).map(|n| used[n] < self.capacity[n] as u32).collect();
        let free_count = free.iter().filter(|&&f| f).count();
        if free_count == 0 {
            return;
        }
        let free_servers: Vec<usize> = (0..s).filter(|&n| free[n]).collect();
        let p1 = 1.0 / free_count as f64;
        // Each free server draws with probability p1 (the next one by a geometric skip), and
        // one the job uses also with p2: together p1 + p2 - p1 p2.
        let log_miss = (1.0 - p1).ln();
        let raise = |row: &mut [u8], n: usize, rng: &mut ChaCha8Rng| {
            let (lo, hi) = (row[n], self.capacity[n].max(row[n]));
            row[n] = lo + below(rng, (hi - lo) as usize + 1) as u8;
        };
        let (mut mine, mut hit) = (Vec::new(), Vec::new());
        for j in 0..self.jobs {
            let row = &mut x[j * s..(j + 1) * s];
            mine.clear();
            mine.extend(free_servers.iter().copied().filter(|&n| row[n] > 0));
            hit.clear();
            hit.resize(mine.len(), false);
            if !mine.is_empty() {
                let p2 = 1.0 / mine.len() as f64;
                for h in &mut hit {
                    *h = unit(rng) < p2;
                }
            }
            let mut k = 0usize;
            loop {
                if p1 < 1.0 {
                    k += (unit(rng).ln() / log_miss).floor() as usize;
                }
                let Some(&n) = free_servers.get(k) else { break };
                if let Ok(m) = mine.binary_search(&n) {
                    hit[m] = true;
                } else {
                    raise(row, n, rng);
                }
                k += 1;
            }
            for (m, &n) in mine.iter().enumerate() {
                if hit[m] {
                    raise(row, n, rng);
                }
            }
        }
    }

    fn repair(&self, x: &mut [u8], rng: &mut ChaCha8Rng) {
        let s = self.servers;
        // At most one multi-server job per server, the first in job order.
        let mut taken = vec![false; s];
        for j in 0..self.jobs {
            let row = &mut x[j * s..(j + 1) * s];
            if row.iter().filter(|&&v| v > 0).count() <= 1 {
                continue;
            }
            for n in 0..s {
                if row[n] > 0 {
                    if taken[n] {
                        row[n] = 0;
                    } else {
                        taken[n] = true;
                    }
                }
            }
        }
        // Each job within its most replicas, over its servers in a random order.
        let mut order: Vec<usize> = (0..s).collect();
        for j in 0..self.jobs {
            let row = &mut x[j * s..(j + 1) * s];
            let total: u32 = row.iter().map(|&v| v as u32).sum();
            let cap = self.max_replicas[j];
            if total <= cap {
                continue;
            }
            for i in (1..s).rev() {
                order.swap(i, below(rng, i + 1));
            }
            let mut left = cap;
            for &n in &order {
                let keep = (row[n] as u32).min(left);
                left -= keep;
                row[n] = keep as u8;
            }
        }
        // Each server's GPUs in job order.
        let mut left: Vec<u32> = self.capacity.iter().map(|&c| c as u32).collect();
        for j in 0..self.jobs {
            let row = &mut x[j * s..(j + 1) * s];
            for n in 0..s {
                let keep = (row[n] as u32).min(left[n]);
                left[n] -= keep;
                row[n] = keep as u8;
            }
        }
    }

    /// Generations that fit [`CELL_BUDGET`] at this size (at least 2: one of offspring).
    pub fn generations(&self) -> usize {
        let cells = (POPULATION * self.jobs * self.servers).max(1);
        (CELL_BUDGET / cells).clamp(2, GENERATIONS)
    }

    /// Runs the search from `starts` (each `jobs x servers`, feasible; the current allocation
    /// should be among them) and returns the final Pareto front, best first objective first.
    pub fn solve(&self, starts: Vec<Vec<u8>>, rng: &mut ChaCha8Rng) -> Vec<(Vec<u8>, [f64; 2])> {
        let mut seen: HashSet<u64> = HashSet::new();
        let mut pop: Vec<Individual> = Vec::new();
        for x in starts {
            if x.len() == self.jobs * self.servers && seen.insert(fingerprint(&x)) {
                pop.push(self.evaluate(x));
            }
        }
        if pop.is_empty() {
            pop.push(self.evaluate(self.base.to_vec()));
        }
        sort_fronts(&mut pop);
        for _ in 1..self.generations() {
            let mut offspring: Vec<Individual> = Vec::with_capacity(POPULATION);
            // Duplicates are dropped and drawn again, a bounded number of times.
            let mut tries = 0;
            while offspring.len() < POPULATION && tries < 4 * POPULATION {
                tries += 1;
                let a = self.tournament(&pop, rng);
                let b = self.tournament(&pop, rng);
                let (c, d) = if unit(rng) < CROSSOVER {
                    self.crossover(&pop[a].x, &pop[b].x, rng)
                } else {
                    (pop[a].x.clone(), pop[b].x.clone())
                };
                for mut child in [c, d] {
                    self.mutate(&mut child, rng);
                    self.repair(&mut child, rng);
                    if offspring.len() < POPULATION && seen.insert(fingerprint(&child)) {
                        offspring.push(self.evaluate(child));
                    }
                }
            }
            pop.extend(offspring);
            let fronts = sort_fronts(&mut pop);
            let mut keep = Vec::with_capacity(POPULATION);
            for front in fronts {
                if keep.len() + front.len() <= POPULATION {
                    keep.extend(front);
                } else {
                    let mut f = front;
                    f.sort_by(|&a, &b| pop[b].crowding.total_cmp(&pop[a].crowding));
                    keep.extend(f.into_iter().take(POPULATION - keep.len()));
                    break;
                }
            }
            let mut slots: Vec<Option<Individual>> = pop.into_iter().map(Some).collect();
            pop = keep.into_iter().filter_map(|i| slots[i].take()).collect();
            sort_fronts(&mut pop);
        }
        let mut front: Vec<(Vec<u8>, [f64; 2])> = pop
            .into_iter()
            .filter(|i| i.rank == 0)
            .map(|i| (i.x, i.f))
            .collect();
        front.sort_by(|a, b| a.1[0].total_cmp(&b.1[0]).then(a.1[1].total_cmp(&b.1[1])));
        front
    }

    /// Binary tournament: the dominating one, else the less crowded, else either.
    fn tournament(&self, pop: &[Individual], rng: &mut ChaCha8Rng) -> usize {
        let (a, b) = (below(rng, pop.len()), below(rng, pop.len()));
        if dominates(&pop[a].f, &pop[b].f) {
            a
        } else if dominates(&pop[b].f, &pop[a].f) {
            b
        } else if pop[a].crowding > pop[b].crowding {
            a
        } else if pop[b].crowding > pop[a].crowding {
            b
        } else if unit(rng) < 0.5 {
            a
        } else {
            b
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn problem<'a>(
        base: &'a [u8],
        cap: &'a [u8],
        max: &'a [u32],
        f: &'a dyn Fn(&[u8]) -> [f64; 2],
    ) -> Problem<'a> {
        Problem {
            jobs: max.len(),
            servers: cap.len(),
            capacity: cap,
            base,
            max_replicas: max,
            objectives: f,
        }
    }

    #[test]
    fn repair_keeps_one_multi_server_job_per_server_and_the_capacity() {
        let cap = [4u8, 4];
        let max = [8u32, 8, 8];
        let base = [0u8; 6];
        let f = |_: &[u8]| [0.0, 0.0];
        let p = problem(&base, &cap, &max, &f);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // Jobs 0 and 1 both span both servers; job 2 asks for 4 on server 0.
        let mut x = vec![2, 2, 3, 3, 4, 0];
        p.repair(&mut x, &mut rng);
        assert_eq!(x, vec![2, 2, 0, 0, 2, 0]);
    }

    #[test]
    fn the_search_finds_the_best_split_of_a_small_cluster() {
        // Two jobs, two 4-GPU servers; the objective wants job 0 on 3 GPUs of one server and
        // job 1 on 4 of the other.
        let cap = [4u8, 4];
        let max = [8u32, 8];
        let base = [0u8; 4];
        let f = |x: &[u8]| {
            let (a, b) = (x[0] as f64 + x[1] as f64, x[2] as f64 + x[3] as f64);
            let spread = (x[0] > 0 && x[1] > 0) as u8 as f64;
            [(a - 3.0).powi(2) + (b - 4.0).powi(2) + spread, -(a + b)]
        };
        let p = problem(&base, &cap, &max, &f);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let front = p.solve(vec![base.to_vec()], &mut rng);
        assert_eq!(front[0].1[0], 0.0, "{:?}", front[0]);
        let x = &front[0].0;
        assert!(x[..2].contains(&3) && x[2..].contains(&4), "{x:?}");
    }
}
