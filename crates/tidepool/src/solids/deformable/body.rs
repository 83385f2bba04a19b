//! A deformable body simulated in full: every vertex of its tetrahedral mesh is a particle
//! with a lumped mass, moved by the hyperelastic forces of [`super::elastic`], gravity,
//! collisions, contact and the liquid.
//!
//! Time integration is the semi-implicit Newmark scheme of Bridson, Marino and Fedkiw (2003)
//! that Shinar builds on (sec. 2.3.3), in the order the pipeline's solid phases already follow:
//! elastic forces explicit in the positions, damping implicit in the velocities (a
//! conjugate-gradient solve of `(M - h D) v = M v_0 + h (f + M g)`, `D` the damping's
//! symmetric negative semi-definite matrix):
//!
//! 1. `v~^{n+1/2} = v^n + dt/2 a(x^n, v~^{n+1/2})` — the first prediction (the pipeline's half
//!    step before collisions, contact and the coupled solve);
//! 2. `x^{n+1} = x^n + dt v~^{n+1/2}`;
//! 3. from the time-n velocities after collisions `v~^n`: `v^{n+1/2} = v~^n + dt/2 a` with the
//!    elastic forces' mean at `x^n` and `x^{n+1}` (the trapezoidal rule) and the damping implicit
//!    at `x^{n+1}`, then `v^{n+1} = 2 v^{n+1/2} - v~^n` (Shinar's steps 4 and 5: backward
//!    Euler, then extrapolation, which keeps the trapezoidal rule's accuracy without its loss of
//!    precision under stiff damping). Shinar evaluates the elastic forces at the midpoint
//!    instead, to make binding springs fully implicit; with the forces at the ends, the
//!    scheme without damping is velocity Verlet: symplectic, so energy oscillates without
//!    drift, and it keeps linear and angular momentum exactly.
//!
//! The elastic forces being explicit, a substep must not let the fastest elastic wave cross
//! an element: [`Solid::max_time_step`].
//!
//! Impulses act on the particles through the body's surface: an impulse at a point is spread
//! over the particles that carry the nearest surface triangle, with that point's weights
//! (`W^T`), and the velocity there is the same weights' mean (`W`), so the body's response to
//! impulses is `W M^-1 W^T` (Shinar eq. 2.4: a point's effective inverse mass is `sum w_i^2 /
//! m_i`), symmetric and positive semi-definite. Pinned particles have infinite mass: they move
//! only as their pins prescribe (`[[body.pin]]`; a soft pin ties its particles by implicit
//! zero-length springs instead). A body cut from
//! a shape shows and collides with the shape's smooth surface, each vertex hard-bound to the
//! tetrahedron holding it at rest (Shinar sec. 2.2: collision samples sprinkled on the surface
//! without refining the mesh), instead of the tetrahedra's jagged boundary: its vertices are
//! the contact samples, and a point of it carries the impulses to up to twelve particles.

use super::elastic::{Corotated, Tetrahedra};
use super::incompressible::{self, PressureFactor};
use super::self_contact::{repel, Sheet};
use super::shell::Shell;
use super::skeleton::{BoneSetup, Skeleton};
use super::{Elements, Frozen};
use crate::geometry::embedding::{MaterialPoint, Skin, TetLookup};
use crate::geometry::{MeshDistance, TetMesh, TriMesh};
use crate::math::{Mat3, Quat, Real, Vec3};
use crate::solids::contact::{ContactBody, Distance};
use crate::solids::coupled::diagonal_by_responses;
use crate::solids::reduced::fem::{self, ElasticMaterial};
use crate::solids::rigid::{along_path, Material};
use crate::solids::{CoupledSolid, PartState, Site, Solid};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tidepool_linalg::{pcg, CsrMatrix, LinearOperator, PcgParams, Preconditioner, SparseCholesky};

/// A fraction of the time an elastic pressure wave takes to cross the thinnest element (and of
/// a sheet's fastest bending period over pi): the longest substep the explicit elastic forces
/// allow.
const ELASTIC_CFL: Real = 0.5;
/// The number of steps over which an incompressible body's volume correction restores the
/// rest volumes (a quarter of the error each step): restored in one step, the correction —
/// linear in the velocities, the volumes cubic in the positions — overshoots where contact
/// squeezes the body each step, and a rubber ball bouncing on the floor grew unstable.
const VOLUME_RELAXATION: Real = 4.0;
/// Relative residual of the damped velocity solve.
const DAMPING_TOLERANCE: Real = 1e-11;

/// What copies of one deformable body share: the rest shape, its elements and material, and
/// the particles' masses.
#[derive(Debug)]
pub struct DeformableModel {
    /// The particles' rest positions.
    pub rest: Vec<Vec3>,
    /// The elements joining them.
    pub elements: Elements,
    /// The material (in plane stress for a sheet).
    pub material: Corotated,
    /// Its linear elastic constants and density (the material at small strains).
    pub elastic: ElasticMaterial,
    /// Lumped mass of each particle (kg).
    pub masses: Vec<Real>,
    /// The surface the body shows and collides with: for a volume cut from a shape, the
    /// shape's smooth surface carried by the tetrahedra (each vertex hard-bound to the one
    /// holding it at rest), else the tetrahedra's boundary; for a sheet, its triangles (each
    /// vertex a particle).
    pub surface: Skin,
    /// Total mass (kg).
    pub mass: Real,
    /// The longest stable substep (s).
    stable_step: Real,
    /// The damping's diagonal at rest, per particle (the velocity solve's preconditioner).
    damping_diagonal: Vec<Real>,
}

impl DeformableModel {
    /// The model of the tetrahedral `mesh` (checked) of a material of Young's modulus `young`
    /// (Pa), Poisson's ratio `poisson`, damping `beta` (s) and density `density` (kg/m^3),
    /// writing `surface` (in the mesh's frame) carried by the tetrahedra as its surface where
    /// one is given. The body then weighs what that surface holds at `density` (the lumped
    /// masses scaled by its volume over the tetrahedra's): the shape the liquid sees is the
    /// surface, and a lattice cut short of it (a ball of radius 6 cm at 4 cm spacing keeps
    /// 91% of the ball) would otherwise make a body of the water's density float.
    pub fn new(mesh: TetMesh, young: Real, poisson: Real, beta: Real, density: Real, surface: Option<&TriMesh>) -> Result<Self, String> {
        mesh.check()?;
        let surface = match surface {
            Some(surface) => Skin::bind(surface, &mesh, &TetLookup::new(&mesh), &Vec3::zeros()),
            None => {
                let (particles, triangles) = mesh.boundary_surface();
                Skin { triangles, vertices: particles.iter().map(|&i| MaterialPoint::particle(i)).collect() }
            }
        };
        let elements = Elements::Volume(Tetrahedra::new(&mesh));
        let mass_scale = surface.carried(&mesh.vertices).signed_volume() / mesh.volume();
        Ok(Self::assemble(mesh.vertices, elements, Corotated::new(young, poisson, beta), ElasticMaterial { young, poisson, density }, surface, mass_scale))
    }

