//! The pressure systems of FLIP on the cells: `A p = -s div(v_f grad p)` over the faces that
//! carry pressure (Gerszewski eq. 3.6, with `s = dt` for the velocity solve and `s = 1` for the
//! density correction), assembled as a seven-point matrix; the face flux divergence; and the
//! gradient update `rho_f u -= v_f grad p` (eq. 3.8).

use crate::grid::{Array3, Grid};
use crate::math::Real;
use crate::solids::Boundary;
use rayon::prelude::*;
use tidepool_linalg::Stencil7;

/// A pressure system over the cells.
pub struct System {
    /// The matrix; rows of cells that are not unknowns are zero.
    pub matrix: Stencil7,
    /// Cells with a pressure unknown.
    pub unknown: Vec<bool>,
    /// Faces whose flux the pressure changes, per axis.
    pub faces: [Vec<bool>; 3],
}

/// Whether face `idx` of axis `a` lies on a closed domain wall.
pub fn on_closed_wall(grid: &Grid, boundaries: &[[Boundary; 2]; 3], a: usize, idx: [usize; 3]) -> bool {
    (idx[a] == 0 && boundaries[a][0] == Boundary::Wall) || (idx[a] == grid.dims[a] && boundaries[a][1] == Boundary::Wall)
}

/// The two cells beside face `idx` of axis `a` (`None` outside the grid).
pub fn face_cells(grid: &Grid, a: usize, idx: [usize; 3]) -> [Option<usize>; 2] {
    let [nx, ny, _] = grid.dims;
    let cell = |i: [usize; 3]| i[0] + nx * (i[1] + ny * i[2]);
    let mut lower = idx;
    let below = (idx[a] > 0).then(|| {
        lower[a] -= 1;
        cell(lower)
    });
    let above = (idx[a] < grid.dims[a]).then(|| cell(idx));
    [below, above]
}

impl System {
    /// Assembles `A` with factor `scale` over the faces with open fraction `v_f > 0` that are
    /// not closed walls, touch a `candidate` cell and pass `face_ok(axis, face index)`. A
    /// candidate without any such face gets no unknown. Across an open domain side or next to
    /// a cell without an unknown the pressure is zero.
    pub fn assemble(
        grid: &Grid,
        boundaries: &[[Boundary; 2]; 3],
        fraction: &[Array3<Real>; 3],
        candidate: &[bool],
        face_ok: impl Fn(usize, usize) -> bool + Sync,
        scale: Real,
    ) -> System {
        let coefficient = scale / (grid.dx * grid.dx);
        // Each face's weight `scale v_f / dx^2`, zero where it carries no pressure.
        let weight: [Array3<Real>; 3] = [0, 1, 2].map(|a| {
            fraction[a].par_map(|i, j, k, v| {
                let idx = [i, j, k];
                let f = fraction[a].index(i, j, k);
                let used = v > 0.0 && !on_closed_wall(grid, boundaries, a, idx) && face_cells(grid, a, idx).iter().flatten().any(|&c| candidate[c]) && face_ok(a, f);
                if used {
                    coefficient * v
                } else {
                    0.0
                }
            })
        });
        // A candidate's diagonal: the weights of its six faces; its coupling to the next cell
        // along each axis: minus their shared face's, where both are candidates.
        let diag = per_cell(grid, |c, idx| if candidate[c] { (0..3).map(|a| weight[a].get(idx[0], idx[1], idx[2]) + upper_face(&weight[a], a, idx)).sum() } else { 0.0 });
        let plus = [0, 1, 2].map(|a| {
            let stride = [1, grid.dims[0], grid.dims[0] * grid.dims[1]][a];
            per_cell(grid, |c, idx| if idx[a] + 1 < grid.dims[a] && candidate[c] && candidate[c + stride] { -upper_face(&weight[a], a, idx) } else { 0.0 })
        });
        let matrix = Stencil7 { dims: grid.dims, diag, plus, floating: Vec::new() };
        let faces = weight.each_ref().map(|w| w.as_slice().par_iter().map(|w| *w > 0.0).collect());
        let unknown: Vec<bool> = candidate.iter().zip(&matrix.diag).map(|(c, d)| *c && *d > 0.0).collect();
        System { matrix, unknown, faces }
    }

