//! MAC grid geometry, cell and face arrays, interpolation, advection, extrapolation, level sets
//! and marching cubes: the pieces every grid-based fluid model shares.

pub mod advection;
pub mod array;
pub mod extrapolate;
pub mod fraction;
pub mod level_set;
pub mod marching_cubes;

pub use array::Array3;

use crate::math::{Real, Vec3};

/// A uniform grid of `dims` cubic cells of edge `dx`, starting at `origin`.
///
/// Cell `(i, j, k)` has its centre at `origin + (i + 1/2, j + 1/2, k + 1/2) dx`; the x-face
/// `(i, j, k)` sits at `origin + (i, j + 1/2, k + 1/2) dx` (and likewise for y and z faces);
/// node `(i, j, k)` is the cell corner at `origin + (i, j, k) dx`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// Cells along x, y, z.
    pub dims: [usize; 3],
    /// Cell edge length (m).
    pub dx: Real,
    /// The domain's minimum corner (m).
    pub origin: Vec3,
}

/// Values at the points `origin + spacing (i, j, k)` of a lattice: a field sampled for output
/// (marching cubes, volume caches).
#[derive(Clone, Debug)]
pub struct Sampled<T> {
    /// The values.
    pub values: Array3<T>,
    /// Position of sample `(0, 0, 0)` (m).
    pub origin: Vec3,
    /// Distance between neighbouring samples (m).
    pub spacing: Real,
}

/// Where the samples of a grid array live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Cell centres.
    Cell,
    /// Centres of the faces normal to the given axis (0 = x, 1 = y, 2 = z).
    Face(usize),
    /// Cell corners.
    Node,
}

impl Location {
    /// Position of sample `(0, 0, 0)` relative to the grid origin, in cells.
    pub fn offset(self) -> [Real; 3] {
        match self {
            Location::Cell => [0.5; 3],
            Location::Face(a) => {
                let mut o = [0.5; 3];
                o[a] = 0.0;
                o
            }
            Location::Node => [0.0; 3],
        }
    }
}

impl Grid {
    /// Number of cells.
    pub fn cell_count(&self) -> usize {
        self.dims.iter().product()
    }

    /// The domain's maximum corner.
    pub fn max_corner(&self) -> Vec3 {
        self.origin + Vec3::new(self.dims[0] as Real, self.dims[1] as Real, self.dims[2] as Real) * self.dx
    }

    /// Array dimensions of samples at `loc`.
    pub fn dims_at(&self, loc: Location) -> [usize; 3] {
        match loc {
            Location::Cell => self.dims,
            Location::Face(a) => {
                let mut d = self.dims;
                d[a] += 1;
                d
            }
            Location::Node => self.dims.map(|n| n + 1),
        }
    }

    /// World position of sample `(i, j, k)` at `loc`.
    pub fn position(&self, loc: Location, i: usize, j: usize, k: usize) -> Vec3 {
        let o = loc.offset();
        self.origin + Vec3::new(i as Real + o[0], j as Real + o[1], k as Real + o[2]) * self.dx
    }

    /// A zero array at `loc`.
    pub fn zeros(&self, loc: Location) -> Array3<Real> {
        Array3::filled(self.dims_at(loc), 0.0)
    }

    /// An array at `loc` with `f(position)` in every sample, evaluated in parallel.
    pub fn sample_fn<F>(&self, loc: Location, f: F) -> Array3<Real>
    where
        F: Fn(Vec3) -> Real + Sync,
    {
        let mut a = self.zeros(loc);
        a.par_fill_with(|i, j, k| f(self.position(loc, i, j, k)));
        a
    }

    /// Trilinear interpolation of `a` (samples at `loc`) at world position `x`; positions outside
    /// the sample box are clamped to it (constant extension).
    #[inline]
    pub fn interpolate(&self, a: &Array3<Real>, loc: Location, x: &Vec3) -> Real {
        let (v, w) = self.stencil(a, loc, x);
        trilinear(&v, &w)
    }

    /// Like [`Grid::interpolate`], also returning the minimum and maximum of the eight samples
    /// that were blended (the bounds used to clamp MacCormack advection).
    pub fn interpolate_with_bounds(&self, a: &Array3<Real>, loc: Location, x: &Vec3) -> (Real, Real, Real) {
        let (v, w) = self.stencil(a, loc, x);
        let lo = v.iter().copied().fold(Real::INFINITY, Real::min);
        let hi = v.iter().copied().fold(Real::NEG_INFINITY, Real::max);
        (trilinear(&v, &w), lo, hi)
    }

