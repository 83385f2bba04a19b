//! Monolithic solid–fluid coupling: one symmetric positive-definite solve for the liquid's
//! pressure and the impulses between liquid and solids (Robinson-Mosher, Shinar, Fedkiw 2011;
//! Lu, Jin, Fedkiw eq. 36–45).
//!
//! Cells whose centre lies inside a solid are not pressure unknowns. Every face between a
//! liquid cell and a solid cell is a coupled face `f` with an impulse `lambda_f` that the solid
//! gives the liquid along the face's axis (and the liquid gives back to the solid). The solid's
//! surface crosses the segment between the two cell centres a fraction `theta_f` of the way from
//! the liquid cell (from the solid's signed distance at both, as the ghost fluid method places
//! the free surface): the liquid fills that share of the face's dual cell, whose mass is then
//! `beta_f = rho dx^3 open_f theta_f` (`theta_f = 1` on other faces), and the pressure's boundary
//! condition sits on the solid's surface. With the divergence `D` (face areas times outward
//! signs), `W` the selection of coupled faces, `J` the solids' velocities at those faces and
//! `K` their impulse response (`J K J^T` is "velocity changes at the faces per impulses at the
//! faces"), the liquid velocity `beta u = beta u* + D^T P + W^T lambda` must be divergence free
//! and equal the solid's velocity `J V` on coupled faces, with `M V = M V* - J^T W^T lambda`:
//!
//! ```text
//! [ D b^-1 D^T   D b^-1 W^T               ] [ P      ]   [ -D u*          ]
//! [ W b^-1 D^T   W b^-1 W^T + W J K J^T W^T ] [ lambda ] = [ -W (u* - J V*) ]
//! ```
//!
//! (`P` is pressure times `dt`). It is symmetric, and positive definite when the liquid has a
//! free surface: `B b^-1 B^T` with `B = [D; W]` plus a positive semi-definite block. Scaled by
//! `q = P / (rho dx)`, `mu = lambda / (rho dx^3)` and rows divided by `rho dx^3`, the pressure
//! block is the liquid's own Poisson matrix ([`crate::fluids::eulerian::projection`], the solid
//! side of a coupled face entering it as zero pressure at the solid's surface), the
//! off-diagonal entries are the outward signs `+-1` over `theta_f`, and the impulse block is
//! `1/(open_f theta_f)` plus `rho dx^3 J K J^T`. It is
//! solved by PCG preconditioned with MIC(0) on the pressure block and the diagonal of the
//! impulse block.
//!
//! The solve is written against [`CoupledSolid`], so every kind of solid joins it the same way.

use crate::fluids::eulerian::projection::{across, apply_gradient, assemble_with, face_of, floating_regions, liquid_cells, liquid_neighbour, Across, ProjectionReport, THETA_MIN};
use crate::grid::{Array3, Grid, Location, MacVelocity};
use crate::math::{Real, Vec3};
use crate::solids::rigid::RigidBody;
use crate::solids::StaticSolids;
use std::collections::HashMap;
use std::sync::Mutex;
use tidepool_linalg::{pcg, LinearOperator, Mic0, PcgParams, Preconditioner, Stencil7};

/// What the coupled solve needs from a solid.
pub trait CoupledSolid: Sync {
    /// Signed distance from `x` to the solid's surface (negative inside).
    fn signed_distance(&self, x: &Vec3) -> Real;
    /// A ball (centre, radius) containing the solid.
    fn bounding_sphere(&self) -> (Vec3, Real);
    /// Velocity of the solid's material at `x`.
    fn velocity_at(&self, x: &Vec3) -> Vec3;
    /// The velocity changes at `points` that the impulses `impulses` applied at those points
    /// would cause (`J K J^T`), written to `changes`.
    fn impulse_response(&self, points: &[Vec3], impulses: &[Vec3], changes: &mut [Vec3]);
    /// Applies the impulses `impulses` at `points`.
    fn apply_impulses(&mut self, points: &[Vec3], impulses: &[Vec3]);
}

