//! Where to put a text label in a plot: beside its point or line, inside the plot, over as
//! little as possible of what is already drawn (symbols, lines, other labels).

/// Pixel rectangle: left, top, right, bottom.
type Rect = (i32, i32, i32, i32);

pub(crate) struct LabelPlacer {
    bounds: Rect,
    taken: Vec<Rect>,
}

impl LabelPlacer {
    /// Labels stay inside `bounds` (the plotting area, backend pixels).
    pub(crate) fn new(bounds: Rect) -> Self {
        LabelPlacer {
            bounds,
            taken: Vec::new(),
        }
    }

    /// Keeps labels off a square of half-side `r` around `c`.
    pub(crate) fn occupy_point(&mut self, c: (i32, i32), r: i32) {
        self.taken.push((c.0 - r, c.1 - r, c.0 + r, c.1 + r));
    }

    /// Keeps labels off a line, `r` pixels either side of it (sampled every few pixels).
    pub(crate) fn occupy_polyline(&mut self, points: &[(i32, i32)], r: i32) {
        for w in points.windows(2) {
            let (a, b) = (w[0], w[1]);
            let len = f64::from((b.0 - a.0).abs().max((b.1 - a.1).abs()));
            let steps = (len / 4.0).ceil().max(1.0) as i32;
            for k in 0..=steps {
                let t = f64::from(k) / f64::from(steps);
                let x = a.0 + (f64::from(b.0 - a.0) * t).round() as i32;
                let y = a.1 + (f64::from(b.1 - a.1) * t).round() as i32;
                self.occupy_point((x, y), r);
            }
        }
    }

    /// Top-left corner for a label of `size` beside point `c`, `gap` pixels away: the first of
    /// right-above, right-below, left-above, left-below, above, below that stays inside and
    /// overlaps nothing, else the one that overlaps least.
    pub(crate) fn place_beside_point(
        &mut self,
        c: (i32, i32),
        gap: i32,
        (w, h): (i32, i32),
    ) -> (i32, i32) {
        let candidates = [
            (c.0 + gap, c.1 - gap - h),
            (c.0 + gap, c.1 + gap),
            (c.0 - gap - w, c.1 - gap - h),
            (c.0 - gap - w, c.1 + gap),
            (c.0 - w / 2, c.1 - gap - h),
            (c.0 - w / 2, c.1 + gap),
            (c.0 + gap, c.1 - h / 2),
            (c.0 - gap - w, c.1 - h / 2),
        ];
        self.choose(&candidates, (w, h))
    }

    /// Top-left corner for the label of a vertical line at `x`: beside the line, as high as it
    /// fits; `None` when the line is outside the plot.
    pub(crate) fn place_beside_line(&mut self, x: i32, (w, h): (i32, i32)) -> Option<(i32, i32)> {
        if x < self.bounds.0 || x > self.bounds.2 {
            return None;
        }
        let mut candidates = Vec::new();
        let mut y = self.bounds.1 + 4;
        while y + h <= self.bounds.3 {
            candidates.push((x + 5, y));
            candidates.push((x - 5 - w, y));
            y += h / 2 + 1;
        }
        if candidates.is_empty() {
            candidates.push((x + 5, self.bounds.1));
        }
        Some(self.choose(&candidates, (w, h)))
    }

    /// The candidate that overlaps least, preferring those first in the list; each may also
    /// move up or down a few rows, at a price per row (a label far from its point is
    /// ambiguous, so it moves only to clear more than a line's crossing).
    fn choose(&mut self, candidates: &[(i32, i32)], (w, h): (i32, i32)) -> (i32, i32) {
        let rect = |(x, y): (i32, i32)| (x, y, x + w, y + h);
        let cost = |r: Rect| {
            let outside = area(r) - overlap(r, self.bounds);
            let covered: i64 = self.taken.iter().map(|&t| overlap(r, t)).sum();
            // Leaving the plot is worse than covering a line.
            outside * 100 + covered
        };
        let per_row = 4 * i64::from(h.max(1));
        let best = candidates
            .iter()
            .flat_map(|&(x, y)| {
                [0, 1, -1, 2, -2, 3, -3].map(|k: i32| ((x, y + k * (h + 2)), i64::from(k.abs())))
            })
            .min_by_key(|&(p, rows)| cost(rect(p)) + rows * per_row)
            .map(|(p, _)| p)
            .unwrap_or((self.bounds.0, self.bounds.1));
        // Pulled inside the plot if nothing fitted.
        let x = best
            .0
            .clamp(self.bounds.0, (self.bounds.2 - w).max(self.bounds.0));
        let y = best
            .1
            .clamp(self.bounds.1, (self.bounds.3 - h).max(self.bounds.1));
        self.taken.push(rect((x, y)));
        (x, y)
    }
}

fn area(r: Rect) -> i64 {
    i64::from((r.2 - r.0).max(0)) * i64::from((r.3 - r.1).max(0))
}

fn overlap(a: Rect, b: Rect) -> i64 {
    area((a.0.max(b.0), a.1.max(b.1), a.2.min(b.2), a.3.min(b.3)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_avoid_what_is_taken_and_stay_inside() {
        let mut p = LabelPlacer::new((0, 0, 200, 100));
        // A point near the top-right corner: the label goes left and below.
        let at = p.place_beside_point((190, 5), 4, (50, 10));
        assert_eq!(at, (190 - 4 - 50, 5 + 4));
        // A second label for the same point may not cover the first.
        let again = p.place_beside_point((190, 5), 4, (50, 10));
        assert_eq!(
            overlap(
                (at.0, at.1, at.0 + 50, at.1 + 10),
                (again.0, again.1, again.0 + 50, again.1 + 10)
            ),
            0
        );
        // A line label next to a line at x = 100, clear of a point at its top right.
        p.occupy_point((110, 8), 6);
        let l = p.place_beside_line(100, (30, 10)).unwrap();
        assert_eq!(l, (100 - 5 - 30, 4));
        assert!(p.place_beside_line(300, (30, 10)).is_none());
    }
}
