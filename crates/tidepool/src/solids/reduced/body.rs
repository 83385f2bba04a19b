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
use crate::geometry::TetMesh;
use crate::math::{Mat3, Quat, Real, Vec3};
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
}

impl ReducedModel {
    /// The model of `mesh` (which is first centred on its centre of mass) made of `material`,
    /// with its `count` lowest free vibration modes (none: a rigid body). `consistent` picks the
    /// consistent mass matrix for the modal analysis (else the lumped one).
    pub fn new(mesh: &TetMesh, material: &ElasticMaterial, count: usize, damping: Real, consistent: bool) -> Result<ReducedModel, String> {
        mesh.check()?;
        let masses = lumped_mass(mesh, material);
        let mass: Real = masses.iter().sum();
        let centre = mesh.vertices.iter().zip(&masses).map(|(x, m)| x * *m).sum::<Vec3>() / mass;
        let mut mesh = mesh.clone();
        mesh.vertices.iter_mut().for_each(|x| *x -= centre);
        let basis = if count == 0 {
            ModalBasis { eigenvalues: Vec::new(), modes: Vec::new(), iterations: 0 }
        } else {
            let k = stiffness(&mesh, material);
            let m = if consistent { consistent_mass(&mesh, material) } else { diagonal_mass(&masses) };
            let rigid = rigid_motions(&mesh, &Vec3::zeros()).to_vec();
            let mut basis = lowest_modes(&k, &m, &vec![false; k.n], &rigid, count, 1e-8)?;
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
        Ok(ReducedModel { mesh, masses, mass, modes: basis.modes, eigenvalues: basis.eigenvalues, damping })
    }

    /// Particles.
    pub fn particles(&self) -> usize {
        self.masses.len()
    }

    /// Rest position of particle `i` deformed by reduced coordinates `q`: `(S q + x0)_i`.
    fn local(&self, q: &[Real], i: usize) -> Vec3 {
        let mut x = self.mesh.vertices[i];
        for (phi, qk) in self.modes.iter().zip(q) {
            x += *qk * Vec3::new(phi[3 * i], phi[3 * i + 1], phi[3 * i + 2]);
        }
        x
    }

    /// `(S qdot)_i` in the body frame.
    fn local_velocity(&self, qdot: &[Real], i: usize) -> Vec3 {
        let mut v = Vec3::zeros();
        for (phi, qk) in self.modes.iter().zip(qdot) {
            v += *qk * Vec3::new(phi[3 * i], phi[3 * i + 1], phi[3 * i + 2]);
        }
        v
    }
}

/// One copy of a reduced model in the world.
#[derive(Clone, Debug)]
pub struct ReducedBody {
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
}

impl ReducedBody {
    /// A copy at rest at `position`, undeformed.
    pub fn new(model: Arc<ReducedModel>, position: Vec3) -> Self {
        let r = model.modes.len();
        ReducedBody { model, position, velocity: Vec3::zeros(), orientation: Quat::identity(), angular_momentum: Vec3::zeros(), q: vec![0.0; r], qdot: vec![0.0; r] }
    }

    /// Moment arms `r_i = R (S q + x0)_i`.
    pub fn arms(&self) -> Vec<Vec3> {
        (0..self.model.particles()).map(|i| self.orientation * self.model.local(&self.q, i)).collect()
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
        (0..self.model.particles()).map(|i| self.orientation * self.model.local_velocity(&self.qdot, i)).collect()
    }

    /// The frame's angular velocity: the total angular momentum less the modes' share,
    /// through the current inertia.
    pub fn angular_velocity(&self) -> Vec3 {
        let arms = self.arms();
        let modal: Vec3 = arms.iter().zip(self.modal_velocities()).zip(&self.model.masses).map(|((r, v), m)| *m * r.cross(&v)).sum();
        self.inertia(&arms).try_inverse().unwrap_or_else(Mat3::zeros) * (self.angular_momentum - modal)
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
        let arms = self.arms();
        let total: Vec3 = lambda.iter().sum();
        let torque: Vec3 = arms.iter().zip(lambda).map(|(r, l)| r.cross(l)).sum();
        let (dv, dw) = (total / self.model.mass, self.inertia(&arms).try_inverse().unwrap_or_else(Mat3::zeros) * torque);
        arms.iter().zip(&self.model.masses).map(|(r, m)| *m * (dv + dw.cross(r))).collect()
    }

    /// `P_d lambda = (1 - P_rigid) lambda`: the deforming share.
    pub fn project_deformable(&self, lambda: &[Vec3]) -> Vec<Vec3> {
        lambda.iter().zip(self.project_rigid(lambda)).map(|(l, r)| l - r).collect()
    }

    /// The reduced coordinates' response `S^T R^-1 lambda` to particle impulses.
    fn reduced_impulse(&self, lambda: &[Vec3]) -> Vec<Real> {
        let local: Vec<Vec3> = lambda.iter().map(|l| self.orientation.inverse() * l).collect();
        self.model.modes.iter().map(|phi| local.iter().enumerate().map(|(i, l)| phi[3 * i] * l.x + phi[3 * i + 1] * l.y + phi[3 * i + 2] * l.z).sum()).collect()
    }

