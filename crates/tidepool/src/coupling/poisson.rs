//! Pressure projection with a sharp free surface and cut-cell solids.
//!
//! With `beta = 1/rho` constant in the liquid and the scaled pressure `q = p dt / (rho dx)`, the
//! discrete Poisson equation (Shinar 2008 eq. 4.4; Lu, Jin, Fedkiw eq. 23) for every liquid cell
//! `c` reads
//!
//! `sum_f A_f (q_c - q_n(f)) / theta_f = - sum_f A_f u*_f . n_f`
//!
//! over its six faces `f`: `A_f` is the open area fraction of the face (0 where a wall or
//! obstacle blocks it, fractional where an obstacle surface cuts it), `n(f)` the neighbouring
//! cell and `n_f` the outward normal. Where `n` is air, the ghost fluid method places `q = 0` on
//! the interface at the fraction `theta_f = phi_c / (phi_c - phi_n)` of the way to `n` (Shinar eq.
//! 4.8 with a vacuum on the far side), which keeps the free-surface condition second-order
//! accurate; `theta_f = 1` otherwise. Under surface tension the interface carries the
//! capillary pressure `sigma kappa` instead of zero (sec. 4.5), which moves to the right-hand
//! side and leaves the matrix as it is. The matrix is symmetric positive (semi-)definite; the
//! solve, by PCG with MIC(0), and the update `u_f = u*_f - (q_n - q_c) / theta_f` (eq. 24) are
//! done together with the moving solids in [`crate::coupling::project`].

use crate::grid::{Array3, Grid, MacVelocity};
use crate::math::Real;
use crate::solids::StaticSolids;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tidepool_linalg::Stencil7;

/// Smallest ghost-fluid interface fraction (avoids unbounded coefficients).
pub(crate) const THETA_MIN: Real = 0.01;

/// What the pressure solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectionReport {
    /// Liquid cells (pressure unknowns).
    pub unknowns: usize,
    /// PCG iterations.
    pub iterations: usize,
    /// Final relative residual `||b - A q|| / ||b||`.
    pub residual: Real,
    /// Whether the tolerance was met.
    pub converged: bool,
    /// Wall-clock seconds of the solve's parts.
    pub seconds: SolveSeconds,
}

/// Wall-clock seconds of a coupled solve's parts (for `tidepool bench`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SolveSeconds {
    /// Classifying cells and faces and assembling the system.
    pub assembly: f64,
    /// Setting up the preconditioner (multigrid levels, MIC(0)) or MPRGP's norm estimate.
    pub setup: f64,
    /// The iterations.
    pub iterations: f64,
    /// Updating the velocity, the solids and the pressure from the solution.
    pub update: f64,
}

impl SolveSeconds {
    /// Adds another solve's seconds.
    pub fn accumulate(&mut self, other: &SolveSeconds) {
        self.assembly += other.assembly;
        self.setup += other.setup;
        self.iterations += other.iterations;
        self.update += other.update;
    }
}

/// How the cell across an open face of an unknown cell enters the Poisson system.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Across {
    /// Another unknown: coupled.
    Unknown,
    /// The scaled pressure `value` a fraction `theta` of the way to the neighbour's centre:
    /// zero at a free surface, or the capillary pressure jump under surface tension.
    Dirichlet { theta: Real, value: Real },
    /// A face a moving solid reaches into: its flux counts in the divergence, but its
    /// velocity is one of the coupled solve's constraints ([`crate::coupling`]), so it adds
    /// nothing to the pressure block and its velocity is not updated here.
    Coupled,
}

/// The cell across face `(axis, side)` of cell `c`, if inside the domain.
pub(crate) fn across(grid: &Grid, c: [usize; 3], axis: usize, side: usize) -> Option<[usize; 3]> {
    let mut n = c;
    if side == 0 {
        n[axis] = c[axis].checked_sub(1)?;
    } else {
        n[axis] += 1;
        if n[axis] >= grid.dims[axis] {
            return None;
        }
    }
    Some(n)
}

/// Face index of face `(axis, side)` of cell `c`.
pub(crate) fn face_of(c: [usize; 3], axis: usize, side: usize) -> [usize; 3] {
    let mut f = c;
    f[axis] += side;
    f
}

/// Interface fraction between liquid value `a` and air value `b`.
fn theta(a: Real, b: Real) -> Real {
    (a / (a - b)).clamp(THETA_MIN, 1.0)
}

/// Liquid cells: inside the level set and not sealed off by solids.
pub fn liquid_cells(phi: &Array3<Real>, solids: &StaticSolids) -> Array3<bool> {
    phi.par_map(|i, j, k, v| {
        v < 0.0
            && (0..3).any(|a| {
                (0..2).any(|s| {
                    let f = face_of([i, j, k], a, s);
                    solids.face_open[a].get(f[0], f[1], f[2]) > 0.0
                })
            })
    })
}

/// The free-surface classification of the liquid solve: liquid neighbours are unknowns, air
/// and open domain sides are ghost-fluid Dirichlet conditions. Under surface tension,
/// `capillary` holds `sigma kappa` at the cell centres, scaled as the pressure: the liquid's
/// pressure at the surface is the air's (zero) plus that jump, interpolated to the surface
/// between the two cells (Shinar 2008 sec. 4.5: `kappa_G = theta kappa_n + (1 - theta)
/// kappa_c`).
pub(crate) fn liquid_neighbour<'a>(
    phi: &'a Array3<Real>,
    liquid: &'a Array3<bool>,
    capillary: Option<&'a Array3<Real>>,
) -> impl Fn([usize; 3], usize, usize, Option<[usize; 3]>) -> Across + Sync + 'a {
    move |c, _, _, n| match n {
        Some(n) if liquid.get(n[0], n[1], n[2]) => Across::Unknown,
        Some(n) => {
            let theta = theta(phi.get(c[0], c[1], c[2]), phi.get(n[0], n[1], n[2]));
            let value = capillary.map_or(0.0, |jump| (1.0 - theta) * jump.get(c[0], c[1], c[2]) + theta * jump.get(n[0], n[1], n[2]));
            Across::Dirichlet { theta, value }
        }
        // An open domain side: zero pressure on the boundary face, half a cell away.
        None => Across::Dirichlet { theta: 0.5, value: 0.0 },
    }
}

