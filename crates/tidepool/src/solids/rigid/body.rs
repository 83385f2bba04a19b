//! One rigid body: its shape and mass in its own frame, its pose and momenta in the world.

use crate::geometry::{Shape, TriMesh};
use crate::math::{Mat3, Quat, Real, Vec3};
use crate::solids::contact::{ContactBody, Distance};
use crate::solids::{CoupledSolid, Site};

/// How a body moves (the scene's `kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyKind {
    /// Moved by forces, collisions and contact.
    #[default]
    Dynamic,
    /// Never moves; other bodies collide with it as with infinite mass.
    Static,
    /// Moves at its prescribed velocity and angular velocity whatever pushes it; it pushes the
    /// liquid and other bodies as with infinite mass.
    Kinematic,
}

/// The point of a path of keyframes `(time, point)` at time `t`: followed piecewise linearly,
/// held before the first keyframe and after the last; `None` for no keyframes.
pub fn along_path(path: &[(Real, Vec3)], t: Real) -> Option<Vec3> {
    let i = path.partition_point(|(time, _)| *time <= t);
    match (i.checked_sub(1).map(|j| path[j]), path.get(i)) {
        (Some((t0, p0)), Some(&(t1, p1))) => Some(p0 + (p1 - p0) * ((t - t0) / (t1 - t0))),
        (Some((_, p)), None) | (None, Some(&(_, p))) => Some(p),
        (None, None) => None,
    }
}

/// Surface properties used in collisions and contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Coefficient of restitution (0: no bounce, 1: elastic).
    pub restitution: Real,
    /// Coulomb friction coefficient.
    pub friction: Real,
}

impl Material {
    /// The material of a contact between two surfaces: the larger restitution and the
    /// geometric mean of the friction coefficients.
    pub fn combine(&self, other: &Material) -> Material {
        Material { restitution: self.restitution.max(other.restitution), friction: (self.friction * other.friction).sqrt() }
    }
}

/// A placement of a body frame in the world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// World position of the body frame's origin (the centre of mass).
    pub position: Vec3,
    /// Body frame to world frame.
    pub orientation: Quat,
}

impl Pose {
    /// World position of the body-frame point `p`.
    pub fn to_world(self, p: &Vec3) -> Vec3 {
        self.position + self.orientation * p
    }

    /// Body-frame position of the world point `x`.
    pub fn to_body(self, x: &Vec3) -> Vec3 {
        self.orientation.inverse() * (x - self.position)
    }
}

/// A rigid body. Its frame has the centre of mass at the origin; `position` is the centre of
/// mass in the world and `orientation` turns body vectors into world vectors. The state is
/// linear velocity and angular momentum (world frame); the angular velocity follows from them.
#[derive(Clone, Debug)]
pub struct RigidBody {
    /// Name, for outputs and messages.
    pub name: String,
    /// Dynamic or static.
    pub kind: BodyKind,
    /// The shape in the body frame.
    pub shape: Shape,
    /// Points on the surface in the body frame, tested against other shapes for contact.
    pub samples: Vec<Vec3>,
    /// Mass (kg).
    pub mass: Real,
    /// Volume of the shape (m^3).
    pub volume: Real,
    /// Inertia tensor about the centre of mass in the body frame (kg m^2).
    pub inertia: Mat3,
    /// Centre of mass in the world (m).
    pub position: Vec3,
    /// Orientation: body frame to world frame.
    pub orientation: Quat,
    /// Velocity of the centre of mass (m/s).
    pub velocity: Vec3,
    /// Angular momentum about the centre of mass, world frame (kg m^2/s); dynamic bodies.
    pub angular_momentum: Vec3,
    /// Prescribed angular velocity (rad/s, world frame); kinematic bodies.
    pub spin: Vec3,
    /// A kinematic body's path: times (s) and centre-of-mass positions (m), followed piecewise
    /// linearly; empty for a constant velocity.
    pub path: Vec<(Real, Vec3)>,
    /// Decay rate (1/s) of the velocity and angular momentum, for scenes that want bodies to
    /// settle (not physical; 0 is undamped).
    pub damping: Real,
    /// Restitution and friction.
    pub material: Material,
    /// Distance from the centre of mass to the farthest sample (m).
    pub bounding_radius: Real,
}

