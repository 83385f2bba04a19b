//! A reduced deformable body (Lu, Jin, Fedkiw sec. 3–5): a rigid frame carrying a few
//! vibration modes, `x = R (S q + x0) + T` (eq. 1), over the vertices ("particles") of a
//! tetrahedral mesh with lumped masses. The model (rest shape, masses, modes) is shared by
//! every copy; a body holds only its frame and its `r` reduced coordinates.
//!
//! Impulses on the particles are split by the projections of sec. 4 (eq. 11, 16): the reduced
//! coordinates receive `P_r P_d lambda` and the rigid frame the rest, `(1 - P_r P_d) lambda`,
//! which conserves the linear and angular momentum the impulses carry. The frame keeps the
//! body's total angular momentum; its angular velocity is what remains after the modes' own
//! share, so internal forces and the frame's rotation never create or destroy momentum.

use super::fem::{consistent_mass, diagonal_mass, lumped_mass, rigid_motions, stiffness, ElasticMaterial};
use super::modes::{lowest_modes, ModalBasis};
use crate::geometry::embedding::{MaterialPoint, Skin, TetLookup};
use crate::geometry::{Shape, TetMesh, TriMesh};
use crate::math::{Mat3, Quat, Real, Vec3};
use crate::solids::contact::{ContactBody, Distance};
use crate::solids::rigid::Material;
use crate::solids::{CoupledSolid, Site};
use rayon::prelude::*;
use std::sync::Arc;

/// What copies of one reduced body share: the rest shape about its centre of mass, the
/// particles' lumped masses and the modes.
#[derive(Clone, Debug)]
pub struct ReducedModel {
    /// The mesh at rest, centred on its centre of mass.
    pub mesh: TetMesh,
    /// Lumped mass of each particle (kg) and their total.
    pub masses: Vec<Real>,
    pub mass: Real,
    /// Mass-normalised modes `S` (one column per mode, over `3 v + axis`) with zero
    /// mass-weighted sums, and their eigenvalues `omega^2` (the diagonal of `K_r`).
    pub modes: Vec<Vec<Real>>,
    pub eigenvalues: Vec<Real>,
    /// Stiffness-proportional Rayleigh damping `beta` (`C_r = beta K_r`; `alpha = 0`, as in
    /// the paper's examples).
    pub damping: Real,
    /// Where the input mesh's centre of mass was (the mesh here is centred on it).
    pub centre_offset: Vec3,
    /// The particles on the mesh's boundary (the contact samples), sorted.
    pub surface_particles: Vec<u32>,
    /// The mesh's boundary triangles (outward), numbered by their vertices' places in
    /// `surface_particles`, and the rest surface they make as a shape (its distance sampled on
    /// a lattice of half the tetrahedron lookup's cell).
    pub boundary: Vec<[u32; 3]>,
    pub surface: Shape,
    /// Tetrahedra by cell of a uniform grid over the rest mesh, to find the one holding a point.
    lookup: TetLookup,
    /// The smooth surface written for the body (see [`ReducedModel::with_skin`]), if any.
    skin: Option<Skin>,
}

impl ReducedModel {
    /// The model of `mesh` (which is first centred on its centre of mass) made of `material`,
    /// with its `count` lowest free vibration modes (none: a rigid body). `consistent` picks the
    /// consistent mass matrix for the modal analysis (else the lumped one). With `cache`, the
    /// modal basis is read from that directory when it was found before, and stored there
    /// when it is found now (see [`super::cache`]).
    pub fn new(mesh: &TetMesh, material: &ElasticMaterial, count: usize, damping: Real, consistent: bool, cache: Option<&std::path::Path>) -> Result<ReducedModel, String> {
        mesh.check()?;
        let masses = lumped_mass(mesh, material);
        let mass: Real = masses.iter().sum();
        let centre = mesh.vertices.iter().zip(&masses).map(|(x, m)| x * *m).sum::<Vec3>() / mass;
        let mut mesh = mesh.clone();
        mesh.vertices.iter_mut().for_each(|x| *x -= centre);
        let basis = if count == 0 {
            ModalBasis { eigenvalues: Vec::new(), modes: Vec::new(), iterations: 0 }
        } else {
            let key = cache.map(|_| super::cache::key(&mesh, material, count, consistent));
            let stored = cache.zip(key).and_then(|(dir, key)| super::cache::load(dir, key, 3 * mesh.vertices.len(), count));
            let mut basis = match stored {
                Some(basis) => basis,
                None => {
                    let k = stiffness(&mesh, material);
                    let m = if consistent { consistent_mass(&mesh, material) } else { diagonal_mass(&masses) };
                    let rigid = rigid_motions(&mesh, &Vec3::zeros()).to_vec();
                    let basis = lowest_modes(&k, &m, &vec![false; k.n], &rigid, count, 1e-8)?;
                    if let (Some(dir), Some(key)) = (cache, key) {
                        // A cache that cannot be written only costs the next run the analysis.
                        let _ = super::cache::store(dir, key, &basis);
                    }
                    basis
                }
            };
            // With the consistent mass the modes are orthonormal under it; the particles carry
            // lumped masses, so renormalise and remove any mass-weighted mean under those.
            for phi in basis.modes.iter_mut() {
                for a in 0..3 {
                    let mean = (0..masses.len()).map(|i| masses[i] * phi[3 * i + a]).sum::<Real>() / mass;
                    (0..masses.len()).for_each(|i| phi[3 * i + a] -= mean);
                }
                let norm = (0..phi.len()).map(|i| masses[i / 3] * phi[i] * phi[i]).sum::<Real>().sqrt();
                phi.iter_mut().for_each(|v| *v /= norm);
            }
            basis
        };
        let (surface_particles, boundary) = mesh.boundary_surface();
        let lookup = TetLookup::new(&mesh);
        let h = 0.5 * lookup.cell;
        let rest = surface_particles.iter().map(|&p| mesh.vertices[p as usize]).collect();
        let surface = Shape::mesh(TriMesh { vertices: rest, triangles: boundary.clone() })?.sampled(h, 6.0 * h);
        Ok(ReducedModel {
            mesh,
            masses,
            mass,
            modes: basis.modes,
            eigenvalues: basis.eigenvalues,
            damping,
            centre_offset: centre,
            surface_particles,
            boundary,
            surface,
            lookup,
            skin: None,
        })
    }

    /// The model writing `surface` (in the input mesh's frame: the smooth surface of the shape
    /// its tetrahedra were cut from) as the body's surface instead of the tetrahedra's jagged
    /// boundary. Each vertex is bound to the rest tetrahedron it lies in (or least outside of)
    /// and moves with it.
    pub fn with_skin(mut self, surface: &TriMesh) -> Self {
        self.skin = Some(Skin::bind(surface, &self.mesh, &self.lookup, &-self.centre_offset));
        self
    }

    /// Heap bytes the model holds (shared by its copies): mesh, masses, modes, the sampled
    /// rest distance and the tetrahedron lookup.
    pub fn heap_bytes(&self) -> usize {
        let sampled = match &self.surface {
            Shape::Mesh { surface, sampled, .. } => surface.vertices.len() * 24 + surface.triangles.len() * 12 + sampled.as_ref().map_or(0, |s| s.heap_bytes()),
            _ => 0,
        };
        self.mesh.vertices.len() * 24
            + self.mesh.tets.len() * 16
            + self.masses.len() * 8
            + self.modes.iter().map(|m| m.len() * 8).sum::<usize>()
            + self.boundary.len() * 12
            + self.surface_particles.len() * 4
            + sampled
            + self.lookup.heap_bytes()
            + self.skin.as_ref().map_or(0, Skin::heap_bytes)
    }

