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
//!
//! A liquid of several phases ([`PhaseView`], [`Media`]) scales `q` by a reference density and
//! weights each face by the reference over the density across it (`beta^` of Shinar eq. 4.8
//! between two phases); between two phases under tension the neighbour's pressure is taken with
//! the capillary jump added, which again moves to the right-hand side.

use crate::grid::level_set::curvature;
use crate::grid::{Array3, Grid, MacVelocity};
use crate::math::Real;
use crate::solids::StaticSolids;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tidepool_linalg::Stencil7;

/// Smallest ghost-fluid interface fraction (avoids unbounded coefficients).
pub(crate) const THETA_MIN: Real = 0.01;

/// What the pressure solve did.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
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

impl Default for ProjectionReport {
    /// No solve: nothing to converge.
    fn default() -> Self {
        ProjectionReport { unknowns: 0, iterations: 0, residual: 0.0, converged: true, seconds: SolveSeconds::default() }
    }
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
    /// Another unknown, coupled with the face's `weight`: the reference density over the
    /// density across the face (1 in a single liquid; [`Media::face`] between phases). Seen
    /// from this cell's phase, the neighbour's pressure is its own plus `jump` (the capillary
    /// jump between two liquids; 0 within one).
    Unknown { weight: Real, jump: Real },
    /// The scaled pressure `value` a fraction `theta` of the way to the neighbour's centre:
    /// zero at a free surface, or the capillary pressure jump under surface tension; `weight`
    /// as for an unknown, with this cell's phase's density.
    Dirichlet { theta: Real, value: Real, weight: Real },
    /// A face a moving solid reaches into: its flux counts in the divergence, but its
    /// velocity is one of the coupled solve's constraints ([`crate::coupling`]), so it adds
    /// nothing to the pressure block and its velocity is not updated here.
    Coupled,
}

/// The cell across face `(axis, side)` of cell `c`, if inside the domain.
pub(crate) fn across(grid: &Grid, c: [usize; 3], axis: usize, side: usize) -> Option<[usize; 3]> {
    // Element by element, so that the index stays in registers.
    let inside = if side == 0 { c[axis] > 0 } else { c[axis] + 1 < grid.dims[axis] };
    inside.then(|| std::array::from_fn(|a| if a == axis { c[a] + 2 * side - 1 } else { c[a] }))
}

/// Face index of face `(axis, side)` of cell `c`.
pub(crate) fn face_of(c: [usize; 3], axis: usize, side: usize) -> [usize; 3] {
    std::array::from_fn(|a| if a == axis { c[a] + side } else { c[a] })
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

/// A liquid of one or more phases as the coupled solve takes it (Shinar 2008 sec. 4.3): each
/// phase's level set at cell centres (projected, so that at each cell exactly one is negative,
/// [`crate::fluids::multiphase`]), its density, and the surface tensions between phases and
/// against the air. A single liquid is one phase whose level set is the liquid's.
#[derive(Clone, Copy, Debug)]
pub struct PhaseView<'a> {
    /// Per phase: its level set (negative inside).
    pub phi: &'a [Array3<Real>],
    /// Per phase: its density (kg/m^3).
    pub density: &'a [Real],
    /// Between phases `a` and `b` of `n`: `tension[a * n + b]` (N/m; symmetric, or empty for
    /// none).
    pub tension: &'a [Real],
    /// Per phase: its surface tension against the air (N/m).
    pub air_tension: &'a [Real],
    /// Per phase: a divergence (1/s) imposed in its cells beside the solve's uniform one (its
    /// own volume control; empty for none).
    pub divergence: &'a [Real],
}

impl<'a> PhaseView<'a> {
    /// One liquid: its level set `phi`, `density` and surface tension against the air.
    pub fn single(phi: &'a Array3<Real>, density: &'a Real, air_tension: &'a Real) -> Self {
        PhaseView { phi: std::slice::from_ref(phi), density: std::slice::from_ref(density), tension: &[], air_tension: std::slice::from_ref(air_tension), divergence: &[] }
    }

    /// The phase at cell `(i, j, k)`: the one whose level set is smallest there (in the air
    /// the nearest).
    pub fn phase_at(&self, i: usize, j: usize, k: usize) -> usize {
        (0..self.phi.len()).min_by(|&a, &b| self.phi[a].get(i, j, k).total_cmp(&self.phi[b].get(i, j, k))).unwrap_or(0)
    }

    /// Each cell's phase ([`Self::phase_at`]) on `grid`.
    pub fn cell_phases(&self, grid: &Grid) -> Array3<u8> {
        if self.phi.len() == 1 {
            Array3::filled(grid.dims, 0u8)
        } else {
            self.phi[0].par_map(|i, j, k, _| self.phase_at(i, j, k) as u8)
        }
    }

    /// The surface tension between phases `a` and `b` (N/m).
    fn between(&self, a: usize, b: usize) -> Real {
        self.tension.get(a * self.phi.len() + b).copied().unwrap_or(0.0)
    }
}

