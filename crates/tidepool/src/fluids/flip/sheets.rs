//! Transfers that do not reach across a sheet. Cloth, or a thin shell simulated in full
//! ([`CoupledSolid::is_sheet`]), has no inside and is far thinner than a cell, so the trilinear
//! kernel of a particle beside it reaches samples on its other side. Rasterized, the water on
//! the two sides is averaged into the faces around the sheet; interpolated back, each side
//! takes part of the other's velocity (still water under a sheet took 6% of the swirl of the
//! water above it in a quarter of a second). Here every transfer between a particle and the
//! grid skips the samples across a sheet from the particle: the particle-to-grid
//! rasterization, the grid-to-particle velocities (PIC and FLIP alike) and the advection
//! velocity. The same idea as Shinar's leak-proof advection (thesis sec. 5.6, F2), which
//! keeps a level set's semi-Lagrangian rays from reaching through a solid.

use super::raster::kernel_box;
use crate::grid::{Grid, Location, MacVelocity};
use crate::math::{Real, Vec3};
use crate::solids::CoupledSolid;
use rayon::prelude::*;

/// The sheets among the bodies, and the cells a sheet may pass near.
pub struct Sheets<'a> {
    sheets: Vec<&'a dyn CoupledSolid>,
    /// Per cell (flat index), whether a sheet passes within the reach of a particle's kernel
    /// (a box's diagonal) of a point in it; empty without sheets.
    near: Vec<bool>,
}

impl<'a> Sheets<'a> {
    /// The sheets among `bodies` and the cells of `grid` near them.
    pub fn new(bodies: &[&'a dyn CoupledSolid], grid: &Grid) -> Self {
        let sheets: Vec<&dyn CoupledSolid> = bodies.iter().copied().filter(|b| b.is_sheet()).collect();
        if sheets.is_empty() {
            return Sheets { sheets, near: Vec::new() };
        }
        // A kernel's reach from the particle plus the cell's half diagonal.
        let reach = 1.5 * Real::sqrt(3.0) * grid.dx;
        let balls: Vec<(Vec3, Real)> = sheets.iter().map(|s| s.bounding_sphere()).collect();
        let near = (0..grid.cell_count())
            .into_par_iter()
            .map(|c| {
                let [nx, ny, _] = grid.dims;
                let x = grid.position(Location::Cell, c % nx, (c / nx) % ny, c / (nx * ny));
                sheets.iter().zip(&balls).any(|(s, (centre, radius))| (x - centre).norm() < radius + reach && s.signed_distance(&x) < reach)
            })
            .collect();
        Sheets { sheets, near }
    }

    pub fn is_empty(&self) -> bool {
        self.sheets.is_empty()
    }

    /// Whether a sheet may pass between `x` and a sample of its kernel.
    fn near(&self, grid: &Grid, x: &Vec3) -> bool {
        let [i, j, k] = grid.cell_of(x);
        self.near[i + grid.dims[0] * (j + grid.dims[1] * k)]
    }

    /// Whether the segment from `a` to `b` passes through a sheet.
    fn crosses(&self, a: &Vec3, b: &Vec3) -> bool {
        self.sheets.iter().any(|s| s.crosses(a, b))
    }

    /// For each particle, the corners of its kernel box at `loc` ([`kernel_box`]) across a
    /// sheet from it, a bit each: what [`super::raster::rasterize`] skips.
    pub fn blocked(&self, grid: &Grid, loc: Location, positions: &[Vec3]) -> Vec<u8> {
        let o = loc.offset();
        positions
            .par_iter()
            .map(|x| {
                if !self.near(grid, x) {
                    return 0;
                }
                let (base, _) = kernel_box(grid, loc, x);
                self.corners(x, |c| grid.origin + Vec3::from_fn(|a, _| (base[a] + ((c >> a) & 1) as isize) as Real + o[a]) * grid.dx)
            })
            .collect()
    }

    /// The corners `c` (0 to 7) whose sample `sample(c)` lies across a sheet from `x`, a bit each.
    fn corners(&self, x: &Vec3, sample: impl Fn(usize) -> Vec3) -> u8 {
        (0..8).filter(|&c| self.crosses(x, &sample(c))).fold(0, |bits, c| bits | 1 << c)
    }

    /// The velocities of the `fields` at `x` from the samples on its side of every sheet; where
    /// a sheet leaves none on its side, the nearest sheet's own velocity.
    pub fn velocities<const N: usize>(&self, grid: &Grid, fields: [&MacVelocity; N], x: &Vec3) -> [Vec3; N] {
        if self.is_empty() || !self.near(grid, x) {
            return fields.map(|u| u.at(grid, x));
        }
        let mut velocities = [Vec3::zeros(); N];
        for a in 0..3 {
            let loc = Location::Face(a);
            let (base, _) = grid.box_around(fields[0].faces[a].dims(), loc, x);
            let kept = !self.corners(x, |c| grid.position(loc, base[0] + (c & 1), base[1] + ((c >> 1) & 1), base[2] + (c >> 2)));
            for (v, u) in velocities.iter_mut().zip(&fields) {
                v[a] = grid.interpolate_where(&u.faces[a], loc, x, kept).unwrap_or_else(|| self.nearest(x).velocity_at(x)[a]);
            }
        }
        velocities
    }

    /// The sheet nearest `x`.
    fn nearest(&self, x: &Vec3) -> &'a dyn CoupledSolid {
        self.sheets.iter().map(|&s| (s, s.signed_distance(x))).min_by(|p, q| p.1.total_cmp(&q.1)).expect("a sheet is near").0
    }
}
