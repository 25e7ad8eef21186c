//! What is left on each server while an individual is placed.

use super::*;
use crate::replay::elastic::placement::spill;

impl Free {
    pub(super) fn room(&self, s: usize, c: f64, m: f64) -> u32 {
        let by = |have: f64, per: f64| {
            if per > 0.0 {
                ((have + EPS) / per).floor().clamp(0.0, u32::MAX as f64) as u32
            } else {
                u32::MAX
            }
        };
        self.gpus[s]
            .min(by(self.cpus[s], c))
            .min(by(self.mem[s], m))
    }

    pub(super) fn fits(&self, g: &[(usize, u32)], c: f64, m: f64) -> bool {
        g.iter()
            .all(|&(s, n)| s < self.gpus.len() && self.room(s, c, m) >= n)
    }

    pub(super) fn take(&mut self, s: usize, g: u32, c: f64, m: f64) {
        let old = self.gpus[s] as usize;
        let new = old - g as usize;
        // Move s from bucket old to bucket new.
        let k = self.at[s];
        let last = *self.buckets[old].last().expect("s is in its bucket");
        self.buckets[old].swap_remove(k);
        if last != s {
            self.at[last] = k;
        }
        self.at[s] = self.buckets[new].len();
        self.buckets[new].push(s);
        self.gpus[s] = new as u32;
        self.cpus[s] = (self.cpus[s] - g as f64 * c).max(0.0);
        self.mem[s] = (self.mem[s] - g as f64 * m).max(0.0);
    }

    /// GPUs only: best fit on one server, else the roomiest servers first.
    pub(super) fn find_buckets(&self, n: u32, out: &mut Vec<(usize, u32)>) -> bool {
        out.clear();
        let top = self.buckets.len() - 1;
        if (n as usize) <= top
            && let Some(b) = (n as usize..=top).find(|&k| !self.buckets[k].is_empty())
        {
            // Any server of the tightest bucket (the bucket's order is deterministic).
            let s = *self.buckets[b].last().expect("non-empty");
            out.push((s, n));
            return true;
        }
        let rooms = (1..=top)
            .rev()
            .flat_map(|k| self.buckets[k].iter().rev().map(move |&s| (s, k as u32)));
        spill(rooms, n, out)
    }

    /// With CPU and memory: the same rule over every server's room.
    pub(super) fn find_scan(&self, n: u32, c: f64, m: f64, out: &mut Vec<(usize, u32)>) -> bool {
        out.clear();
        let servers = self.gpus.len();
        // One server: the fewest free GPUs first, the first whose cores and GB also suffice.
        let top = self.buckets.len() - 1;
        for k in (n as usize).min(top + 1)..=top {
            if let Some(&s) = self.buckets[k]
                .iter()
                .rev()
                .find(|&&s| self.room(s, c, m) >= n)
            {
                out.push((s, n));
                return true;
            }
        }
        let mut rooms: Vec<(u32, usize)> = (0..servers)
            .map(|s| (self.room(s, c, m), s))
            .filter(|r| r.0 > 0)
            .collect();
        rooms.sort_by_key(|&(r, s)| (std::cmp::Reverse(r), s));
        spill(rooms.into_iter().map(|(r, s)| (s, r)), n, out)
    }
}