impl CoupledSolid for RigidBody {
    fn signed_distance(&self, x: &Vec3) -> Real {
        self.signed_distance_at(&self.pose(), x)
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        (self.position, self.bounding_radius)
    }

    fn velocity_at(&self, x: &Vec3) -> Vec3 {
        self.point_velocity(x)
    }

    fn impulse_response(&self, points: &[Vec3], impulses: &[Vec3], changes: &mut [Vec3]) {
        if !self.is_dynamic() {
            changes.fill(Vec3::zeros());
            return;
        }
        let total: Vec3 = impulses.iter().sum();
        let torque: Vec3 = points.iter().zip(impulses).map(|(x, j)| (x - self.position).cross(j)).sum();
        let (dv, dw) = (total / self.mass, self.inverse_inertia() * torque);
        for (change, x) in changes.iter_mut().zip(points) {
            *change = dv + dw.cross(&(x - self.position));
        }
    }

    fn apply_impulses(&mut self, points: &[Vec3], impulses: &[Vec3]) {
        for (x, j) in points.iter().zip(impulses) {
            self.apply_impulse(j, x);
        }
    }
}

/// A face between a liquid cell and a solid cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoupledFace {
    /// Face axis.
    pub axis: usize,
    /// Face index on that axis.
    pub index: [usize; 3],
    /// The liquid cell (flat index) and its outward sign through the face (+1: the face is
    /// its upper face).
    pub cell: (usize, Real),
    /// The solid whose cell it borders.
    pub solid: usize,
    /// Open (not statically blocked) area fraction of the face.
    pub open: Real,
    /// Where the solid's surface crosses from the liquid cell's centre to the solid cell's, as
    /// a fraction of the way: the liquid's share of the face's dual cell.
    pub theta: Real,
    /// The solid cell (flat index).
    pub solid_cell: usize,
    /// Face centre (m).
    pub point: Vec3,
}

/// The solid containing each cell centre (the innermost one where solids overlap); nothing is
/// stored without solids.
struct SolidCells(Option<Array3<Option<usize>>>);

impl SolidCells {
    fn new(grid: &Grid, solids: &[&mut dyn CoupledSolid]) -> Self {
        if solids.is_empty() {
            return SolidCells(None);
        }
        let spheres: Vec<(Vec3, Real)> = solids.iter().map(|s| s.bounding_sphere()).collect();
        let mut owner = Array3::filled(grid.dims, None);
        owner.par_fill_with(|i, j, k| {
            let x = grid.position(Location::Cell, i, j, k);
            let near = |s: &usize| (x - spheres[*s].0).norm() <= spheres[*s].1;
            let inside = (0..solids.len()).filter(near).map(|s| (s, solids[s].signed_distance(&x))).filter(|(_, d)| *d < 0.0);
            inside.min_by(|a, b| a.1.total_cmp(&b.1)).map(|(s, _)| s)
        });
        SolidCells(Some(owner))
    }

    fn owner(&self, c: [usize; 3]) -> Option<usize> {
        self.0.as_ref().and_then(|owner| owner.get(c[0], c[1], c[2]))
    }
}

/// The liquid's share of the face between liquid cell `c` and solid cell `n`: where the solid's
/// surface crosses the segment between their centres, found by bisection on the solid's signed
/// distance (exact for any shape, unlike interpolating the two centres' distances, which is
/// wrong wherever the nearest surface point is on another side of the solid).
fn share(grid: &Grid, solid: &dyn CoupledSolid, c: [usize; 3], n: [usize; 3]) -> Real {
    let (a, b) = (grid.position(Location::Cell, c[0], c[1], c[2]), grid.position(Location::Cell, n[0], n[1], n[2]));
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if solid.signed_distance(&(a + mid * (b - a))) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).clamp(THETA_MIN, 1.0)
}

