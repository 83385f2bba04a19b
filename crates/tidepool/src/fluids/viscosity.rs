//! Implicit viscosity on the MAC grid, shared by the grid liquids (Shinar, sec. 4.3.2, eq. 4.9).
//!
//! With the dynamic viscosity `mu` constant in the liquid, the viscous force per volume is
//! `mu Laplacian(u)`, so each velocity component diffuses on its own. Over a substep `dt`
//! backward Euler gives, per component,
//!
//! `(I - dt nu L) u** = u*`, `nu = mu / rho`,
//!
//! with `L` the seven-point Laplacian over the faces that carry liquid: a symmetric
//! positive-definite system per axis (joined by the bodies, below), solved by CG with each
//! axis' MIC(0) as preconditioner between two pressure projections (the pipeline's). Each of
//! a face's six neighbours on the same axis enters `L` as:
//! - another liquid face: coupled;
//! - air: nothing (no flux across the free surface, the traction-free condition without its
//!   pressure term);
//! - a wall or obstacle: a no-slip liquid meets it at rest, `u = 0` where the solid's surface
//!   cuts the link, a fraction `theta` of a cell away (a domain wall half a cell from the
//!   faces along it, the solid's signed distance elsewhere), which adds `dt nu / (theta dx^2)`
//!   to the diagonal (the ghost value `u (theta - 1) / theta` across the wall); a free-slip
//!   liquid keeps only the link to a closed face on its own axis (the normal velocity is zero
//!   there either way);
//! - a body, no-slip: as a wall, but the liquid takes the body's velocity where the body's
//!   surface cuts the link, and the body takes the link's impulse back in the same solve.
//!   With `w = w0 + S nu` the bodies' velocity at the links' points after normalized impulses
//!   `nu` on them (`S = rho dx^3 J K J^T`, probed as `Q C Q^T` by [`SolidBlock`]) and
//!   `nu = k (G u - w)` (`k = dt nu / (theta dx^2)` per link, `G` picking each link's liquid
//!   face), eliminating `nu` gives one symmetric positive-definite system over all three
//!   components, `(A + G^T W G) u = u* + G^T W w0`, `W = (k^-1 + S)^-1 = k - k Q M Q^T k`,
//!   `M = C (I + Q^T k Q C)^-1`; a kinematic body (`S = 0`) is a moving wall. Free-slip: no
//!   flux, the body feels the viscous liquid only through the pressure.
//!
//! A liquid of several phases ([`FaceMedia`]) has a density and a dynamic viscosity per face:
//! the momentum balance `rho_f (u** - u*) = dt div(mu grad u**)` with `mu` on each link, the
//! harmonic mean of its two faces' (an inviscid phase carries no shear; Shinar sec. 4.3.2
//! takes `nu = mu / rho` across an interface likewise), scaled by the reference density, is
//! `(R - dt L_mu / rho_ref) u** = R u*` with `R` the faces' densities over the reference:
//! symmetric positive definite as the one liquid's, which it is for constant `rho` and `mu`.

use crate::coupling::response::SolidBlock;
use crate::grid::{Array3, Grid, Location};
use crate::math::{Real, Vec3};
use crate::solids::{body_holding, Boundary, CoupledSolid, Site, StaticSolids};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use tidepool_linalg::{pcg, LinearOperator, Mic0, PcgParams, Preconditioner, Stencil7};

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
    /// The liquid's density (kg/m^3), for the impulses on bodies.
    pub density: Real,
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

/// What the solve of [`diffuse`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiffusionReport {
    /// CG iterations of the joint system of the three components.
    pub iterations: usize,
    /// Whether every component's solve met its tolerance.
    pub converged: bool,
    /// Total impulse the bodies gave the liquid (N s); they received its opposite.
    pub impulse_on_liquid: Vec3,
}

impl Default for DiffusionReport {
    /// No solve: nothing to converge.
    fn default() -> Self {
        DiffusionReport { iterations: 0, converged: true, impulse_on_liquid: Vec3::zeros() }
    }
}

