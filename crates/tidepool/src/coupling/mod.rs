//! Monolithic solid–fluid coupling: one symmetric positive-definite solve for the liquid's
//! pressure and the impulses between liquid and solids (Robinson-Mosher, Shinar, Fedkiw 2011;
//! Lu, Jin, Fedkiw eq. 36–45).
//!
//! Every face of the MAC grid carries the liquid's momentum in its dual cell, the box between
//! the centres of the two cells it separates. A solid reaching into a face's dual cell fills a
//! fraction `s_f` of it ([`DualCells`]): the liquid's mass there is `beta_f = rho dx^3 open_f
//! (theta_f - sigma_f)` (`open_f` the face's area not blocked by static solids, `theta_f` the
//! liquid's share next to a free surface, `sigma_f` the solid's part below that surface,
//! [`submerged_share`]; `s_f` where no free surface crosses), and the face is a coupled face: its velocity must
//! equal the solid's `J V` there, which an impulse `lambda_f` from the solid enforces. The
//! liquid's momentum balance on every face is `beta u = beta u* - G P + W^T lambda` with the
//! pressure difference `G P` taken over the face's whole open area, so the pressure pushes the
//! solid's share of each dual cell as well as the liquid's; the solids receive `-lambda`,
//! `M V = M V* - J^T W^T lambda`. The divergence of every pressure cell counts the whole open
//! area of its faces. Eliminating `u` and `V` leaves (eq. 45 with no reduced modes)
//!
//! ```text
//! [ D b^-1 D^T   D b^-1 W^T               ] [ P      ]   [ -D u*          ]
//! [ W b^-1 D^T   W b^-1 W^T + W J K J^T W^T ] [ lambda ] = [ -W (u* - J V*) ]
//! ```
//!
//! with `D = -G^T` and `K = M^-1` (`P` is pressure times `dt`). It is `B b^-1 B^T` with
//! `B = [D; W]` plus a positive semi-definite block: symmetric, and positive definite when the
//! liquid has a free surface. In equilibrium the coupled faces' impulses add up to the weight
//! of the liquid the solid's share of the dual cells would hold: a body at rest in still water
//! feels `rho g` times the sum of its dual-cell fractions, the volume of its shape.
//!
//! Pressure unknowns are the liquid cells with at least one open face that no solid reaches,
//! and those whose open faces a moving sheet couples all round. A liquid cell all of whose
//! faces are coupled to solids (inside a solid, or squeezed between solids, or between a body
//! and the part of a sheet pinned to it) has a pressure that moves nothing: changing it only
//! changes the impulses on its faces, which cancel on the solid (or hold still). Its pressure
//! is fixed at zero and its faces' impulses carry what it would have carried. Not so a cell
//! that a moving sheet wraps (cloth passing within an eighth of a cell of its centre couples
//! all six faces): the sheet's faces push the liquid on their other side, and without its own
//! pressure the cell would be a hole at zero pressure in the water that sucks the sheet in and
//! swallows water.
//!
//! Scaled by `q = P / (rho dx)`, `mu = lambda / (rho dx^3)` and rows divided by `rho dx^3`,
//! the system reads: the liquid's own Poisson matrix with the coupled faces left out
//! ([`crate::coupling::poisson`], [`Across::Coupled`]), plus for every coupled face
//! `f` the rank-one term `(y_f + mu_f)^2 / (2 m_f)` of the energy, with `y_f = open_f sum_c
//! s_cf q_c` over its unknown cells (`s_cf` the outward sign) and `m_f = beta_f / (rho dx^3)`
//! (with several phases `rho` is the reference density and `beta_f` counts the density there),
//! plus `rho dx^3 J K J^T` on the impulses. The face's velocity after the solve is
//! `u* + (y_f + mu_f) / m_f`. It is solved by PCG with the preconditioner of
//! [`CoupledPreconditioner`]; each solid's block `rho dx^3 J K J^T` is applied through its
//! response, and after twice as many products as the solid has degrees of freedom, as a small
//! matrix found by probing ([`response`]).
//!
//! The solve is written against [`CoupledSolid`], so every kind of solid joins it the same way.

pub mod poisson;
pub(crate) mod response;

use crate::grid::fraction::{box_fraction_inside, sub_boxes};
use crate::grid::{Array3, Grid, Location, MacVelocity};
use crate::math::{DisjointSets, Real, Vec3};
use crate::solids::{Constrained, CoupledSolid, Site, StaticSolids};
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
pub use poisson::PhaseView;
use poisson::{across, apply_gradient, assemble_with, face_of, liquid_cells, liquid_neighbour, Across, Media, ProjectionReport, SolveSeconds, THETA_MIN};
use rayon::prelude::*;
use response::SolidBlock;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;
use tidepool_linalg::{largest_eigenvalue, mprgp, pcg, FreeSetJacobi, LinearOperator, Mic0, MprgpParams, Multigrid, PcgParams, Preconditioner, Stencil7};

/// Smallest share of a coupled face's dual cell left to the liquid (bounds the coefficients
/// where a solid fills a dual cell next to a pressure unknown almost completely).
const FLUID_MIN: Real = THETA_MIN;

/// A face of a solid's dual cell: the fraction `fraction` of face `face`'s dual cell on axis
/// `axis` lies inside solid `solid`, with its centroid at `point`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CutFace {
    axis: usize,
    face: [usize; 3],
    solid: usize,
    fraction: Real,
    point: Vec3,
    /// Whether the solid is a sheet that impulses on the face move: the liquid's pressure on
    /// one side of it reaches the other.
    moving_sheet: bool,
}

/// The solids' shares of the dual cells they reach.
struct DualCells {
    /// Per axis: 0 where no solid reaches the face's dual cell, else one more than the face's
    /// place in `cut` (`None` without solids).
    index: Option<[Array3<u32>; 3]>,
    cut: Vec<CutFace>,
}

impl DualCells {
    /// Where two solids reach into the same dual cell the one filling more of it owns it.
    fn new(grid: &Grid, solids: &[&mut dyn CoupledSolid]) -> Self {
        if solids.is_empty() {
            return DualCells { index: None, cut: Vec::new() };
        }
        let mut index = [0, 1, 2].map(|a| Array3::filled(grid.dims_at(Location::Face(a)), 0u32));
        let mut cut: Vec<CutFace> = Vec::new();
        for (solid, body) in solids.iter().enumerate() {
            for (axis, index) in index.iter_mut().enumerate() {
                let mut fractions = dual_cell_fractions(grid, &**body, axis);
                if within_domain(grid, &**body) {
                    partition_volume(&mut fractions, body.volume() / grid.dx.powi(3));
                }
                for (face, fraction, point) in fractions {
                    let [i, j, k] = face;
                    let moving_sheet = body.is_sheet() && body.moves_at(&point);
                    let entry = CutFace { axis, face, solid, fraction, point, moving_sheet };
                    match index.get(i, j, k) {
                        0 => {
                            cut.push(entry);
                            index.set(i, j, k, cut.len() as u32);
                        }
                        at if cut[at as usize - 1].fraction < fraction => cut[at as usize - 1] = entry,
                        _ => {}
                    }
                }
            }
        }
        DualCells { index: Some(index), cut }
    }

    /// What reaches face `f`'s dual cell on `axis`.
    fn cut(&self, axis: usize, f: [usize; 3]) -> Option<&CutFace> {
        let at = self.index.as_ref()?[axis].get(f[0], f[1], f[2]);
        (at > 0).then(|| &self.cut[at as usize - 1])
    }

    /// The solid share of face `f`'s dual cell on `axis`.
    fn fraction(&self, axis: usize, f: [usize; 3]) -> Real {
        self.cut(axis, f).map_or(0.0, |cut| cut.fraction)
    }
}

/// Whether `solid` lies in the domain (up to half a cell): then the dual cells of each axis
/// hold all of it.
fn within_domain(grid: &Grid, solid: &dyn CoupledSolid) -> bool {
    let (centre, radius) = solid.bounding_sphere();
    let margin = Vec3::repeat(radius - 0.5 * grid.dx);
    (0..3).all(|a| centre[a] - margin[a] >= grid.origin[a] && centre[a] + margin[a] <= grid.max_corner()[a])
}

/// Scales the partial fractions of one solid's dual cells on one axis so that they add up,
/// with the whole ones, to the solid's volume `cells` (in cells): the dual cells of an axis
/// partition the solid. The fractions of [`dual_cell_fractions`] overestimate a convex
/// surface's share by about `h^2/24` times its total curvature (0.7% for a ball of radius
/// 3 cells), which would leave a body of the liquid's density as much heavier or lighter
/// than the liquid it displaces.
fn partition_volume(fractions: &mut [([usize; 3], Real, Vec3)], cells: Real) {
    let whole = fractions.iter().filter(|(_, s, _)| *s >= 1.0).count() as Real;
    let partial: Real = fractions.iter().map(|(_, s, _)| *s).filter(|s| *s < 1.0).sum();
    let scale = (cells - whole) / partial;
    if scale.is_finite() && scale > 0.0 {
        for (_, s, _) in fractions.iter_mut().filter(|(_, s, _)| *s < 1.0) {
            *s = (*s * scale).min(1.0);
        }
    }
}

