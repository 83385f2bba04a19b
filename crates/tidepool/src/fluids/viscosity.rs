//! Implicit viscosity on the MAC grid, shared by the grid liquids (Shinar, sec. 4.3.2, eq. 4.9).
//!
//! With the dynamic viscosity `mu` constant in the liquid, the viscous force per volume is
//! `mu Laplacian(u)`, so each velocity component diffuses on its own. Over a substep `dt`
//! backward Euler gives, per component,
//!
//! `(I - dt nu L) u** = u*`, `nu = mu / rho`,
//!
//! with `L` the seven-point Laplacian over the faces that carry liquid: a symmetric
//! positive-definite system per axis, solved by MIC(0)-preconditioned CG before the pressure
//! projection (which then removes the divergence the diffusion leaves). Each of a face's six
//! neighbours on the same axis enters `L` as:
//! - another liquid face: coupled;
//! - air: nothing (no flux across the free surface, the traction-free condition without its
//!   pressure term);
//! - a wall or obstacle: a no-slip liquid meets it at rest, `u = 0` where the solid's surface
//!   cuts the link, a fraction `theta` of a cell away (a domain wall half a cell from the
//!   faces along it, the solid's signed distance elsewhere), which adds `dt nu / (theta dx^2)`
//!   to the diagonal (the ghost value `u (theta - 1) / theta` across the wall); a free-slip
//!   liquid keeps only the link to a closed face on its own axis (the normal velocity is zero
//!   there either way);
//! - a body: nothing. Bodies are slip surfaces to the viscous solve and feel the viscous
//!   liquid only through the pressure solve after it, which underestimates their drag
//!   (`docs/methods/viscosity.md`).

use crate::grid::{Array3, Grid, Location};
use crate::math::Real;
use crate::solids::{Boundary, StaticSolids};
use rayon::prelude::*;
use tidepool_linalg::{pcg, Mic0, PcgParams, Stencil7};

/// A wall nearer a face than this share of a cell is taken this far (bounds the diagonal).
const WALL_THETA_MIN: Real = 0.1;

/// How a viscous liquid meets walls and obstacles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Slip {
    /// The liquid sticks to walls and obstacles: zero velocity at their surface.
    #[default]
    NoSlip,
    /// The liquid slides along walls and obstacles; only its normal velocity is held.
    FreeSlip,
}

/// The liquid's viscosity and how its solve stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viscosity {
    /// Kinematic viscosity `nu = mu / rho` (m^2/s); 0 is an inviscid liquid.
    pub kinematic: Real,
    /// Wall condition.
    pub slip: Slip,
    /// Stopping rule of each component's solve.
    pub solve: PcgParams,
}

impl Viscosity {
    /// Whether the liquid has any viscosity.
    pub fn is_on(&self) -> bool {
        self.kinematic > 0.0
    }
}

/// What the three solves of [`diffuse`] did together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffusionReport {
    /// CG iterations over the three components.
    pub iterations: usize,
    /// Whether every component's solve met its tolerance.
    pub converged: bool,
}

impl Default for DiffusionReport {
    /// No solve: nothing to converge.
    fn default() -> Self {
        DiffusionReport { iterations: 0, converged: true }
    }
}

/// One neighbour link of a liquid face in the viscous Laplacian.
enum Link {
    /// Another liquid face.
    Liquid,
    /// A wall or obstacle surface a fraction of a cell away, where the velocity is zero.
    Wall(Real),
    /// Air or a body: no flux.
    Free,
}

/// Diffuses the face velocities `u` over `dt` ([module documentation](self)): `liquid[a]` marks
/// the faces on axis `a` that carry liquid (not closed by `statics`, not inside a body); the
/// rest keep their values.
pub fn diffuse(grid: &Grid, statics: &StaticSolids, liquid: &[Array3<bool>; 3], viscosity: &Viscosity, dt: Real, u: &mut [Array3<Real>; 3]) -> DiffusionReport {
    let mut report = DiffusionReport::default();
    let alpha = dt * viscosity.kinematic / (grid.dx * grid.dx);
    for a in 0..3 {
        let matrix = assemble(grid, statics, a, &liquid[a], viscosity.slip, alpha);
        let b: Vec<Real> = u[a].as_slice().iter().zip(liquid[a].as_slice()).map(|(&u, &l)| if l { u } else { 0.0 }).collect();
        let mut x = b.clone();
        let info = pcg(&matrix, &Mic0::new(&matrix), &b, &mut x, viscosity.solve);
        report.iterations += info.iterations;
        report.converged &= info.converged;
        u[a].as_mut_slice().par_iter_mut().zip(x.par_iter()).zip(liquid[a].as_slice().par_iter()).for_each(|((u, x), &l)| {
            if l {
                *u = *x;
            }
        });
    }
    report
}

/// The faces on one axis as the viscous Laplacian sees them.
struct AxisFaces<'a> {
    grid: &'a Grid,
    statics: &'a StaticSolids,
    /// The axis.
    a: usize,
    /// Which of its faces carry liquid.
    liquid: &'a Array3<bool>,
    slip: Slip,
}