/// One neighbour link of a liquid face in the viscous Laplacian.
enum Link {
    /// Another liquid face, `other`.
    Liquid([usize; 3]),
    /// A wall or obstacle surface a fraction of a cell away, where the velocity is zero.
    Wall(Real),
    /// The surface of body `solid` at `point`, a fraction `theta` of a cell away.
    Body { solid: usize, point: Vec3, theta: Real },
    /// Air (or a body, free-slip): no flux.
    Free,
}

/// What a liquid of several phases puts on each face, per axis, for the viscous solve: the
/// density there over the reference density of [`Viscosity::density`], and the dynamic
/// viscosity (Pa s).
pub struct FaceMedia {
    /// Density over the reference.
    pub density: [Array3<Real>; 3],
    /// Dynamic viscosity (Pa s).
    pub viscosity: [Array3<Real>; 3],
}

/// A no-slip link from a liquid face to a body, in the joint system of the three components.
struct BodyLink {
    /// The liquid face's index in the joint vector (on its axis while assembling).
    face: usize,
    axis: usize,
    solid: usize,
    /// Where the body's surface cuts the link.
    point: Vec3,
    /// `dt nu / (theta dx^2)`.
    coefficient: Real,
}

/// Diffuses the face velocities `u` over `dt` ([module documentation](self)): `liquid[a]` marks
/// the faces on axis `a` that carry liquid (not closed by `statics`, not inside a body); the
/// rest keep their values. No-slip `bodies` take their links' impulses. A liquid of several
/// phases gives its faces' densities and viscosities as `media`; one liquid has `viscosity`'s.
#[allow(clippy::too_many_arguments)]
pub fn diffuse(
    grid: &Grid,
    statics: &StaticSolids,
    liquid: &[Array3<bool>; 3],
    viscosity: &Viscosity,
    media: Option<&FaceMedia>,
    dt: Real,
    u: &mut [Array3<Real>; 3],
    bodies: &mut [&mut dyn CoupledSolid],
) -> DiffusionReport {
    let (matrices, links) = {
        let solids: Vec<&dyn CoupledSolid> = bodies.iter().map(|b| &**b).collect();
        let spheres: Vec<(Vec3, Real)> = solids.iter().map(|b| b.bounding_sphere()).collect();
        let mut offset = 0;
        let mut links = Vec::new();
        let matrices = [0, 1, 2].map(|a| {
            let faces = AxisFaces { grid, statics, a, liquid: &liquid[a], viscosity, media, dt, bodies: &solids, spheres: &spheres };
            let (matrix, axis_links) = faces.assemble();
            links.extend(axis_links.into_iter().map(|link| BodyLink { face: offset + link.face, ..link }));
            offset += matrix.diag.len();
            matrix
        });
        (matrices, links)
    };
    let mass = |a: usize, f: usize| media.map_or(1.0, |m| m.density[a].as_slice()[f]);
    let mut x: Vec<Real> = (0..3).flat_map(|a| u[a].as_slice().iter().zip(liquid[a].as_slice()).map(|(&u, &l)| if l { u } else { 0.0 })).collect();
    let mut b: Vec<Real> = (0..3).flat_map(|a| (0..u[a].as_slice().len()).map(move |f| (a, f))).zip(&x).map(|((a, f), u)| mass(a, f) * u).collect();
    let system = Joint::new(&matrices, &links, bodies, grid.dx.powi(3) * viscosity.density);
    system.add_body_velocities(&mut b);
    let preconditioner = JointMic0 { parts: matrices.iter().map(Mic0::new).collect(), sizes: matrices.iter().map(|m| m.diag.len()).collect() };
    let info = pcg(&system, &preconditioner, &b, &mut x, viscosity.solve);
    let impulse_on_liquid = system.impulses_on_bodies(&x, bodies);
    let mut start = 0;
    for a in 0..3 {
        let n = u[a].as_slice().len();
        u[a].as_mut_slice().par_iter_mut().zip(x[start..start + n].par_iter()).zip(liquid[a].as_slice().par_iter()).for_each(|((u, x), &l)| {
            if l {
                *u = *x;
            }
        });
        start += n;
    }
    DiffusionReport { iterations: info.iterations, converged: info.converged, impulse_on_liquid }
}