/// The coupled faces around the unknown cells.
fn coupled_faces(
    grid: &Grid,
    static_solids: &StaticSolids,
    unknown: &Array3<bool>,
    solids: &[&mut dyn CoupledSolid],
    cells: &SolidCells,
) -> Vec<CoupledFace> {
    let mut faces = Vec::new();
    for c in 0..grid.cell_count() {
        if !unknown.as_slice()[c] {
            continue;
        }
        let idx = unknown.coords(c);
        for axis in 0..3 {
            for side in 0..2 {
                let Some(n) = across(grid, idx, axis, side) else { continue };
                let Some(solid) = cells.owner(n) else { continue };
                let f = face_of(idx, axis, side);
                let open = static_solids.face_open[axis].get(f[0], f[1], f[2]);
                if open > 0.0 {
                    let point = grid.position(Location::Face(axis), f[0], f[1], f[2]);
                    let sign = if side == 1 { 1.0 } else { -1.0 };
                    let theta = share(grid, &*solids[solid], idx, n);
                    let solid_cell = unknown.index(n[0], n[1], n[2]);
                    faces.push(CoupledFace { axis, index: f, cell: (c, sign), solid, open, theta, solid_cell, point });
                }
            }
        }
    }
    faces
}

/// A vector of the coupled system's nullspace: one on a liquid region's cells, and the given
/// values on coupled faces (by index).
type NullVector = (Vec<u32>, Vec<(usize, Real)>);

/// The scaled coupled system as an operator on `[q (one per grid cell); mu (one per coupled
/// face)]`.
pub struct CoupledSystem<'a, 's> {
    pressure: Stencil7,
    faces: Vec<CoupledFace>,
    /// Per solid: the indices of its coupled faces.
    by_solid: Vec<Vec<usize>>,
    solids: &'a [&'s mut dyn CoupledSolid],
    /// `rho dx^3`: the mass of liquid in one cell.
    cell_mass: Real,
    /// The system's nullspace: per liquid region without a free surface (a closed tank filled
    /// to the lid), one on its cells and `-sign open` on its coupled faces (a uniform pressure,
    /// which the solids' faces balance and which moves nothing).
    nullspace: Vec<NullVector>,
}

impl CoupledSystem<'_, '_> {
    /// Adds `rho dx^3 J K J^T mu` to `y` (the impulse block's solid part).
    fn add_solid_response(&self, mu: &[Real], y: &mut [Real]) {
        for (s, faces) in self.by_solid.iter().enumerate() {
            if faces.is_empty() {
                continue;
            }
            let points: Vec<Vec3> = faces.iter().map(|&f| self.faces[f].point).collect();
            let impulses: Vec<Vec3> = faces.iter().map(|&f| self.cell_mass * mu[f] * Vec3::ith(self.faces[f].axis, 1.0)).collect();
            let mut changes = vec![Vec3::zeros(); faces.len()];
            self.solids[s].impulse_response(&points, &impulses, &mut changes);
            for (&f, change) in faces.iter().zip(&changes) {
                y[f] += change[self.faces[f].axis];
            }
        }
    }

    /// Diagonal of the impulse block.
    fn impulse_diagonal(&self) -> Vec<Real> {
        self.faces
            .iter()
            .map(|f| {
                let mut change = [Vec3::zeros()];
                let unit = Vec3::ith(f.axis, self.cell_mass);
                self.solids[f.solid].impulse_response(&[f.point], &[unit], &mut change);
                1.0 / (f.open * f.theta) + change[0][f.axis]
            })
            .collect()
    }
}

impl LinearOperator for CoupledSystem<'_, '_> {
    fn len(&self) -> usize {
        self.pressure.diag.len() + self.faces.len()
    }

    fn project_nullspace(&self, x: &mut [Real]) {
        let n = self.pressure.diag.len();
        for (cells, faces) in &self.nullspace {
            let dot = cells.iter().map(|&c| x[c as usize]).sum::<Real>() + faces.iter().map(|&(f, v)| v * x[n + f]).sum::<Real>();
            let norm2 = cells.len() as Real + faces.iter().map(|(_, v)| v * v).sum::<Real>();
            let scale = dot / norm2;
            for &c in cells {
                x[c as usize] -= scale;
            }
            for &(f, v) in faces {
                x[n + f] -= scale * v;
            }
        }
    }