/// The faces on `axis` whose dual cells `solid` reaches, with the fraction of each inside it
/// and the centroid of that part (where the liquid's pressure on it acts: at the face centre
/// the pressure on a ball would not pass through its centre, and would spin it). The dual
/// cell is split into 2 x 2 x 2 boxes of side `h = dx/2`; each counts as inside by
/// [`box_fraction_inside`] of the solid's signed distance at its centre. Dual
/// cells whose centre is farther than `(1 + sqrt 3) dx / 4` from the surface are wholly in or
/// out. Of a sheet ([`CoupledSolid::is_sheet`]) only the faces it [`separates`] are kept: a
/// flag along the flow, lying in the dual cells of the faces beside it, held two layers of
/// air to its own tangential velocity, as a thick plate with no slip would.
fn dual_cell_fractions(grid: &Grid, solid: &dyn CoupledSolid, axis: usize) -> Vec<([usize; 3], Real, Vec3)> {
    let location = Location::Face(axis);
    let dims = grid.dims_at(location);
    let offset = location.offset();
    let (centre, radius) = solid.bounding_sphere();
    let reach = radius + grid.dx;
    let range = |a: usize| {
        let to_index = |x: Real| (x - grid.origin[a]) / grid.dx - offset[a];
        let lo = to_index(centre[a] - reach).floor().max(0.0) as usize;
        let hi = (to_index(centre[a] + reach).ceil().max(-1.0) + 1.0).min(dims[a] as Real) as usize;
        lo..hi.max(lo)
    };
    let (ri, rj, rk) = (range(0), range(1), range(2));
    let h = 0.5 * grid.dx;
    let whole = (1.0 + (3.0 as Real).sqrt()) * 0.25 * grid.dx;
    let sheet = solid.is_sheet();
    rk.into_par_iter()
        .flat_map_iter(|k| {
            let ri = ri.clone();
            rj.clone().flat_map(move |j| ri.clone().map(move |i| [i, j, k]))
        })
        .filter_map(|f| {
            let x = grid.position(location, f[0], f[1], f[2]);
            let d = solid.signed_distance(&x);
            if d >= whole || (sheet && !separates(solid, &x, axis, grid.dx)) {
                return None;
            }
            if d <= -whole {
                return Some((f, 1.0, x));
            }
            let (mut fraction, mut moment) = (0.0, Vec3::zeros());
            for (_, sub) in sub_boxes(x - Vec3::repeat(h), h, 2) {
                let inside = box_fraction_inside(solid.signed_distance(&sub), h);
                fraction += inside;
                moment += inside * sub;
            }
            (fraction > 0.0).then(|| (f, fraction / 8.0, moment / fraction))
        })
        .collect()
}

/// Whether the sheet `solid` passes between the centres of the two cells that the face at `x`
/// on `axis` separates: on the segment between them, sampled every quarter cell, it comes
/// within an eighth of a cell. A sheet crossing the segment passes within half a sample
/// spacing of a sample; one alongside it, parallel, keeps its distance.
fn separates(solid: &dyn CoupledSolid, x: &Vec3, axis: usize, dx: Real) -> bool {
    (-2..=2).any(|n| solid.signed_distance(&(x + Vec3::ith(axis, 0.25 * n as Real * dx))) <= 0.125 * dx)
}

/// A face whose dual cell a solid reaches, next to liquid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoupledFace {
    /// Face axis.
    pub axis: usize,
    /// Face index on that axis.
    pub index: [usize; 3],
    /// The pressure unknowns on either side (flat index) with their outward signs through the
    /// face (+1: the face is the cell's upper face).
    pub cells: [Option<(usize, Real)>; 2],
    /// The solid.
    pub solid: usize,
    /// Open (not statically blocked) area fraction of the face.
    pub open: Real,
    /// The liquid's mass in the face's dual cell over `rho dx^3`.
    pub mass: Real,
    /// The face's dual cell and the centroid of the solid's part of it: where the solid's
    /// velocity is sampled and the impulse acts on it.
    pub site: Site,
}

impl CoupledFace {
    /// `y_f = open sum_c s_cf q_c`: the pressure's push on the face.
    fn pressure_term(&self, q: &[Real]) -> Real {
        self.open * self.cells.iter().flatten().map(|&(c, sign)| sign * q[c]).sum::<Real>()
    }
}

/// The coupled faces: every face whose dual cell a solid reaches, with open area and a
/// pressure unknown on at least one side, or liquid on both.
#[allow(clippy::too_many_arguments)]
fn coupled_faces(
    grid: &Grid,
    phi: &Array3<Real>,
    static_solids: &StaticSolids,
    liquid: &Array3<bool>,
    unknown: &Array3<bool>,
    dual: &DualCells,
    media: &Media,
    solids: &[&mut dyn CoupledSolid],
) -> Vec<CoupledFace> {
    let free_surface = liquid_neighbour(phi, liquid, None, media);
    dual.cut
        .par_iter()
        .filter_map(|cut| {
            let (axis, f) = (cut.axis, cut.face);
            let open = static_solids.face_open[axis].get(f[0], f[1], f[2]);
            if open == 0.0 {
                return None;
            }
            let lower = across(grid, f, axis, 0);
            let upper = (f[axis] < grid.dims[axis]).then_some(f);
            let is = |a: &Array3<bool>, c: Option<[usize; 3]>| c.is_some_and(|c| a.get(c[0], c[1], c[2]));
            let unknown_entry = |c: Option<[usize; 3]>, sign: Real| c.filter(|c| unknown.get(c[0], c[1], c[2])).map(|c| (unknown.index(c[0], c[1], c[2]), sign));
            let cells = [unknown_entry(lower, 1.0), unknown_entry(upper, -1.0)];
            let (lower_liquid, upper_liquid) = (is(liquid, lower), is(liquid, upper));
            let both_liquid = lower_liquid && upper_liquid;
            let theta = match (lower_liquid, upper_liquid) {
                (true, true) => 1.0,
                (true, false) => theta_of(free_surface(lower?, axis, 1, upper)),
                (false, true) => theta_of(free_surface(upper?, axis, 0, lower)),
                (false, false) => return None,
            };
            // Without a pressure unknown beside it, the face holds liquid that moves with the
            // solid: between two liquid cells (around a submerged body), and where the solid
            // only partly fills a dual cell the free surface crosses, if the rest of it is liquid
            // beside the solid (the water at a body's side, whose weight the pressure below
            // already pushes up on the body: leaving it out lifted a floating ball by a tenth of
            // a cell). The rest is air when the level set says so at the liquid cell's end of it
            // (a boat's dry hollow, next to a wall cell that is liquid only by the level set's
            // extension into solids).
            let unknown_beside = cells.iter().any(Option::is_some);
            let liquid_beside_solid = || {
                let Some(c) = (if lower_liquid { lower } else { upper }) else { return false };
                let x = grid.position(Location::Face(axis), f[0], f[1], f[2]);
                let mut end = (x - cut.fraction * cut.point) / (1.0 - cut.fraction);
                end[axis] = grid.position(Location::Cell, c[0], c[1], c[2])[axis];
                grid.interpolate(phi, Location::Cell, &end) < 0.0
            };
            if !unknown_beside && (cut.fraction >= 1.0 || !(both_liquid || liquid_beside_solid())) {
                return None;
            }
            let submerged = if theta < 1.0 { cut.fraction * submerged_share(grid, &*solids[cut.solid], axis, f, theta, lower_liquid) } else { cut.fraction };
            // The liquid's density there over the reference: the phases' across an interface.
            let density = 1.0
                / match (lower_liquid, upper_liquid) {
                    (true, true) => media.face(lower?, upper?).0,
                    (true, false) => media.cell_weight(lower?),
                    _ => media.cell_weight(upper?),
                };
            let mass = density * open * (theta - submerged).max(theta * FLUID_MIN);
            let site = Site { point: cut.point, centre: grid.position(Location::Face(axis), f[0], f[1], f[2]), half: 0.5 * grid.dx };
            Some(CoupledFace { axis, index: f, cells, solid: cut.solid, open, mass, site })
        })
        .collect()
}

/// Samples per axis of a dual cell in [`submerged_share`].
const SHARE_SAMPLES: usize = 4;

/// The share of a solid's part of face `f`'s dual cell on `axis` that lies in the liquid,
/// where a free surface crosses the dual cell: the liquid fills it from the end at the liquid
/// cell's centre (the lower end if `from_lower`) to `theta dx` along `axis`. The liquid's mass
/// there is the dual cell's `theta` less the solid below the surface: for the water under a
/// floating body's bottom the solid sits above the water, not spread through the dual cell as
/// `theta (1 - s)` would have it, and the body then rests on `s theta` of water it does not
/// displace (a box of a twentieth of the water's density was lifted half as much again as its
/// weight). Sampled at [`SHARE_SAMPLES`]^3 boxes of side `h`, each counting its
/// [`box_fraction_inside`] the solid times its slab's part below the surface.
fn submerged_share(grid: &Grid, solid: &dyn CoupledSolid, axis: usize, f: [usize; 3], theta: Real, from_lower: bool) -> Real {
    let n = SHARE_SAMPLES;
    let h = grid.dx / n as Real;
    let corner = grid.position(Location::Face(axis), f[0], f[1], f[2]) - Vec3::repeat(0.5 * grid.dx);
    let (mut solid_part, mut wet) = (0.0, 0.0);
    for (index, x) in sub_boxes(corner, h, n) {
        let inside = box_fraction_inside(solid.signed_distance(&x), h);
        // The slab's centre along `axis`, measured from the liquid's end, in samples.
        let centre = if from_lower { index[axis] } else { n - 1 - index[axis] } as Real + 0.5;
        solid_part += inside;
        wet += inside * box_fraction_inside((centre - theta * n as Real) * h, h);
    }
    if solid_part > 0.0 {
        wet / solid_part
    } else {
        theta
    }
}