    /// The spacing of the lattice the rest surface's distance is sampled on (m).
    pub fn surface_spacing(&self) -> Real {
        0.5 * self.lookup.cell
    }

    /// Particles.
    pub fn particles(&self) -> usize {
        self.masses.len()
    }

    /// Mode `k` at particle `i` (body frame).
    fn mode(&self, k: usize, i: usize) -> Vec3 {
        let phi = &self.modes[k];
        Vec3::new(phi[3 * i], phi[3 * i + 1], phi[3 * i + 2])
    }

    /// `(S y)_i` in the body frame: the displacement (or velocity) of particle `i` for reduced
    /// values `y`.
    fn modal(&self, y: &[Real], i: usize) -> Vec3 {
        y.iter().enumerate().map(|(k, yk)| *yk * self.mode(k, i)).sum()
    }

    /// Rest position of particle `i` deformed by reduced coordinates `q`: `(S q + x0)_i`.
    fn local(&self, q: &[Real], i: usize) -> Vec3 {
        self.mesh.vertices[i] + self.modal(q, i)
    }

    /// Mode `k` interpolated at material point `p` (body frame).
    fn mode_at(&self, k: usize, p: &MaterialPoint) -> Vec3 {
        p.tet.iter().zip(p.weights).map(|(v, w)| w * self.mode(k, *v as usize)).sum()
    }
}

/// One copy of a reduced model in the world.
#[derive(Clone, Debug)]
pub struct ReducedBody {
    /// Name used in outputs.
    pub name: String,
    /// The shared model.
    pub model: Arc<ReducedModel>,
    /// Centre of mass `T` (m) and its velocity (m/s).
    pub position: Vec3,
    pub velocity: Vec3,
    /// Frame rotation `R`.
    pub orientation: Quat,
    /// Total angular momentum about the centre of mass (kg m^2/s): the frame's and the modes'.
    pub angular_momentum: Vec3,
    /// Reduced coordinates `q` and their rates.
    pub q: Vec<Real>,
    pub qdot: Vec<Real>,
    /// Restitution and friction in collisions and contact.
    pub material: Material,
    /// The step of the coupled solve the body is in: its modes respond to impulses through
    /// `(M_r + dt C_r + dt^2 K_r)^-1` (eq. 39, 43).
    pub solve_dt: Real,
    /// The material points found since the body last moved or deformed (a coupled solve asks
    /// about the same points every iteration, contact every sweep).
    cache: PointCache,
    /// The frame quantities of the current state.
    frame: FrameCache,
}

/// Material points by their world points' bits, for one placement and shape of the body.
#[derive(Default)]
struct PointCache(std::sync::Mutex<Option<CachedPoints>>);

struct CachedPoints {
    state: (Vec3, Quat, Vec<Real>),
    found: std::collections::HashMap<[u64; 3], MaterialPoint>,
}

/// The frame's derived quantities for one orientation and shape (`q`) of the body: everything
/// that needs a pass over all particles.
#[derive(Default)]
struct FrameCache(std::sync::RwLock<Option<Arc<Frame>>>);

struct Frame {
    state: (Quat, Vec<Real>),
    arms: Vec<Vec3>,
    inverse_inertia: Mat3,
    /// The largest displacement of a particle by the modes (m).
    slack: Real,
    /// The farthest particle's distance from the centre of mass (m).
    radius: Real,
    /// Per mode `k`: `c_k = sum_i m_i r_i x (R phi_k)_i`, the angular momentum the mode's unit
    /// velocity carries about the centre of mass (zero at rest, where the modes are
    /// mass-orthogonal to rotations).
    couplings: Vec<Vec3>,
}

impl Clone for FrameCache {
    fn clone(&self) -> Self {
        FrameCache::default()
    }
}

impl std::fmt::Debug for FrameCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameCache")
    }
}

impl Clone for PointCache {
    fn clone(&self) -> Self {
        PointCache::default()
    }
}

impl std::fmt::Debug for PointCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PointCache")
    }
}

impl ReducedBody {
    /// Heap bytes this copy holds besides its shared model: its name, modal coordinates and
    /// rates, and its caches (the material points found since it last moved, the frame's
    /// per-particle arms and per-mode couplings).
    pub fn heap_bytes(&self) -> usize {
        let state = self.name.len() + (self.q.len() + self.qdot.len()) * 8;
        let entry = std::mem::size_of::<([u64; 3], MaterialPoint)>();
        let points = self.cache.0.lock().map_or(0, |c| c.as_ref().map_or(0, |c| c.state.2.len() * 8 + c.found.capacity() * entry));
        let frame = self.frame.0.read().map_or(0, |f| f.as_ref().map_or(0, |f| f.state.1.len() * 8 + (f.arms.len() + f.couplings.len()) * 24));
        state + points + frame
    }

    /// A copy named `name` at rest with its centre of mass at `position`, undeformed, with the
    /// static world's restitution and friction.
    pub fn new(name: &str, model: Arc<ReducedModel>, position: Vec3) -> Self {
        let r = model.modes.len();
        ReducedBody {
            name: name.to_string(),
            model,
            position,
            velocity: Vec3::zeros(),
            orientation: Quat::identity(),
            angular_momentum: Vec3::zeros(),
            q: vec![0.0; r],
            qdot: vec![0.0; r],
            material: crate::solids::contact::STATIC_MATERIAL,
            solve_dt: 0.0,
            cache: PointCache::default(),
            frame: FrameCache::default(),
        }
    }

    /// Sets the frame's angular velocity (with the modes at rest relative to it).
    pub fn set_angular_velocity(&mut self, omega: &Vec3) {
        let arms = self.arms();
        self.angular_momentum = self.inertia(&arms) * omega;
    }

    /// The deformed surface in world space, with the material's velocity at its vertices: the
    /// model's skin where it has one, else the mesh's boundary particles alone (the interior
    /// particles are not the surface's vertices), numbered in the order of
    /// [`ReducedModel::surface_particles`].
    pub fn world_surface(&self) -> (TriMesh, Vec<Vec3>) {
        if let Some(skin) = &self.model.skin {
            let vertices = skin.vertices.iter().map(|p| self.position_of(p)).collect();
            let velocities = skin.vertices.iter().map(|p| self.velocity_of(p)).collect();
            return (TriMesh { vertices, triangles: skin.triangles.clone() }, velocities);
        }
        let pick = |all: Vec<Vec3>| self.model.surface_particles.iter().map(|&p| all[p as usize]).collect::<Vec<Vec3>>();
        (TriMesh { vertices: pick(self.positions()), triangles: self.model.boundary.clone() }, pick(self.velocities()))
    }

    /// The fastest particle's speed (m/s).
    pub fn max_speed(&self) -> Real {
        self.velocities().iter().map(|v| v.norm()).fold(0.0, Real::max)
    }