    /// The model of a sheet (cloth, a thin shell): the triangle mesh `mesh` (a manifold,
    /// consistently oriented) `thickness` thick, of a material of Young's modulus `young`,
    /// Poisson's ratio `poisson`, damping `beta` and density `density`.
    /// The sheet must be thinner than half its lowest triangle is high, so that self-contact
    /// never mistakes neighbouring triangles for layers in proximity.
    pub fn sheet(mesh: &TriMesh, thickness: Real, young: Real, poisson: Real, beta: Real, density: Real) -> Result<Self, String> {
        let shell = Shell::new(mesh, thickness, young, poisson)?;
        let lowest = shell.shortest_altitude(&mesh.vertices);
        if thickness >= 0.5 * lowest {
            return Err(format!(
                "the sheet is {thickness} m thick but its lowest triangle only {lowest:.4} m high: the thickness must be under half of that (a finer mesh than the thickness allows)"
            ));
        }
        let elements = Elements::Shell(shell);
        let surface = Skin { triangles: mesh.triangles.clone(), vertices: (0..mesh.vertices.len() as u32).map(MaterialPoint::particle).collect() };
        let material = Corotated::plane_stress(young, poisson, beta);
        Ok(Self::assemble(mesh.vertices.clone(), elements, material, ElasticMaterial { young, poisson, density }, surface, 1.0))
    }

    /// The model; the elements' lumped masses scaled by `mass_scale`.
    fn assemble(rest: Vec<Vec3>, elements: Elements, material: Corotated, elastic: ElasticMaterial, surface: Skin, mass_scale: Real) -> Self {
        let masses: Vec<Real> = elements.masses(elastic.density, rest.len()).iter().map(|m| mass_scale * m).collect();
        let stable_step = elements.stable_step(&material, elastic.density, &rest, &masses, ELASTIC_CFL);
        let damping_diagonal = elements.damping_diagonal(&material, &rest);
        DeformableModel { mass: masses.iter().sum(), rest, elements, material, elastic, masses, surface, stable_step, damping_diagonal }
    }

    /// The longest stable substep (s).
    pub fn max_time_step(&self) -> Real {
        self.stable_step
    }
}

/// A point of the body's surface, or a weighted mean of its points: the particles that carry
/// it and their weights (each surface triangle's three vertices carried by their
/// tetrahedra's four particles; each particle once, its weights summed).
#[derive(Clone, Debug, Default, PartialEq)]
struct SurfacePoint {
    carriers: Vec<(u32, Real)>,
}

impl SurfacePoint {
    /// The point with barycentric weights `weights` on the triangle of `vertices`.
    fn on(vertices: [&MaterialPoint; 3], weights: [Real; 3]) -> Self {
        let mut p = SurfacePoint::default();
        for (vertex, w) in vertices.iter().zip(weights) {
            p.add(vertex, w);
        }
        p
    }

    /// Adds `w` times the material point `vertex`.
    fn add(&mut self, vertex: &MaterialPoint, w: Real) {
        for (&i, v) in vertex.tet.iter().zip(vertex.weights) {
            if w * v == 0.0 {
                continue;
            }
            match self.carriers.iter().position(|&(j, _)| j == i) {
                Some(k) => self.carriers[k].1 += w * v,
                None => self.carriers.push((i, w * v)),
            }
        }
    }

    /// The particles and their weights.
    fn carriers(&self) -> impl Iterator<Item = (usize, Real)> + '_ {
        self.carriers.iter().map(|&(i, w)| (i as usize, w))
    }
}

/// The body's surface where it is now, for distances and the surface points of world points.
struct Deformed {
    distance: MeshDistance,
    /// The volume the surface encloses (a volume's; unused for a sheet).
    enclosed: Real,
    /// Surface points found so far, by their sites' bits.
    found: Mutex<HashMap<[u64; 7], Arc<SurfacePoint>>>,
}

/// The surface where the body is now, built on first use after it moves; and the last surface
/// asked for where the velocities lead ([`ContactBody::distance_after`]), with the positions
/// it was built at (contact asks for it pair after pair, sweep after sweep, mostly unchanged).
#[derive(Default)]
struct SurfaceCache(OnceLock<Deformed>, Mutex<Option<(Vec<Vec3>, Arc<MeshDistance>)>>);

impl Clone for SurfaceCache {
    fn clone(&self) -> Self {
        SurfaceCache::default()
    }
}

impl std::fmt::Debug for SurfaceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SurfaceCache")
    }
}

/// A deformable body in the world.
#[derive(Clone, Debug)]
pub struct DeformableBody {
    /// Name in outputs.
    pub name: String,
    /// The shared rest state.
    pub model: Arc<DeformableModel>,
    /// Particle positions (m) and velocities (m/s).
    pub positions: Vec<Vec3>,
    pub velocities: Vec<Vec3>,
    /// Particles whose motion is prescribed (held where they are, unless a pin moves them).
    pub pinned: Vec<bool>,
    /// The pins: a hard one prescribes its particles' motion (they are `pinned`), a soft one
    /// ties them by springs.
    pub pins: Vec<PinMotion>,
    /// Restitution and friction.
    pub material: Material,
    /// Mass-proportional damping `alpha` (1/s): the force `-alpha m v` on each particle, like
    /// still air's drag (Rayleigh's other term; it slows rigid motion too, so a hanging sheet
    /// stops swinging). Implicit with the elements' damping; 0 by default.
    pub drag: Real,
    /// Rigid bones the particles inside them are hard-bound to, hinged and driven.
    pub skeleton: Option<Skeleton>,
    /// Each particle's share of the volume at rest, when the volume is kept
    /// ([`super::incompressible`]); for a closed sheet, the one volume it encloses.
    pub incompressible: Option<Vec<Real>>,
    /// The elastic forces at the current positions, once computed.
    forces: Option<Vec<Vec3>>,
    /// The elastic forces and the positions before the last move, until the next prediction
    /// takes the forces' mean with those after it (and the soft pins the positions' midpoint).
    start: Option<(Vec<Vec3>, Vec<Vec3>)>,
    surface: SurfaceCache,
    /// An incompressible body's pressure system where the particles are, once factored
    /// ([`DeformableBody::pressure_factor`]; shared with the copies made in
    /// [`DeformableBody::kicked`], dropped when the particles move).
    pressure: Arc<Mutex<Option<Arc<PressureFactor>>>>,
}

/// Pinned particles moved as prescribed: displaced along a path and turned about their
/// centroid at a constant rate.
#[derive(Clone, Debug)]
pub struct PinMotion {
    /// The particles and where they start.
    pub particles: Vec<u32>,
    start: Vec<Vec3>,
    /// Their centroid where they start.
    centre: Vec3,
    /// Keyframes of their displacement: time (s), displacement (m); without any, they move at
    /// `velocity`.
    path: Vec<(Real, Vec3)>,
    velocity: Vec3,
    /// Rate of turn about their centroid (rad/s).
    angular_velocity: Vec3,
    /// A soft pin's zero-length spring from each particle to where the pin puts it: stiffness
    /// (N/m) and damping (N s/m; `None`: each particle's spring critically damped). A hard pin
    /// (`None`) prescribes the particles' motion.
    pub spring: Option<(Real, Option<Real>)>,
}

impl PinMotion {
    /// `particles`, starting at `positions`, displaced along `path` and turned at
    /// `angular_velocity`; held exactly, or by `spring`.
    pub fn new(particles: Vec<u32>, positions: &[Vec3], path: Vec<(Real, Vec3)>, angular_velocity: Vec3, spring: Option<(Real, Option<Real>)>) -> Self {
        let start: Vec<Vec3> = particles.iter().map(|&i| positions[i as usize]).collect();
        let centre = start.iter().sum::<Vec3>() / start.len().max(1) as Real;
        PinMotion { particles, start, centre, path, velocity: Vec3::zeros(), angular_velocity, spring }
    }