/// One body's part of the joint system: its links and `k Q`, `M` of `W = k - k Q M Q^T k`.
struct BodyBlock {
    links: Vec<usize>,
    /// The links' velocities of the body before the solve.
    w0: Vec<Real>,
    k: Vec<Real>,
    kq: DMatrix<Real>,
    m: DMatrix<Real>,
}

impl BodyBlock {
    /// `k Q M Q^T k v` for `v` over the block's links (none for a body impulses do not move).
    fn response(&self, v: &[Real]) -> Option<DVector<Real>> {
        (!self.m.is_empty()).then(|| &self.kq * (&self.m * self.kq.tr_mul(&DVector::from_column_slice(v))))
    }

    /// `W v = k v - k Q M Q^T k v` for `v` over the block's links.
    fn weigh(&self, v: &[Real]) -> Vec<Real> {
        let mut kv: Vec<Real> = v.iter().zip(&self.k).map(|(v, k)| k * v).collect();
        if let Some(response) = self.response(v) {
            kv.iter_mut().zip(response.iter()).for_each(|(a, b)| *a -= b);
        }
        kv
    }
}

/// The three components' systems joined by the bodies: `A + G^T W G` (module documentation).
struct Joint<'a> {
    matrices: &'a [Stencil7; 3],
    links: &'a [BodyLink],
    blocks: Vec<BodyBlock>,
    /// `rho dx^3`.
    cell_mass: Real,
}

impl<'a> Joint<'a> {
    /// The system with each body's response probed on its links.
    fn new(matrices: &'a [Stencil7; 3], links: &'a [BodyLink], bodies: &[&mut dyn CoupledSolid], cell_mass: Real) -> Self {
        let blocks = bodies
            .iter()
            .enumerate()
            .filter_map(|(s, body)| {
                let own: Vec<usize> = (0..links.len()).filter(|&l| links[l].solid == s).collect();
                if own.is_empty() {
                    return None;
                }
                let k: Vec<Real> = own.iter().map(|&l| links[l].coefficient).collect();
                let w0 = own.iter().map(|&l| body.velocity_at(&links[l].point)[links[l].axis]).collect();
                let (kq, m) = if body.degrees_of_freedom() == 0 {
                    (DMatrix::zeros(own.len(), 0), DMatrix::zeros(0, 0))
                } else {
                    let block = SolidBlock::at_sites(&**body, own.iter().map(|&l| Site::at(links[l].point)).collect(), own.iter().map(|&l| links[l].axis).collect(), cell_mass);
                    let (q, c) = block.factored();
                    let kq = DMatrix::from_fn(q.nrows(), q.ncols(), |i, j| k[i] * q[(i, j)]);
                    let t = q.tr_mul(&kq);
                    let r = c.nrows();
                    let inverse = (DMatrix::identity(r, r) + &t * c).try_inverse().expect("I + T C is invertible for positive semi-definite T and C");
                    let m = c * inverse;
                    let symmetric = (&m + m.transpose()) * 0.5;
                    (kq, symmetric)
                };
                Some(BodyBlock { links: own, w0, k, kq, m })
            })
            .collect();
        Joint { matrices, links, blocks, cell_mass }
    }

    /// Adds `G^T W w0` to the right-hand side `b`.
    fn add_body_velocities(&self, b: &mut [Real]) {
        for block in &self.blocks {
            for (&l, w) in block.links.iter().zip(block.weigh(&block.w0)) {
                b[self.links[l].face] += w;
            }
        }
    }

    /// Applies to each body the impulses of its links for the solution `x` (`rho dx^3 W (G x -
    /// w0)` along each link's axis at its point) and returns the total impulse on the liquid.
    fn impulses_on_bodies(&self, x: &[Real], bodies: &mut [&mut dyn CoupledSolid]) -> Vec3 {
        let mut on_liquid = Vec3::zeros();
        for block in &self.blocks {
            let relative: Vec<Real> = block.links.iter().zip(&block.w0).map(|(&l, w0)| x[self.links[l].face] - w0).collect();
            let (sites, impulses): (Vec<Site>, Vec<Vec3>) =
                block.links.iter().zip(block.weigh(&relative)).map(|(&l, nu)| (Site::at(self.links[l].point), Vec3::ith(self.links[l].axis, self.cell_mass * nu))).unzip();
            on_liquid -= impulses.iter().sum::<Vec3>();
            bodies[self.links[block.links[0]].solid].apply_impulses(&sites, &impulses);
        }
        on_liquid
    }
}