    /// The frame's arms, inverse inertia and modal couplings for the current orientation and
    /// shape, computed once for each (a coupled solve asks for them at every point and
    /// iteration, contact at every impulse).
    fn frame(&self) -> Arc<Frame> {
        let current = |f: &&Arc<Frame>| f.state.0 == self.orientation && f.state.1 == self.q;
        if let Some(frame) = self.frame.0.read().unwrap_or_else(|e| e.into_inner()).as_ref().filter(current) {
            return Arc::clone(frame);
        }
        let arms: Vec<Vec3> = (0..self.model.particles()).map(|i| self.orientation * self.model.local(&self.q, i)).collect();
        let inverse_inertia = self.inertia(&arms).try_inverse().unwrap_or_else(Mat3::zeros);
        let slack = (0..self.model.particles()).map(|i| self.model.modal(&self.q, i).norm()).fold(0.0, Real::max);
        let radius = arms.iter().map(|r| r.norm()).fold(0.0, Real::max);
        let couplings = (0..self.model.modes.len())
            .map(|k| arms.iter().zip(&self.model.masses).enumerate().map(|(i, (r, m))| *m * r.cross(&(self.orientation * self.model.mode(k, i)))).sum())
            .collect();
        let state = (self.orientation, self.q.clone());
        let frame = Arc::new(Frame { state, arms, inverse_inertia, slack, radius, couplings });
        *self.frame.0.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&frame));
        frame
    }

    /// Moment arms `r_i = R (S q + x0)_i`.
    pub fn arms(&self) -> Vec<Vec3> {
        self.frame().arms.clone()
    }

    /// World positions of the particles.
    pub fn positions(&self) -> Vec<Vec3> {
        self.arms().into_iter().map(|r| r + self.position).collect()
    }

    /// Inertia tensor about the centre of mass for arms `arms`.
    fn inertia(&self, arms: &[Vec3]) -> Mat3 {
        arms.iter().zip(&self.model.masses).map(|(r, m)| *m * (r.norm_squared() * Mat3::identity() - r * r.transpose())).sum()
    }

    /// The modes' velocities `R S qdot` at the particles.
    fn modal_velocities(&self) -> Vec<Vec3> {
        (0..self.model.particles()).map(|i| self.orientation * self.model.modal(&self.qdot, i)).collect()
    }

    /// The frame's own angular momentum `I w`: the body's less the modes' share,
    /// `sum_i m_i r_i x (R S qdot)_i = sum_k qdot_k c_k`.
    fn frame_momentum(&self, frame: &Frame) -> Vec3 {
        self.angular_momentum - frame.couplings.iter().zip(&self.qdot).map(|(c, v)| *v * c).sum::<Vec3>()
    }

    /// The frame's angular velocity: the total angular momentum less the modes' share,
    /// through the current inertia.
    pub fn angular_velocity(&self) -> Vec3 {
        self.spin(&self.frame())
    }

    /// [`ReducedBody::angular_velocity`] from the frame quantities `frame` of the current state.
    fn spin(&self, frame: &Frame) -> Vec3 {
        frame.inverse_inertia * self.frame_momentum(frame)
    }

    /// Velocity of particle `i` (eq. 3) with the frame's angular velocity `omega`.
    fn particle_velocity(&self, frame: &Frame, omega: &Vec3, i: usize) -> Vec3 {
        self.orientation * self.model.modal(&self.qdot, i) + self.velocity + omega.cross(&frame.arms[i])
    }

    /// Particle velocities (eq. 3): `R S qdot + v + omega x r`.
    pub fn velocities(&self) -> Vec<Vec3> {
        let (w, arms) = (self.angular_velocity(), self.arms());
        self.modal_velocities().into_iter().zip(arms).map(|(m, r)| m + self.velocity + w.cross(&r)).collect()
    }

    /// Linear momentum and angular momentum about the origin, summed over the particles.
    pub fn momentum(&self) -> (Vec3, Vec3) {
        let (x, v) = (self.positions(), self.velocities());
        let p = v.iter().zip(&self.model.masses).map(|(v, m)| *m * v).sum();
        let l = x.iter().zip(&v).zip(&self.model.masses).map(|((x, v), m)| *m * x.cross(v)).sum();
        (p, l)
    }

    /// `P_rigid lambda = M J (J^T M J)^-1 J^T lambda` (eq. 11): the rigid frame's share of
    /// particle impulses, with the same total force and torque.
    pub fn project_rigid(&self, lambda: &[Vec3]) -> Vec<Vec3> {
        let frame = self.frame();
        let total: Vec3 = lambda.iter().sum();
        let torque: Vec3 = frame.arms.iter().zip(lambda).map(|(r, l)| r.cross(l)).sum();
        let (dv, dw) = (total / self.model.mass, frame.inverse_inertia * torque);
        frame.arms.iter().zip(&self.model.masses).map(|(r, m)| *m * (dv + dw.cross(r))).collect()
    }

    /// `P_d lambda = (1 - P_rigid) lambda`: the deforming share.
    pub fn project_deformable(&self, lambda: &[Vec3]) -> Vec<Vec3> {
        lambda.iter().zip(self.project_rigid(lambda)).map(|(l, r)| l - r).collect()
    }

    /// The reduced coordinates' response `S^T R^-1 lambda` to particle impulses.
    fn reduced_impulse(&self, lambda: &[Vec3]) -> Vec<Real> {
        let local: Vec<Vec3> = lambda.iter().map(|l| self.orientation.inverse() * l).collect();
        (0..self.model.modes.len()).map(|k| local.iter().enumerate().map(|(i, l)| self.model.mode(k, i).dot(l)).sum()).collect()
    }

    /// `M R S y` at the particles for reduced values `y`.
    fn reduced_to_impulses(&self, y: &[Real]) -> Vec<Vec3> {
        (0..self.model.particles()).map(|i| self.model.masses[i] * (self.orientation * self.model.modal(y, i))).collect()
    }

    /// `P_r lambda = M R S M_r^-1 S^T R^-1 lambda` (eq. 16, `M_r = 1` for mass-normalised
    /// modes): the share of impulses the modes can represent.
    pub fn project_reduced(&self, lambda: &[Vec3]) -> Vec<Vec3> {
        self.reduced_to_impulses(&self.reduced_impulse(lambda))
    }

    /// Applies particle impulses `lambda` (N s): `P_r P_d lambda` to the modes (through
    /// `M_r hat^-1` inside a coupled solve of step `solve_dt`, eq. 39), the rest to the rigid
    /// frame (sec. 4). Outside a solve (`solve_dt = 0`) the body's linear and angular momentum
    /// change by exactly the impulses' total and torque.
    pub fn apply_particle_impulses(&mut self, lambda: &[Vec3]) {
        let arms = self.arms();
        let deforming = self.project_deformable(lambda);
        let dq = self.reduced_impulse(&deforming);
        let factors = self.implicit_factors();
        self.qdot.iter_mut().zip(dq.iter().zip(factors)).for_each(|(v, (d, f))| *v += d * f);
        self.velocity += lambda.iter().sum::<Vec3>() / self.model.mass;
        self.angular_momentum += arms.iter().zip(lambda).map(|(r, l)| r.cross(l)).sum::<Vec3>();
    }

    /// One step of length `dt` without contact or liquid: [`ReducedBody::predict_velocities`]
    /// then [`ReducedBody::advance_positions`].
    pub fn step(&mut self, dt: Real, gravity: &Vec3) {
        self.predict_velocities(dt, gravity);
        self.advance_positions(dt);
    }

    /// The velocities at the end of a step of length `h` before any impulse (sec. 5.2): gravity
    /// on the frame; the rotating frame's fictitious accelerations on the modes (eq. 5–8): the
    /// centrifugal one's `P_r P_d` share (eq. 25), and the Coriolis one, `-2 G qdot` with
    /// `G_kl = phi_k^T M (w x phi_l)` skew-symmetric, taken at the end of the step with the
    /// modes' implicit update: `(M_r + h C_r + h^2 K_r + 2 h G) qdot' = M_r qdot - h K_r q`
    /// (eq. 31–34). The Coriolis coupling does no work; taken at the start of the step it
    /// would add energy every step (`|1 + i h 2w| > 1`), and a slender part spins fast about
    /// its axis (a small inertia there, so a fast spin for a little angular momentum of its
    /// bending), which would pump its bending up. The frame's linear acceleration and the Euler
    /// term `-w' x r` are the masses times a rigid acceleration, which `P_d` removes exactly, so
    /// they have no term here. Impulses applied after the
    /// prediction (a coupled solve, contact) act through the implicit factor without `G`
    /// (`solve_dt = h`), which keeps the coupled system symmetric.
    pub fn predict_velocities(&mut self, h: Real, gravity: &Vec3) {
        self.velocity += h * gravity;
        self.solve_dt = h;
        let r = self.model.modes.len();
        if r == 0 {
            return;
        }
        let (w, arms) = (self.angular_velocity(), self.arms());
        let centrifugal: Vec<Vec3> = arms.iter().zip(&self.model.masses).map(|(a, m)| -*m * w.cross(&w.cross(a)) * h).collect();
        let dq = self.reduced_impulse(&self.project_deformable(&centrifugal));
        let local = self.orientation.inverse() * w;
        let mut a = nalgebra::DMatrix::zeros(r, r);
        let mut turned = vec![Vec3::zeros(); r];
        for i in 0..self.model.particles() {
            let m = 2.0 * h * self.model.masses[i];
            for (l, t) in turned.iter_mut().enumerate() {
                *t = local.cross(&self.model.mode(l, i));
            }
            for k in 0..r {
                let phi = self.model.mode(k, i);
                for (l, t) in turned.iter().enumerate() {
                    a[(k, l)] += m * phi.dot(t);
                }
            }
        }
        let beta = self.model.damping;
        let mut rhs = nalgebra::DVector::zeros(r);
        for (k, lambda) in self.model.eigenvalues.iter().enumerate() {
            a[(k, k)] += 1.0 + h * beta * lambda + h * h * lambda;
            rhs[k] = self.qdot[k] + dq[k] - h * lambda * self.q[k];
        }
        // `x^T A x = x^T (1 + h C_r + h^2 K_r) x > 0` (G is skew): A is never singular.
        let qdot = a.lu().solve(&rhs).expect("a positive definite matrix plus a skew one is invertible");
        self.qdot = qdot.iter().copied().collect();
    }

    /// Moves the body over `dt` with its current velocities: `T += dt v`, `q += dt qdot`, the
    /// frame turned as a rigid body's is ([`crate::solids::rigid::turned`]) with the frame's
    /// own angular momentum `L_frame = I w`.
    pub fn advance_positions(&mut self, dt: Real) {
        let frame = self.frame();
        let momentum = self.frame_momentum(&frame);
        let omega = frame.inverse_inertia * momentum;
        self.position += dt * self.velocity;
        self.q.iter_mut().zip(&self.qdot).for_each(|(q, v)| *q += dt * v);
        self.orientation = crate::solids::rigid::turned(&self.orientation, dt, &omega, &frame.inverse_inertia, &momentum);
    }

    /// `1 / (1 + dt beta lambda_k + dt^2 lambda_k)`: the diagonal of `M_r hat^-1` for
    /// mass-normalised modes.
    fn implicit_factors(&self) -> Vec<Real> {
        let dt = self.solve_dt;
        self.model.eigenvalues.iter().map(|l| 1.0 / (1.0 + dt * self.model.damping * l + dt * dt * l)).collect()
    }

    /// The material point at world point `x`: the particles of the rest tetrahedron holding it,
    /// its barycentric weights among them, and its rest position `z`, the solution of
    /// `z + u(z) = R^-1 (x - T)` with `u` the modes' displacement interpolated at `z`. `u` is
    /// affine within a tetrahedron, so each pass solves the equation exactly for the current
    /// tetrahedron (a 3 x 3 system) and looks up where the answer lies; it ends when that is the
    /// same tetrahedron (usually the first or second pass) or has settled.
    fn weights(&self, x: &Vec3) -> ([u32; 4], [Real; 4], Vec3) {
        let lookup = &self.model.lookup;
        let y = self.orientation.inverse() * (x - self.position);
        let (mut t, mut w) = lookup.locate(&y, None);
        let mut z = y;
        if !self.model.modes.is_empty() {
            for _ in 0..16 {
                let tet = self.model.mesh.tets[t];
                let d = tet.map(|v| self.model.modal(&self.q, v as usize));
                let (p0, inverse) = &lookup.maps[t];
                // u(z) = d0 + D l, l = inverse (z - p0): (1 + D inverse) z = y - d0 + D inverse p0.
                let g = Mat3::from_columns(&[d[1] - d[0], d[2] - d[0], d[3] - d[0]]) * inverse;
                let Some(next) = (Mat3::identity() + g).try_inverse().map(|a| a * (y - d[0] + g * p0)) else { break };
                let moved = (next - z).norm();
                z = next;
                let previous = t;
                (t, w) = lookup.locate(&z, Some(t));
                if t == previous || moved < 1e-10 {
                    break;
                }
            }
        }
        (self.model.mesh.tets[t], w, z)
    }

    /// The material points at `points` (their rest tetrahedra and weights), each searched for
    /// once while the body keeps its place and shape.
    pub fn material_points(&self, points: &[Vec3]) -> Vec<MaterialPoint> {
        let current = |c: &CachedPoints| c.state.0 == self.position && c.state.1 == self.orientation && c.state.2 == self.q;
        let key = |x: &Vec3| [x.x.to_bits(), x.y.to_bits(), x.z.to_bits()];
        let known: Vec<Option<MaterialPoint>> = {
            let cache = self.cache.0.lock().unwrap_or_else(|e| e.into_inner());
            match cache.as_ref().filter(|c| current(c)) {
                Some(c) => points.iter().map(|x| c.found.get(&key(x)).copied()).collect(),
                None => vec![None; points.len()],
            }
        };
        if known.iter().all(Option::is_some) {
            return known.into_iter().flatten().collect();
        }
        let material: Vec<MaterialPoint> = points
            .par_iter()
            .zip(&known)
            .map(|(x, known)| {
                known.unwrap_or_else(|| {
                    let (tet, weights, _) = self.weights(x);
                    MaterialPoint { tet, weights }
                })
            })
            .collect();
        let mut cache = self.cache.0.lock().unwrap_or_else(|e| e.into_inner());
        let c = match cache.take().filter(|c| current(c)) {
            Some(c) => cache.insert(c),
            None => cache.insert(CachedPoints { state: (self.position, self.orientation, self.q.clone()), found: Default::default() }),
        };
        for ((x, p), known) in points.iter().zip(&material).zip(known) {
            if known.is_none() {
                c.found.insert(key(x), *p);
            }
        }
        material
    }

    /// The material point at world point `x` ([`ReducedBody::material_points`]).
    pub fn material_point(&self, x: &Vec3) -> MaterialPoint {
        self.material_points(std::slice::from_ref(x))[0]
    }

    /// World position of material point `p`.
    pub fn position_of(&self, p: &MaterialPoint) -> Vec3 {
        self.position + p.interpolate(&self.frame().arms)
    }

    /// Velocity of material point `p`.
    pub fn velocity_of(&self, p: &MaterialPoint) -> Vec3 {
        let frame = self.frame();
        let omega = self.spin(&frame);
        p.tet.iter().zip(p.weights).map(|(v, w)| w * self.particle_velocity(&frame, &omega, *v as usize)).sum()
    }

    /// Particle impulses from impulses at material points (`W^T`: each spread over its
    /// tetrahedron with the point's barycentric weights).
    pub fn particle_impulses(&self, sources: impl IntoIterator<Item = (MaterialPoint, Vec3)>) -> Vec<Vec3> {
        let mut lambda = vec![Vec3::zeros(); self.model.particles()];
        for (p, j) in sources {
            for (v, w) in p.tet.iter().zip(p.weights) {
                lambda[*v as usize] += w * j;
            }
        }
        lambda
    }

    /// The velocity changes at material points `at` that impulses `sources` (each at a
    /// material point) make: `J K_lambda J^T` (eq. 43), `P_rigid^T M^-1 P_rigid` (the frame's
    /// rigid response) plus `P_d^T R S M_r hat^-1 S^T R^-1 P_d` (the modes', implicit in the
    /// step), or the first alone with `frame_only`. Evaluated at the points, without a pass over
    /// the particles: with `dv, dw` the frame's response to the impulses' force and torque,
    /// `S^T R^-1 P_d lambda` is `sum_p phi_k(p) . R^-1 j_p - c_k . dw` (the modes have zero
    /// mass-weighted sums, and `c_k` is the angular momentum of mode `k`), and `P_d^T` removes
    /// from the modes' velocity the rotation `I^-1 sum_k y_k c_k` carrying its angular momentum
    /// (its linear momentum is zero).
    pub fn point_response(&self, sources: &[(MaterialPoint, Vec3)], at: &[MaterialPoint], frame_only: bool) -> Vec<Vec3> {
        let frame = self.frame();
        let arm = |p: &MaterialPoint| p.interpolate(&frame.arms);
        let total: Vec3 = sources.iter().map(|(_, j)| j).sum();
        let torque: Vec3 = sources.iter().map(|(p, j)| arm(p).cross(j)).sum();
        let (dv, dw) = (total / self.model.mass, frame.inverse_inertia * torque);
        let mut response: Vec<Vec3> = at.iter().map(|p| dv + dw.cross(&arm(p))).collect();
        if frame_only || self.model.modes.is_empty() {
            return response;
        }
        let local: Vec<(MaterialPoint, Vec3)> = sources.iter().map(|(p, j)| (*p, self.orientation.inverse() * j)).collect();
        let y: Vec<Real> = (0..self.model.modes.len())
            .zip(self.implicit_factors())
            .map(|(k, factor)| factor * (local.iter().map(|(p, j)| self.model.mode_at(k, p).dot(j)).sum::<Real>() - frame.couplings[k].dot(&dw)))
            .collect();
        let spin = frame.inverse_inertia * frame.couplings.iter().zip(&y).map(|(c, yk)| *yk * c).sum::<Vec3>();
        for (out, p) in response.iter_mut().zip(at) {
            let modal: Vec3 = y.iter().enumerate().map(|(k, yk)| *yk * self.model.mode_at(k, p)).sum();
            *out += self.orientation * modal - spin.cross(&arm(p));
        }
        response
    }

    /// Applies particle impulses to the frame alone (its velocity and angular momentum, the
    /// modes untouched).
    pub fn apply_frame_impulses(&mut self, lambda: &[Vec3]) {
        let frame = self.frame();
        self.velocity += lambda.iter().sum::<Vec3>() / self.model.mass;
        self.angular_momentum += frame.arms.iter().zip(lambda).map(|(r, l)| r.cross(l)).sum::<Vec3>();
    }

    /// Energy in the modes: `1/2 sum(qdot^2 + omega^2 q^2)` (J).
    pub fn modal_energy(&self) -> Real {
        self.q.iter().zip(&self.qdot).zip(&self.model.eigenvalues).map(|((q, v), l)| 0.5 * (v * v + l * q * q)).sum()
    }
}