/// The matrix `I - alpha L` over the liquid faces on axis `a` (rows of other faces inactive).
fn assemble(grid: &Grid, statics: &StaticSolids, a: usize, liquid: &Array3<bool>, slip: Slip, alpha: Real) -> Stencil7 {
    let faces = AxisFaces { grid, statics, a, liquid, slip };
    let rows: Vec<(Real, [Real; 3])> = (0..liquid.as_slice().len())
        .into_par_iter()
        .map(|c| {
            if !liquid.as_slice()[c] {
                return (0.0, [0.0; 3]);
            }
            let face = liquid.coords(c);
            let (mut diag, mut plus) = (1.0, [0.0; 3]);
            for b in 0..3 {
                for up in [false, true] {
                    match faces.link(face, b, up) {
                        Link::Liquid => {
                            diag += alpha;
                            if up {
                                plus[b] = -alpha;
                            }
                        }
                        Link::Wall(theta) => diag += alpha / theta,
                        Link::Free => {}
                    }
                }
            }
            (diag, plus)
        })
        .collect();
    let mut matrix = Stencil7::zeros(liquid.dims());
    for (c, (diag, plus)) in rows.into_iter().enumerate() {
        matrix.diag[c] = diag;
        for b in 0..3 {
            matrix.plus[b][c] = plus[b];
        }
    }
    matrix
}

impl AxisFaces<'_> {
    /// The link from liquid face `face` to its neighbour along `b` (towards `+b` when `up`).
    fn link(&self, face: [usize; 3], b: usize, up: bool) -> Link {
        let (a, dims) = (self.a, self.liquid.dims());
        let beyond = if up { face[b] + 1 >= dims[b] } else { face[b] == 0 };
        if beyond {
            // Only across a side parallel to the axis: a face on a side of its own axis is
            // liquid only where that side is open, and nothing lies beyond it.
            let wall = b != a && self.statics.boundaries[b][up as usize] == Boundary::Wall;
            return if wall && self.slip == Slip::NoSlip { Link::Wall(0.5) } else { Link::Free };
        }
        let mut other = face;
        other[b] = if up { face[b] + 1 } else { face[b] - 1 };
        if self.liquid.get(other[0], other[1], other[2]) {
            return Link::Liquid;
        }
        if self.statics.face_open[a].get(other[0], other[1], other[2]) > 0.0 || (b != a && self.slip == Slip::FreeSlip) {
            return Link::Free;
        }
        // A closed face: on a domain side of its own axis (a cell away), or at an obstacle,
        // whose surface cuts the link where the obstacles' distance crosses zero.
        match (obstacle_distance(self.grid, self.statics, a, other), obstacle_distance(self.grid, self.statics, a, face)) {
            (Some(inside), Some(outside)) if inside < 0.0 && outside > 0.0 => Link::Wall((outside / (outside - inside)).clamp(WALL_THETA_MIN, 1.0)),
            _ => Link::Wall(1.0),
        }
    }
}

/// The obstacles' signed distance at a face on axis `a`, the mean of its two cells' (`None` on
/// a domain side, with one cell).
fn obstacle_distance(grid: &Grid, statics: &StaticSolids, a: usize, face: [usize; 3]) -> Option<Real> {
    let [lower, upper] = face_cells(grid, a, face);
    let (lower, upper) = (lower?, upper?);
    Some(0.5 * (statics.phi_cells.get(lower[0], lower[1], lower[2]) + statics.phi_cells.get(upper[0], upper[1], upper[2])))
}

/// The cells on either side of face `face` on axis `a` that lie in the grid.
fn face_cells(grid: &Grid, a: usize, face: [usize; 3]) -> [Option<[usize; 3]>; 2] {
    let mut lower = face;
    lower[a] = lower[a].wrapping_sub(1);
    [(face[a] > 0).then_some(lower), (face[a] < grid.dims[a]).then_some(face)]
}