    /// The gradient of the trilinear interpolant of `a` at `x` (exact inside each box of the
    /// sample lattice; zero along directions clamped outside it).
    pub fn gradient(&self, a: &Array3<Real>, loc: Location, x: &Vec3) -> Vec3 {
        let (v, w) = self.stencil(a, loc, x);
        // d/dx: differences along x blended in y and z; likewise for y and z.
        let gx = lerp(lerp(v[1] - v[0], v[3] - v[2], w[1]), lerp(v[5] - v[4], v[7] - v[6], w[1]), w[2]);
        let gy = lerp(lerp(v[2] - v[0], v[3] - v[1], w[0]), lerp(v[6] - v[4], v[7] - v[5], w[0]), w[2]);
        let gz = lerp(lerp(v[4] - v[0], v[5] - v[1], w[0]), lerp(v[6] - v[2], v[7] - v[3], w[0]), w[1]);
        Vec3::new(gx, gy, gz) / self.dx
    }

    /// The eight samples around `x` (corner `c` at offset `(c & 1, (c >> 1) & 1, (c >> 2) & 1)`)
    /// and the fractional position among them.
    #[inline(always)]
    fn stencil(&self, a: &Array3<Real>, loc: Location, x: &Vec3) -> ([Real; 8], [Real; 3]) {
        let dims = a.dims();
        let (b, w) = self.box_around(dims, loc, x);
        let (mut c, mut stride) = (0, 1);
        let mut step = [0usize; 3];
        for axis in 0..3 {
            c += b[axis] * stride;
            if dims[axis] > 1 {
                step[axis] = stride;
            }
            stride *= dims[axis];
        }
        let [sx, sy, sz] = step;
        // One bounds check for the whole box of samples.
        let d = &a.as_slice()[c..=c + sx + sy + sz];
        let v = [d[0], d[sx], d[sy], d[sx + sy], d[sz], d[sx + sz], d[sy + sz], d[sx + sy + sz]];
        (v, w)
    }

    /// The lowest sample of the box of eight samples (of an array of `dims` at `loc`) that
    /// [`Grid::interpolate`] blends at `x`, and the fractional position in it (0 along an
    /// axis with one sample).
    #[inline(always)]
    pub fn box_around(&self, dims: [usize; 3], loc: Location, x: &Vec3) -> ([usize; 3], [Real; 3]) {
        let o = loc.offset();
        let inv = 1.0 / self.dx;
        let mut b = [0usize; 3];
        let mut w = [0.0; 3];
        for axis in 0..3 {
            let n = dims[axis];
            let g = ((x[axis] - self.origin[axis]) * inv - o[axis]).clamp(0.0, (n - 1) as Real);
            // `g >= 0`, so truncation is the floor (and avoids a libm call).
            b[axis] = (g as usize).min(n.saturating_sub(2));
            if n > 1 {
                w[axis] = g - b[axis] as Real;
            }
        }
        (b, w)
    }

    /// [`Grid::interpolate`] over only the samples of [`Grid::box_around`] whose bit is set in
    /// `kept` (corner `c` at offset `(c & 1, (c >> 1) & 1, c >> 2)`), their weights
    /// renormalized; `None` where no kept sample has weight.
    pub fn interpolate_where(&self, a: &Array3<Real>, loc: Location, x: &Vec3, kept: u8) -> Option<Real> {
        let (b, w) = self.box_around(a.dims(), loc, x);
        let (mut sum, mut weight) = (0.0, 0.0);
        for corner in 0..8 {
            let offset = [corner & 1, (corner >> 1) & 1, corner >> 2];
            let wc: Real = (0..3).map(|axis| if offset[axis] == 1 { w[axis] } else { 1.0 - w[axis] }).product();
            let [i, j, k] = std::array::from_fn(|axis| b[axis] + offset[axis]);
            if wc > 0.0 && kept & (1 << corner) != 0 {
                sum += wc * a.get(i, j, k);
                weight += wc;
            }
        }
        (weight > 0.0).then(|| sum / weight)
    }

    /// The cell containing `x`, clamped into the grid.
    pub fn cell_of(&self, x: &Vec3) -> [usize; 3] {
        let mut c = [0; 3];
        for a in 0..3 {
            let g = ((x[a] - self.origin[a]) / self.dx).floor();
            c[a] = (g.max(0.0) as usize).min(self.dims[a] - 1);
        }
        c
    }