/// The liquid's share of a face's dual cell next to a free surface.
fn theta_of(across: Across) -> Real {
    match across {
        Across::Dirichlet { theta, .. } => theta,
        Across::Unknown { .. } | Across::Coupled => 1.0,
    }
}

/// A sparse vector over the coupled system's unknowns (index, value); the impulse of coupled
/// face `f` has index `cells + f`.
type SparseVector = Vec<(usize, Real)>;

/// The scaled coupled system as an operator on `[q (one per grid cell); mu (one per coupled
/// face)]`.
pub struct CoupledSystem<'a> {
    /// The liquid's Poisson matrix without the coupled faces.
    pressure: Stencil7,
    /// Sorted by solid.
    faces: Vec<CoupledFace>,
    /// Per solid: its block of `rho dx^3 J K J^T` on its faces (the range of them it holds).
    blocks: Vec<SolidBlock<'a>>,
    /// `rho dx^3`: the mass of liquid in one cell.
    cell_mass: Real,
    /// An orthonormal basis of the system's nullspace: spanned by the liquid regions without a
    /// free surface (a closed tank filled to the lid, a pocket closed off by solids), each one
    /// on its cells and on its coupled faces the impulses that balance that uniform pressure
    /// (a uniform pressure that moves nothing).
    nullspace: Vec<SparseVector>,
}

impl CoupledSystem<'_> {
    /// The diagonal of the whole system: the pressure block's (with every coupled face's
    /// `open^2 / m_f` on its cells) and the impulse block's.
    fn diagonal(&self) -> Vec<Real> {
        let mut diagonal = self.pressure.diag.clone();
        for face in &self.faces {
            for &(c, _) in face.cells.iter().flatten() {
                diagonal[c] += face.open * face.open / face.mass;
            }
        }
        diagonal.extend(self.impulse_diagonal(&self.solid_diagonal()));
        diagonal
    }

    /// Diagonal of the solids' part `S` of the impulse block.
    fn solid_diagonal(&self) -> Vec<Real> {
        self.blocks.iter().flat_map(SolidBlock::diagonal).collect()
    }

    /// Diagonal of the impulse block, `1/m_f + s_f` (`solid` the solids' part).
    fn impulse_diagonal(&self, solid: &[Real]) -> Vec<Real> {
        self.faces.iter().zip(solid).map(|(f, s)| 1.0 / f.mass + s).collect()
    }

    /// `L'`: the pressure block with each coupled face's impulse eliminated against the
    /// impulse block's diagonal (see [`CoupledPreconditioner`]), `solid` its solids' part
    /// `s_f`: each face gains the stiffness `open^2 d s / (d + s) = open^2 s / (1 + m s)`.
    /// `None` where that changes nothing (every coupled face on a solid that impulses do not
    /// move).
    fn reduced_pressure(&self, solid: &[Real]) -> Option<Stencil7> {
        let stiffness = |face: &CoupledFace, s: Real| face.open * face.open * s / (1.0 + face.mass * s);
        if solid.iter().all(|&s| s <= 0.0) {
            return None;
        }
        let mut reduced = Stencil7 { floating: Vec::new(), ..self.pressure.clone() };
        for (face, &s) in self.faces.iter().zip(solid) {
            let k = stiffness(face, s);
            for &(c, _) in face.cells.iter().flatten() {
                reduced.diag[c] += k;
            }
            if let [Some((a, sa)), Some((b, _))] = face.cells {
                reduced.plus[face.axis][if sa > 0.0 { a } else { b }] -= k;
            }
        }
        Some(reduced)
    }
}

impl LinearOperator for CoupledSystem<'_> {
    fn len(&self) -> usize {
        self.pressure.diag.len() + self.faces.len()
    }

    fn project_nullspace(&self, x: &mut [Real]) {
        for u in &self.nullspace {
            let dot: Real = u.iter().map(|&(i, v)| v * x[i]).sum();
            for &(i, v) in u {
                x[i] -= dot * v;
            }
        }
    }

    fn apply(&self, x: &[Real], y: &mut [Real]) {
        let n = self.pressure.diag.len();
        let (q, mu) = x.split_at(n);
        let (yq, ymu) = y.split_at_mut(n);
        self.pressure.apply(q, yq);
        for (f, face) in self.faces.iter().enumerate() {
            let t = (face.pressure_term(q) + mu[f]) / face.mass;
            for &(c, sign) in face.cells.iter().flatten() {
                yq[c] += face.open * sign * t;
            }
            ymu[f] = t;
        }
        for block in &self.blocks {
            block.add_apply(mu, ymu);
        }
        // A pocket's vector is only nearly null (see [`enclosed_pockets`]): the operator is
        // the system restricted to the nullspace's complement, so that PCG's residuals stay
        // in it.
        self.project_nullspace(y);
    }
}

/// What preconditions the liquid's pressure block of the coupled solve
/// (`liquid.pressure_preconditioner`): a multigrid V-cycle ([`tidepool_linalg::Multigrid`],
/// the default: its iterations stay flat under refinement and every step is parallel), or
/// MIC(0), whose sequential sweeps take more iterations but less memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PressurePreconditioner {
    Mic0,
    #[default]
    Multigrid,
}

/// The preconditioner: the coupled system's block factorisation with the impulse block
/// `D + S` (`D = diag(1/m_f)`, `S` the solids' blocks) replaced by its diagonal `E`. In the
/// unknowns `(q, mu)` the system is
///
/// ```text
/// [ L + Y^T D Y   Y^T D ]
/// [ D Y           D + S ]
/// ```
///
/// (`L` the liquid's Poisson matrix without the coupled faces, `y_f = (Y q)_f` the pressure's
/// push on face `f`); with `E` for `D + S` it factors exactly as
/// `[I, Y^T D E^-1; 0, I] diag(L', E) [I, 0; E^-1 D Y, I]`, where
/// `L' = L + Y^T (D - D E^-1 D) Y` is the Poisson matrix with every coupled face given the
/// stiffness `d_f s_f / (d_f + s_f)`: the liquid's and the solid's masses there in series
/// (`1 / (m_f + 1/s_f)`, [`CoupledSystem::reduced_pressure`]). A heavy solid's face is nearly
/// a wall in `L'`; a light sheet's passes the pressure on almost as the liquid would, which is
/// what makes a sheet in water converge (with the faces as walls, a light cloth took 100-400
/// iterations a substep). `L'^-1` is the chosen pressure preconditioner (multigrid or MIC(0))
/// of `L'`.
///
/// To that it adds, for every group of [`WrappedCells`], the inverse of the system's block on
/// the cells' pressures and their faces' impulses (an additive Schwarz term: the sum stays
/// symmetric positive definite). The block factorisation cannot see such a cell's near-null
/// direction: its pressure raised and its faces' impulses holding the push back, where the
/// pushes on its opposite faces act on the same piece of cloth and cancel. With it, PCG took
/// 577 iterations a substep on `cloth_from_water`'s folding cloth; with the groups, 163.
struct CoupledPreconditioner<'a> {
    pressure: Box<dyn Preconditioner + 'a>,
    faces: &'a [CoupledFace],
    /// `E`: the impulse block's diagonal.
    impulse_diagonal: Vec<Real>,
    wrapped: Vec<WrappedCells>,
    /// Room for the transformed pressure residual (used only with coupled faces).
    scratch: Mutex<Vec<Real>>,
}

/// Pressure unknowns all of whose open faces are coupled (cells that a moving sheet wraps),
/// joined where they share a coupled face: their rows and their faces' impulse rows in the
/// system, and the Cholesky factors of the system's block on them.
struct WrappedCells {
    rows: Vec<usize>,
    block: Cholesky<Real, Dyn>,
}

/// The most rows of one [`WrappedCells`] block (a larger group is left to the rest of the
/// preconditioner).
const WRAPPED_ROWS_MAX: usize = 256;

impl WrappedCells {
    /// The pressure unknowns of `system` whose row of the pressure block without the coupled
    /// faces is empty, in groups joined by shared faces, each with its block factored
    /// (the cells' pressures, their coupled faces' impulses and, through `solids`' responses,
    /// the solids' block on those faces); a group whose block is not positive definite is left
    /// out.
    fn all(system: &CoupledSystem, solids: &[&mut dyn CoupledSolid]) -> Vec<WrappedCells> {
        let wrapped = |c: &usize| system.pressure.diag[*c] == 0.0;
        // Union–find over the wrapped cells, by their places in `cells`.
        let mut cells: Vec<usize> = system.faces.iter().flat_map(|f| f.cells.iter().flatten().map(|&(c, _)| c)).filter(wrapped).collect();
        cells.sort_unstable();
        cells.dedup();
        let place = |c: usize| cells.binary_search(&c).ok();
        let mut sets = DisjointSets::new(cells.len());
        for face in &system.faces {
            if let [Some((a, _)), Some((b, _))] = face.cells {
                if let (Some(a), Some(b)) = (place(a), place(b)) {
                    sets.join(a, b);
                }
            }
        }
        let mut groups: HashMap<usize, (Vec<usize>, Vec<usize>)> = HashMap::new();
        for (f, face) in system.faces.iter().enumerate() {
            let mut roots: Vec<usize> = face.cells.iter().flatten().filter_map(|&(c, _)| place(c)).map(|i| sets.root(i)).collect();
            roots.dedup();
            for r in roots {
                groups.entry(r).or_default().1.push(f);
            }
        }
        for (i, &c) in cells.iter().enumerate() {
            groups.entry(sets.root(i)).or_default().0.push(c);
        }
        let mut groups: Vec<(Vec<usize>, Vec<usize>)> = groups.into_values().filter(|(c, f)| c.len() + f.len() <= WRAPPED_ROWS_MAX).collect();
        groups.sort_unstable();
        groups.into_par_iter().filter_map(|(cells, faces)| Self::block(system, solids, cells, faces)).collect()
    }