/// The faces on each axis that carry the level-set liquid: a liquid cell (`phi < 0`) on either
/// side, open to flow (`statics`), and not inside a body (`solids_with_bodies`, the signed
/// distance to obstacles and bodies at cell centres, averaged over the face's two cells).
pub fn liquid_faces(grid: &Grid, phi: &Array3<Real>, statics: &StaticSolids, solids_with_bodies: Option<&Array3<Real>>) -> [Array3<bool>; 3] {
    [0, 1, 2].map(|a| {
        let mut faces = Array3::filled(grid.dims_at(Location::Face(a)), false);
        faces.par_fill_with(|i, j, k| {
            if statics.face_open[a].get(i, j, k) <= 0.0 {
                return false;
            }
            let cells = face_cells(grid, a, [i, j, k]);
            let cells = cells.iter().flatten();
            let in_body = solids_with_bodies.is_some_and(|s| cells.clone().map(|c| s.get(c[0], c[1], c[2])).sum::<Real>() < 0.0);
            !in_body && cells.clone().any(|c| phi.get(c[0], c[1], c[2]) < 0.0)
        });
        faces
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Vec3;

    /// A box of `dims` cells of 1 cm with walls on the y sides and open x and z sides.
    fn channel(dims: [usize; 3]) -> (Grid, StaticSolids) {
        let grid = Grid { dims, dx: 0.01, origin: Vec3::zeros() };
        let open = [Boundary::Open, Boundary::Open];
        let statics = StaticSolids::new(&grid, [open, [Boundary::Wall, Boundary::Wall], open], Vec::new());
        (grid, statics)
    }

    fn params(kinematic: Real, slip: Slip) -> Viscosity {
        Viscosity { kinematic, slip, solve: PcgParams { tolerance: 1e-12, max_iterations: 1000 } }
    }

    /// The viscous matrix (symmetric by its storage) has strictly diagonally dominant rows, so
    /// it is positive definite, and couples liquid faces only, with walls, an obstacle and air
    /// about.
    #[test]
    fn viscous_matrix_is_positive_definite_over_the_liquid_faces() {
        let grid = Grid { dims: [10, 8, 6], dx: 0.01, origin: Vec3::zeros() };
        let rock = crate::geometry::Shape::Sphere { center: Vec3::new(0.05, 0.03, 0.03), radius: 0.02 };
        let statics = StaticSolids::new(&grid, Default::default(), vec![("rock".into(), rock)]);
        let phi = grid.sample_fn(Location::Cell, |x| x.y - 0.055);
        let liquid = liquid_faces(&grid, &phi, &statics, None);
        for slip in [Slip::NoSlip, Slip::FreeSlip] {
            for a in 0..3 {
                let m = assemble(&grid, &statics, a, &liquid[a], slip, 3.0);
                let n = m.diag.len();
                let mut rows = 0;
                for c in 0..n {
                    if m.diag[c] == 0.0 {
                        continue;
                    }
                    rows += 1;
                    let off: Real = m.neighbours(c).iter().flatten().map(|&o| m.entry(c, o).abs()).sum();
                    assert!(m.diag[c] > off, "axis {a}, row {c}: diagonal {} against {off}", m.diag[c]);
                    for o in m.neighbours(c).iter().flatten() {
                        assert!(m.entry(c, *o) == 0.0 || m.diag[*o] > 0.0, "axis {a}: row {c} couples to an inactive row");
                    }
                }
                assert!(rows > 0);
            }
        }
    }

    /// Plane Poiseuille flow: a liquid between no-slip walls 16 cells apart, pushed along x by
    /// a uniform force `g`, reaches `u = g y (H - y) / (2 nu)`: stepped to steady state, every
    /// face within 0.5% of the profile's peak.
    #[test]
    fn body_force_between_no_slip_walls_reaches_the_poiseuille_profile() {
        let (grid, statics) = channel([4, 16, 3]);
        let phi = grid.zeros(Location::Cell).par_map(|_, _, _, _| -1.0);
        let liquid = liquid_faces(&grid, &phi, &statics, None);
        let (nu, g, h) = (1e-3, 0.5, 0.16);
        let mut u = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        let dt = 0.5;
        for _ in 0..400 {
            u[0].as_mut_slice().iter_mut().for_each(|u| *u += g * dt);
            let report = diffuse(&grid, &statics, &liquid, &params(nu, Slip::NoSlip), dt, &mut u);
            assert!(report.converged);
        }
        let peak = g * h * h / (8.0 * nu);
        for j in 0..16 {
            let y = (j as Real + 0.5) * grid.dx;
            let expected = g * y * (h - y) / (2.0 * nu);
            let found = u[0].get(2, j, 1);
            assert!((found - expected).abs() < 5e-3 * peak, "y = {y}: {found} m/s, expected {expected}");
        }
        assert!(u[1].as_slice().iter().chain(u[2].as_slice()).all(|&v| v == 0.0), "the other components moved");
    }

    /// Free-slip walls hold nothing back: a uniform flow along the walls keeps its speed, while
    /// between no-slip walls it decays.
    #[test]
    fn free_slip_walls_leave_a_uniform_flow_alone() {
        let (grid, statics) = channel([4, 8, 3]);
        let phi = grid.zeros(Location::Cell).par_map(|_, _, _, _| -1.0);
        let liquid = liquid_faces(&grid, &phi, &statics, None);
        for (slip, kept) in [(Slip::FreeSlip, true), (Slip::NoSlip, false)] {
            let mut u = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)).par_map(|_, _, _, _| if a == 0 { 1.0 } else { 0.0 }));
            diffuse(&grid, &statics, &liquid, &params(1e-3, slip), 0.1, &mut u);
            let mean = u[0].as_slice().iter().sum::<Real>() / u[0].as_slice().len() as Real;
            assert_eq!((mean - 1.0).abs() < 1e-9, kept, "{slip:?}: mean speed {mean}");
        }
    }
}