    /// The same pin moving with a kinematic body whose centre of mass starts at `centre` and
    /// moves along the pin's path, or at `velocity` without one, turning about it (the
    /// particles bound to the body, Shinar sec. 2.2).
    pub fn with_body(self, centre: Vec3, velocity: Vec3) -> Self {
        PinMotion { centre, velocity, ..self }
    }

    /// The velocity of the pin's `k`-th particle's target at time `t`.
    fn target_velocity(&self, k: usize, t: Real) -> Vec3 {
        let step = 1e-6;
        (self.target(k, t + step) - self.target(k, t - step)) / (2.0 * step)
    }

    /// Where the pin's `k`-th particle is at time `t`.
    pub fn target(&self, k: usize, t: Real) -> Vec3 {
        let displacement = along_path(&self.path, t).unwrap_or(t * self.velocity);
        self.centre + displacement + nalgebra::Rotation3::new(t * self.angular_velocity) * (self.start[k] - self.centre)
    }
}

/// `M - h D + S` over the particles (`S` each particle's own terms, diagonal: the soft pins'
/// springs and the drag), `M` alone on pinned ones (their rows, scaled like the others, keep
/// their prescribed velocities).
/// With bones, the particles they bind have the identity's rows and the skeleton's rates
/// follow (`W^T (M - h D + S) W` and the drives' diagonal: [`super::skeleton`]).
struct DampedMass<'a> {
    body: &'a DeformableBody,
    frozen: &'a Frozen,
    h: Real,
    terms: &'a ParticleTerms,
}

/// Each particle's own terms in a velocity solve over `h`: the drag's `h alpha m` on the
/// diagonal; and a soft pin's spring's `h b + h^2 k` (the last only where the spring stretches
/// with the velocity being solved for) and impulse `h (-k (x - x_t) + b v_t)`.
/// With bones, their driven hinges' diagonal and generalized impulse.
struct ParticleTerms {
    diagonal: Vec<Real>,
    impulse: Vec<Vec3>,
    joint_diagonal: Vec<Real>,
    joint_impulse: Vec<Real>,
}

impl LinearOperator for DampedMass<'_> {
    fn len(&self) -> usize {
        self.body.velocity_len()
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        let b = self.body;
        let n = b.positions.len();
        let v = b.particle_velocities(x, |_| Vec3::zeros());
        let mut damping = vec![Vec3::zeros(); n];
        b.model.elements.damping_forces(&b.model.material, self.frozen, &v, &mut damping);
        let out = |i: usize| (b.model.masses[i] + self.terms.diagonal[i]) * v[i] - self.h * damping[i];
        for i in 0..n {
            let row = if b.held(i) { b.model.masses[i] * Vec3::from_column_slice(&x[3 * i..3 * i + 3]) } else { out(i) };
            y[3 * i..3 * i + 3].copy_from_slice(row.as_slice());
        }
        if let Some(skeleton) = &b.skeleton {
            let g = skeleton.generalized(skeleton.wrenches(&b.positions, (0..n).map(|i| (i, out(i)))));
            for (d, g) in g.iter().enumerate() {
                y[3 * n + d] = g + self.terms.joint_diagonal[d] * x[3 * n + d];
            }
        }
    }
}

/// The stiffness `K = -df/dx` at the body's positions, on the particles that are not pinned
/// (the identity on pinned ones): products by central differences of the elastic forces.
struct Stiffness<'a> {
    body: &'a DeformableBody,
    /// The length of the differences' steps (m).
    step: Real,
}

impl LinearOperator for Stiffness<'_> {
    fn len(&self) -> usize {
        3 * self.body.positions.len()
    }

    fn apply(&self, u: &[f64], y: &mut [f64]) {
        let b = self.body;
        let norm = u.iter().map(|v| v * v).sum::<Real>().sqrt();
        y.fill(0.0);
        if norm == 0.0 {
            return;
        }
        let e = self.step / norm;
        let forces = |sign: Real| {
            let x: Vec<Vec3> = b.positions.iter().enumerate().map(|(i, x)| if b.pinned[i] { *x } else { x + sign * e * Vec3::from_column_slice(&u[3 * i..3 * i + 3]) }).collect();
            let mut f = vec![Vec3::zeros(); x.len()];
            b.model.elements.elastic_forces(&b.model.material, &x, &mut f);
            f
        };
        let (plus, minus) = (forces(1.0), forces(-1.0));
        for i in 0..b.positions.len() {
            let out = if b.pinned[i] { Vec3::from_column_slice(&u[3 * i..3 * i + 3]) } else { (minus[i] - plus[i]) / (2.0 * e) };
            y[3 * i..3 * i + 3].copy_from_slice(out.as_slice());
        }
    }
}

/// `z = K^-1 r` with a factored matrix.
struct Factored(SparseCholesky);

impl Preconditioner for Factored {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let mut column = [r.to_vec()];
        self.0.solve(&mut column);
        z.copy_from_slice(&column[0]);
    }
}

/// `z = D^-1 r` with `D` the mass plus the damping's diagonal scale per particle, and the
/// skeleton's rates' block (its bound particles' generalized mass and the drives' diagonal)
/// factored.
struct BlockDiagonal(Vec<Real>, Option<nalgebra::Cholesky<Real, nalgebra::Dyn>>);

impl Preconditioner for BlockDiagonal {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let n = 3 * self.0.len();
        for ((z, r), d) in z[..n].chunks_mut(3).zip(r[..n].chunks(3)).zip(&self.0) {
            for a in 0..3 {
                z[a] = r[a] / d;
            }
        }
        if let Some(block) = &self.1 {
            z[n..].copy_from_slice(block.solve(&nalgebra::DVector::from_column_slice(&r[n..])).as_slice());
        }
    }
}

impl DeformableBody {
    /// A body of `model` with its particles at `positions` (the rest mesh moved, turned or
    /// deformed), at rest.
    pub fn new(name: &str, model: Arc<DeformableModel>, positions: Vec<Vec3>, material: Material) -> Self {
        let n = positions.len();
        DeformableBody {
            name: name.to_string(),
            model,
            velocities: vec![Vec3::zeros(); n],
            pinned: vec![false; n],
            pins: Vec::new(),
            positions,
            material,
            drag: 0.0,
            skeleton: None,
            incompressible: None,
            forces: None,
            start: None,
            surface: SurfaceCache::default(),
            pressure: Arc::default(),
        }
    }

    /// The free particles' inverse masses `1 / m`: 0 for pinned ones (their mass is infinite)
    /// and for those bound to bones (they move with the bone).
    fn inverse_mass(&self, i: usize) -> Real {
        if self.held(i) {
            0.0
        } else {
            1.0 / self.model.masses[i]
        }
    }

    /// Whether particle `i` is pinned or bound to a bone: not one of the velocity solve's
    /// unknowns.
    fn held(&self, i: usize) -> bool {
        self.pinned[i] || self.skeleton.as_ref().is_some_and(|s| s.owner(i).is_some())
    }

    /// The length of the velocity state: three per particle, and the skeleton's rates.
    fn velocity_len(&self) -> usize {
        3 * self.positions.len() + self.skeleton.as_ref().map_or(0, Skeleton::dofs)
    }

    /// The velocity solve's state: the particles' velocities, then the skeleton's rates.
    fn solve_state(&self) -> Vec<Real> {
        let rates = self.skeleton.as_ref().map_or(&[][..], |s| &s.rates[..]);
        self.velocities.iter().flat_map(|v| v.iter().copied()).chain(rates.iter().copied()).collect()
    }

