//! Signed distances sampled once on a lattice and interpolated: a fast stand-in for the exact
//! distance to a complex shape that is queried millions of times (a reduced body's rest
//! surface, asked for at every point its dual cells and contacts touch).

use crate::grid::{Array3, Grid, Location};
use crate::math::{Real, Vec3};

/// A signed distance sampled at the nodes of a lattice over a shape's bounding box grown by a
/// margin: trilinear interpolation inside that box (its error is about `h^2 / 8` times the
/// surface's curvature for spacing `h`), the distance to the shape's own bounding box beyond
/// it (a lower bound of the true distance, at least the margin).
#[derive(Clone, Debug)]
pub struct SampledDistance {
    lattice: Grid,
    values: Array3<Real>,
    /// The shape's bounding box.
    bounds: (Vec3, Vec3),
}

impl SampledDistance {
    /// Samples `distance` over the box `bounds` grown by `margin`, at spacing about `h`.
    pub fn new(distance: impl Fn(&Vec3) -> Real + Sync, bounds: (Vec3, Vec3), h: Real, margin: Real) -> Self {
        let (lo, hi) = bounds;
        let origin = lo - Vec3::repeat(margin);
        let dims = [0, 1, 2].map(|a| (((hi[a] - lo[a] + 2.0 * margin) / h).ceil() as usize).max(1));
        let lattice = Grid { dims, dx: h, origin };
        let values = lattice.sample_fn(Location::Node, |x| distance(&x));
        SampledDistance { lattice, values, bounds }
    }

    /// The distance at `p`.
    pub fn at(&self, p: &Vec3) -> Real {
        if self.lattice.contains(p) {
            return self.lattice.interpolate(&self.values, Location::Node, p);
        }
        let (lo, hi) = self.bounds;
        (p - p.sup(&lo).inf(&hi)).norm()
    }

    /// The same distance moved by `offset`.
    pub fn translated(&self, offset: &Vec3) -> Self {
        let mut moved = self.clone();
        moved.lattice.origin += offset;
        moved.bounds = (self.bounds.0 + offset, self.bounds.1 + offset);
        moved
    }

    /// Heap bytes of the samples.
    pub fn heap_bytes(&self) -> usize {
        self.values.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ball of radius 0.1 sampled at 1 cm: within 2 cm of its surface, where the distance's
    /// second derivatives are at most `1 / 0.08`, the interpolation is within the trilinear
    /// bound `3 h^2 / 8 * 1 / 0.08` of the exact distance; beyond the lattice the value is a
    /// lower bound.
    #[test]
    fn sampled_ball_distance_is_within_the_interpolation_error() {
        let exact = |p: &Vec3| p.norm() - 0.1;
        let h = 0.01;
        let sampled = SampledDistance::new(exact, (Vec3::repeat(-0.1), Vec3::repeat(0.1)), h, 0.03);
        let bound = 3.0 * h * h / (8.0 * 0.08);
        for i in 0..1000 {
            let t = i as Real * 0.001;
            let p = Vec3::new(0.13 * (7.0 * t).sin(), 0.13 * (5.0 * t).cos(), 0.12 * (3.0 * t).sin());
            let d = sampled.at(&p);
            if exact(&p).abs() < 0.02 {
                assert!((d - exact(&p)).abs() < bound, "at {p:?}: {d} vs {}", exact(&p));
            }
        }
        let far = Vec3::new(0.5, 0.0, 0.0);
        assert!(sampled.at(&far) <= exact(&far) && sampled.at(&far) >= 0.39);
    }
}