impl LinearOperator for Joint<'_> {
    fn len(&self) -> usize {
        self.matrices.iter().map(|m| m.diag.len()).sum()
    }

    fn apply(&self, x: &[Real], y: &mut [Real]) {
        let mut start = 0;
        for m in self.matrices {
            let n = m.diag.len();
            m.apply(&x[start..start + n], &mut y[start..start + n]);
            start += n;
        }
        for block in &self.blocks {
            let v: Vec<Real> = block.links.iter().map(|&l| x[self.links[l].face]).collect();
            if let Some(response) = block.response(&v) {
                for (&l, c) in block.links.iter().zip(response.iter()) {
                    y[self.links[l].face] -= c;
                }
            }
        }
    }
}

/// MIC(0) of each component's matrix (the bodies' links on its diagonal).
struct JointMic0<'a> {
    parts: Vec<Mic0<'a>>,
    sizes: Vec<usize>,
}

impl Preconditioner for JointMic0<'_> {
    fn apply(&self, r: &[Real], z: &mut [Real]) {
        let mut start = 0;
        for (part, &n) in self.parts.iter().zip(&self.sizes) {
            part.apply(&r[start..start + n], &mut z[start..start + n]);
            start += n;
        }
    }
}

/// The faces on one axis as the viscous Laplacian sees them.
struct AxisFaces<'a> {
    grid: &'a Grid,
    statics: &'a StaticSolids,
    /// The axis.
    a: usize,
    /// Which of its faces carry liquid.
    liquid: &'a Array3<bool>,
    viscosity: &'a Viscosity,
    /// A liquid of several phases: its faces' densities and viscosities.
    media: Option<&'a FaceMedia>,
    dt: Real,
    /// The bodies and their bounding spheres.
    bodies: &'a [&'a dyn CoupledSolid],
    spheres: &'a [(Vec3, Real)],
}