    /// The group of `cells` and the coupled `faces` around them, with its block factored.
    fn block(system: &CoupledSystem, solids: &[&mut dyn CoupledSolid], cells: Vec<usize>, faces: Vec<usize>) -> Option<WrappedCells> {
        let size = cells.len() + faces.len();
        let mut block = DMatrix::zeros(size, size);
        for (i, face) in faces.iter().map(|&f| &system.faces[f]).enumerate() {
            let row = cells.len() + i;
            let ends: Vec<(usize, Real)> = face.cells.iter().flatten().filter_map(|&(c, sign)| Some((cells.binary_search(&c).ok()?, face.open * sign))).collect();
            for &(a, ya) in &ends {
                for &(b, yb) in &ends {
                    block[(a, b)] += ya * yb / face.mass;
                }
                block[(a, row)] = ya / face.mass;
                block[(row, a)] = ya / face.mass;
            }
            block[(row, row)] = 1.0 / face.mass;
        }
        // `system.faces` is sorted by solid, and `faces` in increasing order: each solid's faces
        // are one run of rows.
        let mut first = cells.len();
        for of_one in faces.chunk_by(|&a, &b| system.faces[a].solid == system.faces[b].solid) {
            let (sites, axes) = of_one.iter().map(|&f| (system.faces[f].site, system.faces[f].axis)).unzip();
            let solid = SolidBlock::at_sites(&*solids[system.faces[of_one[0]].solid], sites, axes, system.cell_mass).matrix();
            for a in 0..of_one.len() {
                for b in 0..of_one.len() {
                    block[(first + a, first + b)] += 0.5 * (solid[(a, b)] + solid[(b, a)]);
                }
            }
            first += of_one.len();
        }
        let block = block.cholesky()?;
        let n = system.pressure.diag.len();
        Some(WrappedCells { rows: cells.into_iter().chain(faces.into_iter().map(|f| n + f)).collect(), block })
    }
}

impl<'a> CoupledPreconditioner<'a> {
    /// `reduced` is `L'` ([`CoupledSystem::reduced_pressure`]).
    fn new(reduced: &'a Stencil7, faces: &'a [CoupledFace], impulse_diagonal: Vec<Real>, wrapped: Vec<WrappedCells>, choice: PressurePreconditioner) -> Self {
        let scratch = Mutex::new(if faces.is_empty() { Vec::new() } else { vec![0.0; reduced.diag.len()] });
        let pressure: Box<dyn Preconditioner + 'a> = match choice {
            PressurePreconditioner::Mic0 => Box::new(Mic0::new(reduced)),
            PressurePreconditioner::Multigrid => Box::new(Multigrid::new(reduced)),
        };
        CoupledPreconditioner { pressure, faces, impulse_diagonal, wrapped, scratch }
    }
}

impl Preconditioner for CoupledPreconditioner<'_> {
    /// `z_q = L'^-1 (r_q - Y^T D E^-1 r_mu)`, `z_mu = E^-1 (r_mu - D Y z_q)`.
    fn apply(&self, r: &[Real], z: &mut [Real]) {
        let n = r.len() - self.faces.len();
        if self.faces.is_empty() {
            self.pressure.apply(r, z);
            return;
        }
        let mut rq = self.scratch.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rq.copy_from_slice(&r[..n]);
        for (f, face) in self.faces.iter().enumerate() {
            let share = r[n + f] / (face.mass * self.impulse_diagonal[f]);
            for &(c, sign) in face.cells.iter().flatten() {
                rq[c] -= sign * face.open * share;
            }
        }
        self.pressure.apply(&rq, &mut z[..n]);
        let (zq, zmu) = z.split_at_mut(n);
        for (f, face) in self.faces.iter().enumerate() {
            zmu[f] = (r[n + f] - face.pressure_term(zq) / face.mass) / self.impulse_diagonal[f];
        }
        for cell in &self.wrapped {
            let local = cell.block.solve(&DVector::from_iterator(cell.rows.len(), cell.rows.iter().map(|&i| r[i])));
            for (&i, v) in cell.rows.iter().zip(local.iter()) {
                z[i] += v;
            }
        }
    }
}

/// What the coupled solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CouplingReport {
    /// The pressure solve's figures (unknowns counts pressure and impulse unknowns).
    pub projection: ProjectionReport,
    /// Coupled faces.
    pub faces: usize,
    /// Pressure unknowns at exactly zero: the active set of a unilateral solve.
    pub active: usize,
    /// Total impulse the solids gave the liquid through the coupled faces (N s); they received
    /// exactly its opposite (and, after contact, their contacts' reactions).
    pub impulse_on_liquid: Vec3,
}

/// How the cell across a face of an unknown cell enters the pressure block: coupled faces are
/// left to the coupling, the rest as in the plain free-surface projection, with the
/// `capillary` pressure jump under surface tension ([`liquid_neighbour`]).
fn classify<'a>(
    phi: &'a Array3<Real>,
    unknown: &'a Array3<bool>,
    dual: &'a DualCells,
    capillary: Option<&'a Array3<Real>>,
    media: &'a Media,
) -> impl Fn([usize; 3], usize, usize, Option<[usize; 3]>) -> Across + Sync + 'a {
    let base = liquid_neighbour(phi, unknown, capillary, media);
    move |c, axis, side, n| {
        if dual.fraction(axis, face_of(c, axis, side)) > 0.0 {
            Across::Coupled
        } else {
            base(c, axis, side, n)
        }
    }
}

/// An orthonormal basis of the span of `vectors` (Gram–Schmidt). Regions of the nullspace that
/// share a coupled face (two pockets on either side of a face a solid reaches into) give
/// vectors that overlap there; the nullspace projection needs them orthogonal.
fn orthonormalize(vectors: impl Iterator<Item = SparseVector>) -> Vec<SparseVector> {
    let mut basis: Vec<SparseVector> = Vec::new();
    for vector in vectors {
        let mut v: HashMap<usize, Real> = vector.into_iter().collect();
        for u in &basis {
            let dot: Real = u.iter().map(|(i, x)| x * v.get(i).copied().unwrap_or(0.0)).sum();
            if dot != 0.0 {
                for &(i, x) in u {
                    *v.entry(i).or_default() -= dot * x;
                }
            }
        }
        let norm = v.values().map(|x| x * x).sum::<Real>().sqrt();
        if norm > 1e-12 {
            let mut u: SparseVector = v.into_iter().map(|(i, x)| (i, x / norm)).filter(|(_, x)| *x != 0.0).collect();
            u.sort_unstable_by_key(|&(i, _)| i);
            basis.push(u);
        }
    }
    basis
}

/// The unknown cells, the coupled system and its right-hand side.
struct Assembled<'a> {
    unknown: Array3<bool>,
    dual: DualCells,
    system: CoupledSystem<'a>,
    rhs: Vec<Real>,
}