/// What the pressure solve needs of the phases at each face: the density across it and the
/// capillary pressure jump between two liquids (Shinar 2008 sec. 4.3.1, 4.5).
pub(crate) struct Media<'a> {
    phases: PhaseView<'a>,
    /// Each cell's phase: the one whose level set is smallest there (in the air the nearest).
    phase: Array3<u8>,
    /// The reference density (that of the scaled pressure) over each phase's.
    weight: Vec<Real>,
    /// Per phase, where it has a surface tension against another phase and jumps are asked
    /// for: `kappa` of its level set.
    curvature: Vec<Option<Array3<Real>>>,
    /// Pascals to the solve's scaled pressure.
    to_scaled: Real,
}

impl<'a> Media<'a> {
    /// The media of `phases` for pressures scaled by `to_scaled` relative to the `reference`
    /// density; with `capillary` the interfaces between phases carry their capillary jumps.
    pub(crate) fn new(grid: &Grid, phases: PhaseView<'a>, reference: Real, to_scaled: Real, capillary: bool) -> Self {
        let n = phases.phi.len();
        let phase = phases.cell_phases(grid);
        let curvature = (0..n).map(|a| (capillary && (0..n).any(|b| phases.between(a, b) > 0.0)).then(|| curvature(grid, &phases.phi[a]))).collect();
        Media { phases, phase, weight: phases.density.iter().map(|rho| reference / rho).collect(), curvature, to_scaled }
    }

    fn phase_at(&self, c: [usize; 3]) -> usize {
        self.phase.get(c[0], c[1], c[2]) as usize
    }

    /// The divergence imposed in cell `c` (flat index) by its phase's volume control (1/s).
    pub(crate) fn divergence(&self, c: usize) -> Real {
        self.phases.divergence.get(self.phase.as_slice()[c] as usize).copied().unwrap_or(0.0)
    }

    /// The weight of the faces of cell `c` towards the air: its phase's.
    pub(crate) fn cell_weight(&self, c: [usize; 3]) -> Real {
        self.weight[self.phase_at(c)]
    }

    /// The face between the liquid cells `lower` and `upper`: its weight, the reference
    /// density over `rho^ = theta rho_a + (1 - theta) rho_b` where the interface between
    /// `lower`'s phase `a` and `upper`'s `b` crosses it a fraction `theta` of the way
    /// (`beta^` of Shinar eq. 4.8), and the jump `sigma_ab kappa_a` by which `a`'s pressure
    /// exceeds `b`'s at the interface, `kappa_a` of `a`'s level set interpolated there
    /// (sec. 4.5): seen from `lower`, `upper`'s pressure plus that jump.
    pub(crate) fn face(&self, lower: [usize; 3], upper: [usize; 3]) -> (Real, Real) {
        if let [weight] = self.weight[..] {
            return (weight, 0.0);
        }
        let (a, b) = (self.phase_at(lower), self.phase_at(upper));
        if a == b {
            return (self.weight[a], 0.0);
        }
        let phi = &self.phases.phi[a];
        let (inside, outside) = (phi.get(lower[0], lower[1], lower[2]), phi.get(upper[0], upper[1], upper[2]));
        let theta = if inside < outside { (inside / (inside - outside)).clamp(0.0, 1.0) } else { 0.5 };
        let weight = 1.0 / (theta / self.weight[a] + (1.0 - theta) / self.weight[b]);
        let jump = self.curvature[a].as_ref().map_or(0.0, |kappa| {
            let at_interface = (1.0 - theta) * kappa.get(lower[0], lower[1], lower[2]) + theta * kappa.get(upper[0], upper[1], upper[2]);
            self.phases.between(a, b) * at_interface * self.to_scaled
        });
        (weight, jump)
    }

    /// The capillary pressure jump against the air at each cell (scaled), `sigma kappa` with
    /// the cell's phase's surface tension against the air and the curvature of the liquid's
    /// surface `phi`; `None` where no phase has one.
    pub(crate) fn air_jump(&self, grid: &Grid, phi: &Array3<Real>) -> Option<Array3<Real>> {
        let sigma = self.phases.air_tension;
        sigma.iter().any(|&s| s > 0.0).then(|| curvature(grid, phi).par_map(|i, j, k, kappa| sigma[self.phase_at([i, j, k])] * kappa * self.to_scaled))
    }
}

/// The free-surface classification of the liquid solve: liquid neighbours are unknowns (across
/// the faces and jumps of the `media`), air and open domain sides are ghost-fluid Dirichlet
/// conditions. Under surface tension, `capillary` holds `sigma kappa` at the cell centres,
/// scaled as the pressure: the liquid's pressure at the surface is the air's (zero) plus that
/// jump, interpolated to the surface between the two cells (Shinar 2008 sec. 4.5: `kappa_G =
/// theta kappa_n + (1 - theta) kappa_c`).
pub(crate) fn liquid_neighbour<'a>(
    phi: &'a Array3<Real>,
    liquid: &'a Array3<bool>,
    capillary: Option<&'a Array3<Real>>,
    media: &'a Media,
) -> impl Fn([usize; 3], usize, usize, Option<[usize; 3]>) -> Across + Sync + 'a {
    move |c, _, side, n| match n {
        Some(n) if liquid.get(n[0], n[1], n[2]) => {
            if side == 1 {
                let (weight, jump) = media.face(c, n);
                Across::Unknown { weight, jump }
            } else {
                let (weight, jump) = media.face(n, c);
                Across::Unknown { weight, jump: -jump }
            }
        }
        Some(n) => {
            let theta = theta(phi.get(c[0], c[1], c[2]), phi.get(n[0], n[1], n[2]));
            let value = capillary.map_or(0.0, |jump| (1.0 - theta) * jump.get(c[0], c[1], c[2]) + theta * jump.get(n[0], n[1], n[2]));
            Across::Dirichlet { theta, value, weight: media.cell_weight(c) }
        }
        // An open domain side: zero pressure on the boundary face, half a cell away.
        None => Across::Dirichlet { theta: 0.5, value: 0.0, weight: media.cell_weight(c) },
    }
}