impl AxisFaces<'_> {
    /// `dt nu / dx^2` of the link from liquid face `face` to `other` (`None`: a wall or a body
    /// beyond it): the liquid's, or with phases `dt mu / (rho dx^2)`, `rho` the reference
    /// density and `mu` the harmonic mean of the two faces' viscosities (the face's own beyond).
    fn alpha(&self, face: [usize; 3], other: Option<[usize; 3]>) -> Real {
        let per_dx2 = self.dt / (self.grid.dx * self.grid.dx);
        let Some(media) = self.media else { return per_dx2 * self.viscosity.kinematic };
        let mu = |f: [usize; 3]| media.viscosity[self.a].get(f[0], f[1], f[2]);
        let link = match other {
            Some(other) => {
                let (p, q) = (mu(face), mu(other));
                if p + q > 0.0 {
                    2.0 * p * q / (p + q)
                } else {
                    0.0
                }
            }
            None => mu(face),
        };
        per_dx2 * link / self.viscosity.density
    }

    /// The matrix `R - alpha L` over the liquid faces (`R` the faces' densities over the
    /// reference: 1 for one liquid; rows of other faces inactive; a body's links on the
    /// diagonal as walls), and the links to bodies (their faces indexed on this axis).
    fn assemble(&self) -> (Stencil7, Vec<BodyLink>) {
        let liquid = self.liquid;
        let rows: Vec<(Real, [Real; 3], Vec<BodyLink>)> = (0..liquid.as_slice().len())
            .into_par_iter()
            .map(|c| {
                let mass = self.media.map_or(1.0, |m| m.density[self.a].as_slice()[c]);
                let (mut diag, mut plus, mut links) = (mass, [0.0; 3], Vec::new());
                if !liquid.as_slice()[c] {
                    return (0.0, plus, links);
                }
                let face = liquid.coords(c);
                for b in 0..3 {
                    for up in [false, true] {
                        match self.link(face, b, up) {
                            Link::Liquid(other) => {
                                let alpha = self.alpha(face, Some(other));
                                diag += alpha;
                                if up {
                                    plus[b] = -alpha;
                                }
                            }
                            Link::Wall(theta) => diag += self.alpha(face, None) / theta,
                            Link::Body { solid, point, theta } => {
                                let coefficient = self.alpha(face, None) / theta;
                                diag += coefficient;
                                links.push(BodyLink { face: c, axis: self.a, solid, point, coefficient });
                            }
                            Link::Free => {}
                        }
                    }
                }
                (diag, plus, links)
            })
            .collect();
        let mut matrix = Stencil7::zeros(liquid.dims());
        let mut links = Vec::new();
        for (c, (diag, plus, row_links)) in rows.into_iter().enumerate() {
            matrix.diag[c] = diag;
            for b in 0..3 {
                matrix.plus[b][c] = plus[b];
            }
            links.extend(row_links);
        }
        (matrix, links)
    }

    /// The body whose inside holds face `other` next to liquid face `face`, as a link.
    fn body_link(&self, face: [usize; 3], other: [usize; 3]) -> Option<Link> {
        let at = |f: [usize; 3]| self.grid.position(Location::Face(self.a), f[0], f[1], f[2]);
        let (x_other, x_face) = (at(other), at(face));
        let (solid, inside) = body_holding(self.bodies, self.spheres, &x_other)?;
        let outside = self.bodies[solid].signed_distance(&x_face).max(0.0);
        let theta = (outside / (outside - inside)).clamp(WALL_THETA_MIN, 1.0);
        Some(Link::Body { solid, point: x_face + theta * (x_other - x_face), theta })
    }

    /// The link from liquid face `face` to its neighbour along `b` (towards `+b` when `up`).
    fn link(&self, face: [usize; 3], b: usize, up: bool) -> Link {
        let (a, dims) = (self.a, self.liquid.dims());
        let beyond = if up { face[b] + 1 >= dims[b] } else { face[b] == 0 };
        if beyond {
            // Only across a side parallel to the axis: a face on a side of its own axis is
            // liquid only where that side is open, and nothing lies beyond it.
            let wall = b != a && self.statics.boundaries[b][up as usize] == Boundary::Wall;
            return if wall && self.viscosity.slip == Slip::NoSlip { Link::Wall(0.5) } else { Link::Free };
        }
        let mut other = face;
        other[b] = if up { face[b] + 1 } else { face[b] - 1 };
        if self.liquid.get(other[0], other[1], other[2]) {
            return Link::Liquid(other);
        }
        if self.statics.face_open[a].get(other[0], other[1], other[2]) > 0.0 {
            let body = (self.viscosity.slip == Slip::NoSlip).then(|| self.body_link(face, other)).flatten();
            return body.unwrap_or(Link::Free);
        }
        if b != a && self.viscosity.slip == Slip::FreeSlip {
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
pub(crate) fn face_cells(grid: &Grid, a: usize, face: [usize; 3]) -> [Option<[usize; 3]>; 2] {
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
        Viscosity { kinematic, density: 1000.0, slip, solve: PcgParams { tolerance: 1e-12, max_iterations: 1000 } }
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
        // Two phases in layers, the upper lighter and inviscid: its links carry no shear.
        let layers = FaceMedia {
            density: [0, 1, 2].map(|a| grid.zeros(Location::Face(a)).par_map(|i, j, k, _| if grid.position(Location::Face(a), i, j, k).y < 0.03 { 1.0 } else { 0.7 })),
            viscosity: [0, 1, 2].map(|a| grid.zeros(Location::Face(a)).par_map(|i, j, k, _| if grid.position(Location::Face(a), i, j, k).y < 0.03 { 3.0 } else { 0.0 })),
        };
        for (slip, media) in [(Slip::NoSlip, None), (Slip::FreeSlip, None), (Slip::NoSlip, Some(&layers))] {
            // `dt nu / dx^2 = 3` (one liquid; with the layers `dt mu / (rho dx^2)` in the lower).
            let viscosity = Viscosity { density: 1.0, ..params(3.0 * grid.dx * grid.dx, slip) };
            for a in 0..3 {
                let faces = AxisFaces { grid: &grid, statics: &statics, a, liquid: &liquid[a], viscosity: &viscosity, media, dt: 1.0, bodies: &[], spheres: &[] };
                let m = faces.assemble().0;
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
            let report = diffuse(&grid, &statics, &liquid, &params(nu, Slip::NoSlip), None, dt, &mut u, &mut []);
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
            diffuse(&grid, &statics, &liquid, &params(1e-3, slip), None, 0.1, &mut u, &mut []);
            let mean = u[0].as_slice().iter().sum::<Real>() / u[0].as_slice().len() as Real;
            assert_eq!((mean - 1.0).abs() < 1e-9, kept, "{slip:?}: mean speed {mean}");
        }
    }

    /// A liquid 16 cells deep between the floor (no-slip) and a lid body whose bottom is at
    /// `h = 0.16` m, with open x and z sides: the faces below the lid carry liquid.
    fn under_lid(kind: crate::solids::rigid::BodyKind) -> (Grid, StaticSolids, [Array3<bool>; 3], crate::solids::rigid::RigidBody) {
        use crate::solids::rigid::{Material, RigidBody};
        let (grid, statics) = channel([4, 20, 3]);
        let lid = crate::geometry::Shape::Box { min: Vec3::new(-0.02, 0.16, -0.02), max: Vec3::new(0.06, 0.19, 0.05) };
        let body = RigidBody::new("lid", kind, &lid, 1000.0, Material { restitution: 0.0, friction: 0.0 }, 0.005);
        let liquid = [0, 1, 2]
            .map(|a| grid.zeros(Location::Face(a)).par_map(|i, j, k, _| statics.face_open[a].get(i, j, k) > 0.0 && grid.position(Location::Face(a), i, j, k).y < 0.16 - 1e-9));
        (grid, statics, liquid, body)
    }

    /// Plane Couette flow: a kinematic lid sliding at `U` over a no-slip floor drives the
    /// liquid under it to `u = U y / h` (the liquid takes the lid's velocity where the lid's
    /// surface cuts the links, half a cell above the top faces), exactly up to the solve.
    #[test]
    fn a_sliding_kinematic_lid_drives_couette_flow() {
        let (grid, statics, liquid, mut lid) = under_lid(crate::solids::rigid::BodyKind::Kinematic);
        let speed = 0.02;
        lid.velocity = Vec3::new(speed, 0.0, 0.0);
        let mut u = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        for _ in 0..20 {
            diffuse(&grid, &statics, &liquid, &params(1e-3, Slip::NoSlip), None, 10.0, &mut u, &mut [&mut lid]);
        }
        for j in 0..16 {
            let expected = speed * (j as Real + 0.5) * grid.dx / 0.16;
            let found = u[0].get(2, j, 1);
            assert!((found - expected).abs() < 1e-6 * speed, "y = {}: {found} m/s, expected {expected}", (j as Real + 0.5) * grid.dx);
        }
        assert_eq!(lid.velocity, Vec3::new(speed, 0.0, 0.0), "the kinematic lid was moved");
    }

    /// Two liquids of one density (1000 kg/m^3) in layers 8 cells deep, the lower 4 times as
    /// viscous (4 and 1 Pa s), under a kinematic lid sliding at `U`: the shear stress `tau = U / (h1 / mu1 + h2 /
    /// mu2)` is the same through both, so the velocity rises linearly through each layer with
    /// slope `tau / mu`, four times as steep in the upper one; the links across the interface,
    /// with the harmonic mean of the two viscosities, make the discrete profile exact (to the
    /// solve) at every face.
    #[test]
    fn two_layers_under_a_sliding_lid_shear_in_inverse_proportion_to_their_viscosities() {
        let (grid, statics, liquid, mut lid) = under_lid(crate::solids::rigid::BodyKind::Kinematic);
        let (speed, h, mu) = (0.02, 0.08, [4.0, 1.0]);
        lid.velocity = Vec3::new(speed, 0.0, 0.0);
        let media = FaceMedia {
            density: [0, 1, 2].map(|a| grid.zeros(Location::Face(a)).par_map(|_, _, _, _| 1.0)),
            viscosity: [0, 1, 2].map(|a| grid.zeros(Location::Face(a)).par_map(|i, j, k, _| if grid.position(Location::Face(a), i, j, k).y < h { mu[0] } else { mu[1] })),
        };
        let mut u = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        for _ in 0..20 {
            diffuse(&grid, &statics, &liquid, &params(1e-3, Slip::NoSlip), Some(&media), 10.0, &mut u, &mut [&mut lid]);
        }
        let tau = speed / (h / mu[0] + h / mu[1]);
        for j in 0..16 {
            let y = (j as Real + 0.5) * grid.dx;
            let expected = if y < h { tau * y / mu[0] } else { tau * (h / mu[0] + (y - h) / mu[1]) };
            let found = u[0].get(2, j, 1);
            assert!((found - expected).abs() < 1e-6 * speed, "y = {y}: {found} m/s, expected {expected}");
        }
    }

    /// A free lid pulled along by a force `F` at the middle of its bottom slides on the viscous
    /// layer with its bottom at the speed where the layer's shear holds it back, `F = mu A U /
    /// h` (`A` the links' faces, `dx^2` each; the lid and the liquid taking each other's
    /// impulses in one solve), over a linear profile; the lid's momentum changes by exactly
    /// minus the impulse it gives the liquid, and the liquid's by that less what the floor
    /// takes, every step. (The lid never moves here, so it also spins freely: forces below its
    /// centre turn it, and its bottom's speed, translation and spin together, is what the
    /// liquid holds back.)
    #[test]
    fn a_pulled_lid_slides_at_the_speed_the_viscous_shear_allows() {
        let (grid, statics, liquid, mut lid) = under_lid(crate::solids::rigid::BodyKind::Dynamic);
        let (nu, force, dt) = (1e-3, 2e-4, 5.0);
        let viscosity = params(nu, Slip::NoSlip);
        let cell_mass = 1000.0 * grid.dx.powi(3);
        let mut u = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        let pull = Vec3::new(0.02, 0.16, 0.015);
        let momentum = |u: &[Array3<Real>; 3]| Vec3::from_fn(|a, _| cell_mass * u[a].as_slice().iter().zip(liquid[a].as_slice()).filter(|(_, &l)| l).map(|(v, _)| v).sum::<Real>());
        for _ in 0..200 {
            lid.apply_impulses(&[Site::at(pull)], &[Vec3::new(force * dt, 0.0, 0.0)]);
            let (before, lid_before) = (momentum(&u), lid.mass * lid.velocity);
            let report = diffuse(&grid, &statics, &liquid, &viscosity, None, dt, &mut u, &mut [&mut lid]);
            assert!((report.impulse_on_liquid + lid.mass * lid.velocity - lid_before).norm() < 1e-12, "the lid's momentum changed by other than the liquid's impulse");
            let gained = momentum(&u) - before;
            let floor: Real = (0..5).flat_map(|i| (0..3).map(move |k| (i, k))).map(|(i, k)| cell_mass * 2.0 * nu * dt / (grid.dx * grid.dx) * u[0].get(i, 0, k)).sum();
            assert!(
                (gained.x + floor - report.impulse_on_liquid.x).abs() < 1e-9 * force * dt,
                "the liquid gained {} N s, the lid gave {} and the floor took {floor}",
                gained.x,
                report.impulse_on_liquid.x
            );
        }
        let links = 5.0 * 3.0;
        let expected = force * 0.16 / (1000.0 * nu * links * grid.dx * grid.dx);
        let bottom = CoupledSolid::velocity_at(&lid, &pull).x;
        assert!((bottom / expected - 1.0).abs() < 1e-6, "the lid's bottom slides at {bottom} m/s, expected {expected}");
        for j in 0..16 {
            let profile = expected * (j as Real + 0.5) * grid.dx / 0.16;
            assert!((u[0].get(2, j, 1) - profile).abs() < 1e-6 * expected, "y = {}: {} m/s, expected {profile}", (j as Real + 0.5) * grid.dx, u[0].get(2, j, 1));
        }
    }
}