    /// Sets a state of the velocity solve (see [`DeformableBody::solve_state`]).
    fn set_solve_state(&mut self, state: &[Real]) {
        let n = self.positions.len();
        self.velocities = state[..3 * n].chunks(3).map(Vec3::from_column_slice).collect();
        if let Some(skeleton) = &mut self.skeleton {
            skeleton.rates.copy_from_slice(&state[3 * n..]);
        }
    }

    /// The particles' velocities in velocity state `x`: a bound particle's from the skeleton's
    /// rates in it, a pinned one's `pinned(i)`.
    fn particle_velocities(&self, x: &[Real], pinned: impl Fn(usize) -> Vec3) -> Vec<Vec3> {
        let n = self.positions.len();
        let twists = self.skeleton.as_ref().map(|s| s.twists(&x[3 * n..]));
        (0..n)
            .map(|i| match (&self.skeleton, &twists) {
                _ if self.pinned[i] => pinned(i),
                (Some(skeleton), Some(twists)) => skeleton.particle_velocity(twists, i, &self.positions[i]).unwrap_or_else(|| Vec3::from_column_slice(&x[3 * i..3 * i + 3])),
                _ => Vec3::from_column_slice(&x[3 * i..3 * i + 3]),
            })
            .collect()
    }

    /// Keeps an incompressible body's volumes: its velocities projected so that each particle's
    /// volume (a closed sheet's: the volume it encloses) returns toward its rest volume at the
    /// rate that would restore it over `over` (s), or stays as it is (`None`).
    fn keep_volumes(&mut self, over: Option<Real>) {
        let Some(rest) = &self.incompressible else { return };
        let inverse_masses: Vec<Real> = (0..self.positions.len()).map(|i| self.inverse_mass(i)).collect();
        match &self.model.elements {
            Elements::Volume(tets) => {
                let rates: Vec<Real> = match over {
                    Some(dt) => incompressible::particle_volumes(tets, &self.positions).iter().zip(rest).map(|(now, rest)| (rest - now) / dt).collect(),
                    None => vec![0.0; rest.len()],
                };
                // See `PressureFactor` for when the factor pays.
                let factor = if self.skeleton.is_some() { Some(self.pressure_factor(tets)) } else { self.pressure.lock().unwrap_or_else(|e| e.into_inner()).clone() };
                incompressible::project(tets, &self.positions, &inverse_masses, self.skeleton.as_mut(), factor.as_deref(), &mut self.velocities, &rates);
            }
            Elements::Shell(shell) => {
                let rate = over.map_or(0.0, |dt| (rest[0] - incompressible::enclosed_volume(&shell.triangles, &self.positions)) / dt);
                incompressible::project_enclosed(&shell.triangles, &self.positions, &inverse_masses, &mut self.velocities, rate);
            }
        }
    }

    /// Makes the body incompressible: each particle's share of the volume kept at its rest
    /// value, or, for a closed sheet (a bag full of liquid), the volume it encloses.
    pub fn make_incompressible(&mut self) -> Result<(), String> {
        self.incompressible = Some(match &self.model.elements {
            Elements::Volume(tets) => incompressible::particle_volumes(tets, &self.model.rest),
            Elements::Shell(shell) => {
                let mesh = TriMesh { vertices: self.model.rest.clone(), triangles: shell.triangles.clone() };
                if !mesh.boundary_edges().is_ok_and(|edges| edges.is_empty()) {
                    return Err("an open sheet encloses no volume to keep: only a closed sheet (a bag) is made incompressible".into());
                }
                vec![incompressible::enclosed_volume(&shell.triangles, &self.model.rest)]
            }
        });
        Ok(())
    }

    /// Binds the particles inside each of `bones` to it (their velocities projected on the
    /// bones' motions, momentum kept). Pinned particles cannot be bound, nor a sheet's.
    pub fn set_bones(&mut self, bones: Vec<BoneSetup>) -> Result<(), String> {
        if let Elements::Shell(_) = self.model.elements {
            return Err("a sheet has no bones: bind a volume's particles".into());
        }
        let pinned = |i: u32| self.pinned[i as usize] || self.pins.iter().any(|p| p.particles.contains(&i));
        if let Some(bone) = bones.iter().find(|b| b.particles.iter().any(|&i| pinned(i))) {
            return Err(format!("bone `{}` holds pinned particles: a particle is pinned or bound to a bone, not both", bone.name));
        }
        let mut skeleton = Skeleton::new(bones, &self.positions, &self.model.masses)?;
        skeleton.project(&self.positions, &self.model.masses, &mut self.velocities);
        self.skeleton = Some(skeleton);
        self.pressure = Arc::default();
        Ok(())
    }

    /// Computes the elastic forces at the current positions, unless they already are (they
    /// stay until the particles move).
    fn compute_forces(&mut self) {
        if self.forces.is_none() {
            let mut forces = vec![Vec3::zeros(); self.positions.len()];
            self.model.elements.elastic_forces(&self.model.material, &self.positions, &mut forces);
            self.forces = Some(forces);
        }
    }

    /// The velocity state after `h` of gravity, the elastic forces `forces` and the damping
    /// with the elements where the particles are, starting from state `v0`: damping implicit.
    /// Pinned particles keep their prescribed velocities; their share of the damping on the
    /// others is known and goes to the right-hand side. With bones, the unknowns are the free
    /// particles' velocities and the skeleton's rates (`W^T (M - h D + S) W u = W^T p`).
    fn advanced_velocities(&self, forces: &[Vec3], v0: &[Real], h: Real, gravity: &Vec3, terms: &ParticleTerms) -> Vec<Real> {
        let (model, n) = (&self.model, self.positions.len());
        let velocity = |i: usize| Vec3::from_column_slice(&v0[3 * i..3 * i + 3]);
        let mut momentum: Vec<Vec3> =
            (0..n).map(|i| if self.pinned[i] { velocity(i) } else { model.masses[i] * (velocity(i) + h * gravity) + h * forces[i] + terms.impulse[i] }).collect();
        if model.material.beta == 0.0 && self.skeleton.is_none() {
            return (0..n).flat_map(|i| (if self.pinned[i] { velocity(i) } else { momentum[i] / (model.masses[i] + terms.diagonal[i]) }).data.0[0]).collect();
        }
        let frozen = model.elements.freeze(&self.positions);
        let prescribed: Vec<Vec3> = (0..n).map(|i| if self.pinned[i] { velocity(i) } else { Vec3::zeros() }).collect();
        let mut pull = vec![Vec3::zeros(); n];
        model.elements.damping_forces(&model.material, &frozen, &prescribed, &mut pull);
        for i in (0..n).filter(|&i| !self.pinned[i]) {
            momentum[i] += h * pull[i];
        }
        let mut b: Vec<Real> = (0..n).flat_map(|i| (if self.held(i) { model.masses[i] * velocity(i) } else { momentum[i] }).data.0[0]).collect();
        let block = self.skeleton.as_ref().map(|skeleton| {
            let g = skeleton.generalized(skeleton.wrenches(&self.positions, (0..n).map(|i| (i, momentum[i]))));
            b.extend(g.iter().zip(&terms.joint_impulse).map(|(g, j)| g + j));
            skeleton.mass_plus(&terms.joint_diagonal)
        });
        let operator = DampedMass { body: self, frozen: &frozen, h, terms };
        let diagonal =
            BlockDiagonal((0..n).map(|i| if self.held(i) { model.masses[i] } else { model.masses[i] + terms.diagonal[i] + h * model.damping_diagonal[i] }).collect(), block);
        let mut v = v0.to_vec();
        pcg(&operator, &diagonal, &b, &mut v, PcgParams { tolerance: DAMPING_TOLERANCE, max_iterations: 10 * v0.len().max(30) });
        let particles = self.particle_velocities(&v, velocity);
        let rates = v.split_off(3 * n);
        particles.iter().flat_map(|v| v.data.0[0]).chain(rates).collect()
    }