#[allow(clippy::too_many_arguments)]
fn assemble<'a>(
    grid: &Grid,
    phi: &Array3<Real>,
    static_solids: &StaticSolids,
    velocity: &MacVelocity,
    density: Real,
    divergence: Real,
    capillary: Option<&Array3<Real>>,
    media: &Media,
    solids: &'a [&mut dyn CoupledSolid],
) -> Assembled<'a> {
    let dual = DualCells::new(grid, solids);
    let liquid = liquid_cells(phi, static_solids);
    let unknown = if solids.is_empty() {
        liquid.clone()
    } else {
        liquid.par_map(|i, j, k, l| {
            // Over the open faces: whether any is, and whether each one a solid reaches is a
            // moving sheet's; a face no solid reaches settles it.
            let (mut open, mut wrapped) = (false, true);
            for (a, f) in (0..3).flat_map(|a| (0..2).map(move |side| (a, face_of([i, j, k], a, side)))) {
                if static_solids.face_open[a].get(f[0], f[1], f[2]) > 0.0 {
                    match dual.cut(a, f) {
                        None => return l,
                        Some(cut) => (open, wrapped) = (true, wrapped && cut.moving_sheet),
                    }
                }
            }
            l && open && wrapped
        })
    };
    let mut faces = coupled_faces(grid, phi, static_solids, &liquid, &unknown, &dual, media, solids);
    faces.sort_by_key(|f| f.solid);
    let (pressure, mut rhs) = assemble_with(grid, static_solids, velocity, &unknown, |c| divergence + media.divergence(c), classify(phi, &unknown, &dual, capillary, media));
    let n_cells = grid.cell_count();
    let pockets = enclosed_pockets(grid, &pressure.floating, &unknown, &faces, |s| solids[s].is_sheet());
    let candidates: Vec<SparseVector> = pressure
        .floating
        .iter()
        .map(|cells| {
            let members: std::collections::HashSet<u32> = cells.iter().copied().collect();
            let region_faces = faces.iter().enumerate().filter_map(|(i, f)| {
                let y: Real = f.cells.iter().flatten().filter(|(c, _)| members.contains(&(*c as u32))).map(|(_, sign)| f.open * sign).sum();
                (y != 0.0).then_some((n_cells + i, -y))
            });
            cells.iter().map(|&c| (c as usize, 1.0)).chain(region_faces).collect()
        })
        .collect();
    rhs.extend(faces.iter().map(|f| {
        let u = velocity.faces[f.axis].get(f.index[0], f.index[1], f.index[2]);
        -(u - solids[f.solid].velocity_in(&f.site)[f.axis])
    }));
    let cell_mass = density * grid.dx.powi(3);
    let blocks = solids
        .iter()
        .enumerate()
        .map(|(s, solid)| {
            let range = faces.partition_point(|f| f.solid < s)..faces.partition_point(|f| f.solid <= s);
            SolidBlock::new(&**solid, range.clone(), &faces[range], cell_mass)
        })
        .collect();
    let mut system = CoupledSystem { pressure, faces, blocks, cell_mass, nullspace: Vec::new() };
    // A region's uniform pressure is in the nullspace only if it pushes no solid as a whole
    // (a solid touching a wall or the region's edge is pushed): keep the candidates the
    // operator maps to nearly zero ([`NEARLY_NULL`]), and the pockets one solid closes off,
    // which it nearly does.
    let n = system.len();
    let null = candidates.into_iter().zip(pockets).filter(|(candidate, pocket)| {
        if *pocket || candidate.iter().all(|&(i, _)| i < n_cells) {
            return true;
        }
        let mut v = vec![0.0; n];
        for &(i, value) in candidate {
            v[i] = value;
        }
        let mut y = vec![0.0; n];
        system.apply(&v, &mut y);
        tidepool_linalg::reduce::norm2(&y) <= NEARLY_NULL * tidepool_linalg::reduce::norm2(&v)
    });
    let null = null.map(|(candidate, _)| candidate);
    system.nullspace = orthonormalize(null);
    Assembled { unknown, dual, system, rhs }
}

/// A floating region's uniform pressure (with the impulses that balance it on its coupled
/// faces) is left out like a nullspace where the operator shrinks it below this fraction: the
/// solids around it barely move for its push (the liquid in it weighs less than a thousandth
/// of what they put against it), and its pressure is then nearly undetermined. Two cells of
/// water under a torus resting on the floor, the torus held along its contacts after contact,
/// were shrunk to 2e-4 and grew a 137 m/s jet in one solve; the regions that push bodies
/// shrink to 0.06 and more.
const NEARLY_NULL: Real = 1e-3;

/// Per floating region of pressure unknowns (`floating`, flat cell indices): whether it is a
/// pocket of liquid that one solid encloses — every face of its cells leads to another of its
/// cells or is a fully open coupled face of that one solid. A pocket's uniform pressure pushes
/// only on the solid around it, equally in all directions: it moves a rigid solid not at all
/// (the pressure is undetermined, as in a single liquid cell inside a solid), and parts of
/// an articulated or deformable solid only through their slight relative response, which
/// leaves the system nearly singular (a one-cell pocket between a jellyfish's arm and its
/// bell was pushed to pressures that threw the jellyfish). Its uniform pressure is left out
/// like a nullspace. Not so the inside of a closed sheet (`is_sheet`), a bag of cloth: that
/// pressure pushes its walls out everywhere, and it is what resists squeezing the bag (left
/// out, a bag of water dropped into a pool lost 70% of its volume in half a second; kept, 47%:
/// docs/methods/deformable.md says what else lets it leak).
fn enclosed_pockets(grid: &Grid, floating: &[Vec<u32>], unknown: &Array3<bool>, faces: &[CoupledFace], is_sheet: impl Fn(usize) -> bool) -> Vec<bool> {
    if floating.is_empty() {
        return Vec::new();
    }
    let coupled: HashMap<(usize, [usize; 3]), (usize, Real)> = faces.iter().map(|f| ((f.axis, f.index), (f.solid, f.open))).collect();
    floating
        .iter()
        .map(|cells| {
            let members: std::collections::HashSet<u32> = cells.iter().copied().collect();
            let mut solid = None;
            cells.iter().all(|&c| {
                let cell = unknown.coords(c as usize);
                (0..3).all(|axis| {
                    (0..2).all(|side| {
                        if across(grid, cell, axis, side).is_some_and(|n| members.contains(&(unknown.index(n[0], n[1], n[2]) as u32))) {
                            return true;
                        }
                        match coupled.get(&(axis, face_of(cell, axis, side))) {
                            Some(&(s, open)) if open >= 1.0 && !is_sheet(s) => *solid.get_or_insert(s) == s,
                            _ => false,
                        }
                    })
                })
            })
        })
        .collect()
}

/// `phi` with the cells inside and next to each solid near the surface holding the liquid's surface
/// continued level from beside it ([`crate::grid::level_set::continue_into_solid`]), at the
/// solids' current places. At a waterline the liquid's share `theta` of a dual cell comes from
/// the level set on either side of the free surface, and with it the liquid the solve hangs
/// on a body or lifts it with. Sheets are left out: they have no inside to continue the
/// surface through, and the liquid on their two sides need not stand at one level (a sheet
/// across a tank holds water above air).
fn level_through_solids<'p>(grid: &Grid, phi: &'p Array3<Real>, solids: &[&mut dyn CoupledSolid], up: &Vec3) -> std::borrow::Cow<'p, Array3<Real>> {
    // Without a surface anywhere (smoke fills the domain) there is none to continue.
    if solids.is_empty() || phi.as_slice().par_iter().all(|&p| p < 0.0) {
        return std::borrow::Cow::Borrowed(phi);
    }
    let mut continued = phi.clone();
    for solid in solids.iter().filter(|s| !s.is_sheet()) {
        let (centre, radius) = solid.bounding_sphere();
        let reach = Vec3::repeat(radius + crate::grid::level_set::CONTINUED_OUTSIDE * grid.dx);
        let (lo, hi) = (grid.cell_of(&(centre - reach)), grid.cell_of(&(centre + reach)));
        let cells = (lo[2]..=hi[2]).flat_map(|k| (lo[1]..=hi[1]).flat_map(move |j| (lo[0]..=hi[0]).map(move |i| [i, j, k]))).collect();
        crate::grid::level_set::continue_into_solid(grid, &mut continued, cells, &|x: &Vec3| solid.signed_distance(x), up);
    }
    std::borrow::Cow::Owned(continued)
}

/// The liquid of the bodies' position update's coupled solve, whose result is discarded once
/// the bodies have their velocities: its face velocities and pressure (Pa).
pub struct TrialLiquid {
    /// Face velocities.
    pub velocity: MacVelocity,
    /// Pressure (Pa).
    pub pressure: Array3<Real>,
}

impl TrialLiquid {
    /// The liquid `velocity` plus `h` of `gravity`, from `pressure`.
    pub fn new(velocity: &MacVelocity, pressure: &Array3<Real>, gravity: &Vec3, h: Real) -> Self {
        let mut velocity = velocity.clone();
        for (a, faces) in velocity.faces.iter_mut().enumerate() {
            faces.as_mut_slice().par_iter_mut().for_each(|u| *u += gravity[a] * h);
        }
        TrialLiquid { velocity, pressure: pressure.clone() }
    }

    /// The liquid of `after_contact` and its contacts, or, before contact, a new trial from
    /// `velocity` and `pressure` ([`TrialLiquid::new`]).
    pub fn resume<'c>(
        after_contact: Option<(TrialLiquid, &'c Contacts)>,
        velocity: &MacVelocity,
        pressure: &Array3<Real>,
        gravity: &Vec3,
        h: Real,
    ) -> (Self, Option<&'c Contacts>) {
        match after_contact {
            Some((trial, contacts)) => (trial, Some(contacts)),
            None => (TrialLiquid::new(velocity, pressure, gravity, h), None),
        }
    }

    /// [`project`] over `h` with `solids`, or, after contact, [`project_held`] with them held
    /// along their `contacts`.
    pub fn solve(&mut self, fluid: FluidView, h: Real, divergence: Real, solids: &mut [&mut dyn CoupledSolid], contacts: Option<&Contacts>) {
        match contacts {
            Some(contacts) => project_held(fluid, &mut self.velocity, &mut self.pressure, h, divergence, solids, contacts),
            None => project(fluid, &mut self.velocity, &mut self.pressure, h, divergence, solids, &[]),
        };
    }
}

/// The points of contact of each solid with the static geometry and the geometry's normals
/// there, as [`crate::solids::contact::touching`] gives them.
pub type Contacts = [Vec<(Vec3, Vec3)>];