    fn apply(&self, x: &[Real], y: &mut [Real]) {
        let n = self.pressure.diag.len();
        let (q, mu) = x.split_at(n);
        let (yq, ymu) = y.split_at_mut(n);
        self.pressure.apply(q, yq);
        for (f, face) in self.faces.iter().enumerate() {
            let (c, sign) = face.cell;
            yq[c] += sign * mu[f] / face.theta;
            ymu[f] = (sign * q[c] + mu[f] / face.open) / face.theta;
        }
        self.add_solid_response(mu, ymu);
    }
}

/// The preconditioner, block diagonal after a change of variables. Each coupled face's impulse
/// and its liquid cell's pressure are tightly bound: their 2 x 2 block
/// `(1/theta) [open, s; s, 1/open]` (`s` the outward sign) is singular. With
/// `nu_f = mu_f + s open q_c` (the impulse beyond what the cell's pressure gives) the block
/// separates into a pressure block that sees the solid's faces as walls (`open/theta` taken
/// off its diagonal: the Schur complement of the impulses' diagonal) and `1/(open theta)` for
/// `nu`. So `M^-1 = T diag(MIC(0)(S)^-1, D^-1) T^T` with `T` the map `(q, nu) -> (q, mu)`,
/// `mu_f = nu_f - s open q_c`; the solids' low-rank part is left out.
struct CoupledPreconditioner<'a> {
    pressure: Mic0<'a>,
    faces: &'a [CoupledFace],
    impulse_diagonal: Vec<Real>,
    /// Room for the transformed pressure residual (used only with coupled faces).
    scratch: Mutex<Vec<Real>>,
}

impl<'a> CoupledPreconditioner<'a> {
    fn new(pressure: &'a Stencil7, faces: &'a [CoupledFace], impulse_diagonal: Vec<Real>) -> Self {
        let scratch = Mutex::new(if faces.is_empty() { Vec::new() } else { vec![0.0; pressure.diag.len()] });
        CoupledPreconditioner { pressure: Mic0::new(pressure), faces, impulse_diagonal, scratch }
    }
}

impl Preconditioner for CoupledPreconditioner<'_> {
    fn apply(&self, r: &[Real], z: &mut [Real]) {
        let n = r.len() - self.faces.len();
        if self.faces.is_empty() {
            self.pressure.apply(r, z);
            return;
        }
        let mut rq = self.scratch.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rq.copy_from_slice(&r[..n]);
        for (f, face) in self.faces.iter().enumerate() {
            let (c, sign) = face.cell;
            rq[c] -= sign * face.open * r[n + f];
        }
        self.pressure.apply(&rq, &mut z[..n]);
        let (zq, zmu) = z.split_at_mut(n);
        for (f, face) in self.faces.iter().enumerate() {
            let (c, sign) = face.cell;
            zmu[f] = r[n + f] / self.impulse_diagonal[f] - sign * face.open * zq[c];
        }
    }
}

/// The pressure block with each coupled face's `open/theta` taken off its liquid cell's
/// diagonal: the solid's faces seen as walls (see [`CoupledPreconditioner`]). A cell whose
/// every face is coupled keeps its diagonal (it would have none left).
fn pressure_without_faces(pressure: &Stencil7, faces: &[CoupledFace]) -> Stencil7 {
    let mut walls = pressure.clone();
    for f in faces {
        walls.diag[f.cell.0] -= f.open / f.theta;
    }
    for (reduced, full) in walls.diag.iter_mut().zip(&pressure.diag) {
        if *reduced < 1e-9 * full {
            *reduced = *full;
        }
    }
    walls
}

/// What the coupled solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CouplingReport {
    /// The pressure solve's figures (unknowns counts pressure and impulse unknowns).
    pub projection: ProjectionReport,
    /// Coupled faces.
    pub faces: usize,
    /// Total impulse the solids gave the liquid through the coupled faces (N s); the solids
    /// received exactly its opposite.
    pub impulse_on_liquid: Vec3,
}