impl CoupledSolid for ReducedBody {
    /// The rest surface's distance at the material point (exact on the surface, measured in
    /// rest lengths elsewhere: deformations are small). Farther from the rest surface than a
    /// lookup cell (about the mesh spacing) beyond the largest displacement, the distance at
    /// the undeformed point less that displacement (a lower bound, within twice the
    /// displacement of the distance, and at least that cell) saves the search for the material
    /// point.
    fn signed_distance(&self, x: &Vec3) -> Real {
        let slack = self.frame().slack;
        let undeformed = self.model.surface.signed_distance(&(self.orientation.inverse() * (x - self.position)));
        if undeformed > slack + self.model.lookup.cell {
            return undeformed - slack;
        }
        if slack == 0.0 {
            return undeformed;
        }
        self.model.surface.signed_distance(&self.weights(x).2)
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        (self.position, self.frame().radius)
    }

    fn volume(&self) -> Real {
        self.model.mesh.volume()
    }

    fn velocity_at(&self, x: &Vec3) -> Vec3 {
        self.velocity_of(&self.material_point(x))
    }

    /// `W J K_lambda J^T W^T` (eq. 42–43): impulses spread to the particles, their response,
    /// interpolated back.
    fn impulse_response(&self, sites: &[Site], impulses: &[Vec3], changes: &mut [Vec3]) {
        let points = Site::points(sites);
        let material = self.material_points(&points);
        let sources: Vec<(MaterialPoint, Vec3)> = material.iter().copied().zip(impulses.iter().copied()).collect();
        changes.copy_from_slice(&self.point_response(&sources, &material, false));
    }

