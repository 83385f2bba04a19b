//! The pressure systems of FLIP on the cells: `A p = -s div(v_f grad p)` over the faces that
//! carry pressure (Gerszewski eq. 3.6, with `s = dt` for the velocity solve and `s = 1` for the
//! density correction), assembled as a seven-point matrix; the face flux divergence; and the
//! gradient update `rho_f u -= v_f grad p` (eq. 3.8).

use crate::grid::{Array3, Grid};
use crate::math::Real;
use crate::solids::Boundary;
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
    pub fn assemble(grid: &Grid, boundaries: &[[Boundary; 2]; 3], fraction: &[Array3<Real>; 3], candidate: &[bool], face_ok: impl Fn(usize, usize) -> bool, scale: Real) -> System {
        let mut matrix = Stencil7::zeros(grid.dims);
        let coefficient = scale / (grid.dx * grid.dx);
        let faces = [0, 1, 2].map(|a| {
            let mut used = vec![false; fraction[a].as_slice().len()];
            for (f, flag) in used.iter_mut().enumerate() {
                let idx = fraction[a].coords(f);
                let v = fraction[a].as_slice()[f];
                let wall = on_closed_wall(grid, boundaries, a, idx);
                let cells = face_cells(grid, a, idx);
                if v <= 0.0 || wall || !cells.iter().flatten().any(|&c| candidate[c]) || !face_ok(a, f) {
                    continue;
                }
                *flag = true;
                let w = coefficient * v;
                for c in cells.iter().flatten().filter(|&&c| candidate[c]) {
                    matrix.diag[*c] += w;
                }
                if let [Some(lo), Some(hi)] = cells {
                    if candidate[lo] && candidate[hi] {
                        matrix.plus[a][lo] = -w;
                    }
                }
            }
            used
        });
        let unknown: Vec<bool> = candidate.iter().zip(&matrix.diag).map(|(c, d)| *c && *d > 0.0).collect();
        System { matrix, unknown, faces }
    }

    /// `rho_f u -= v_f grad p` on the system's faces: `u` changes by `-v_f grad p / density`
    /// (`p` is zero where there is no unknown).
    pub fn apply_gradient(&self, grid: &Grid, fraction: &[Array3<Real>; 3], p: &[Real], density: &[Array3<Real>; 3], u: &mut [Array3<Real>; 3]) {
        for a in 0..3 {
            for (f, used) in self.faces[a].iter().enumerate() {
                if !used {
                    continue;
                }
                let idx = fraction[a].coords(f);
                let value = |c: Option<usize>| c.filter(|&c| self.unknown[c]).map_or(0.0, |c| p[c]);
                let [lo, hi] = face_cells(grid, a, idx);
                let gradient = (value(hi) - value(lo)) / grid.dx;
                u[a].as_mut_slice()[f] -= fraction[a].as_slice()[f] * gradient / density[a].as_slice()[f];
            }
        }
    }
}

/// The divergence of a face flux at every cell, `sum over faces (F_+ - F_-) / dx`.
pub fn divergence(grid: &Grid, flux: &[Array3<Real>; 3]) -> Vec<Real> {
    let [nx, ny, nz] = grid.dims;
    let mut out = vec![0.0; nx * ny * nz];
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let mut d = 0.0;
                for (a, f) in flux.iter().enumerate() {
                    let mut up = [i, j, k];
                    up[a] += 1;
                    d += f.get(up[0], up[1], up[2]) - f.get(i, j, k);
                }
                out[i + nx * (j + ny * k)] = d / grid.dx;
            }
        }
    }
    out
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