impl RigidBody {
    /// A body filling `shape` (placed in the world) with uniform `density`, at rest; contact
    /// samples are about `sample_spacing` apart.
    pub fn new(name: &str, kind: BodyKind, shape: &Shape, density: Real, material: Material, sample_spacing: Real) -> Self {
        let properties = shape.mass_properties();
        let local = shape.translated(&-properties.centroid);
        let samples = local.surface_samples(sample_spacing);
        let bounding_radius = samples.iter().map(|s| s.norm()).fold(0.0, Real::max);
        RigidBody {
            name: name.to_string(),
            kind,
            shape: local,
            samples,
            mass: density * properties.volume,
            volume: properties.volume,
            inertia: density * properties.inertia,
            position: properties.centroid,
            orientation: Quat::identity(),
            velocity: Vec3::zeros(),
            angular_momentum: Vec3::zeros(),
            spin: Vec3::zeros(),
            path: Vec::new(),
            damping: 0.0,
            material,
            bounding_radius,
        }
    }

    /// Whether forces and impulses move this body.
    pub fn is_dynamic(&self) -> bool {
        self.kind == BodyKind::Dynamic
    }

    /// Inverse inertia tensor in the world frame, `R I^-1 R^T` (zero for a static body).
    pub fn inverse_inertia(&self) -> Mat3 {
        if !self.is_dynamic() {
            return Mat3::zeros();
        }
        let r = self.orientation.to_rotation_matrix();
        let inverse = self.inertia.try_inverse().unwrap_or_else(Mat3::zeros);
        r.matrix() * inverse * r.matrix().transpose()
    }

    /// Angular velocity (rad/s, world frame): `I^-1 L` for a dynamic body, the prescribed one
    /// for a kinematic body, zero for a static one.
    pub fn angular_velocity(&self) -> Vec3 {
        match self.kind {
            BodyKind::Dynamic => self.inverse_inertia() * self.angular_momentum,
            BodyKind::Kinematic => self.spin,
            BodyKind::Static => Vec3::zeros(),
        }
    }

    /// Velocity of the body's material at world point `x`.
    pub fn point_velocity(&self, x: &Vec3) -> Vec3 {
        self.velocity + self.angular_velocity().cross(&(x - self.position))
    }

    /// Signed distance from world point `x` to the body's surface (negative inside) with the
    /// body at `pose`.
    pub fn signed_distance_at(&self, pose: &Pose, x: &Vec3) -> Real {
        self.shape.signed_distance(&pose.to_body(x))
    }

    /// Impulse response at world point `x`: the velocity change there per unit impulse applied
    /// there, `K = m^-1 1 - r* I^-1 r*` with `r* ` the cross-product matrix of `x - position`.
    pub fn impulse_factor(&self, x: &Vec3) -> Mat3 {
        if !self.is_dynamic() {
            return Mat3::zeros();
        }
        let r = (x - self.position).cross_matrix();
        Mat3::identity() / self.mass - r * self.inverse_inertia() * r
    }

    /// Applies impulse `j` (N s) at world point `x`.
    pub fn apply_impulse(&mut self, j: &Vec3, x: &Vec3) {
        if !self.is_dynamic() {
            return;
        }
        self.velocity += j / self.mass;
        self.angular_momentum += (x - self.position).cross(j);
    }

    /// For a kinematic body on a path: sets the velocity that brings the centre of mass onto
    /// the path at time `t + dt` (so it follows the path exactly, whatever happened before).
    pub fn follow_path(&mut self, t: Real, dt: Real) {
        if self.kind != BodyKind::Kinematic || self.path.is_empty() {
            return;
        }
        self.velocity = (along_path(&self.path, t + dt).unwrap_or(self.position) - self.position) / dt;
    }

    /// Where the body is.
    pub fn pose(&self) -> Pose {
        Pose { position: self.position, orientation: self.orientation }
    }

    /// Where the body will be after `dt` with its current velocity plus `extra_velocity` (a
    /// kinematic body: with its prescribed velocities, exactly): the centre of mass moves by
    /// `dt v`, the orientation by the second-order update of [`turned`].
    pub fn pose_after(&self, dt: Real, extra_velocity: &Vec3) -> Pose {
        match self.kind {
            BodyKind::Static => return self.pose(),
            BodyKind::Kinematic => {
                return Pose { position: self.position + dt * self.velocity, orientation: Quat::from_scaled_axis(dt * self.spin) * self.orientation };
            }
            BodyKind::Dynamic => {}
        }
        Pose {
            position: self.position + dt * (self.velocity + extra_velocity),
            orientation: turned(&self.orientation, dt, &self.angular_velocity(), &self.inverse_inertia(), &self.angular_momentum),
        }
    }

    /// Moves the body over `dt` with its current velocities (see [`RigidBody::pose_after`]).
    pub fn advance_pose(&mut self, dt: Real) {
        let next = self.pose_after(dt, &Vec3::zeros());
        self.position = next.position;
        self.orientation = next.orientation;
    }