    /// The particles' own terms in a velocity solve over `h` with the particles at `x` and
    /// the soft pins' targets at time `t`: with `stretching`, the springs are evaluated where
    /// the solved velocities take the particles, `x + h v` (step 1, Shinar eq. 2.6–2.7: fully
    /// implicit), else at `x` (the midpoint of step 3) with their damping implicit.
    fn particle_terms(&self, x: &[Vec3], t: Real, h: Real, stretching: bool) -> ParticleTerms {
        let (joint_diagonal, joint_impulse) = self.skeleton.as_ref().map_or((Vec::new(), Vec::new()), |s| s.drive_terms(t, h, stretching));
        let mut terms =
            ParticleTerms { diagonal: self.model.masses.iter().map(|m| h * self.drag * m).collect(), impulse: vec![Vec3::zeros(); x.len()], joint_diagonal, joint_impulse };
        for pin in &self.pins {
            let Some((k, damping)) = pin.spring else { continue };
            for (j, &i) in pin.particles.iter().enumerate() {
                let i = i as usize;
                let b = damping.unwrap_or_else(|| 2.0 * (k * self.model.masses[i]).sqrt());
                terms.diagonal[i] += h * b + if stretching { h * h * k } else { 0.0 };
                terms.impulse[i] = h * (-k * (x[i] - pin.target(j, t)) + b * pin.target_velocity(j, t));
            }
        }
        terms
    }

    /// One substep of `dt` without anything outside (Newmark's steps of the module's
    /// documentation; no collisions, and hard pins hold their particles where they are).
    pub fn step(&mut self, dt: Real, gravity: &Vec3) {
        let start = self.velocity_state();
        self.predict_velocities(0.5 * dt, gravity, 0.0);
        self.advance_positions(dt);
        self.set_velocity_state(&start);
        self.predict_velocities(dt, gravity, 0.0);
    }

    /// Moves the particles to the equilibrium of the elastic forces with gravity (pinned
    /// particles held), at rest: Newton's method on `f(x) + M g = 0`, each step's stiffness
    /// products `K u` by central differences of the elastic forces along `u` and solved by
    /// conjugate gradients preconditioned by the factored stiffness at rest (exact for small
    /// deformations). Returns the norm of the force out of balance at the end over that at
    /// the start (0 if there was none); a body with no pinned particle has no equilibrium (an
    /// error).
    pub fn settle(&mut self, gravity: &Vec3, newton_steps: usize) -> Result<Real, String> {
        if !self.pinned.contains(&true) {
            return Err(format!("deformable body `{}` has no pinned particle: it has no equilibrium to settle to", self.name));
        }
        if self.skeleton.is_some() {
            return Err(format!("deformable body `{}` has bones: only a body of flesh alone is settled", self.name));
        }
        let Elements::Volume(tetrahedra) = &self.model.elements else {
            return Err(format!("deformable body `{}` is a sheet: only volumes are settled (a sheet bends with no stiffness to speak of; let it come to rest)", self.name));
        };
        let n = self.positions.len();
        let residual = |body: &DeformableBody, x: &[Vec3]| -> Vec<Vec3> {
            let mut f = vec![Vec3::zeros(); n];
            body.model.elements.elastic_forces(&body.model.material, x, &mut f);
            (0..n).map(|i| if body.pinned[i] { Vec3::zeros() } else { f[i] + body.model.masses[i] * gravity }).collect()
        };
        let size = CoupledSolid::bounding_sphere(self).1;
        let rest = self.rest_stiffness(tetrahedra);
        let norm = |r: &[Vec3]| r.iter().map(|f| f.norm_squared()).sum::<Real>().sqrt();
        let start = norm(&residual(self, &self.positions));
        let mut remaining = if start > 0.0 { 1.0 } else { 0.0 };
        for _ in 0..newton_steps {
            let r = residual(self, &self.positions);
            remaining = if start > 0.0 { norm(&r) / start } else { 0.0 };
            if remaining < 1e-10 {
                break;
            }
            let stiffness = Stiffness { body: self, step: 1e-7 * size };
            let b: Vec<Real> = r.iter().flat_map(|f| f.iter().copied()).collect();
            let mut u = vec![0.0; 3 * n];
            pcg(&stiffness, &rest, &b, &mut u, PcgParams { tolerance: 1e-8, max_iterations: 20 * n });
            for (x, du) in self.positions.iter_mut().zip(u.chunks(3)) {
                *x += Vec3::from_column_slice(du);
            }
        }
        self.velocities.fill(Vec3::zeros());
        (self.forces, self.start) = (None, None);
        self.surface = SurfaceCache::default();
        Ok(remaining)
    }

    /// The linear stiffness at rest of the volume `tetrahedra` with the pinned particles' rows
    /// and columns replaced by the identity, factored.
    fn rest_stiffness(&self, tetrahedra: &Tetrahedra) -> Factored {
        let mesh = TetMesh { vertices: self.model.rest.clone(), tets: tetrahedra.tets.clone() };
        let k = fem::stiffness(&mesh, &self.model.elastic);
        let pinned = |row: usize| self.pinned[row / 3];
        let mut triplets: Vec<(u32, u32, Real)> = (0..k.n)
            .flat_map(|i| (k.start[i]..k.start[i + 1]).map(move |e| (i, e)))
            .filter(|&(i, e)| !pinned(i) && !pinned(k.columns[e] as usize))
            .map(|(i, e)| (i as u32, k.columns[e], k.values[e]))
            .collect();
        triplets.extend((0..k.n).filter(|&i| pinned(i)).map(|i| (i as u32, i as u32, 1.0)));
        Factored(SparseCholesky::new(&CsrMatrix::from_triplets(k.n, triplets)).expect("a pinned body's rest stiffness is positive definite"))
    }

    /// Energy stored in the elements (J).
    pub fn elastic_energy(&self) -> Real {
        self.model.elements.energy(&self.model.material, &self.positions)
    }

    /// Kinetic energy of the particles (J).
    pub fn kinetic_energy(&self) -> Real {
        self.velocities.iter().zip(&self.model.masses).map(|(v, m)| 0.5 * m * v.norm_squared()).sum()
    }

    /// Centre of mass (m), linear momentum (kg m/s) and angular momentum about the centre of
    /// mass (kg m^2/s).
    pub fn momenta(&self) -> (Vec3, Vec3, Vec3) {
        let masses = &self.model.masses;
        let centre = self.positions.iter().zip(masses).map(|(x, m)| *m * x).sum::<Vec3>() / self.model.mass;
        let linear = self.velocities.iter().zip(masses).map(|(v, m)| *m * v).sum();
        let angular = self.positions.iter().zip(&self.velocities).zip(masses).map(|((x, v), m)| *m * (x - centre).cross(v)).sum();
        (centre, linear, angular)
    }