    /// Whether `x` lies inside the domain box.
    pub fn contains(&self, x: &Vec3) -> bool {
        let hi = self.max_corner();
        (0..3).all(|a| x[a] >= self.origin[a] && x[a] <= hi[a])
    }

    /// Clamps `x` into the domain box.
    pub fn clamp(&self, x: &Vec3) -> Vec3 {
        let hi = self.max_corner();
        Vec3::new(x.x.clamp(self.origin.x, hi.x), x.y.clamp(self.origin.y, hi.y), x.z.clamp(self.origin.z, hi.z))
    }
}

/// Trilinear blend of the eight corner values `v` (ordered as in [`Grid::stencil`]) at the
/// fractional position `w`.
#[inline]
fn trilinear(v: &[Real; 8], w: &[Real; 3]) -> Real {
    let x00 = lerp(v[0], v[1], w[0]);
    let x10 = lerp(v[2], v[3], w[0]);
    let x01 = lerp(v[4], v[5], w[0]);
    let x11 = lerp(v[6], v[7], w[0]);
    lerp(lerp(x00, x10, w[1]), lerp(x01, x11, w[1]), w[2])
}

#[inline]
fn lerp(p: Real, q: Real, t: Real) -> Real {
    p + t * (q - p)
}

/// A velocity field on a MAC grid: component `a` lives on the faces normal to axis `a`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MacVelocity {
    /// `[u, v, w]`.
    pub faces: [Array3<Real>; 3],
}

impl MacVelocity {
    /// A zero velocity field on `grid`.
    pub fn zeros(grid: &Grid) -> Self {
        MacVelocity { faces: [0, 1, 2].map(|a| grid.zeros(Location::Face(a))) }
    }

    /// Takes `other`'s values (a checkpoint's); refused unless it has this field's size.
    pub fn restore_from(&mut self, other: MacVelocity) -> Result<(), String> {
        for (face, saved) in self.faces.iter_mut().zip(other.faces) {
            face.restore_from(saved)?;
        }
        Ok(())
    }

    /// The velocity at world position `x` (each component interpolated from its faces).
    pub fn at(&self, grid: &Grid, x: &Vec3) -> Vec3 {
        Vec3::new(
            grid.interpolate(&self.faces[0], Location::Face(0), x),
            grid.interpolate(&self.faces[1], Location::Face(1), x),
            grid.interpolate(&self.faces[2], Location::Face(2), x),
        )
    }

    /// The largest magnitude of any face velocity (m/s).
    pub fn max_abs(&self) -> Real {
        use rayon::prelude::*;
        self.faces.iter().map(|f| f.as_slice().par_iter().map(|u| u.abs()).reduce(|| 0.0, Real::max)).fold(0.0, Real::max)
    }

    /// The velocity at the centre of cell `(i, j, k)`: the average of its two faces per axis.
    pub fn at_cell(&self, i: usize, j: usize, k: usize) -> Vec3 {
        let [u, v, w] = &self.faces;
        Vec3::new(0.5 * (u.get(i, j, k) + u.get(i + 1, j, k)), 0.5 * (v.get(i, j, k) + v.get(i, j + 1, k)), 0.5 * (w.get(i, j, k) + w.get(i, j, k + 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeping every sample is the plain interpolation; keeping the four samples of the box
    /// on one side of a plane between them is the interpolation on that side, weighted as the
    /// trilinear kernel weighs them there; nothing kept is `None`.
    #[test]
    fn interpolation_over_some_samples_renormalizes_the_kept_weights() {
        let grid = Grid { dims: [4, 3, 5], dx: 0.5, origin: Vec3::new(-1.0, 0.2, 0.0) };
        let loc = Location::Face(1);
        let mut a = grid.zeros(loc);
        a.par_fill_with(|i, j, k| (i * i) as Real + 3.0 * j as Real - 0.5 * (k * j) as Real);
        let x = Vec3::new(-0.1, 0.9, 1.3);
        assert!((grid.interpolate_where(&a, loc, &x, 0xff).unwrap() - grid.interpolate(&a, loc, &x)).abs() < 1e-12);
        // The samples around x on this location lie at x = -0.25 and 0.25: keep the lower
        // ones, the corners with offset 0 along x.
        let kept = grid.interpolate_where(&a, loc, &x, 0b0101_0101).unwrap();
        let lower = Vec3::new(-0.25, x.y, x.z);
        assert!((kept - grid.interpolate(&a, loc, &lower)).abs() < 1e-12, "{kept}");
        assert_eq!(grid.interpolate_where(&a, loc, &x, 0), None);
    }
}