    /// The body's surface, triangulated, where the body is now.
    pub fn world_surface(&self) -> TriMesh {
        let pose = self.pose();
        let mut mesh = self.shape.surface_mesh();
        mesh.vertices.iter_mut().for_each(|v| *v = pose.to_world(v));
        mesh
    }

    /// Kinetic energy (J) of a dynamic body (zero for others).
    pub fn kinetic_energy(&self) -> Real {
        if !self.is_dynamic() {
            return 0.0;
        }
        0.5 * self.mass * self.velocity.norm_squared() + 0.5 * self.angular_momentum.dot(&self.angular_velocity())
    }
}

/// `orientation` turned over `dt` by the second-order update
/// `q <- q^(dt w + dt^2/2 I^-1 (L x w)) q` for angular velocity `w`, inverse inertia `I^-1`
/// and angular momentum `L = I w` (Shinar thesis 3.4.1): the extra term is the change of `w`
/// over the step at fixed `L`.
pub fn turned(orientation: &Quat, dt: Real, w: &Vec3, inverse_inertia: &Mat3, momentum: &Vec3) -> Quat {
    Quat::from_scaled_axis(dt * w + 0.5 * dt * dt * inverse_inertia * momentum.cross(w)) * orientation
}

impl ContactBody for RigidBody {
    fn is_dynamic(&self) -> bool {
        RigidBody::is_dynamic(self)
    }

    fn material(&self) -> Material {
        self.material
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        (self.position, self.bounding_radius)
    }

    fn speed_bound(&self) -> Real {
        self.velocity.norm() + self.angular_velocity().norm() * self.bounding_radius
    }

    fn samples(&self, dt: Real, kick: &Vec3) -> Vec<(Vec3, Vec3)> {
        let (now, at) = (self.pose(), self.pose_after(dt, kick));
        self.samples.iter().map(|s| (now.to_world(s), at.to_world(s))).collect()
    }

    fn distance_after(&self, dt: Real, kick: &Vec3, _within: Real) -> Distance<'_> {
        let pose = self.pose_after(dt, kick);
        Box::new(move |x| self.signed_distance_at(&pose, x))
    }

    fn point_velocity(&self, x: &Vec3) -> Vec3 {
        RigidBody::point_velocity(self, x)
    }

    fn impulse_factor(&self, x: &Vec3) -> Mat3 {
        RigidBody::impulse_factor(self, x)
    }

    fn apply_impulse(&mut self, j: &Vec3, x: &Vec3) {
        RigidBody::apply_impulse(self, j, x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brick() -> RigidBody {
        let shape = Shape::Box { min: Vec3::new(0.0, 0.0, 0.0), max: Vec3::new(0.4, 0.2, 0.1) };
        RigidBody::new("brick", BodyKind::Dynamic, &shape, 500.0, Material { restitution: 0.0, friction: 0.5 }, 0.05)
    }

    #[test]
    fn impulse_factor_is_symmetric_positive_definite_and_matches_apply_impulse() {
        let mut body = brick();
        body.orientation = Quat::from_scaled_axis(Vec3::new(0.3, -0.2, 0.7));
        body.angular_momentum = Vec3::new(0.01, 0.02, -0.03);
        let x = body.pose().to_world(&Vec3::new(0.2, -0.1, 0.05));
        let k = body.impulse_factor(&x);
        assert!((k - k.transpose()).norm() < 1e-12 * k.norm());
        assert!(k.cholesky().is_some());
        let j = Vec3::new(0.3, -0.1, 0.2);
        let before = body.point_velocity(&x);
        body.apply_impulse(&j, &x);
        assert!((body.point_velocity(&x) - before - k * j).norm() < 1e-12);
    }

    /// A torque-free tumbling brick: its kinetic energy is constant in theory. The orientation
    /// update's energy error falls by about 4 when the step halves (second order), and the
    /// first-order update (without the `L x w` term) would only halve it.
    #[test]
    fn orientation_update_is_second_order() {
        let energy_error = |steps: usize| {
            let mut body = brick();
            // Spin mostly about the intermediate axis: the tumbling case.
            body.angular_momentum = body.orientation * (body.inertia * Vec3::new(0.1, 3.0, 0.2));
            let e0 = body.kinetic_energy();
            let dt = 1.0 / steps as Real;
            for _ in 0..steps {
                body.advance_pose(dt);
            }
            (body.kinetic_energy() - e0).abs() / e0
        };
        let (coarse, fine) = (energy_error(200), energy_error(400));
        assert!(coarse < 1e-2, "energy error {coarse}");
        let order = (coarse / fine).log2();
        assert!(order > 1.7, "energy error {coarse} then {fine}: order {order}");
    }
}

impl CoupledSolid for RigidBody {
    fn signed_distance(&self, x: &Vec3) -> Real {
        self.signed_distance_at(&self.pose(), x)
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        (self.position, self.bounding_radius)
    }

    fn volume(&self) -> Real {
        self.volume
    }

    fn velocity_at(&self, x: &Vec3) -> Vec3 {
        self.point_velocity(x)
    }

    fn impulse_response(&self, sites: &[Site], impulses: &[Vec3], changes: &mut [Vec3]) {
        if !self.is_dynamic() {
            changes.fill(Vec3::zeros());
            return;
        }
        let total: Vec3 = impulses.iter().sum();
        let torque: Vec3 = sites.iter().zip(impulses).map(|(s, j)| (s.point - self.position).cross(j)).sum();
        let (dv, dw) = (total / self.mass, self.inverse_inertia() * torque);
        for (change, s) in changes.iter_mut().zip(sites) {
            *change = dv + dw.cross(&(s.point - self.position));
        }
    }

    fn degrees_of_freedom(&self) -> usize {
        if self.is_dynamic() {
            6
        } else {
            0
        }
    }

    fn apply_impulses(&mut self, sites: &[Site], impulses: &[Vec3]) {
        for (s, j) in sites.iter().zip(impulses) {
            self.apply_impulse(j, &s.point);
        }
    }
}

/// A rigid body's dynamic state in a checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct RigidState {
    position: Vec3,
    orientation: Quat,
    velocity: Vec3,
    angular_momentum: Vec3,
}