/// How the cell across a face of an unknown cell enters the pressure block: a solid cell as
/// zero pressure on the solid's surface (at the coupled face's `theta`), the rest as in the
/// plain free-surface projection.
fn classify<'a>(
    phi: &'a Array3<Real>,
    unknown: &'a Array3<bool>,
    faces: &'a [CoupledFace],
) -> impl Fn([usize; 3], Option<[usize; 3]>) -> Across + Sync + 'a {
    let theta: HashMap<(usize, usize), Real> = faces.iter().map(|f| ((f.cell.0, f.solid_cell), f.theta)).collect();
    let base = liquid_neighbour(phi, unknown);
    move |c, n| {
        let pair = n.map(|n| (unknown.index(c[0], c[1], c[2]), unknown.index(n[0], n[1], n[2])));
        match pair.and_then(|pair| theta.get(&pair)) {
            Some(&theta) => Across::Dirichlet(theta),
            None => base(c, n),
        }
    }
}

/// The unknown cells, the coupled system and its right-hand side.
struct Assembled<'a, 's> {
    unknown: Array3<bool>,
    system: CoupledSystem<'a, 's>,
    rhs: Vec<Real>,
}

#[allow(clippy::too_many_arguments)]
fn assemble<'a, 's>(
    grid: &Grid,
    phi: &Array3<Real>,
    static_solids: &StaticSolids,
    velocity: &MacVelocity,
    density: Real,
    divergence: Real,
    solids: &'a [&'s mut dyn CoupledSolid],
) -> Assembled<'a, 's> {
    let cells = SolidCells::new(grid, solids);
    let liquid = liquid_cells(phi, static_solids);
    let unknown = liquid.par_map(|i, j, k, l| l && cells.owner([i, j, k]).is_none());
    let faces = coupled_faces(grid, static_solids, &unknown, solids, &cells);
    let (pressure, mut rhs) = assemble_with(grid, static_solids, velocity, &unknown, divergence, classify(phi, &unknown, &faces));
    let candidates: Vec<NullVector> = if faces.is_empty() {
        pressure.floating.iter().map(|cells| (cells.clone(), Vec::new())).collect()
    } else {
        floating_regions(&pressure_without_faces(&pressure, &faces), &unknown)
            .into_iter()
            .map(|cells| {
                let members: std::collections::HashSet<u32> = cells.iter().copied().collect();
                let region_faces = faces.iter().enumerate().filter(|(_, f)| members.contains(&(f.cell.0 as u32))).map(|(i, f)| (i, -f.cell.1 * f.open)).collect();
                (cells, region_faces)
            })
            .collect()
    };
    rhs.extend(faces.iter().map(|f| {
        let u = velocity.faces[f.axis].get(f.index[0], f.index[1], f.index[2]);
        -(u - solids[f.solid].velocity_at(&f.point)[f.axis])
    }));
    let mut by_solid = vec![Vec::new(); solids.len()];
    for (i, f) in faces.iter().enumerate() {
        by_solid[f.solid].push(i);
    }
    let cell_mass = density * grid.dx.powi(3);
    let mut system = CoupledSystem { pressure, faces, by_solid, solids, cell_mass, nullspace: Vec::new() };
    // A region's uniform pressure is in the nullspace only if it pushes no solid as a whole
    // (a solid touching a wall or the region's edge is pushed): keep the candidates the
    // operator maps to zero.
    let n = system.len();
    let no_faces = system.faces.is_empty();
    system.nullspace = candidates
        .into_iter()
        .filter(|(cells, region_faces)| {
            if no_faces {
                return true;
            }
            let mut v = vec![0.0; n];
            for &c in cells {
                v[c as usize] = 1.0;
            }
            for &(f, value) in region_faces {
                v[grid.cell_count() + f] = value;
            }
            let mut y = vec![0.0; n];
            system.apply(&v, &mut y);
            tidepool_linalg::reduce::norm2(&y) <= 1e-9 * tidepool_linalg::reduce::norm2(&v)
        })
        .collect();
    Assembled { unknown, system, rhs }
}