    /// The frame's six and one per mode.
    fn degrees_of_freedom(&self) -> usize {
        6 + self.model.modes.len()
    }

    fn apply_impulses(&mut self, sites: &[Site], impulses: &[Vec3]) {
        let points = Site::points(sites);
        let lambda = self.particle_impulses(self.material_points(&points).into_iter().zip(impulses.iter().copied()));
        self.apply_particle_impulses(&lambda);
    }
}

impl ContactBody for ReducedBody {
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
        self.max_speed()
    }

    /// The particles on the mesh's boundary, moved straight on with their velocities.
    fn samples(&self, dt: Real, kick: &Vec3) -> Vec<(Vec3, Vec3)> {
        let (arms, w, modal) = (&self.frame().arms, self.angular_velocity(), self.modal_velocities());
        self.model
            .surface_particles
            .iter()
            .map(|&i| {
                let (r, u) = (arms[i as usize], modal[i as usize]);
                let x = self.position + r;
                (x, x + dt * (self.velocity + kick + w.cross(&r) + u))
            })
            .collect()
    }

    fn distance_after(&self, dt: Real, kick: &Vec3, _within: Real) -> Distance<'_> {
        let mut moved = self.clone();
        moved.velocity += kick;
        moved.advance_positions(dt);
        Box::new(move |x| moved.signed_distance(x))
    }

    fn point_velocity(&self, x: &Vec3) -> Vec3 {
        self.velocity_at(x)
    }

    /// `K_lambda` (eq. 43) seen at the material point at `x`.
    fn impulse_factor(&self, x: &Vec3) -> Mat3 {
        let p = self.material_point(x);
        Mat3::from_columns(&[0, 1, 2].map(|a| self.point_response(&[(p, Vec3::ith(a, 1.0))], &[p], false)[0]))
    }

    fn apply_impulse(&mut self, j: &Vec3, x: &Vec3) {
        let lambda = self.particle_impulses([(self.material_point(x), *j)]);
        self.apply_particle_impulses(&lambda);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    fn model(modes: usize) -> Arc<ReducedModel> {
        damped_model(modes, 0.0)
    }

    fn damped_model(modes: usize, damping: Real) -> Arc<ReducedModel> {
        let mesh = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.4, 0.2, 0.1), [4, 2, 2]);
        let material = ElasticMaterial { young: 2e4, poisson: 0.3, density: 600.0 };
        Arc::new(ReducedModel::new(&mesh, &material, modes, damping, false, None).unwrap())
    }

    fn random_impulses(n: usize, seed: u64) -> Vec<Vec3> {
        let mut rng = SplitMix64::keyed(&[seed]);
        (0..n).map(|_| Vec3::new(rng.next_unit() - 0.5, rng.next_unit() - 0.5, rng.next_unit() - 0.5)).collect()
    }

    /// A body deformed and turned, so that the projections are tested away from rest.
    fn deformed(modes: usize) -> ReducedBody {
        let mut body = ReducedBody::new("test", model(modes), Vec3::new(1.0, 2.0, 3.0));
        body.orientation = Quat::from_scaled_axis(Vec3::new(0.3, -0.5, 0.8));
        body.q = (0..modes).map(|k| 0.002 * (k as Real + 1.0)).collect();
        body
    }

    fn distance(a: &[Vec3], b: &[Vec3]) -> Real {
        a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0, Real::max)
    }

    /// `P_rigid`, `P_r` and `P_d` are projections (`P^2 = P` to 1e-10 of the impulses'
    /// size); `P_rigid` keeps the impulses' total force and torque exactly; `P_rigid P_d = 0`.
    #[test]
    fn impulse_projections_are_projections_and_p_rigid_keeps_momentum() {
        let body = deformed(6);
        let lambda = random_impulses(body.model.particles(), 7);
        let size = lambda.iter().map(|l| l.norm()).fold(0.0, Real::max);
        for project in [ReducedBody::project_rigid, ReducedBody::project_reduced, ReducedBody::project_deformable] {
            let once = project(&body, &lambda);
            let twice = project(&body, &once);
            assert!(distance(&once, &twice) < 1e-10 * size, "P^2 != P by {}", distance(&once, &twice));
        }
        let rigid = body.project_rigid(&lambda);
        let arms = body.arms();
        let torque = |l: &[Vec3]| arms.iter().zip(l).map(|(r, l)| r.cross(l)).sum::<Vec3>();
        assert!((rigid.iter().sum::<Vec3>() - lambda.iter().sum::<Vec3>()).norm() < 1e-12 * size);
        assert!((torque(&rigid) - torque(&lambda)).norm() < 1e-12 * size);
        let both = body.project_rigid(&body.project_deformable(&lambda));
        assert!(both.iter().all(|v| v.norm() < 1e-12 * size));
    }

    /// Applying any particle impulses to a deformed, spinning, vibrating body changes its
    /// linear and angular momentum (summed over its particles) by exactly the impulses' total
    /// and torque.
    #[test]
    fn particle_impulses_change_momentum_by_exactly_what_they_carry() {
        let mut body = deformed(6);
        body.velocity = Vec3::new(0.2, -0.1, 0.4);
        body.angular_momentum = Vec3::new(0.01, 0.02, -0.03);
        body.qdot = vec![0.1, -0.2, 0.05, 0.0, 0.3, -0.1];
        let (p0, l0) = body.momentum();
        let lambda = random_impulses(body.model.particles(), 11);
        let x = body.positions();
        body.apply_particle_impulses(&lambda);
        let (p1, l1) = body.momentum();
        let total: Vec3 = lambda.iter().sum();
        let torque: Vec3 = x.iter().zip(&lambda).map(|(x, l)| x.cross(l)).sum();
        assert!((p1 - p0 - total).norm() < 1e-12 * total.norm().max(1.0));
        assert!((l1 - l0 - torque).norm() < 1e-10 * torque.norm().max(1.0), "{:?} vs {torque:?}", l1 - l0);
    }

    /// A free body, spinning and vibrating with no external force, keeps its linear and
    /// angular momentum to 1e-8 (relative) over 1000 steps, and keeps vibrating (undamped).
    #[test]
    fn free_vibrating_body_keeps_its_momentum() {
        let mut body = deformed(6);
        body.velocity = Vec3::new(0.1, 0.0, -0.05);
        body.angular_momentum = Vec3::new(0.0, 0.0, 0.02);
        body.qdot = vec![0.2, 0.1, -0.1, 0.05, 0.0, 0.1];
        let (p0, l0) = body.momentum();
        for _ in 0..1000 {
            body.step(1e-3, &Vec3::zeros());
        }
        let (p1, l1) = body.momentum();
        assert!((p1 - p0).norm() < 1e-8 * p0.norm(), "linear momentum moved by {}", (p1 - p0).norm());
        assert!((l1 - l0).norm() < 1e-8 * l0.norm(), "angular momentum moved by {}", (l1 - l0).norm());
        assert!(body.modal_energy() > 1e-4, "the vibration died: {}", body.modal_energy());
    }

    /// A slender bar spinning fast about its long axis (20 rad/s, steps of 1/60 s: the
    /// Coriolis coupling turns its bending by 0.67 rad a step) while it bends, undamped and
    /// free: its energy (the particles' kinetic energy plus the modes' elastic energy) stays
    /// within 1% of where it started over 600 steps (it falls by 6%); with the Coriolis
    /// coupling taken at the start of the step it rose by 87% in 50 steps.
    #[test]
    fn fast_spinning_bar_never_gains_energy() {
        let mesh = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.4, 0.04, 0.04), [10, 1, 1]);
        let material = ElasticMaterial { young: 2e4, poisson: 0.3, density: 600.0 };
        let mut body = ReducedBody::new("bar", Arc::new(ReducedModel::new(&mesh, &material, 4, 0.0, false, None).unwrap()), Vec3::zeros());
        body.set_angular_velocity(&Vec3::new(20.0, 0.0, 0.0));
        body.qdot = vec![0.05, -0.05, 0.03, 0.02];
        let energy = |b: &ReducedBody| {
            let kinetic: Real = b.velocities().iter().zip(&b.model.masses).map(|(v, m)| 0.5 * m * v.norm_squared()).sum();
            kinetic + b.q.iter().zip(&b.model.eigenvalues).map(|(q, l)| 0.5 * l * q * q).sum::<Real>()
        };
        let start = energy(&body);
        for step in 0..600 {
            body.step(1.0 / 60.0, &Vec3::zeros());
            let now = energy(&body);
            assert!(now <= 1.01 * start, "step {step}: energy rose from {start} to {now} J");
        }
    }

    /// The Euler term of the rotating frame's fictitious forces (eq. 5–8), `-m_i w' x r_i`, is
    /// the masses times a rigid acceleration, so `P_r P_d` (eq. 25) sends none of it to the modes:
    /// `P_d` removes it exactly (to 1e-12 of its size) for any `w'` and any deformed, turned
    /// state, and the update carries no term for it (nor for the frame's linear acceleration).
    /// What it stands for holds: a free, undamped bar spun up from rest about its short axis by a
    /// couple at its ends (turning with it) bends as it spins up and gains the work the couple
    /// does, `sum lambda . (v before + v after) / 2` over the impulses, as kinetic plus elastic
    /// energy, less only what the implicit modal update is known to lose (`h^2 w^2 / (1 + h^2
    /// w^2)` of each mode's energy a step, 0.18% of the work here): the shortfall matches that
    /// loss to 0.5% (asserted: 2%).
    #[test]
    fn euler_term_leaves_the_modes_and_a_spun_up_bar_gains_the_couples_work() {
        let body = deformed(6);
        let mut rng = SplitMix64::keyed(&[7]);
        for _ in 0..3 {
            let spin_up = Vec3::new(rng.next_unit() - 0.5, rng.next_unit() - 0.5, rng.next_unit() - 0.5) * 40.0;
            let euler: Vec<Vec3> = body.arms().iter().zip(&body.model.masses).map(|(r, m)| -*m * spin_up.cross(r)).collect();
            let left = body.project_deformable(&euler).iter().map(|v| v.norm()).fold(0.0, Real::max);
            let size = euler.iter().map(|v| v.norm()).fold(0.0, Real::max);
            assert!(left < 1e-12 * size, "P_d leaves {left} of an Euler term of {size}");
        }

        let mesh = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.4, 0.04, 0.04), [10, 1, 1]);
        let material = ElasticMaterial { young: 2e4, poisson: 0.3, density: 600.0 };
        let mut bar = ReducedBody::new("bar", Arc::new(ReducedModel::new(&mesh, &material, 4, 0.0, false, None).unwrap()), Vec3::zeros());
        let energy = |b: &ReducedBody| {
            let kinetic: Real = b.velocities().iter().zip(&b.model.masses).map(|(v, m)| 0.5 * m * v.norm_squared()).sum();
            kinetic + b.q.iter().zip(&b.model.eigenvalues).map(|(q, l)| 0.5 * l * q * q).sum::<Real>()
        };
        // A couple of 0.1 N on each end's particles (beyond 0.15 m from the centre), turning
        // with the bar, for 0.2 s in steps of 1 ms.
        let (h, force) = (1e-3, 0.1);
        let ends: Vec<(usize, Real)> = bar.arms().iter().enumerate().filter(|(_, r)| r.x.abs() > 0.15).map(|(i, r)| (i, r.x.signum())).collect();
        let per_particle = force * h / (ends.len() / 2) as Real;
        let (mut work, mut loss) = (0.0, 0.0);
        let start = energy(&bar);
        for _ in 0..200 {
            let mut lambda = vec![Vec3::zeros(); bar.model.particles()];
            for &(i, side) in &ends {
                lambda[i] = bar.orientation * Vec3::new(0.0, side * per_particle, 0.0);
            }
            let before = bar.velocities();
            bar.apply_particle_impulses(&lambda);
            let after = bar.velocities();
            work += lambda.iter().zip(before.iter().zip(&after)).map(|(l, (a, b))| 0.5 * l.dot(&(a + b))).sum::<Real>();
            // Implicit Euler keeps `1 / (1 + h^2 w^2)` of an undamped mode's energy a step.
            loss += bar.q.iter().zip(&bar.qdot).zip(&bar.model.eigenvalues).map(|((q, v), l)| 0.5 * (v * v + l * q * q) * h * h * l / (1.0 + h * h * l)).sum::<Real>();
            bar.step(h, &Vec3::zeros());
        }
        let gained = energy(&bar) - start;
        assert!(bar.angular_velocity().z > 1.0, "the couple spins the bar up: {}", bar.angular_velocity());
        assert!(bar.modal_energy() > 1e-3 * gained, "the bar bends as it spins up: {} of {gained} J", bar.modal_energy());
        assert!(((work - gained) - loss).abs() < 0.02 * loss && loss < 2e-3 * work, "gained {gained} J for {work} J of work, less {loss} J lost by the implicit update");
    }

    /// The impulse factor `K_lambda` (eq. 43) seen through points inside the body is
    /// symmetric and positive semi-definite, and predicts exactly the velocity change that
    /// applying the impulses makes; with no modes it is the rigid frame's response.
    #[test]
    fn impulse_factor_is_symmetric_semidefinite_and_predicts_the_change() {
        for modes in [6, 0] {
            let mut body = deformed(modes);
            body.solve_dt = 0.01;
            let mut rng = SplitMix64::keyed(&[modes as u64]);
            let points: Vec<Vec3> = (0..5)
                .map(|_| body.position + body.orientation * Vec3::new(0.3 * (rng.next_unit() - 0.5), 0.15 * (rng.next_unit() - 0.5), 0.06 * (rng.next_unit() - 0.5)))
                .collect();
            let sites: Vec<Site> = points.iter().map(|x| Site::at(*x)).collect();
            let (a, b) = (random_impulses(5, 1), random_impulses(5, 2));
            let response = |j: &[Vec3]| {
                let mut out = vec![Vec3::zeros(); 5];
                body.impulse_response(&sites, j, &mut out);
                out
            };
            let dot = |u: &[Vec3], v: &[Vec3]| u.iter().zip(v).map(|(x, y)| x.dot(y)).sum::<Real>();
            let (ka, kb) = (response(&a), response(&b));
            assert!((dot(&a, &kb) - dot(&b, &ka)).abs() < 1e-12 * dot(&a, &ka).abs(), "K_lambda is not symmetric");
            assert!(dot(&a, &ka) > 0.0 && dot(&b, &kb) > 0.0);
            let before: Vec<Vec3> = points.iter().map(|x| body.velocity_at(x)).collect();
            body.apply_impulses(&sites, &a);
            for ((x, v0), k) in points.iter().zip(&before).zip(&ka) {
                assert!((body.velocity_at(x) - v0 - k).norm() < 1e-10 * k.norm(), "predicted {k:?}, got {:?}", body.velocity_at(x) - v0);
            }
        }
    }

    /// The distance to the deformed body: zero on its particles at the surface (to a micrometre
    /// on a body 10 cm thick: the material point is found by a fixed point, and the sampled
    /// rest distance interpolates a plane exactly), negative at its centre (to within the
    /// sampling: the distance's ridge there, 5 cm deep, is cut by the lattice), and following
    /// the deformation (a displaced surface particle is still on it).
    #[test]
    fn distance_follows_the_deformation() {
        let body = deformed(6);
        assert!(body.signed_distance(&body.position) < -0.05 + body.model.surface_spacing());
        let faces = body.model.mesh.boundary_faces();
        let positions = body.positions();
        for v in faces.iter().flatten().take(20) {
            let d = body.signed_distance(&positions[*v as usize]);
            assert!(d.abs() < 1e-6, "surface particle {v} at distance {d}");
        }
    }

    /// The lookup finds a tetrahedron holding each of 2000 random points of the mesh's box
    /// that some tetrahedron holds (found by trying them all), and for every point, inside or
    /// out, weights summing to one that give the point back from the corners to 1e-12.
    #[test]
    fn lookup_finds_the_tetrahedron_holding_a_point() {
        let model = model(0);
        let (mesh, lookup) = (&model.mesh, &model.lookup);
        let (lo, hi) = crate::geometry::bounds(mesh.vertices.iter().copied()).unwrap();
        let mut rng = SplitMix64::keyed(&[7]);
        for _ in 0..2000 {
            let x = lo + (hi - lo + Vec3::repeat(0.1)).component_mul(&Vec3::new(rng.next_unit(), rng.next_unit(), rng.next_unit())) - Vec3::repeat(0.05);
            let held = (0..mesh.tets.len()).any(|t| lookup.barycentric(t, &x).iter().all(|&w| w >= 0.0));
            let (t, w) = lookup.locate(&x, None);
            assert!(!held || w.iter().all(|&w| w >= 0.0), "{x:?} is held by a tetrahedron, but located outside {t}: {w:?}");
            let back: Vec3 = mesh.tets[t].iter().zip(w).map(|(v, w)| w * mesh.vertices[*v as usize]).sum();
            assert!((back - x).norm() < 1e-12 && (w.iter().sum::<Real>() - 1.0).abs() < 1e-12, "{x:?}: weights {w:?} give {back:?}");
        }
    }

    /// Whatever the modes' rates, the particles' velocities carry exactly the body's angular
    /// momentum (the frame's share is found from the modes' couplings `c_k`, without a pass
    /// over the particles) to 1e-12; and world points' material points, kept while the body
    /// keeps its place and shape, are found afresh once it moves and deforms: the tetrahedra's
    /// centres, before and after, each to 1e-9 m (kept ones would be 2 mm off after the move).
    #[test]
    fn particles_carry_the_angular_momentum_and_material_points_follow_the_body() {
        let mut body = deformed(6);
        body.angular_momentum = Vec3::new(0.01, -0.02, 0.03);
        for seed in 0..3 {
            body.qdot = random_impulses(2, seed).iter().flat_map(|v| [v.x, v.y, v.z]).collect();
            let (arms, velocities) = (body.arms(), body.velocities());
            let carried: Vec3 = arms.iter().zip(&velocities).zip(&body.model.masses).map(|((r, v), m)| *m * r.cross(&(v - body.velocity))).sum();
            assert!((carried - body.angular_momentum).norm() < 1e-12, "the particles carry {carried:?}, the body {:?}", body.angular_momentum);
        }
        let centroid = |body: &ReducedBody, tet: [u32; 4]| body.position_of(&MaterialPoint { tet, weights: [0.25; 4] });
        let points: Vec<Vec3> = body.model.mesh.tets.iter().map(|t| centroid(&body, *t)).collect();
        for _ in 0..2 {
            let found = body.material_points(&points);
            let off = points.iter().zip(&found).map(|(x, p)| (body.position_of(p) - x).norm()).fold(0.0, Real::max);
            assert!(off < 1e-9, "a material point lies {off} m from its world point");
            body.position += Vec3::new(0.002, 0.0, 0.0);
            body.q[0] += 0.001;
        }
    }

    /// The written surface is the deformed boundary alone: every vertex is a triangle's, each
    /// at its particle's place and with its velocity, and it is closed.
    #[test]
    fn world_surface_has_no_interior_vertices() {
        let mut body = deformed(6);
        body.velocity = Vec3::new(0.1, -0.2, 0.05);
        let (surface, velocities) = body.world_surface();
        let (positions, all_velocities) = (body.positions(), body.velocities());
        assert!(surface.vertices.len() < positions.len() && surface.vertices.len() == velocities.len());
        let mut used = vec![false; surface.vertices.len()];
        surface.triangles.iter().flatten().for_each(|&v| used[v as usize] = true);
        assert!(used.iter().all(|&u| u), "a vertex no triangle uses");
        surface.check_closed().unwrap();
        for (i, &p) in body.model.surface_particles.iter().enumerate() {
            assert_eq!((surface.vertices[i], velocities[i]), (positions[p as usize], all_velocities[p as usize]));
        }
        let rest = TriMesh { vertices: positions, triangles: body.model.mesh.boundary_faces() };
        assert!((surface.signed_volume() - rest.signed_volume()).abs() < 1e-12);
    }

    /// A body cut from a shape writes the shape's smooth surface, carried by the tetrahedra:
    /// moved and turned at rest, its vertices lie on the sphere (to 1e-9 m) where the
    /// tetrahedra's boundary is off it by a fifth of the spacing or more; deformed, each vertex
    /// is its rest tetrahedron's particles' barycentric average, with their velocity, and the
    /// surface stays closed and every vertex used.
    #[test]
    fn a_shape_cut_into_tetrahedra_writes_its_smooth_surface() {
        let (radius, spacing) = (0.1, 0.025);
        let sphere = Shape::Sphere { center: Vec3::zeros(), radius };
        let mesh = TetMesh::bcc(|x| sphere.signed_distance(x), &Vec3::repeat(-radius), &Vec3::repeat(radius), spacing, crate::geometry::tetmesh::BCC_KEEP);
        let material = ElasticMaterial { young: 2e4, poisson: 0.3, density: 600.0 };
        let model = Arc::new(ReducedModel::new(&mesh, &material, 6, 0.0, false, None).unwrap().with_skin(&sphere.surface_mesh()));
        let mut body = ReducedBody::new("ball", Arc::clone(&model), Vec3::new(1.0, 2.0, 3.0));
        body.orientation = Quat::from_scaled_axis(Vec3::new(0.3, -0.5, 0.8));
        let centre = body.position - body.orientation * model.centre_offset;
        let off_sphere = |points: &[Vec3]| points.iter().map(|x| ((x - centre).norm() - radius).abs()).fold(0.0, Real::max);
        let (surface, _) = body.world_surface();
        assert!(off_sphere(&surface.vertices) < 1e-9, "the skin is {} m off the sphere", off_sphere(&surface.vertices));
        let boundary: Vec<Vec3> = model.surface_particles.iter().map(|&p| body.positions()[p as usize]).collect();
        assert!(off_sphere(&boundary) > 0.2 * spacing, "the tetrahedra's boundary is only {} m off the sphere", off_sphere(&boundary));

        body.q = (0..6).map(|k| 0.003 * (k as Real + 1.0)).collect();
        body.velocity = Vec3::new(0.1, -0.2, 0.05);
        let (surface, velocities) = body.world_surface();
        let (positions, particle_velocities) = (body.positions(), body.velocities());
        let skin = model.skin.as_ref().unwrap();
        for ((x, v), p) in surface.vertices.iter().zip(&velocities).zip(&skin.vertices) {
            let at = |values: &[Vec3]| p.tet.iter().zip(p.weights).map(|(&t, w)| w * values[t as usize]).sum::<Vec3>();
            assert!((x - at(&positions)).norm() < 1e-12 && (v - at(&particle_velocities)).norm() < 1e-12);
        }
        assert!(off_sphere(&surface.vertices) > 1e-4, "the modes deform the skin");
        surface.check_closed().unwrap();
        let mut used = vec![false; surface.vertices.len()];
        surface.triangles.iter().flatten().for_each(|&v| used[v as usize] = true);
        assert!(used.iter().all(|&u| u), "a vertex no triangle uses");
    }

    /// A soft, damped block dropped on the floor stops on it (the contact of
    /// [`crate::solids::contact`] through the block's `K_lambda`): after a second of falling
    /// and bouncing no particle is more than a millimetre below the floor and the block is
    /// nearly at rest.
    #[test]
    fn contact_stops_a_block_on_the_floor() {
        use crate::solids::contact::{self, StaticGeometry};
        let statics = StaticGeometry {
            min: Vec3::repeat(-5.0),
            max: Vec3::repeat(5.0),
            walls: [[false; 2], [true, false], [false; 2]],
            obstacles: Vec::new(),
            material: Material { restitution: 0.0, friction: 0.5 },
        };
        let mut body = ReducedBody::new("block", damped_model(6, 0.02), Vec3::new(0.0, -4.7, 0.0));
        let (dt, gravity) = (1e-3, Vec3::new(0.0, -9.81, 0.0));
        for _ in 0..1000 {
            body.predict_velocities(dt, &gravity);
            let mut bodies: [&mut dyn ContactBody; 1] = [&mut body];
            let (touching, _) = contact::touching(&bodies, &[0], &statics, dt);
            contact::contact(&mut bodies, &statics, dt, &touching);
            body.advance_positions(dt);
        }
        let lowest = body.positions().iter().map(|x| x.y).fold(Real::INFINITY, Real::min);
        assert!(lowest > -5.0 - 1e-3, "a particle is {} m below the floor", -5.0 - lowest);
        assert!(body.velocity.norm() < 0.05, "still moving at {} m/s", body.velocity.norm());
    }

    /// Copies share their model: a body's own state grows with its modes, not its mesh.
    #[test]
    fn copies_cost_their_modes_not_their_mesh() {
        let shared = model(6);
        let copies: Vec<ReducedBody> = (0..10).map(|i| ReducedBody::new("copy", shared.clone(), Vec3::new(i as Real, 0.0, 0.0))).collect();
        assert_eq!(Arc::strong_count(&shared), 11);
        let own = |b: &ReducedBody| std::mem::size_of::<ReducedBody>() + b.name.capacity() + (b.q.capacity() + b.qdot.capacity()) * std::mem::size_of::<Real>();
        assert!(copies.iter().all(|b| own(b) == std::mem::size_of::<ReducedBody>() + 4 + 12 * 8));
        assert!(shared.particles() * 3 * 8 > own(&copies[0]));
    }
}