impl crate::solids::Solid for RigidBody {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_dynamic(&self) -> bool {
        RigidBody::is_dynamic(self)
    }

    fn prescribe(&mut self, time: Real, dt: Real) {
        self.follow_path(time, dt);
    }

    fn predict_velocities(&mut self, h: Real, gravity: &Vec3, _time: Real) {
        if self.is_dynamic() {
            // The decay acts on the motion only, before gravity: a body at rest in balance
            // feels its whole weight.
            if self.damping > 0.0 {
                let decay = (-self.damping * h).exp();
                self.velocity *= decay;
                self.angular_momentum *= decay;
            }
            self.velocity += h * gravity;
        }
    }

    fn advance_positions(&mut self, dt: Real) {
        self.advance_pose(dt);
    }

    fn velocity_state(&self) -> Vec<Real> {
        self.velocity.iter().chain(self.angular_momentum.iter()).copied().collect()
    }

    fn set_velocity_state(&mut self, state: &[Real]) {
        if self.is_dynamic() {
            self.velocity = Vec3::from_column_slice(&state[..3]);
            self.angular_momentum = Vec3::from_column_slice(&state[3..6]);
        }
    }

    fn max_point_speed(&self) -> Real {
        self.velocity.norm() + self.angular_velocity().norm() * self.bounding_radius
    }

    fn check(&self, max_speed: Real) -> Result<(), String> {
        let state = self.velocity.iter().chain(self.angular_momentum.iter()).chain(self.position.iter()).chain(self.orientation.coords.iter());
        if !state.into_iter().all(|v| v.is_finite()) {
            return Err(format!("body `{}` has a non-finite position, orientation or velocity", self.name));
        }
        let speed = self.max_point_speed();
        if speed > max_speed {
            return Err(format!("body `{}` reached {speed:.3} m/s, above simulation.max_speed = {max_speed} m/s", self.name));
        }
        Ok(())
    }

    fn surface(&self) -> (TriMesh, Vec<Vec3>) {
        let surface = self.world_surface();
        let velocities = surface.vertices.iter().map(|x| self.point_velocity(x)).collect();
        (surface, velocities)
    }

    fn parts(&self) -> Vec<(crate::solids::PartState, &dyn CoupledSolid)> {
        let state = crate::solids::PartState {
            name: self.name.clone(),
            position: self.position,
            orientation: self.orientation,
            velocity: self.velocity,
            angular_velocity: self.angular_velocity(),
            momentum: if self.is_dynamic() { self.mass * self.velocity } else { Vec3::zeros() },
            modal_energy: None,
            elastic_energy: None,
            bones: Vec::new(),
        };
        vec![(state, self as &dyn CoupledSolid)]
    }

    fn contact_parts(&mut self) -> Vec<&mut dyn ContactBody> {
        vec![self as &mut dyn ContactBody]
    }

    fn save_state(&self) -> Vec<u8> {
        crate::solids::encode_state(&RigidState { position: self.position, orientation: self.orientation, velocity: self.velocity, angular_momentum: self.angular_momentum })
    }

    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        let s: RigidState = crate::solids::decode_state(bytes)?;
        (self.position, self.orientation, self.velocity, self.angular_momentum) = (s.position, s.orientation, s.velocity, s.angular_momentum);
        Ok(())
    }
}