/// Projects `velocity` together with `solids`: afterwards the liquid is divergence free (up
/// to the uniform `divergence`, see [`crate::fluids::eulerian::VolumeControl`]), its velocity on
/// every coupled face equals the solid's, and the solids have received the impulses the
/// liquid's pressure puts on them. `pressure` (Pa) is the initial guess on entry and the new
/// pressure on exit. Returns which faces received a pressure update and a report.
#[allow(clippy::too_many_arguments)]
pub fn project(
    grid: &Grid,
    phi: &Array3<Real>,
    static_solids: &StaticSolids,
    velocity: &mut MacVelocity,
    pressure: &mut Array3<Real>,
    density: Real,
    dt: Real,
    divergence: Real,
    params: PcgParams,
    solids: &mut [&mut dyn CoupledSolid],
) -> ([Array3<bool>; 3], CouplingReport) {
    let to_scaled = dt / (density * grid.dx);
    let Assembled { unknown, system, rhs } = assemble(grid, phi, static_solids, velocity, density, divergence, solids);
    let mut solution: Vec<Real> = pressure
        .as_slice()
        .iter()
        .zip(unknown.as_slice())
        .map(|(p, &l)| if l { p * to_scaled } else { 0.0 })
        .collect();
    solution.resize(system.len(), 0.0);
    let info = {
        let schur = (!system.faces.is_empty()).then(|| pressure_without_faces(&system.pressure, &system.faces));
        let preconditioner = CoupledPreconditioner::new(schur.as_ref().unwrap_or(&system.pressure), &system.faces, system.impulse_diagonal());
        pcg(&system, &preconditioner, &rhs, &mut solution, params)
    };
    let CoupledSystem { faces, cell_mass, .. } = system;
    let n = grid.cell_count();
    let q = Array3::from_vec(grid.dims, solution[..n].to_vec());
    let mu = &solution[n..];
    let valid = apply_gradient(grid, static_solids, velocity, &q, &unknown, classify(phi, &unknown, &faces));
    let mut impulse_on_liquid = Vec3::zeros();
    let mut per_solid: Vec<(Vec<Vec3>, Vec<Vec3>)> = vec![(Vec::new(), Vec::new()); solids.len()];
    for (f, face) in faces.iter().enumerate() {
        let [i, j, k] = face.index;
        let u = velocity.faces[face.axis].get(i, j, k);
        velocity.faces[face.axis].set(i, j, k, u + mu[f] / (face.open * face.theta));
        let impulse = Vec3::ith(face.axis, cell_mass * mu[f]);
        impulse_on_liquid += impulse;
        per_solid[face.solid].0.push(face.point);
        per_solid[face.solid].1.push(-impulse);
    }
    for (solid, (points, impulses)) in solids.iter_mut().zip(&per_solid) {
        solid.apply_impulses(points, impulses);
    }
    let to_pascal = 1.0 / to_scaled;
    *pressure = q.par_map(|i, j, k, v| if unknown.get(i, j, k) { v * to_pascal } else { 0.0 });
    let report = CouplingReport {
        projection: ProjectionReport {
            unknowns: unknown.as_slice().iter().filter(|&&u| u).count() + faces.len(),
            iterations: info.iterations,
            residual: info.relative_residual,
            converged: info.converged,
        },
        faces: faces.len(),
        impulse_on_liquid,
    };
    (valid, report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Shape;
    use crate::scene::Boundary;
    use crate::solids::rigid::{BodyKind, Material};
    use nalgebra::DMatrix;

    const G: Real = 9.81;
    const DT: Real = 0.01;

    /// A closed 1 m tank, 8 cells across, filled to 0.55 m, with a cube of side 0.25 m and
    /// density `density` fully under water on whole cells; gravity already added for `DT`.
    struct Tank {
        grid: Grid,
        phi: Array3<Real>,
        statics: StaticSolids,
        velocity: MacVelocity,
        body: RigidBody,
    }

    fn tank(density: Real) -> Tank {
        tank_with_cube_at(density, 0.125)
    }

    /// The tank with the cube's bottom at height `bottom`.
    fn tank_with_cube_at(density: Real, bottom: Real) -> Tank {
        let grid = Grid { dims: [8; 3], dx: 0.125, origin: Vec3::zeros() };
        let phi = grid.sample_fn(Location::Cell, |x| x.y - 0.55);
        let statics = StaticSolids::new(&grid, [[Boundary::Wall; 2]; 3], Vec::new());
        let mut velocity = MacVelocity::zeros(&grid);
        velocity.faces[1].as_mut_slice().iter_mut().for_each(|v| *v = -G * DT);
        let cube = Shape::Box { min: Vec3::new(0.375, bottom, 0.375), max: Vec3::new(0.625, bottom + 0.25, 0.625) };
        let mut body = RigidBody::new("cube", BodyKind::Dynamic, &cube, density, Material { restitution: 0.0, friction: 0.5 }, 0.05);
        body.velocity.y = -G * DT;
        Tank { grid, phi, statics, velocity, body }
    }

    /// The system of a small tank as a dense matrix over its unknowns.
    fn dense(t: &mut Tank) -> DMatrix<Real> {
        let solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
        let a = assemble(&t.grid, &t.phi, &t.statics, &t.velocity, 1000.0, 0.0, &solids);
        let n = t.grid.cell_count();
        let rows: Vec<usize> = (0..n).filter(|&c| a.unknown.as_slice()[c]).chain(n..a.system.len()).collect();
        assert!(a.system.faces.len() == 24, "a cube of 2x2x2 cells has 24 coupled faces, found {}", a.system.faces.len());
        let mut m = DMatrix::zeros(rows.len(), rows.len());
        let (mut x, mut y) = (vec![0.0; a.system.len()], vec![0.0; a.system.len()]);
        for (col, &c) in rows.iter().enumerate() {
            x[c] = 1.0;
            a.system.apply(&x, &mut y);
            x[c] = 0.0;
            for (row, &r) in rows.iter().enumerate() {
                m[(row, col)] = y[r];
            }
        }
        m
    }

    #[test]
    fn coupled_system_is_symmetric_positive_definite() {
        let m = dense(&mut tank(700.0));
        let asymmetry = (&m - m.transpose()).amax();
        assert!(asymmetry <= 1e-14 * m.amax(), "asymmetry {asymmetry}");
        assert!(m.clone().cholesky().is_some(), "not positive definite");
        // A light body makes the impulse block's solid part larger, a static one removes it:
        // still positive definite.
        assert!(dense(&mut tank(1.0)).cholesky().is_some());
    }

    /// One coupled solve: the liquid leaves every liquid cell divergence free and moves with
    /// the cube on its faces; the impulses on liquid and cube are equal and opposite.
    fn solve(t: &mut Tank) -> [Array3<bool>; 3] {
        let mut pressure = t.grid.zeros(Location::Cell);
        let params = PcgParams { tolerance: 1e-10, max_iterations: 500 };
        let momentum_before = t.body.mass * t.body.velocity;
        let mut solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
        let (valid, report) = project(&t.grid, &t.phi, &t.statics, &mut t.velocity, &mut pressure, 1000.0, DT, 0.0, params, &mut solids);
        assert!(report.projection.converged);
        let received = t.body.mass * t.body.velocity - momentum_before;
        assert!((received + report.impulse_on_liquid).norm() <= 1e-12 * received.norm().max(1e-12));
        let (grid, v) = (&t.grid, &t.velocity);
        for c in 0..grid.cell_count() {
            let [i, j, k] = t.phi.coords(c);
            let inside_cube = (3..5).contains(&i) && (1..3).contains(&j) && (3..5).contains(&k);
            if t.phi.get(i, j, k) < 0.0 && !inside_cube {
                let div = (0..3)
                    .map(|a| {
                        let mut up = [i, j, k];
                        up[a] += 1;
                        let flux = |f: [usize; 3]| t.statics.face_open[a].get(f[0], f[1], f[2]) * v.faces[a].get(f[0], f[1], f[2]);
                        flux(up) - flux([i, j, k])
                    })
                    .sum::<Real>();
                assert!(div.abs() < 1e-8, "divergence {div} in cell {:?}", [i, j, k]);
            }
        }
        // The liquid moves with the cube across its bottom face.
        let bottom = grid.position(Location::Face(1), 3, 1, 3);
        assert!((v.faces[1].get(3, 1, 3) - t.body.point_velocity(&bottom).y).abs() < 1e-8);
        valid
    }

    #[test]
    fn a_body_of_the_liquids_density_is_held_by_the_pressure() {
        // On whole cells, and with its top and bottom between cell centres (where the pressure
        // condition sits at the cube's surface, a fraction of the way between centres).
        for bottom in [0.125, 0.15] {
            held(tank_with_cube_at(1000.0, bottom));
        }
    }

    fn held(mut t: Tank) {
        let valid = solve(&mut t);
        // Buoyancy cancels weight: the cube and the liquid stay at rest.
        assert!(t.body.velocity.norm() < 1e-6 * G * DT, "cube moves at {:?}", t.body.velocity);
        assert!(t.body.angular_velocity().norm() < 1e-6);
        for (faces, valid) in t.velocity.faces.iter().zip(&valid) {
            for (u, &v) in faces.as_slice().iter().zip(valid.as_slice()) {
                assert!(!v || u.abs() < 1e-6 * G * DT, "liquid moves at {u} m/s");
            }
        }
    }

    /// A closed tank filled to the lid has a uniform pressure in the coupled system's
    /// nullspace; the solve projects it out and converges, with or without a body in it, even
    /// when the volume control asks for a divergence a closed full tank cannot have (an
    /// inconsistent right-hand side, on which conjugate gradients would stall).
    #[test]
    fn a_closed_full_tank_converges() {
        let mut t = tank(1000.0);
        t.phi = t.phi.par_map(|_, _, _, _| -1.0);
        held(t);
        let mut t = tank(1000.0);
        t.phi = t.phi.par_map(|_, _, _, _| -1.0);
        let mut pressure = t.grid.zeros(Location::Cell);
        let params = PcgParams { tolerance: 1e-10, max_iterations: 500 };
        let (_, report) = project(&t.grid, &t.phi, &t.statics, &mut t.velocity, &mut pressure, 1000.0, DT, 0.01, params, &mut []);
        assert!(report.projection.converged, "{report:?}");
    }

    #[test]
    fn heavy_and_light_bodies_accelerate_less_than_without_added_mass() {
        // Released from rest, a body accelerates at g (rho_s - rho) / (rho_s + C rho) with an
        // added-mass coefficient C > 0: less than the g (rho_s - rho) / rho_s it would have
        // without moving the liquid around it. C depends on the geometry only: the same for
        // both densities.
        let mut coefficients = Vec::new();
        for density in [500.0, 2000.0] {
            let mut t = tank(density);
            solve(&mut t);
            let a = t.body.velocity.y / DT;
            let without_added_mass = G * (1000.0 - density) / density;
            assert!(a * without_added_mass > 0.0, "density {density}: acceleration {a} has the wrong sign");
            assert!(a.abs() < 0.9 * without_added_mass.abs(), "density {density}: acceleration {a} vs {without_added_mass}");
            let c = (G * (density - 1000.0) / -a - density) / 1000.0;
            assert!((0.2..2.0).contains(&c), "density {density}: added-mass coefficient {c}");
            coefficients.push(c);
        }
        assert!((coefficients[0] - coefficients[1]).abs() < 1e-6, "added-mass coefficients {coefficients:?}");
    }
}