/// Assembles `A q = b` for the `unknown` cells: `b` is minus the net outflow of `velocity`,
/// plus `divergence(c) * dx` (the target divergence in 1/s of cell `c`, by flat index).
pub(crate) fn assemble_with<F>(
    grid: &Grid,
    solids: &StaticSolids,
    velocity: &MacVelocity,
    unknown: &Array3<bool>,
    divergence: impl Fn(usize) -> Real + Sync,
    classify: F,
) -> (Stencil7, Vec<Real>)
where
    F: Fn([usize; 3], usize, usize, Option<[usize; 3]>) -> Across + Sync,
{
    // Each unknown's row (its diagonal, its couplings to the next cells, its right-hand side),
    // written in parallel over z-slabs: a row depends only on the cell's own faces.
    let n = grid.cell_count();
    let [nx, ny, _] = grid.dims;
    let slab = (nx * ny).max(1);
    let (mut diag, mut plus, mut b) = (vec![0.0; n], [vec![0.0; n], vec![0.0; n], vec![0.0; n]], vec![0.0; n]);
    let [px, py, pz] = &mut plus;
    (diag.par_chunks_mut(slab), px.par_chunks_mut(slab), py.par_chunks_mut(slab), pz.par_chunks_mut(slab), b.par_chunks_mut(slab)).into_par_iter().enumerate().for_each(
        |(k, (diag, px, py, pz, b))| {
            let plus = [px, py, pz];
            for j in 0..ny {
                for i in 0..nx {
                    let (c, idx) = (i + nx * j, [i, j, k]);
                    if !unknown.get(i, j, k) {
                        continue;
                    }
                    let (mut d, mut rhs) = (0.0, divergence(c + slab * k) * grid.dx);
                    for axis in 0..3 {
                        for side in 0..2 {
                            let f = face_of(idx, axis, side);
                            let open = solids.face_open[axis].get(f[0], f[1], f[2]);
                            if open == 0.0 {
                                continue;
                            }
                            let outward = if side == 1 { 1.0 } else { -1.0 };
                            rhs -= outward * open * velocity.faces[axis].get(f[0], f[1], f[2]);
                            match classify(idx, axis, side, across(grid, idx, axis, side)) {
                                Across::Unknown { weight, jump } => {
                                    d += open * weight;
                                    rhs += open * weight * jump;
                                    if side == 1 {
                                        plus[axis][c] = -open * weight;
                                    }
                                }
                                Across::Dirichlet { theta, value, weight } => {
                                    d += open * weight / theta;
                                    rhs += open * weight * value / theta;
                                }
                                Across::Coupled => {}
                            }
                        }
                    }
                    (diag[c], b[c]) = (d, rhs);
                }
            }
        },
    );
    let mut a = Stencil7 { dims: grid.dims, diag, plus, floating: Vec::new() };
    a.floating = a.floating_sets(unknown.as_slice());
    (a, b)
}

/// Assembles the Poisson matrix and right-hand side for the liquid cells.
pub fn assemble(grid: &Grid, phi: &Array3<Real>, liquid: &Array3<bool>, solids: &StaticSolids, velocity: &MacVelocity) -> (Stencil7, Vec<Real>) {
    let (density, tension) = (1.0, 0.0);
    let media = Media::new(grid, PhaseView::single(phi, &density, &tension), density, 1.0, false);
    assemble_with(grid, solids, velocity, liquid, |_| 0.0, liquid_neighbour(phi, liquid, None, &media))
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
            let lower = across(grid, f, axis, 0);
            let upper = (f[axis] < grid.dims[axis]).then_some(f);
            match (is_unknown(lower), is_unknown(upper)) {
                (true, _) => match classify(lower?, axis, 1, upper) {
                    Across::Unknown { weight, jump } => Some(weight * (q_at(upper?) + jump - q_at(lower?))),
                    Across::Dirichlet { theta, value, weight } => Some(weight * (value - q_at(lower?)) / theta),
                    Across::Coupled => None,
                },
                (false, true) => match classify(upper?, axis, 0, lower) {
                    Across::Dirichlet { theta, value, weight } => Some(weight * (q_at(upper?) - value) / theta),
                    Across::Coupled => None,
                    Across::Unknown { .. } => unreachable!("an unknown neighbour is an unknown cell"),
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