    /// `M R S y` at the particles for reduced values `y`.
    fn reduced_to_impulses(&self, y: &[Real]) -> Vec<Vec3> {
        (0..self.model.particles()).map(|i| self.model.masses[i] * (self.orientation * self.model.local_velocity(y, i))).collect()
    }

    /// `P_r lambda = M R S M_r^-1 S^T R^-1 lambda` (eq. 16, `M_r = 1` for mass-normalised
    /// modes): the share of impulses the modes can represent.
    pub fn project_reduced(&self, lambda: &[Vec3]) -> Vec<Vec3> {
        self.reduced_to_impulses(&self.reduced_impulse(lambda))
    }

    /// Applies particle impulses `lambda` (N s): `P_r P_d lambda` to the modes, the rest to the
    /// rigid frame (sec. 4). The body's linear and angular momentum change by exactly the
    /// impulses' total and torque.
    pub fn apply_particle_impulses(&mut self, lambda: &[Vec3]) {
        let arms = self.arms();
        let deforming = self.project_deformable(lambda);
        let dq = self.reduced_impulse(&deforming);
        self.qdot.iter_mut().zip(&dq).for_each(|(v, d)| *v += d);
        self.velocity += lambda.iter().sum::<Vec3>() / self.model.mass;
        self.angular_momentum += arms.iter().zip(lambda).map(|(r, l)| r.cross(l)).sum::<Vec3>();
    }

    /// One step of length `dt` without contact or liquid: gravity on the frame; the
    /// centrifugal and Coriolis accelerations of the rotating frame on the modes (their
    /// `P_r P_d` share, eq. 25); the modes' implicit update `(M_r + dt C_r + dt^2 K_r) qdot =
    /// M_r qdot - dt K_r q` (eq. 31); then positions, `q += dt qdot`, the frame turned by its
    /// angular velocity.
    pub fn step(&mut self, dt: Real, gravity: &Vec3) {
        self.velocity += dt * gravity;
        if !self.model.modes.is_empty() {
            let (w, arms, modal) = (self.angular_velocity(), self.arms(), self.modal_velocities());
            let fictitious: Vec<Vec3> =
                arms.iter().zip(&modal).zip(&self.model.masses).map(|((r, u), m)| -*m * (w.cross(&w.cross(r)) + 2.0 * w.cross(u)) * dt).collect();
            let dq = self.reduced_impulse(&self.project_deformable(&fictitious));
            let beta = self.model.damping;
            for (k, lambda) in self.model.eigenvalues.iter().enumerate() {
                let rhs = self.qdot[k] + dq[k] - dt * lambda * self.q[k];
                self.qdot[k] = rhs / (1.0 + dt * beta * lambda + dt * dt * lambda);
            }
        }
        let w = self.angular_velocity();
        self.position += dt * self.velocity;
        self.q.iter_mut().zip(&self.qdot).for_each(|(q, v)| *q += dt * v);
        self.orientation = Quat::from_scaled_axis(dt * w) * self.orientation;
    }

    /// Energy in the modes: `1/2 sum(qdot^2 + omega^2 q^2)` (J).
    pub fn modal_energy(&self) -> Real {
        self.q.iter().zip(&self.qdot).zip(&self.model.eigenvalues).map(|((q, v), l)| 0.5 * (v * v + l * q * q)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    fn model(modes: usize) -> Arc<ReducedModel> {
        let mesh = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.4, 0.2, 0.1), [4, 2, 2]);
        let material = ElasticMaterial { young: 2e4, poisson: 0.3, density: 600.0 };
        Arc::new(ReducedModel::new(&mesh, &material, modes, 0.0, false).unwrap())
    }

    fn random_impulses(n: usize, seed: u64) -> Vec<Vec3> {
        let mut rng = SplitMix64::keyed(&[seed]);
        (0..n).map(|_| Vec3::new(rng.next_unit() - 0.5, rng.next_unit() - 0.5, rng.next_unit() - 0.5)).collect()
    }

    /// A body deformed and turned, so that the projections are tested away from rest.
    fn deformed(modes: usize) -> ReducedBody {
        let mut body = ReducedBody::new(model(modes), Vec3::new(1.0, 2.0, 3.0));
        body.orientation = Quat::from_scaled_axis(Vec3::new(0.3, -0.5, 0.8));
        body.q = (0..modes).map(|k| 0.01 * (k as Real + 1.0)).collect();
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

    /// Copies share their model: a body's own state grows with its modes, not its mesh.
    #[test]
    fn copies_cost_their_modes_not_their_mesh() {
        let shared = model(6);
        let copies: Vec<ReducedBody> = (0..10).map(|i| ReducedBody::new(shared.clone(), Vec3::new(i as Real, 0.0, 0.0))).collect();
        assert_eq!(Arc::strong_count(&shared), 11);
        let own = |b: &ReducedBody| std::mem::size_of::<ReducedBody>() + (b.q.capacity() + b.qdot.capacity()) * std::mem::size_of::<Real>();
        assert!(copies.iter().all(|b| own(b) == std::mem::size_of::<ReducedBody>() + 12 * 8));
        assert!(shared.particles() * 3 * 8 > own(&copies[0]));
    }
}