    /// The body's surface where it is now.
    fn deformed(&self) -> &Deformed {
        self.surface.0.get_or_init(|| {
            let mesh = self.surface_mesh(&self.positions);
            Deformed { distance: self.surface_distance(&mesh), enclosed: mesh.signed_volume(), found: Mutex::default() }
        })
    }

    /// The distance to `mesh`, the body's surface somewhere: signed for a volume,
    /// unsigned for a sheet.
    fn surface_distance(&self, mesh: &TriMesh) -> MeshDistance {
        let distance = match self.model.elements {
            Elements::Volume(_) => MeshDistance::new(mesh).or_else(|_| MeshDistance::unsigned(mesh)),
            Elements::Shell(_) => MeshDistance::unsigned(mesh),
        };
        distance.expect("a checked mesh has a surface")
    }

    /// The surface with the particles at `x`.
    fn surface_mesh(&self, x: &[Vec3]) -> TriMesh {
        self.model.surface.carried(x)
    }

    /// The surface as the fluid samples it at `site` (`W_DC`, Shinar sec. 5.3.1): the parts of
    /// the surface inside the site's dual cell, each weighted by its share of their area, at
    /// its centroid; where none is inside (a point alone, a dual cell the body fills), the
    /// surface point nearest the site's point. (With the nearest point alone, the pressure on
    /// a face pushed one point of the surface and left its neighbours to the flesh: a soft
    /// ball of the water's density in still water held three times the elastic energy, and a
    /// sinking bag of cloth lost 5.7% of its water in a second instead of keeping it within 1%;
    /// docs/methods/deformable.md.)
    fn surface_point(&self, site: &Site) -> Arc<SurfacePoint> {
        let deformed = self.deformed();
        let mut key = [0; 7];
        for a in 0..3 {
            (key[a], key[3 + a]) = (site.point[a].to_bits(), site.centre[a].to_bits());
        }
        key[6] = site.half.to_bits();
        if let Some(p) = deformed.found.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Arc::clone(p);
        }
        let surface = &self.model.surface;
        let corners = |t: usize| surface.triangles[t].map(|v| &surface.vertices[v as usize]);
        let mut p = SurfacePoint::default();
        if site.half > 0.0 {
            let (lo, hi) = site.cell();
            let parts = deformed.distance.parts_in_box(&lo, &hi);
            let total: Real = parts.iter().map(|(_, area, _)| area).sum();
            for (t, area, weights) in parts {
                for (vertex, w) in corners(t).into_iter().zip(weights) {
                    p.add(vertex, area / total * w);
                }
            }
        }
        if p.carriers.is_empty() {
            let (_, triangle, weights) = deformed.distance.nearest(&site.point);
            p = SurfacePoint::on(corners(triangle), weights);
        }
        let p = Arc::new(p);
        deformed.found.lock().unwrap_or_else(|e| e.into_inner()).insert(key, Arc::clone(&p));
        p
    }

    /// The velocity of surface point `p`.
    fn velocity_of(&self, p: &SurfacePoint) -> Vec3 {
        p.carriers().map(|(i, w)| w * self.velocities[i]).sum()
    }

    /// Applies impulses `impulses` at surface points `at` (each spread with its weights), the
    /// bones' share in one kick.
    fn push(&mut self, at: &[Arc<SurfacePoint>], impulses: &[Vec3]) {
        let mut velocities = std::mem::take(&mut self.velocities);
        let rates = self.add_response(at, impulses, &mut velocities);
        self.velocities = velocities;
        if let Some(skeleton) = &mut self.skeleton {
            for (rate, d) in skeleton.rates.iter_mut().zip(rates) {
                *rate += d;
            }
        }
    }

    /// Adds to `v` the particles' velocity changes `K W^T j` that impulses `impulses` at
    /// surface points `at` cause (the free particles' `w j / m`, the bound ones' their bones'
    /// motion); returns the skeleton's rate changes (none without one).
    fn add_response(&self, at: &[Arc<SurfacePoint>], impulses: &[Vec3], v: &mut [Vec3]) -> Vec<Real> {
        for (p, j) in at.iter().zip(impulses) {
            for (i, w) in p.carriers() {
                v[i] += w * self.inverse_mass(i) * j;
            }
        }
        let Some(skeleton) = &self.skeleton else { return Vec::new() };
        let (rates, twists) = skeleton.response_to(&self.positions, at.iter().zip(impulses).flat_map(|(p, j)| p.carriers().map(move |(i, w)| (i, w * j))));
        skeleton.carry(&self.positions, &twists, v);
        rates
    }

    /// The response at surface point `p` without the volume constraints: `sum_i w_i^2 / m_i`
    /// times the identity over the free particles (Shinar eq. 2.4), and `B M_s^-1 B^T` over the
    /// bound ones (their bones' response).
    fn point_response(&self, p: &SurfacePoint) -> Mat3 {
        let free = Mat3::identity() * p.carriers().map(|(i, w)| w * w * self.inverse_mass(i)).sum::<Real>();
        free + self.skeleton.as_ref().map_or(Mat3::zeros(), |s| s.point_response(&self.positions, p.carriers()))
    }

    /// The volume constraints' pressure system factored where the particles are now (once per
    /// move).
    fn pressure_factor(&self, tets: &Tetrahedra) -> Arc<PressureFactor> {
        let mut factor = self.pressure.lock().unwrap_or_else(|e| e.into_inner());
        factor
            .get_or_insert_with(|| {
                let inverse_masses: Vec<Real> = (0..self.positions.len()).map(|i| self.inverse_mass(i)).collect();
                Arc::new(PressureFactor::new(tets, &self.positions, &inverse_masses, self.skeleton.as_ref()))
            })
            .clone()
    }

    /// The body at rest where it is, given the impulses `impulses` at surface points `at`:
    /// its velocities are the changes they cause, `K W^T j` (its velocity solve's state
    /// starting from zero). `K` is the particles' inverse masses and the skeleton's response
    /// (Shinar eq. 2.4), and for an incompressible body these followed by the projection that
    /// keeps the volumes (`P M^-1`, still symmetric in `W K W^T`): the pressure of the volume
    /// constraints answers each impulse within the solve, so the water pushing on the surface
    /// carries the inside with it, as it holds up a rigid body (with the projection only in
    /// the body's own step, a ball of the water's density sagged inside its surface and sank:
    /// 7.5 m/s^2 at first).
    fn kicked(&self, at: &[Arc<SurfacePoint>], impulses: &[Vec3]) -> DeformableBody {
        if let (Some(_), Elements::Volume(tets)) = (&self.incompressible, &self.model.elements) {
            self.pressure_factor(tets);
        }
        let mut change = self.clone();
        change.set_solve_state(&vec![0.0; self.velocity_len()]);
        change.push(at, impulses);
        change.keep_volumes(None);
        change
    }

    /// The particles moved on over `dt` with their velocities plus `kick` (pinned ones with
    /// their prescribed velocities alone).
    fn moved(&self, dt: Real, kick: &Vec3) -> Vec<Vec3> {
        (0..self.positions.len()).map(|i| self.positions[i] + dt * (self.velocities[i] + if self.pinned[i] { Vec3::zeros() } else { *kick })).collect()
    }
}

impl CoupledSolid for DeformableBody {
    fn signed_distance(&self, x: &Vec3) -> Real {
        self.deformed().distance.signed_distance(x) - self.model.elements.half_thickness()
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        let n = self.positions.len() as Real;
        let centre = self.positions.iter().sum::<Vec3>() / n;
        (centre, self.positions.iter().map(|x| (x - centre).norm()).fold(0.0, Real::max))
    }