    /// `rho_f u -= v_f grad p` on the system's faces: `u` changes by `-v_f grad p / density`
    /// (`p` is zero where there is no unknown).
    pub fn apply_gradient(&self, grid: &Grid, fraction: &[Array3<Real>; 3], p: &[Real], density: &[Array3<Real>; 3], u: &mut [Array3<Real>; 3]) {
        let value = |c: Option<usize>| c.filter(|&c| self.unknown[c]).map_or(0.0, |c| p[c]);
        for (a, faces) in u.iter_mut().enumerate() {
            let dims = faces.dims();
            faces.par_update(|i, j, k, v| {
                let f = i + dims[0] * (j + dims[1] * k);
                if self.faces[a][f] {
                    let [lo, hi] = face_cells(grid, a, [i, j, k]);
                    let gradient = (value(hi) - value(lo)) / grid.dx;
                    *v -= fraction[a].as_slice()[f] * gradient / density[a].as_slice()[f];
                }
            });
        }
    }
}

/// The face above cell `idx` along axis `a` (index `idx + e_a` in the face array).
fn upper_face(faces: &Array3<Real>, a: usize, idx: [usize; 3]) -> Real {
    let mut up = idx;
    up[a] += 1;
    faces.get(up[0], up[1], up[2])
}

/// `f(cell index, [i, j, k])` at every cell, in parallel, in index order.
fn per_cell(grid: &Grid, f: impl Fn(usize, [usize; 3]) -> Real + Sync) -> Vec<Real> {
    let [nx, ny, _] = grid.dims;
    (0..grid.cell_count()).into_par_iter().map(|c| f(c, [c % nx, (c / nx) % ny, c / (nx * ny)])).collect()
}

/// The divergence of a face flux at every cell, `sum over faces (F_+ - F_-) / dx`.
pub fn divergence(grid: &Grid, flux: &[Array3<Real>; 3]) -> Vec<Real> {
    per_cell(grid, |_, idx| (0..3).map(|a| upper_face(&flux[a], a, idx) - flux[a].get(idx[0], idx[1], idx[2])).sum::<Real>() / grid.dx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Vec3;
    use tidepool_linalg::LinearOperator;

    /// The assembled matrix is symmetric, and `A p` equals `-s div(v_f grad p)` computed from
    /// the face gradient update with unit density: the system and the update agree, which is
    /// what makes the solved divergence the applied one.
    #[test]
    fn matrix_is_symmetric_and_matches_the_gradient_update() {
        let grid = Grid { dims: [5, 4, 3], dx: 0.5, origin: Vec3::zeros() };
        let boundaries = [[Boundary::Wall, Boundary::Open], [Boundary::Wall, Boundary::Wall], [Boundary::Open, Boundary::Wall]];
        let fraction = [0, 1, 2].map(|a| {
            let mut f = grid.zeros(crate::grid::Location::Face(a));
            f.par_fill_with(|i, j, k| 0.3 + 0.7 * (((i * 7 + j * 3 + k * 5 + a) % 5) as Real / 4.0));
            f
        });
        let candidate: Vec<bool> = (0..grid.cell_count()).map(|c| c % 7 != 3).collect();
        let dt = 0.1;
        let system = System::assemble(&grid, &boundaries, &fraction, &candidate, |_, _| true, dt);
        let n = grid.cell_count();
        for c in 0..n {
            for d in 0..n {
                assert!((system.matrix.entry(c, d) - system.matrix.entry(d, c)).abs() < 1e-12);
            }
        }
        let p: Vec<Real> = (0..n).map(|c| if system.unknown[c] { ((c * 37) % 11) as Real - 5.0 } else { 0.0 }).collect();
        let mut ap = vec![0.0; n];
        system.matrix.apply(&p, &mut ap);
        let ones = [0, 1, 2].map(|a| {
            let mut f = grid.zeros(crate::grid::Location::Face(a));
            f.par_fill_with(|_, _, _| 1.0);
            f
        });
        let mut u = [0, 1, 2].map(|a| grid.zeros(crate::grid::Location::Face(a)));
        system.apply_gradient(&grid, &fraction, &p, &ones, &mut u);
        let div = divergence(&grid, &u);
        for c in (0..n).filter(|&c| system.unknown[c]) {
            assert!((ap[c] - dt * div[c]).abs() < 1e-9, "cell {c}: A p = {}, dt div = {}", ap[c], dt * div[c]);
        }
    }
}