/// How the coupled solve sees a grid liquid: where it is and what it is.
#[derive(Clone, Copy)]
pub struct FluidView<'a> {
    /// The MAC grid.
    pub grid: &'a Grid,
    /// The liquid's level set at cell centres (negative inside), extended into solids.
    pub phi: &'a Array3<Real>,
    /// Domain walls and static obstacles.
    pub statics: &'a StaticSolids,
    /// The reference density (kg/m^3) of the solve's scaled pressure: the liquid's.
    pub density: Real,
    /// The liquid's phases, their densities and surface tensions ([`PhaseView::single`] for
    /// one liquid).
    pub phases: PhaseView<'a>,
    /// Whether the interfaces carry their capillary pressure jumps: under surface tension the
    /// liquid's pressure at its surface is `sigma kappa` above the air's (or the other
    /// phase's), `kappa` the surface's mean curvature. Not in a correction (a second
    /// projection of an already projected velocity), which would add the jumps again.
    pub capillary: bool,
    /// Tolerance and iteration cap of the solve.
    pub params: PcgParams,
    /// The preconditioner of the pressure block (bilateral solves).
    pub preconditioner: PressurePreconditioner,
    /// The unit vector against gravity: inside a solid, the liquid's surface is taken level
    /// with the liquid beside it ([`level_through_solids`]).
    pub up: Vec3,
    /// Whether the liquid resists compression only (Gerszewski sec. 3.1): pressures are then
    /// bounded below by zero, so cells may expand (separate) but not compress, and the system
    /// is solved as a bound-constrained QP by MPRGP, the impulses free. Otherwise the liquid is
    /// incompressible and the system is solved by PCG.
    pub unilateral: bool,
}

/// Projects `velocity` together with `solids` over `dt`: afterwards the liquid is divergence
/// free (up to the uniform `divergence` and the phases', see [`crate::fluids::eulerian::VolumeControl`]), its
/// velocity on every coupled face equals the solid's, and the solids have received the
/// impulses the liquid's pressure puts on them. A solid with points in `contacts` (by index;
/// none where it is shorter) keeps its velocity along their normals, which contact has set,
/// and responds along every other direction ([`Constrained`]). `pressure` (Pa) is the initial
/// guess on entry and the new pressure on exit. Returns which faces received a pressure update
/// and a report.
pub fn project(
    fluid: FluidView,
    velocity: &mut MacVelocity,
    pressure: &mut Array3<Real>,
    dt: Real,
    divergence: Real,
    solids: &mut [&mut dyn CoupledSolid],
    contacts: &Contacts,
) -> ([Array3<bool>; 3], CouplingReport) {
    let FluidView { grid, phi, statics: static_solids, density, phases, capillary, params, preconditioner, up, unilateral } = fluid;
    let to_scaled = dt / (density * grid.dx);
    let mut seconds = SolveSeconds::default();
    let mut stopwatch = Instant::now();
    let mut lap = |slot: &mut f64| {
        let now = Instant::now();
        *slot = (now - stopwatch).as_secs_f64();
        stopwatch = now;
    };
    let mut constrained: Vec<Constrained> = solids.iter_mut().enumerate().map(|(i, s)| Constrained::new(&mut **s, contacts.get(i).map_or(&[], Vec::as_slice))).collect();
    let solids: &mut [&mut dyn CoupledSolid] = &mut constrained.iter_mut().map(|s| s as &mut dyn CoupledSolid).collect::<Vec<_>>();
    let media = Media::new(grid, phases, density, to_scaled, capillary);
    let capillary = if capillary { media.air_jump(grid, phi) } else { None };
    let phi = &level_through_solids(grid, phi, solids, &up);
    let Assembled { unknown, dual, system, rhs } = assemble(grid, phi, static_solids, velocity, density, divergence, capillary.as_ref(), &media, solids);
    let mut solution: Vec<Real> = pressure.as_slice().par_iter().zip(unknown.as_slice().par_iter()).map(|(p, &l)| if l { p * to_scaled } else { 0.0 }).collect();
    solution.resize(system.len(), 0.0);
    lap(&mut seconds.assembly);
    let (iterations, residual, converged) = if unilateral {
        // min 1/2 x^T A x - rhs^T x with the pressures at least zero; the part of `rhs` in
        // the nullspace (a closed region's uniform pressure) is removed as PCG removes it.
        let mut c: Vec<Real> = rhs.iter().map(|r| -r).collect();
        system.project_nullspace(&mut c);
        let cells = grid.cell_count();
        let lower: Vec<Real> = (0..system.len()).map(|i| if i < cells { 0.0 } else { Real::NEG_INFINITY }).collect();
        let (norm, _) = largest_eigenvalue(&system, &mut Vec::new(), 1e-3, 200);
        let step = MprgpParams { tolerance: params.tolerance, max_iterations: params.max_iterations, gamma: 1.0, step_length: 1.8 / norm.max(1e-300) };
        lap(&mut seconds.setup);
        let info = mprgp(&system, &mut FreeSetJacobi::from_diagonal(&system.diagonal()), &c, &lower, &mut solution, step);
        (info.iterations, info.relative_residual, info.converged)
    } else {
        let solid = system.solid_diagonal();
        let (impulse_diagonal, reduced) = (system.impulse_diagonal(&solid), system.reduced_pressure(&solid));
        let wrapped = WrappedCells::all(&system, solids);
        let preconditioner = CoupledPreconditioner::new(reduced.as_ref().unwrap_or(&system.pressure), &system.faces, impulse_diagonal, wrapped, preconditioner);
        lap(&mut seconds.setup);
        let info = pcg(&system, &preconditioner, &rhs, &mut solution, params);
        (info.iterations, info.relative_residual, info.converged)
    };
    lap(&mut seconds.iterations);
    let CoupledSystem { faces, blocks, cell_mass, .. } = system;
    let by_solid: Vec<_> = blocks.into_iter().map(SolidBlock::into_faces).collect();
    let mu = solution.split_off(grid.cell_count());
    let q = Array3::from_vec(grid.dims, solution);
    let mut valid = apply_gradient(grid, static_solids, velocity, &q, &unknown, classify(phi, &unknown, &dual, capillary.as_ref(), &media));
    let mut impulse_on_liquid = Vec3::zeros();
    let mut on_solids = Vec::with_capacity(faces.len());
    for (f, face) in faces.iter().enumerate() {
        let [i, j, k] = face.index;
        let u = velocity.faces[face.axis].get(i, j, k);
        velocity.faces[face.axis].set(i, j, k, u + (face.pressure_term(q.as_slice()) + mu[f]) / face.mass);
        valid[face.axis].set(i, j, k, true);
        let impulse = Vec3::ith(face.axis, cell_mass * mu[f]);
        impulse_on_liquid += impulse;
        on_solids.push(-impulse);
    }
    for (solid, (range, sites)) in solids.iter_mut().zip(by_solid) {
        solid.apply_impulses(&sites, &on_solids[range]);
    }
    let to_pascal = 1.0 / to_scaled;
    *pressure = q.par_map(|i, j, k, v| if unknown.get(i, j, k) { v * to_pascal } else { 0.0 });
    lap(&mut seconds.update);
    let report = CouplingReport {
        projection: ProjectionReport { unknowns: unknown.as_slice().par_iter().filter(|&&u| u).count() + faces.len(), iterations, residual, converged, seconds },
        faces: faces.len(),
        active: unknown.as_slice().par_iter().zip(q.as_slice().par_iter()).filter(|&(&u, &v)| u && v == 0.0).count(),
        impulse_on_liquid,
    };
    (valid, report)
}