    /// A volume's: what its surface encloses where it is now (the shape the liquid sees); a
    /// sheet's: its area times its thickness.
    fn volume(&self) -> Real {
        match self.model.elements {
            Elements::Volume(_) => self.deformed().enclosed,
            Elements::Shell(_) => self.model.elements.volume(),
        }
    }

    fn velocity_at(&self, x: &Vec3) -> Vec3 {
        self.velocity_in(&Site::at(*x))
    }

    fn velocity_in(&self, site: &Site) -> Vec3 {
        self.velocity_of(&self.surface_point(site))
    }

    /// `W K W^T`: the impulses spread over their sites' particles, the particles' velocity
    /// changes interpolated back ([`DeformableBody::kicked`]).
    fn impulse_response(&self, sites: &[Site], impulses: &[Vec3], changes: &mut [Vec3]) {
        let surface: Vec<Arc<SurfacePoint>> = sites.iter().map(|s| self.surface_point(s)).collect();
        let change = self.kicked(&surface, impulses);
        for (c, p) in changes.iter_mut().zip(&surface) {
            *c = change.velocity_of(p);
        }
    }

    /// Each point's [`DeformableBody::point_response`] along its axis, and for a volume made
    /// incompressible less what the projection takes off it
    /// ([`PressureFactor::projected_part`] of the particles' velocity changes): one solve with
    /// the factored pressure system a point, where [`DeformableBody::impulse_response`] copies
    /// the body and projects all its velocities. (The coupled solve asks for a diagonal entry
    /// at every coupled face: for an upright fish of five bones in water this was half of each
    /// substep.) A closed sheet made incompressible answers by its responses.
    fn impulse_diagonal(&self, sites: &[Site], axes: &[usize], scale: Real) -> Vec<Real> {
        let tets = match (&self.incompressible, &self.model.elements) {
            (Some(_), Elements::Shell(_)) => return diagonal_by_responses(self, sites, axes, scale),
            (Some(_), Elements::Volume(tets)) => Some(tets),
            (None, _) => None,
        };
        let factor = tets.map(|tets| (tets, self.pressure_factor(tets)));
        sites
            .par_iter()
            .zip(axes)
            .map(|(x, &a)| {
                let p = self.surface_point(x);
                let along = scale * self.point_response(&p)[(a, a)];
                let Some((tets, factor)) = &factor else { return along };
                let mut u = vec![Vec3::zeros(); self.positions.len()];
                self.add_response(&[p], &[Vec3::ith(a, scale)], &mut u);
                along - factor.projected_part(tets, &u) / scale
            })
            .collect()
    }

    fn is_sheet(&self) -> bool {
        matches!(self.model.elements, Elements::Shell(_))
    }

    fn crosses(&self, a: &Vec3, b: &Vec3) -> bool {
        self.is_sheet() && self.deformed().distance.crosses(a, b)
    }

    /// Where no pinned particle carries the surface there.
    fn moves_at(&self, x: &Vec3) -> bool {
        let p = self.surface_point(&Site::at(*x));
        let moves = p.carriers().all(|(i, w)| w == 0.0 || !self.pinned[i]);
        moves
    }

    /// Three per particle that is neither pinned nor bound, and the skeleton's rates.
    fn degrees_of_freedom(&self) -> usize {
        3 * (0..self.positions.len()).filter(|&i| !self.held(i)).count() + self.skeleton.as_ref().map_or(0, Skeleton::dofs)
    }

    fn apply_impulses(&mut self, sites: &[Site], impulses: &[Vec3]) {
        let surface: Vec<Arc<SurfacePoint>> = sites.iter().map(|s| self.surface_point(s)).collect();
        let change = self.kicked(&surface, impulses).solve_state();
        let state: Vec<Real> = self.solve_state().iter().zip(change).map(|(v, dv)| v + dv).collect();
        self.set_solve_state(&state);
    }
}

impl ContactBody for DeformableBody {
    fn is_dynamic(&self) -> bool {
        true
    }

    fn material(&self) -> Material {
        self.material
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        CoupledSolid::bounding_sphere(self)
    }

    fn speed_bound(&self) -> Real {
        self.max_point_speed()
    }

    /// The surface's vertices where the particles carry them now and where their velocities
    /// take them.
    fn samples(&self, dt: Real, kick: &Vec3) -> Vec<(Vec3, Vec3)> {
        let moved = self.moved(dt, kick);
        self.model.surface.vertices.iter().map(|p| (p.interpolate(&self.positions), p.interpolate(&moved))).collect()
    }

    fn reach(&self) -> Real {
        self.model.elements.half_thickness()
    }

    /// A sheet's distance is capped at `within` (its triangles are only searched that far).
    fn distance_after(&self, dt: Real, kick: &Vec3, within: Real) -> Distance<'_> {
        let moved = self.moved(dt, kick);
        let mut last = self.surface.1.lock().unwrap_or_else(|e| e.into_inner());
        let distance = match last.as_ref().filter(|(at, _)| *at == moved) {
            Some((_, distance)) => Arc::clone(distance),
            None => {
                let distance = Arc::new(self.surface_distance(&self.surface_mesh(&moved)));
                *last = Some((moved, Arc::clone(&distance)));
                distance
            }
        };
        let reach = self.model.elements.half_thickness();
        match self.model.elements {
            Elements::Volume(_) => Box::new(move |x| distance.signed_distance(x)),
            Elements::Shell(_) => Box::new(move |x| distance.unsigned_distance_within(x, within + reach) - reach),
        }
    }

    fn point_velocity(&self, x: &Vec3) -> Vec3 {
        self.velocity_at(x)
    }

    fn impulse_factor(&self, x: &Vec3) -> Mat3 {
        self.point_response(&self.surface_point(&Site::at(*x)))
    }

    fn apply_impulse(&mut self, j: &Vec3, x: &Vec3) {
        let p = self.surface_point(&Site::at(*x));
        self.push(&[p], &[*j]);
    }
}

/// A deformable body's state in a checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct DeformableState {
    positions: Vec<Vec3>,
    velocities: Vec<Vec3>,
    /// The bones' centres, orientations, angles and turns on their parents, and the skeleton's rates.
    #[serde(default)]
    bones: Vec<(Vec3, Quat, Real, Quat)>,
    #[serde(default)]
    rates: Vec<Real>,
}

impl Solid for DeformableBody {
    fn name(&self) -> &str {
        &self.name
    }

    /// Gives each hard pin's particles the velocity that brings them where their pin puts
    /// them at `time + dt`.
    fn prescribe(&mut self, time: Real, dt: Real) {
        for pin in self.pins.iter().filter(|p| p.spring.is_none()) {
            for (k, &i) in pin.particles.iter().enumerate() {
                self.velocities[i as usize] = (pin.target(k, time + dt) - self.positions[i as usize]) / dt;
            }
        }
    }