/// Assembles `A q = b` for the `unknown` cells: `b` is minus the net outflow of `velocity`,
/// plus `divergence * dx` (a uniform target divergence in 1/s).
pub(crate) fn assemble_with<F>(grid: &Grid, solids: &StaticSolids, velocity: &MacVelocity, unknown: &Array3<bool>, divergence: Real, classify: F) -> (Stencil7, Vec<Real>)
where
    F: Fn([usize; 3], usize, usize, Option<[usize; 3]>) -> Across + Sync,
{
    // Each unknown's row (its diagonal, its couplings to the next cells, its right-hand side),
    // in parallel: a row depends only on the cell's own faces.
    let rows: Vec<(Real, [Real; 3], Real)> = (0..grid.cell_count())
        .into_par_iter()
        .map(|c| {
            let mut row = (0.0, [0.0; 3], 0.0);
            if !unknown.as_slice()[c] {
                return row;
            }
            let idx = unknown.coords(c);
            row.2 = divergence * grid.dx;
            for axis in 0..3 {
                for side in 0..2 {
                    let f = face_of(idx, axis, side);
                    let open = solids.face_open[axis].get(f[0], f[1], f[2]);
                    if open == 0.0 {
                        continue;
                    }
                    let outward = if side == 1 { 1.0 } else { -1.0 };
                    row.2 -= outward * open * velocity.faces[axis].get(f[0], f[1], f[2]);
                    match classify(idx, axis, side, across(grid, idx, axis, side)) {
                        Across::Unknown => {
                            row.0 += open;
                            if side == 1 {
                                row.1[axis] = -open;
                            }
                        }
                        Across::Dirichlet { theta, value } => {
                            row.0 += open / theta;
                            row.2 += open * value / theta;
                        }
                        Across::Coupled => {}
                    }
                }
            }
            row
        })
        .collect();
    let plus = [0, 1, 2].map(|axis| rows.par_iter().map(|r| r.1[axis]).collect());
    let mut a = Stencil7 { dims: grid.dims, diag: rows.par_iter().map(|r| r.0).collect(), plus, floating: Vec::new() };
    let b = rows.par_iter().map(|r| r.2).collect();
    a.floating = a.floating_sets(unknown.as_slice());
    (a, b)
}

/// Assembles the Poisson matrix and right-hand side for the liquid cells.
pub fn assemble(grid: &Grid, phi: &Array3<Real>, liquid: &Array3<bool>, solids: &StaticSolids, velocity: &MacVelocity) -> (Stencil7, Vec<Real>) {
    assemble_with(grid, solids, velocity, liquid, 0.0, liquid_neighbour(phi, liquid, None))
}

/// Subtracts the gradient of `q` from the faces of unknown cells (ghost values at Dirichlet
/// neighbours), except coupled faces. Returns which faces changed.
pub(crate) fn apply_gradient<F>(grid: &Grid, solids: &StaticSolids, velocity: &mut MacVelocity, q: &Array3<Real>, unknown: &Array3<bool>, classify: F) -> [Array3<bool>; 3]
where
    F: Fn([usize; 3], usize, usize, Option<[usize; 3]>) -> Across + Sync,
{
    [0, 1, 2].map(|axis| {
        let faces = &mut velocity.faces[axis];
        let open = &solids.face_open[axis];
        let is_unknown = |c: Option<[usize; 3]>| c.is_some_and(|c| unknown.get(c[0], c[1], c[2]));
        let q_at = |c: [usize; 3]| q.get(c[0], c[1], c[2]);
        // Pressure difference (upper - lower) across face `f`, where the face is updated.
        let jump = |f: [usize; 3]| -> Option<Real> {
            if open.get(f[0], f[1], f[2]) == 0.0 {
                return None;
            }
            let lower = f[axis].checked_sub(1).map(|l| {
                let mut c = f;
                c[axis] = l;
                c
            });
            let upper = (f[axis] < grid.dims[axis]).then_some(f);
            match (is_unknown(lower), is_unknown(upper)) {
                (true, _) => match classify(lower?, axis, 1, upper) {
                    Across::Unknown => Some(q_at(upper?) - q_at(lower?)),
                    Across::Dirichlet { theta, value } => Some((value - q_at(lower?)) / theta),
                    Across::Coupled => None,
                },
                (false, true) => match classify(upper?, axis, 0, lower) {
                    Across::Dirichlet { theta, value } => Some((q_at(upper?) - value) / theta),
                    Across::Coupled => None,
                    Across::Unknown => unreachable!("an unknown neighbour is an unknown cell"),
                },
                (false, false) => None,
            }
        };
        let [nx, ny, _] = faces.dims();
        let mut changed = Array3::filled(faces.dims(), false);
        faces.as_mut_slice().par_chunks_mut(nx * ny).zip(changed.as_mut_slice().par_chunks_mut(nx * ny)).enumerate().for_each(|(k, (us, marks))| {
            for j in 0..ny {
                for i in 0..nx {
                    if let Some(jump) = jump([i, j, k]) {
                        us[i + nx * j] -= jump;
                        marks[i + nx * j] = true;
                    }
                }
            }
        });
        changed
    })
}