/// [`project`] again after contact has changed the solids' velocities, each held along the
/// normals of its `contacts` (see [`project`]): the liquid is made to move with them again,
/// they take what the liquid gives them along every other direction, and what holds them takes
/// the rest. `velocity` was projected once already this step, so this solve's pressure is a
/// correction: it is added to `pressure`, which stays the velocity solve's pressure (the one
/// kept, written to the fields and used as the next solve's first guess; it was replaced by the
/// correction, a few pascals in a pool where a stone rests on the floor).
pub fn project_held(
    fluid: FluidView,
    velocity: &mut MacVelocity,
    pressure: &mut Array3<Real>,
    dt: Real,
    divergence: Real,
    solids: &mut [&mut dyn CoupledSolid],
    contacts: &Contacts,
) -> ([Array3<bool>; 3], CouplingReport) {
    let mut correction = fluid.grid.zeros(Location::Cell);
    let result = project(FluidView { capillary: false, ..fluid }, velocity, &mut correction, dt, divergence, solids, contacts);
    pressure.as_mut_slice().par_iter_mut().zip(correction.as_slice().par_iter()).for_each(|(p, c)| *p += c);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Shape;
    use crate::solids::rigid::{BodyKind, Material, RigidBody};
    use crate::solids::Boundary;
    use nalgebra::DMatrix;

    const G: Real = 9.81;
    const DT: Real = 0.01;
    const WATER: Real = 1000.0;

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

    /// Water in a tank as the coupled solve sees it, solved to 1e-10 with `preconditioner`.
    fn water<'a>(grid: &'a Grid, phi: &'a Array3<Real>, statics: &'a StaticSolids, preconditioner: PressurePreconditioner) -> FluidView<'a> {
        let params = PcgParams { tolerance: 1e-10, max_iterations: 500 };
        FluidView { grid, phi, statics, density: WATER, phases: PhaseView::single(phi, &WATER, &0.0), capillary: false, params, preconditioner, up: Vec3::y(), unilateral: false }
    }

    /// The system of a small tank as a dense matrix over its unknowns.
    fn dense(t: &mut Tank) -> DMatrix<Real> {
        let solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
        let (m, faces) = dense_system(&t.grid, &t.phi, &t.statics, &t.velocity, &solids, None);
        assert!(faces == 24, "a cube of 2x2x2 cells has 24 coupled faces, found {faces}");
        m
    }

    /// The coupled system with `solids` as a dense matrix over its unknowns, and its number of
    /// coupled faces; the liquid is water, or the `phases`.
    fn dense_system(
        grid: &Grid,
        phi: &Array3<Real>,
        statics: &StaticSolids,
        velocity: &MacVelocity,
        solids: &[&mut dyn CoupledSolid],
        phases: Option<PhaseView>,
    ) -> (DMatrix<Real>, usize) {
        let media = Media::new(grid, phases.unwrap_or(PhaseView::single(phi, &WATER, &0.0)), WATER, DT / (WATER * grid.dx), true);
        let a = assemble(grid, phi, statics, velocity, WATER, 0.0, None, &media, solids);
        let n = grid.cell_count();
        let rows: Vec<usize> = (0..n).filter(|&c| a.unknown.as_slice()[c]).chain(n..a.system.len()).collect();
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
        (m, a.system.faces.len())
    }

    /// The coupled system with an articulated reduced body under water — two soft bars (four
    /// modes each) held together by a point joint, the joint eliminated inside the solids'
    /// response (eq. 46–49) — is symmetric positive definite.
    #[test]
    fn coupled_system_with_joints_is_symmetric_positive_definite() {
        use crate::geometry::TetMesh;
        use crate::solids::reduced::articulated::{Articulated, Profile};
        use crate::solids::reduced::body::{ReducedBody, ReducedModel};
        use crate::solids::reduced::fem::ElasticMaterial;
        use std::sync::Arc;
        let t = tank(700.0);
        let mesh = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.375, 0.2, 0.2), [6, 3, 3]);
        let model = Arc::new(ReducedModel::new(&mesh, &ElasticMaterial { young: 1e4, poisson: 0.3, density: 800.0 }, 4, 0.01, false, None).unwrap());
        let bars = vec![ReducedBody::new("a", model.clone(), Vec3::new(0.3, 0.3, 0.5)), ReducedBody::new("b", model, Vec3::new(0.6, 0.3, 0.5))];
        let mut pair = Articulated::new("pair", bars, &[(0, 1, Vec3::new(0.45, 0.3, 0.5))], &[], Profile::Constant, 0.0).unwrap();
        pair.predict_velocities(DT, &Vec3::new(0.0, -G, 0.0), 0.0);
        let solids: [&mut dyn CoupledSolid; 1] = [&mut pair];
        let (m, faces) = dense_system(&t.grid, &t.phi, &t.statics, &t.velocity, &solids, None);
        assert!(faces > 0, "the bars couple to no face");
        let asymmetry = (&m - m.transpose()).amax();
        assert!(asymmetry <= 1e-12 * m.amax(), "asymmetry {asymmetry}");
        assert!(m.cholesky().is_some(), "not positive definite");
    }

    /// The preconditioner is the inverse of the coupled system with the impulse block's
    /// off-diagonal entries left out, when its pressure part is solved exactly: the pressure
    /// block and the coupling between pressures and impulses are the system's own (which
    /// `L'`, the pressure block with the impulses eliminated against their diagonal, makes
    /// so). A light cube (50 kg/m^3), whose response is large next to the liquid's.
    #[test]
    fn preconditioner_inverts_the_system_but_for_the_impulse_blocks_off_diagonal() {
        use nalgebra::DVector;
        struct Exact {
            rows: Vec<usize>,
            inverse: DMatrix<Real>,
        }
        impl Preconditioner for Exact {
            fn apply(&self, r: &[Real], z: &mut [Real]) {
                z.fill(0.0);
                let r = DVector::from_iterator(self.rows.len(), self.rows.iter().map(|&c| r[c]));
                for (&c, v) in self.rows.iter().zip((&self.inverse * r).iter()) {
                    z[c] = *v;
                }
            }
        }
        let mut t = tank(50.0);
        let solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
        let (a, faces) = dense_system(&t.grid, &t.phi, &t.statics, &t.velocity, &solids, None);
        let media = Media::new(&t.grid, PhaseView::single(&t.phi, &WATER, &0.0), WATER, DT / (WATER * t.grid.dx), true);
        let assembled = assemble(&t.grid, &t.phi, &t.statics, &t.velocity, WATER, 0.0, None, &media, &solids);
        let n = t.grid.cell_count();
        let cells: Vec<usize> = (0..n).filter(|&c| assembled.unknown.as_slice()[c]).collect();
        let rows: Vec<usize> = cells.iter().copied().chain(n..n + faces).collect();
        let solid = assembled.system.solid_diagonal();
        let (diagonal, reduced) = (assembled.system.impulse_diagonal(&solid), assembled.system.reduced_pressure(&solid).expect("a dynamic body changes the pressure block"));
        let inverse = DMatrix::from_fn(cells.len(), cells.len(), |i, j| reduced.entry(cells[i], cells[j])).try_inverse().unwrap();
        let preconditioner = CoupledPreconditioner {
            pressure: Box::new(Exact { rows: cells.clone(), inverse }),
            faces: &assembled.system.faces,
            impulse_diagonal: diagonal,
            wrapped: Vec::new(),
            scratch: Mutex::new(vec![0.0; n]),
        };
        let nq = cells.len();
        let m = DMatrix::from_fn(rows.len(), rows.len(), |i, j| if i >= nq && j >= nq && i != j { 0.0 } else { a[(i, j)] });
        let (mut r, mut z) = (vec![0.0; n + faces], vec![0.0; n + faces]);
        let mut product = DMatrix::zeros(rows.len(), rows.len());
        for j in 0..rows.len() {
            for (i, &row) in rows.iter().enumerate() {
                r[row] = m[(i, j)];
            }
            preconditioner.apply(&r, &mut z);
            for (i, &row) in rows.iter().enumerate() {
                product[(i, j)] = z[row];
            }
        }
        let off = (product - DMatrix::identity(rows.len(), rows.len())).amax();
        assert!(off < 1e-9, "M^-1 M is off the identity by {off}");
        let off_diagonal = (m - &a).amax();
        assert!(off_diagonal > 0.1 * a.view((nq, nq), (faces, faces)).diagonal().amax(), "the cube's impulse block is nearly diagonal: the test would not tell");
    }

    /// A light sheet of cloth (0.1 kg/m^2, 2 x 2 cells, fine triangles) lying flat through the
    /// centres of four cells under water couples all six faces of each: they are
    /// [`WrappedCells`], and with their block in the preconditioner the preconditioned system's
    /// condition number falls. Without it each cell's pressure, raised with its faces' impulses
    /// holding the push back, is a near-null direction: the pushes on its upper and lower
    /// faces act on the same piece of cloth, up and down, and cancel.
    #[test]
    fn wrapped_cells_lower_the_condition_number_of_the_preconditioned_system() {
        use crate::geometry::TriMesh;
        use crate::solids::deformable::body::{DeformableBody, DeformableModel};
        use crate::solids::Solid;
        use std::sync::Arc;
        let t = tank(1.0);
        let centre = 0.5 * (t.grid.position(Location::Cell, 3, 2, 3) + t.grid.position(Location::Cell, 4, 2, 4));
        let mut mesh = TriMesh::sheet(1.6 * t.grid.dx, 1.6 * t.grid.dx, 0.2 * t.grid.dx);
        mesh.vertices.iter_mut().for_each(|v| *v += centre);
        let model = Arc::new(DeformableModel::sheet(&mesh, 0.001, 1e5, 0.3, 0.0, 100.0).unwrap());
        let mut sheet = DeformableBody::new("sheet", model, mesh.vertices.clone(), Material { restitution: 0.0, friction: 0.0 });
        sheet.predict_velocities(DT, &Vec3::new(0.0, -G, 0.0), 0.0);
        let solids: [&mut dyn CoupledSolid; 1] = [&mut sheet];
        let (a, _) = dense_system(&t.grid, &t.phi, &t.statics, &t.velocity, &solids, None);
        let media = Media::new(&t.grid, PhaseView::single(&t.phi, &WATER, &0.0), WATER, DT / (WATER * t.grid.dx), true);
        let assembled = assemble(&t.grid, &t.phi, &t.statics, &t.velocity, WATER, 0.0, None, &media, &solids);
        let system = &assembled.system;
        let wrapped = WrappedCells::all(system, &solids);
        for [i, k] in [[3, 3], [3, 4], [4, 3], [4, 4]] {
            let cell = t.phi.index(i, 2, k);
            assert!(wrapped.iter().any(|w| w.rows.contains(&cell)), "cell {:?} is not wrapped", [i, 2, k]);
        }
        let n = t.grid.cell_count();
        let rows: Vec<usize> = (0..n).filter(|&c| assembled.unknown.as_slice()[c]).chain(n..system.len()).collect();
        let condition = |wrapped: Vec<WrappedCells>| {
            let solid = system.solid_diagonal();
            let reduced = system.reduced_pressure(&solid).expect("the sheet moves");
            let preconditioner = CoupledPreconditioner::new(&reduced, &system.faces, system.impulse_diagonal(&solid), wrapped, PressurePreconditioner::Mic0);
            let (mut r, mut z) = (vec![0.0; system.len()], vec![0.0; system.len()]);
            let mut inverse = DMatrix::zeros(rows.len(), rows.len());
            for (j, &col) in rows.iter().enumerate() {
                r[col] = 1.0;
                preconditioner.apply(&r, &mut z);
                r[col] = 0.0;
                for (i, &row) in rows.iter().enumerate() {
                    inverse[(i, j)] = z[row];
                }
            }
            // M^-1 A is similar to the symmetric L^T A L with M^-1 = L L^T.
            let l = inverse.cholesky().expect("the preconditioner is positive definite").l();
            let eigenvalues = (l.transpose() * &a * &l).symmetric_eigenvalues();
            eigenvalues.max() / eigenvalues.min()
        };
        let (with, without) = (condition(wrapped), condition(Vec::new()));
        assert!(with < 1e-3 * without, "condition number {with:.3e} with the wrapped cell's block, {without:.3e} without");
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

    /// Two phases, water under a liquid of 600 kg/m^3 with surface tension between them, their
    /// interface through the cube: the faces across it are weighted by the densities there, and
    /// the system stays symmetric positive definite.
    #[test]
    fn coupled_system_with_two_phases_is_symmetric_positive_definite() {
        let mut t = tank(700.0);
        let single = dense(&mut tank(700.0));
        let lower = t.grid.sample_fn(Location::Cell, |x| x.y - 0.3);
        let phi = [lower.clone(), lower.par_map(|_, _, _, v| -v)];
        let phases = PhaseView { phi: &phi, density: &[WATER, 600.0], tension: &[0.0, 0.05, 0.05, 0.0], air_tension: &[0.0, 0.0], divergence: &[] };
        let solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
        let (m, _) = dense_system(&t.grid, &t.phi, &t.statics, &t.velocity, &solids, Some(phases));
        assert!((&m - &single).amax() > 0.1 * single.amax(), "the light phase's faces are weighted as water's");
        let asymmetry = (&m - m.transpose()).amax();
        assert!(asymmetry <= 1e-14 * m.amax(), "asymmetry {asymmetry}");
        assert!(m.cholesky().is_some(), "not positive definite");
    }

    /// The coupled solve preconditioned by multigrid reaches the one preconditioned by
    /// MIC(0): the same pressures and the same cube velocity, to the solve's tolerance.
    #[test]
    fn multigrid_and_mic0_give_the_same_coupled_solve() {
        let run = |preconditioner| {
            let mut t = tank(600.0);
            let mut pressure = t.grid.zeros(Location::Cell);
            let mut solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
            let view = water(&t.grid, &t.phi, &t.statics, preconditioner);
            let (_, report) = project(view, &mut t.velocity, &mut pressure, DT, 0.0, &mut solids, &[]);
            assert!(report.projection.converged, "{preconditioner:?}");
            (pressure, t.body.velocity)
        };
        let (p_mic, v_mic) = run(PressurePreconditioner::Mic0);
        let (p_mg, v_mg) = run(PressurePreconditioner::Multigrid);
        let size = p_mic.as_slice().iter().map(|p| p * p).sum::<Real>().sqrt();
        let difference = p_mic.as_slice().iter().zip(p_mg.as_slice()).map(|(a, b)| (a - b) * (a - b)).sum::<Real>().sqrt();
        assert!(size > 0.0 && difference <= 1e-7 * size, "pressures differ by {difference:e} (size {size:e})");
        assert!((v_mic - v_mg).norm() <= 1e-7 * v_mic.norm().max(1e-3), "{v_mic:?} vs {v_mg:?}");
    }

    /// One coupled solve: the liquid leaves every liquid cell divergence free and moves with
    /// the cube on its faces; the impulses on liquid and cube are equal and opposite.
    fn solve(t: &mut Tank) -> [Array3<bool>; 3] {
        let mut pressure = t.grid.zeros(Location::Cell);
        let momentum_before = t.body.mass * t.body.velocity;
        let mut solids: [&mut dyn CoupledSolid; 1] = [&mut t.body];
        let view = water(&t.grid, &t.phi, &t.statics, PressurePreconditioner::Mic0);
        let (valid, report) = project(view, &mut t.velocity, &mut pressure, DT, 0.0, &mut solids, &[]);
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
        let view = water(&t.grid, &t.phi, &t.statics, PressurePreconditioner::Mic0);
        let (_, report) = project(view, &mut t.velocity, &mut pressure, DT, 0.01, &mut [], &[]);
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

    /// The dual cells of each axis partition a body: their solid fractions add up to its
    /// volume, and the fractions' centroids to its centre of mass within 0.002 cells (so the
    /// liquid's pushes on a ball in still water pass through its centre; the face centres
    /// would be 0.004 cells off for this ball). An axis-aligned cube on the grid's
    /// planes is partitioned exactly as measured; a ball is overestimated by the smoothed
    /// sub-box count (about `h^2/24` times its total curvature) until the volume correction.
    #[test]
    fn dual_cells_partition_a_bodys_volume() {
        let material = Material { restitution: 0.0, friction: 0.5 };
        let grid = Grid { dims: [24; 3], dx: 0.02, origin: Vec3::zeros() };
        let cube = Shape::Box { min: Vec3::new(0.1, 0.12, 0.16), max: Vec3::new(0.2, 0.2, 0.3) };
        let ball = Shape::Sphere { center: Vec3::new(0.243, 0.251, 0.238), radius: 0.06 };
        for (shape, raw_error) in [(cube, 1e-12), (ball, 0.01)] {
            let mut body = RigidBody::new("b", BodyKind::Dynamic, &shape, 1000.0, material, 0.01);
            let cells = body.volume / grid.dx.powi(3);
            for axis in 0..3 {
                let raw: Real = dual_cell_fractions(&grid, &body, axis).iter().map(|f| f.1).sum();
                assert!((raw / cells - 1.0).abs() <= raw_error, "axis {axis}: {raw} vs {cells} cells");
            }
            let centre = body.position;
            let solids: [&mut dyn CoupledSolid; 1] = [&mut body];
            let dual = DualCells::new(&grid, &solids);
            for axis in 0..3 {
                let on_axis = || dual.cut.iter().filter(|c| c.axis == axis);
                let total: Real = on_axis().map(|c| c.fraction).sum();
                assert!((total / cells - 1.0).abs() < 1e-12, "axis {axis}: {total} vs {cells} cells");
                let moment: Vec3 = on_axis().map(|c| c.fraction * (c.point - centre)).sum();
                assert!(moment.norm() / total < 2e-3 * grid.dx, "axis {axis}: centroid off by {} m", moment.norm() / total);
            }
        }
    }

    /// A floating region is a pocket when one solid's fully open coupled faces close it off:
    /// two cells side by side whose ten outer faces are coupled to solid 0. It is not when one
    /// of those faces belongs to another solid, is partly blocked by a static solid, or is
    /// not coupled at all (a wall).
    #[test]
    fn a_pocket_is_closed_off_by_one_solid() {
        let grid = Grid { dims: [4; 3], dx: 0.25, origin: Vec3::zeros() };
        let unknown = Array3::filled(grid.dims, true);
        let cells = [[1, 1, 1], [2, 1, 1]];
        let region = vec![cells.iter().map(|c| unknown.index(c[0], c[1], c[2]) as u32).collect::<Vec<u32>>()];
        let mut outer = Vec::new();
        for c in cells {
            for axis in 0..3 {
                for side in 0..2 {
                    if across(&grid, c, axis, side).is_none_or(|n| !cells.contains(&n)) {
                        outer.push(CoupledFace { axis, index: face_of(c, axis, side), cells: [None, None], solid: 0, open: 1.0, mass: 1.0, site: Site::at(Vec3::zeros()) });
                    }
                }
            }
        }
        assert_eq!(outer.len(), 10);
        assert_eq!(enclosed_pockets(&grid, &region, &unknown, &outer, |_| false), vec![true]);
        let spoilt = |change: &dyn Fn(&mut Vec<CoupledFace>)| {
            let mut faces = outer.clone();
            change(&mut faces);
            enclosed_pockets(&grid, &region, &unknown, &faces, |_| false)[0]
        };
        assert!(!spoilt(&|f| f[3].solid = 1), "a face of another solid");
        assert!(!spoilt(&|f| f[3].open = 0.5), "a face partly blocked");
        assert!(!enclosed_pockets(&grid, &region, &unknown, &outer, |_| true)[0], "the inside of a closed sheet");
        assert!(
            !spoilt(&|f| {
                f.remove(3);
            }),
            "a face not coupled"
        );
    }

    /// The nullspace basis is orthonormal and spans the regions' vectors, also where two
    /// regions share a coupled face (their vectors overlap there).
    #[test]
    fn nullspace_basis_is_orthonormal() {
        let regions: Vec<SparseVector> = vec![vec![(0, 1.0), (1, 1.0), (10, -0.5)], vec![(2, 1.0), (10, 0.25), (11, -1.0)], vec![(5, 1.0)]];
        let basis = orthonormalize(regions.clone().into_iter());
        assert_eq!(basis.len(), 3);
        let dense = |v: &SparseVector| {
            let mut d = vec![0.0; 12];
            v.iter().for_each(|&(i, x)| d[i] = x);
            d
        };
        for (a, u) in basis.iter().enumerate() {
            for (b, w) in basis.iter().enumerate() {
                let dot: Real = dense(u).iter().zip(dense(w)).map(|(x, y)| x * y).sum();
                assert!((dot - if a == b { 1.0 } else { 0.0 }).abs() < 1e-14, "u{a}.u{b} = {dot}");
            }
        }
        for region in &regions {
            let mut x = dense(region);
            for u in &basis {
                let dot: Real = u.iter().map(|&(i, v)| v * x[i]).sum();
                u.iter().for_each(|&(i, v)| x[i] -= dot * v);
            }
            assert!(x.iter().all(|v| v.abs() < 1e-14), "left over: {x:?}");
        }
    }
}