    /// Steps 1 and 3 of the module's scheme: right after a move, the half step of backward
    /// Euler with the elastic forces' mean over the move, extrapolated to the whole step;
    /// otherwise backward Euler over `h`.
    /// Soft pins' springs are evaluated at the middle of the step: where the particles will be
    /// half a step on (step 1), or at the midpoint of the move (step 3), with the targets there.
    fn predict_velocities(&mut self, h: Real, gravity: &Vec3, time: Real) {
        self.compute_forces();
        let start = self.start.take();
        if start.is_some() {
            // Shinar's step V.1: make the time-n velocities incompressible before they evolve.
            self.keep_volumes(None);
        }
        let forces = self.forces.as_ref().expect("just computed");
        let v0 = self.solve_state();
        let extrapolated = start.is_some();
        let next: Vec<Real> = match start {
            Some((before, x0)) => {
                let mean: Vec<Vec3> = before.iter().zip(forces).map(|(a, b)| 0.5 * (a + b)).collect();
                let midpoint: Vec<Vec3> = x0.iter().zip(&self.positions).map(|(a, b)| 0.5 * (a + b)).collect();
                let springs = self.particle_terms(&midpoint, time + 0.5 * h, 0.5 * h, false);
                let half = self.advanced_velocities(&mean, &v0, 0.5 * h, gravity, &springs);
                half.iter().zip(&v0).map(|(half, v0)| 2.0 * half - v0).collect()
            }
            None => {
                let springs = self.particle_terms(&self.positions, time + h, h, true);
                self.advanced_velocities(forces, &v0, h, gravity, &springs)
            }
        };
        self.set_solve_state(&next);
        // The extrapolation mixes bound velocities from before the move with the bones'
        // after it: project them back on the bones, momentum kept.
        if let (true, Some(skeleton)) = (extrapolated, &mut self.skeleton) {
            skeleton.project(&self.positions, &self.model.masses, &mut self.velocities);
        }
        if !extrapolated {
            // Shinar's step I.2: the velocities that the positions move with restore part of the
            // rest volumes over the move (a whole step, `2 h`).
            self.keep_volumes(Some(VOLUME_RELAXATION * 2.0 * h));
        }
    }

    /// A sheet's repulsions between its own vertices and triangles ([`super::self_contact`]).
    fn collide_with_itself(&mut self, dt: Real) {
        let Elements::Shell(shell) = &self.model.elements else { return };
        let inverse_masses: Vec<Real> = (0..self.positions.len()).map(|i| self.inverse_mass(i)).collect();
        let mut sheet = Sheet {
            positions: &self.positions,
            velocities: &mut self.velocities,
            inverse_masses: &inverse_masses,
            triangles: &shell.triangles,
            edges: &shell.edges,
            thickness: shell.thickness,
            friction: self.material.friction,
        };
        repel(&mut sheet, dt);
    }

    fn advance_positions(&mut self, dt: Real) {
        self.compute_forces();
        let before = self.forces.take().expect("just computed");
        let mut moved = self.moved(dt, &Vec3::zeros());
        if let Some(skeleton) = &mut self.skeleton {
            skeleton.advance(dt, &mut moved);
        }
        self.start = Some((before, std::mem::replace(&mut self.positions, moved)));
        self.surface = SurfaceCache::default();
        self.pressure = Arc::default();
    }

    /// The particles' velocities, then each bone's linear and angular momentum: as a rigid
    /// body keeps its angular momentum, not its angular velocity, so that bones restored to
    /// their velocities after a move turn with the momentum they had (a spherical pendulum's
    /// angular momentum about the vertical strayed by 3% in 2 s, at first order, when the
    /// rates were kept).
    fn velocity_state(&self) -> Vec<Real> {
        let momentum = self.skeleton.as_ref().map_or(Vec::new(), Skeleton::momentum);
        self.velocities.iter().flat_map(|v| v.iter().copied()).chain(momentum).collect()
    }

    /// The particles' velocities; with bones, the rates that carry the bones' momenta in
    /// `state` where the bones are now, and the bound particles' velocities from them.
    fn set_velocity_state(&mut self, state: &[Real]) {
        let n = self.positions.len();
        self.velocities = state[..3 * n].chunks(3).map(Vec3::from_column_slice).collect();
        if let Some(skeleton) = &mut self.skeleton {
            skeleton.set_momentum(&state[3 * n..]);
            skeleton.carry_velocities(&self.positions, &mut self.velocities);
        }
    }

    fn max_point_speed(&self) -> Real {
        self.velocities.iter().map(|v| v.norm()).fold(0.0, Real::max)
    }

    fn max_time_step(&self) -> Real {
        self.model.max_time_step()
    }

    fn check(&self, max_speed: Real) -> Result<(), String> {
        let rates = self.skeleton.as_ref().map_or(&[][..], |s| &s.rates[..]);
        if !self.positions.iter().chain(&self.velocities).all(|v| v.iter().all(|c| c.is_finite())) || !rates.iter().all(|r| r.is_finite()) {
            return Err(format!("deformable body `{}` has a non-finite position or velocity", self.name));
        }
        let speed = self.max_point_speed();
        if speed > max_speed {
            return Err(format!("deformable body `{}` reached {speed:.3} m/s, above simulation.max_speed = {max_speed} m/s", self.name));
        }
        Ok(())
    }

    fn surface(&self) -> (TriMesh, Vec<Vec3>) {
        (self.surface_mesh(&self.positions), self.model.surface.vertices.iter().map(|p| p.interpolate(&self.velocities)).collect())
    }

    /// One part: its centre of mass, momentum, the angular velocity of its angular momentum
    /// about that centre, and the energy in its elements.
    fn parts(&self) -> Vec<(PartState, &dyn CoupledSolid)> {
        let (centre, linear, angular) = self.momenta();
        let inertia: Mat3 =
            self.positions.iter().zip(&self.model.masses).map(|(x, m)| *m * ((x - centre).norm_squared() * Mat3::identity() - (x - centre) * (x - centre).transpose())).sum();
        let state = PartState {
            name: self.name.clone(),
            position: centre,
            orientation: Quat::identity(),
            velocity: linear / self.model.mass,
            angular_velocity: inertia.try_inverse().map_or(Vec3::zeros(), |i| i * angular),
            momentum: linear,
            modal_energy: None,
            elastic_energy: Some(self.elastic_energy()),
            bones: self.skeleton.as_ref().map_or(Vec::new(), Skeleton::poses),
        };
        vec![(state, self as &dyn CoupledSolid)]
    }

    fn contact_parts(&mut self) -> Vec<&mut dyn ContactBody> {
        vec![self as &mut dyn ContactBody]
    }

    fn save_state(&self) -> Vec<u8> {
        let (bones, rates) = self.skeleton.as_ref().map_or((Vec::new(), Vec::new()), |s| (s.pose_state(), s.rates.clone()));
        crate::solids::encode_state(&DeformableState { positions: self.positions.clone(), velocities: self.velocities.clone(), bones, rates })
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        let s: DeformableState = crate::solids::decode_state(bytes)?;
        if s.positions.len() != self.positions.len() || s.velocities.len() != self.velocities.len() {
            return Err(format!("deformable body `{}`: the checkpoint has {} particles, the scene's body {}", self.name, s.positions.len(), self.positions.len()));
        }
        if let Some(skeleton) = &mut self.skeleton {
            if s.bones.len() != skeleton.bones.len() || s.rates.len() != skeleton.dofs() {
                return Err(format!("deformable body `{}`: the checkpoint has {} bones, the scene's body {}", self.name, s.bones.len(), skeleton.bones.len()));
            }
            skeleton.set_pose_state(&s.bones);
            skeleton.rates = s.rates;
        }
        (self.positions, self.velocities) = (s.positions, s.velocities);
        (self.forces, self.start) = (None, None);
        self.surface = SurfaceCache::default();
        Ok(())
    }
}
