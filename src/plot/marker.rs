//! Point symbols (circle, square, triangle, diamond, star, cross, ring) as a plotters element,
//! drawn in pixels around one point so they keep their size on any axis scale.

use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::{BackendCoord, DrawingErrorKind};

/// Shape of a point symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerShape {
    Circle,
    Square,
    Triangle,
    Diamond,
    /// Five-pointed star.
    Star,
    /// Diagonal cross (an x); never filled.
    Cross,
    /// Circle outline, never filled: drawn around another symbol, which stays visible inside.
    Ring,
}

impl MarkerShape {
    /// Shapes in the order series take them.
    pub const CYCLE: [MarkerShape; 5] = [
        MarkerShape::Circle,
        MarkerShape::Square,
        MarkerShape::Triangle,
        MarkerShape::Diamond,
        MarkerShape::Star,
    ];

    /// The symbol of the `k`-th series: past the ten colours, series that share a colour get
    /// different symbols.
    pub fn for_series(k: usize) -> MarkerShape {
        let n = Self::CYCLE.len();
        Self::CYCLE[(k + k / super::COLORS.len()) % n]
    }
}

/// A symbol at one point: `filled` in its colour, or hollow (white inside, outlined).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarkerElement<C> {
    pub at: C,
    pub shape: MarkerShape,
    /// Radius in pixels.
    pub radius: i32,
    pub color: RGBColor,
    pub filled: bool,
}

impl<C> MarkerElement<C> {
    pub fn new(at: C, shape: MarkerShape, radius: i32, color: RGBColor, filled: bool) -> Self {
        MarkerElement {
            at,
            shape,
            radius,
            color,
            filled,
        }
    }
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a MarkerElement<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for MarkerElement<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut points: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some(c) = points.next() else {
            return Ok(());
        };
        let r = self.radius.max(2);
        let fill = if self.filled {
            self.color.filled()
        } else {
            WHITE.filled()
        };
        if self.shape == MarkerShape::Cross {
            let style = self.color.stroke_width(3);
            backend.draw_line((c.0 - r, c.1 - r), (c.0 + r, c.1 + r), &style)?;
            return backend.draw_line((c.0 - r, c.1 + r), (c.0 + r, c.1 - r), &style);
        }
        if self.shape == MarkerShape::Ring {
            // Edges of a polygon: a wide unfilled circle leaves gaps in the bitmap.
            let vertices = polygon(self.shape, c, r);
            let style = self.color.stroke_width(2);
            for (k, &p) in vertices.iter().enumerate() {
                backend.draw_line(p, vertices[(k + 1) % vertices.len()], &style)?;
            }
            return Ok(());
        }
        if self.shape == MarkerShape::Circle {
            // A ring as two discs: a wide unfilled circle leaves gaps in the bitmap.
            let edge = if self.filled {
                darker(self.color)
            } else {
                self.color
            };
            let inner = if self.filled { r - 1 } else { r - 2 };
            backend.draw_circle(c, r as u32, &edge.filled(), true)?;
            return backend.draw_circle(c, inner.max(1) as u32, &fill, true);
        }
        let vertices = polygon(self.shape, c, r);
        backend.fill_polygon(vertices.iter().copied(), &fill)?;
        // Edges one by one: a closed path drawn wide gets mitred spikes at sharp corners. A
        // filled symbol gets a darker edge, so a light one (a gold star) shows on light ground.
        let edge = if self.filled {
            darker(self.color)
        } else {
            self.color
        };
        let thin = edge.stroke_width(if self.filled { 1 } else { 2 });
        for (k, &p) in vertices.iter().enumerate() {
            let q = vertices[(k + 1) % vertices.len()];
            backend.draw_line(p, q, &thin)?;
        }
        Ok(())
    }
}

fn darker(c: RGBColor) -> RGBColor {
    let d = |v: u8| (f64::from(v) * 0.45).round() as u8;
    RGBColor(d(c.0), d(c.1), d(c.2))
}

/// Vertices of a polygonal symbol of radius `r` centred on `c` (pixels, y down).
fn polygon(shape: MarkerShape, c: BackendCoord, r: i32) -> Vec<BackendCoord> {
    let at = |dx: f64, dy: f64| (c.0 + dx.round() as i32, c.1 + dy.round() as i32);
    let r = f64::from(r);
    match shape {
        MarkerShape::Square => {
            let h = r * 0.85;
            vec![at(-h, -h), at(h, -h), at(h, h), at(-h, h)]
        }
        MarkerShape::Triangle => vec![at(0.0, -r), at(r * 0.95, r * 0.7), at(-r * 0.95, r * 0.7)],
        MarkerShape::Diamond => vec![at(0.0, -r), at(r, 0.0), at(0.0, r), at(-r, 0.0)],
        MarkerShape::Star => (0..10)
            .map(|k| {
                let radius = if k % 2 == 0 { r * 1.3 } else { r * 0.55 };
                let a = std::f64::consts::PI * (f64::from(k) / 5.0 - 0.5);
                at(radius * a.cos(), radius * a.sin())
            })
            .collect(),
        MarkerShape::Ring => (0..32)
            .map(|k| {
                let a = std::f64::consts::PI * f64::from(k) / 16.0;
                at(r * a.cos(), r * a.sin())
            })
            .collect(),
        MarkerShape::Circle | MarkerShape::Cross => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::COLORS;

    #[test]
    fn series_sharing_a_colour_differ_in_symbol() {
        let style = |k: usize| (COLORS[k % COLORS.len()], MarkerShape::for_series(k));
        for a in 0..40 {
            for b in 0..a {
                assert_ne!(style(a), style(b), "series {a} and {b}");
            }
        }
    }
}
