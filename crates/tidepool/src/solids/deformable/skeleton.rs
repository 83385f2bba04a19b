//! Rigid bones inside a deformable body (Shinar ch. 3): the particles inside each bone are
//! hard-bound to it (sec. 2.2: a bound particle moves exactly with its parent), and the bones
//! form an articulated skeleton whose hinges a proportional-derivative controller drives —
//! the snake's, the fish's, the maggot's (Fig. 3.7, 3.10, 3.11).
//!
//! **Reduced coordinates.** A bone is free (six degrees of freedom: its centre's velocity
//! `v` and its angular velocity `omega`), hinged — to an earlier bone or to the world — about
//! one axis (one degree of freedom: the joint's rate `theta'`), or held at a ball joint (three:
//! its angular velocity relative to its parent, `w`). The skeleton's generalized velocity `u`
//! stacks them; a bone's twist at its centre is linear in it, `(v_b, omega_b) = J_b u`, built
//! parent first: `omega_c = omega_p + w`, `v_c = v_p + omega_p x (c_c - c_p) + w x (c_c - p)`,
//! with `w = theta' a` for a hinge (`a` the hinge's axis and `p` the joint's pivot, both carried
//! by the parent). A bound particle's
//! velocity is `v_b + omega_b x (x_i - c_b)`; the map from `u` and the free particles'
//! velocities to all the particles' velocities is Shinar's `W` (sec. 2.5, 3.3), and the
//! velocity solve runs over `W^T (M - h D) W`: a bone is the rigid body of the flesh it binds
//! (its mass and inertia are its particles'), and joints hold exactly, with no constraint to
//! project. Joint loops are not expressible (a skeleton is a forest).
//!
//! **PD control** (after Weinstein et al. 2008, Shinar sec. 3.5): a driven hinge's torque
//! `k_p (theta_t(t) - theta) + k_d (theta_t'(t) - theta')` toward a target angle
//! `theta_t = offset + amplitude sin(2 pi f t + phase)` acts on the joint's coordinate, implicit
//! like a soft pin's spring. It is internal: equal and opposite on the bones it joins.
//!
//! **Positions** follow the bones: a free bone's centre moves with `v`, its orientation turns
//! by `exp(dt omega)`; a hinge's angle advances by `dt theta'`, a ball joint's turn relative
//! to its parent by `exp(dt w)`; each bone's pose is then
//! carried from its parent's (forward kinematics), and its particles put where the pose puts
//! them — on their bone to rounding.

use crate::math::{Mat3, Quat, Real, Vec3};
use nalgebra::{DMatrix, DVector};

/// How a bone is held.
#[derive(Clone, Debug, PartialEq)]
pub enum Joint {
    /// Free: six degrees of freedom.
    Free,
    /// Turning about `axis` through `pivot` (both where the body starts) on bone `parent`, or
    /// on the world.
    Hinge { parent: Option<usize>, pivot: Vec3, axis: Vec3, drive: Option<Drive> },
    /// Turning every way about `pivot` (where the body starts) on bone `parent`, or on the
    /// world: three degrees of freedom.
    Ball { parent: Option<usize>, pivot: Vec3 },
}

impl Joint {
    /// The bone or world it is joined to, and its pivot (`None` for a free bone).
    fn pivot(&self) -> Option<(Option<usize>, Vec3)> {
        match self {
            Joint::Free => None,
            Joint::Hinge { parent, pivot, .. } | Joint::Ball { parent, pivot } => Some((*parent, *pivot)),
        }
    }

    /// Its degrees of freedom.
    fn dofs(&self) -> usize {
        match self {
            Joint::Free => 6,
            Joint::Hinge { .. } => 1,
            Joint::Ball { .. } => 3,
        }
    }
}

/// A PD controller on a hinge: the target angle `offset + amplitude sin(2 pi frequency t +
/// phase)` (rad), the stiffness (N m/rad) and damping (N m s/rad) pulling toward it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drive {
    pub stiffness: Real,
    pub damping: Real,
    pub amplitude: Real,
    pub frequency: Real,
    pub phase: Real,
    pub offset: Real,
}

impl Drive {
    /// The target angle and its rate at time `t`.
    pub fn target(&self, t: Real) -> (Real, Real) {
        let w = 2.0 * std::f64::consts::PI * self.frequency;
        (self.offset + self.amplitude * (w * t + self.phase).sin(), self.amplitude * w * (w * t + self.phase).cos())
    }
}

/// One rigid bone: its particles, their offsets from its centre where the body starts, how it
/// is held and where it is.
#[derive(Clone, Debug)]
pub struct Bone {
    pub name: String,
    pub particles: Vec<u32>,
    /// Their masses, and offsets from the bone's centre where the body starts.
    masses: Vec<Real>,
    offsets: Vec<Vec3>,
    /// The centre of mass of its particles where the body starts.
    start: Vec3,
    pub joint: Joint,
    /// Its first degree of freedom in `u`.
    dof: usize,
    /// Its centre of mass now, its orientation from where it started, and a hinge's angle.
    pub centre: Vec3,
    pub orientation: Quat,
    pub angle: Real,
    /// A joint's turn relative to its parent, in the parent's frame where the body started.
    turn: Quat,
    /// A hinge's angle before the last move.
    angle_before: Real,
}

impl Bone {
    /// The velocity of a point `x` moving with the bone at `twist` (its centre's velocity and
    /// its angular velocity).
    fn velocity(&self, twist: &(Vec3, Vec3), x: &Vec3) -> Vec3 {
        twist.0 + twist.1.cross(&(x - self.centre))
    }
}

/// The skeleton's parts that depend on the pose: each bone's `J_b` (6 x dofs, its centre's
/// velocity over its angular velocity) and the factored `M_s = sum_i m_i J_i^T J_i`, the
/// generalized mass of the bound particles.
#[derive(Clone, Debug)]
struct Posed {
    jacobians: Vec<DMatrix<Real>>,
    mass: DMatrix<Real>,
    factor: nalgebra::Cholesky<Real, nalgebra::Dyn>,
}

/// The bones of one body.
#[derive(Clone, Debug)]
pub struct Skeleton {
    pub bones: Vec<Bone>,
    /// The generalized velocity `u`.
    pub rates: Vec<Real>,
    /// Each particle's bone, if it has one.
    owner: Vec<Option<u32>>,
    posed: Posed,
}

/// A bone as a scene defines it: its particles, and how it is held.
pub struct BoneSetup {
    pub name: String,
    pub particles: Vec<u32>,
    pub joint: Joint,
}

impl Skeleton {
    /// The bones `setups` of a body whose particles are at `positions` with masses `masses`,
    /// at rest, each hinge at angle 0. A hinge's parent must come before it; each bone must
    /// have particles, none shared, that can hold it (not all on a line, nor all on its
    /// hinge's axis).
    pub fn new(setups: Vec<BoneSetup>, positions: &[Vec3], masses: &[Real]) -> Result<Self, String> {
        let mut owner = vec![None; positions.len()];
        let mut bones: Vec<Bone> = Vec::with_capacity(setups.len());
        let mut dofs = 0;
        for (b, setup) in setups.into_iter().enumerate() {
            if setup.particles.is_empty() {
                return Err(format!("bone `{}` holds no particle of the body", setup.name));
            }
            if let Some((Some(p), _)) = setup.joint.pivot() {
                if p >= b {
                    return Err(format!("bone `{}` is joined to a bone defined after it: define the parent first", setup.name));
                }
            }
            for &i in &setup.particles {
                if let Some(other) = owner[i as usize].replace(b as u32) {
                    return Err(format!("bones `{}` and `{}` share particles: a particle belongs to one bone", bones[other as usize].name, setup.name));
                }
            }
            let mass: Real = setup.particles.iter().map(|&i| masses[i as usize]).sum();
            let start = setup.particles.iter().map(|&i| masses[i as usize] * positions[i as usize]).sum::<Vec3>() / mass;
            let dof = dofs;
            dofs += setup.joint.dofs();
            bones.push(Bone {
                masses: setup.particles.iter().map(|&i| masses[i as usize]).collect(),
                offsets: setup.particles.iter().map(|&i| positions[i as usize] - start).collect(),
                name: setup.name,
                particles: setup.particles,
                start,
                joint: setup.joint,
                dof,
                centre: start,
                orientation: Quat::identity(),
                angle: 0.0,
                turn: Quat::identity(),
                angle_before: 0.0,
            });
        }
        let posed = Skeleton::posed(&bones, dofs).and_then(|posed| {
            // Checked once: the bones move rigidly, so particles that hold a bone keep holding it.
            let eigen = nalgebra::SymmetricEigen::new(posed.mass.clone());
            let (lowest, highest) = (eigen.eigenvalues.argmin(), eigen.eigenvalues.max());
            if lowest.1 > 1e-10 * highest {
                Ok(posed)
            } else {
                Err(eigen.eigenvectors.column(lowest.0).iamax())
            }
        });
        let posed = posed.map_err(|dof| {
            let bone = bones.iter().rev().find(|b| b.dof <= dof).expect("every degree of freedom is a bone's");
            format!("bone `{}` cannot be held by its particles: they lie on a line, or on its hinge's axis (give the bone more of the body)", bone.name)
        })?;
        Ok(Skeleton { bones, rates: vec![0.0; dofs], owner, posed })
    }

    /// The number of degrees of freedom.
    pub fn dofs(&self) -> usize {
        self.rates.len()
    }

    /// The bone a particle is bound to.
    pub fn owner(&self, i: usize) -> Option<usize> {
        self.owner[i].map(|b| b as usize)
    }

    /// The parent bone's pose (the world's for a hinge on it): its centre now and where it
    /// started, and its orientation.
    fn parent_pose(bones: &[Bone], parent: Option<usize>) -> (Vec3, Vec3, Quat) {
        parent.map_or((Vec3::zeros(), Vec3::zeros(), Quat::identity()), |p| (bones[p].centre, bones[p].start, bones[p].orientation))
    }

    /// A joint on `parent` where the parent is now: the parent's centre and orientation, and
    /// the joint's pivot (given where the body started).
    fn joint_frame(bones: &[Bone], parent: Option<usize>, pivot: &Vec3) -> (Vec3, Quat, Vec3) {
        let (pc, ps, pq) = Skeleton::parent_pose(bones, parent);
        (pc, pq, pc + pq * (pivot - ps))
    }

    /// Each bone's twist `(v_b, omega_b)` for generalized velocity `u`.
    pub fn twists(&self, u: &[Real]) -> Vec<(Vec3, Vec3)> {
        Skeleton::twists_of(&self.bones, u)
    }

    fn twists_of(bones: &[Bone], u: &[Real]) -> Vec<(Vec3, Vec3)> {
        let mut twists: Vec<(Vec3, Vec3)> = Vec::with_capacity(bones.len());
        for bone in bones {
            let d = bone.dof;
            let twist = match bone.joint.pivot() {
                None => (Vec3::new(u[d], u[d + 1], u[d + 2]), Vec3::new(u[d + 3], u[d + 4], u[d + 5])),
                Some((parent, pivot)) => {
                    let (pc, pq, pivot) = Skeleton::joint_frame(bones, parent, &pivot);
                    let w = match &bone.joint {
                        Joint::Hinge { axis, .. } => u[d] * (pq * axis),
                        _ => Vec3::new(u[d], u[d + 1], u[d + 2]),
                    };
                    let (vp, wp) = parent.map_or((Vec3::zeros(), Vec3::zeros()), |p| twists[p]);
                    (vp + wp.cross(&(bone.centre - pc)) + w.cross(&(bone.centre - pivot)), wp + w)
                }
            };
            twists.push(twist);
        }
        twists
    }

    /// The generalized force of wrenches `(f_b, tau_b)` at the bones' centres: `sum_b J_b^T
    /// (f_b, tau_b)`, children passing theirs to their parents.
    pub fn generalized(&self, mut wrenches: Vec<(Vec3, Vec3)>) -> Vec<Real> {
        let mut g = vec![0.0; self.dofs()];
        for (b, bone) in self.bones.iter().enumerate().rev() {
            let (f, tau) = wrenches[b];
            let d = bone.dof;
            let Some((parent, pivot)) = bone.joint.pivot() else {
                g[d..d + 6].copy_from_slice(&[f.x, f.y, f.z, tau.x, tau.y, tau.z]);
                continue;
            };
            let (pc, pq, pivot) = Skeleton::joint_frame(&self.bones, parent, &pivot);
            let about_pivot = tau + (bone.centre - pivot).cross(&f);
            match &bone.joint {
                Joint::Hinge { axis, .. } => g[d] = (pq * axis).dot(&about_pivot),
                _ => g[d..d + 3].copy_from_slice(about_pivot.as_slice()),
            }
            if let Some(p) = parent {
                wrenches[p].0 += f;
                wrenches[p].1 += tau + (bone.centre - pc).cross(&f);
            }
        }
        g
    }

    /// The bones' wrenches at their centres of forces `(i, f_i)` on particles at `x` (free
    /// particles' ignored).
    pub fn wrenches(&self, x: &[Vec3], forces: impl Iterator<Item = (usize, Vec3)>) -> Vec<(Vec3, Vec3)> {
        let mut wrenches = vec![(Vec3::zeros(), Vec3::zeros()); self.bones.len()];
        for (i, f) in forces {
            if let Some(b) = self.owner(i) {
                wrenches[b].0 += f;
                wrenches[b].1 += (x[i] - self.bones[b].centre).cross(&f);
            }
        }
        wrenches
    }

    /// Bound particle `i`'s velocity at `x` for the bones' twists `twists`.
    pub fn particle_velocity(&self, twists: &[(Vec3, Vec3)], i: usize, x: &Vec3) -> Option<Vec3> {
        self.owner(i).map(|b| self.bones[b].velocity(&twists[b], x))
    }

    /// Sets the bound particles' velocities `v` (at `x`) to the bones' with the rates.
    pub fn carry_velocities(&self, x: &[Vec3], v: &mut [Vec3]) {
        let twists = self.twists(&self.rates);
        for (bone, twist) in self.bones.iter().zip(&twists) {
            for &i in &bone.particles {
                v[i as usize] = bone.velocity(twist, &x[i as usize]);
            }
        }
    }

    /// Projects the bound particles' velocities `v` (at `x`, masses `masses`) on the bones'
    /// motions, keeping their generalized momentum: `u = M_s^-1 W^T M v`.
    pub fn project(&mut self, x: &[Vec3], masses: &[Real], v: &mut [Vec3]) {
        let g = self.generalized(self.wrenches(x, (0..x.len()).map(|i| (i, masses[i] * v[i]))));
        self.rates = self.solve_mass(&g);
        self.carry_velocities(x, v);
    }

    /// The rates and the bones' twists that impulses `(i, j_i)` on particles at `x` give (free
    /// particles' ignored): `M_s^-1 W^T j` and its `J_b`.
    pub fn response_to(&self, x: &[Vec3], impulses: impl Iterator<Item = (usize, Vec3)>) -> (Vec<Real>, Vec<(Vec3, Vec3)>) {
        let du = self.solve_mass(&self.generalized(self.wrenches(x, impulses)));
        let twists = self.twists(&du);
        (du, twists)
    }

    /// Applies impulses `(i, j_i)` on particles at `x` to the bones, and the bound particles'
    /// velocities `v` follow.
    pub fn kick(&mut self, x: &[Vec3], v: &mut [Vec3], impulses: impl Iterator<Item = (usize, Vec3)>) {
        let (du, twists) = self.response_to(x, impulses);
        for (rate, d) in self.rates.iter_mut().zip(du) {
            *rate += d;
        }
        self.carry(x, &twists, v);
    }

    /// Adds to the bound particles' velocities `v` (at `x`) their bones' motions `twists`.
    pub fn carry(&self, x: &[Vec3], twists: &[(Vec3, Vec3)], v: &mut [Vec3]) {
        for (bone, twist) in self.bones.iter().zip(twists) {
            for &i in &bone.particles {
                v[i as usize] += bone.velocity(twist, &x[i as usize]);
            }
        }
    }

    /// The pose-dependent parts of `bones` with `n` degrees of freedom; `Err(dof)` names a
    /// degree of freedom no particle's motion holds.
    fn posed(bones: &[Bone], n: usize) -> Result<Posed, usize> {
        let mut columns: Vec<Vec<(Vec3, Vec3)>> = Vec::with_capacity(n);
        let mut unit = vec![0.0; n];
        for d in 0..n {
            unit[d] = 1.0;
            columns.push(Skeleton::twists_of(bones, &unit));
            unit[d] = 0.0;
        }
        let jacobians: Vec<DMatrix<Real>> = (0..bones.len()).map(|b| DMatrix::from_fn(6, n, |r, d| if r < 3 { columns[d][b].0[r] } else { columns[d][b].1[r - 3] })).collect();
        let mut mass = DMatrix::zeros(n, n);
        for (bone, j) in bones.iter().zip(&jacobians) {
            // About its centre of mass, a bone's spatial inertia is `diag(m 1, I_c)`.
            let (m, inertia) = Skeleton::inertia(bone);
            let m6 = DMatrix::from_fn(6, 6, |r, c| match (r < 3, c < 3) {
                (true, true) => m * Real::from(r == c),
                (false, false) => inertia[(r - 3, c - 3)],
                _ => 0.0,
            });
            mass += j.transpose() * m6 * j;
        }
        let factor = nalgebra::Cholesky::new(mass.clone()).ok_or(0usize)?;
        Ok(Posed { jacobians, mass, factor })
    }

    /// Each bone's mass and inertia tensor about its centre, where it is now.
    fn inertia(bone: &Bone) -> (Real, Mat3) {
        let mut inertia = Mat3::zeros();
        for (m, offset) in bone.masses.iter().zip(&bone.offsets) {
            let r = bone.orientation * offset;
            inertia += *m * (r.norm_squared() * Mat3::identity() - r * r.transpose());
        }
        (bone.masses.iter().sum(), inertia)
    }

    /// Each bone's linear momentum and angular momentum about the world's origin with the
    /// rates (six numbers a bone): quantities that do not depend on the pose, as a particle's
    /// momentum does not, so that the bones keep them over a move.
    pub fn momentum(&self) -> Vec<Real> {
        let twists = self.twists(&self.rates);
        let mut momentum = Vec::with_capacity(6 * self.bones.len());
        for (bone, (v, omega)) in self.bones.iter().zip(twists) {
            let (mass, inertia) = Skeleton::inertia(bone);
            let linear = mass * v;
            momentum.extend(linear.iter().chain((inertia * omega + bone.centre.cross(&linear)).iter()));
        }
        momentum
    }

    /// Sets the rates to those that best carry the bones' momenta `momentum` (as
    /// [`Skeleton::momentum`] gives them) where the bones are now: `u = M_s^-1 J^T p`, the
    /// momenta as wrenches at the bones' centres. The inverse of `momentum` at one pose.
    pub fn set_momentum(&mut self, momentum: &[Real]) {
        let wrenches = self
            .bones
            .iter()
            .zip(momentum.chunks(6))
            .map(|(bone, p)| {
                let linear = Vec3::new(p[0], p[1], p[2]);
                (linear, Vec3::new(p[3], p[4], p[5]) - bone.centre.cross(&linear))
            })
            .collect();
        self.rates = self.solve_mass(&self.generalized(wrenches));
    }

    /// The generalized mass `M_s` of the bound particles where the bones are.
    pub fn mass(&self) -> &DMatrix<Real> {
        &self.posed.mass
    }

    /// `M_s^-1 g`.
    pub fn solve_mass(&self, g: &[Real]) -> Vec<Real> {
        self.posed.factor.solve(&DVector::from_column_slice(g)).as_slice().to_vec()
    }

    /// `M_s + diagonal`, factored (the skeleton's block of the velocity solve's
    /// preconditioner).
    pub fn mass_plus(&self, diagonal: &[Real]) -> nalgebra::Cholesky<Real, nalgebra::Dyn> {
        let mut m = self.posed.mass.clone();
        for (d, extra) in diagonal.iter().enumerate() {
            m[(d, d)] += extra;
        }
        nalgebra::Cholesky::new(m).expect("a positive definite matrix plus a non-negative diagonal")
    }

    /// `B = sum_i w_i J_i` for particles `i` with weights `w_i` at `x` (3 x dofs; free
    /// particles' ignored), and the response `B M_s^-1 B^T` of a point they carry.
    pub fn point_response(&self, x: &[Vec3], carriers: impl Iterator<Item = (usize, Real)>) -> crate::math::Mat3 {
        let mut b = DMatrix::zeros(3, self.dofs());
        for (i, w) in carriers {
            let Some(bone) = self.owner(i) else { continue };
            let j = &self.posed.jacobians[bone];
            let r = (x[i] - self.bones[bone].centre).cross_matrix();
            b += w * (j.rows(0, 3) - r * j.rows(3, 3));
        }
        let r = &b * self.posed.factor.solve(&b.transpose());
        crate::math::Mat3::from_fn(|i, j| r[(i, j)])
    }

    /// The PD drives' terms in a velocity solve over `h` at time `t`: each driven hinge's
    /// diagonal `h k_d` (plus `h^2 k_p` with `stretching`: the spring evaluated where the solved
    /// rate takes the angle) and generalized impulse `h (k_p (theta_t - theta) + k_d theta_t')`,
    /// `theta` the angle now (`stretching`) or at the middle of the last move.
    pub fn drive_terms(&self, t: Real, h: Real, stretching: bool) -> (Vec<Real>, Vec<Real>) {
        let (mut diagonal, mut impulse) = (vec![0.0; self.dofs()], vec![0.0; self.dofs()]);
        for bone in &self.bones {
            let Joint::Hinge { drive: Some(drive), .. } = &bone.joint else { continue };
            let (target, rate) = drive.target(t);
            let angle = if stretching { bone.angle } else { 0.5 * (bone.angle + bone.angle_before) };
            diagonal[bone.dof] = h * drive.damping + if stretching { h * h * drive.stiffness } else { 0.0 };
            impulse[bone.dof] = h * (drive.stiffness * (target - angle) + drive.damping * rate);
        }
        (diagonal, impulse)
    }

    /// Moves the bones over `dt` with their rates and puts their particles in `x` where they
    /// carry them.
    pub fn advance(&mut self, dt: Real, x: &mut [Vec3]) {
        for b in 0..self.bones.len() {
            let d = self.bones[b].dof;
            let rate = |k: usize| Vec3::new(self.rates[d + k], self.rates[d + k + 1], self.rates[d + k + 2]);
            let joint = self.bones[b].joint.clone();
            let Some((parent, pivot)) = joint.pivot() else {
                let bone = &mut self.bones[b];
                bone.centre += dt * rate(0);
                bone.orientation = Quat::from_scaled_axis(dt * rate(3)) * bone.orientation;
                self.place(b, x);
                continue;
            };
            let (pc, ps, pq) = Skeleton::parent_pose(&self.bones, parent);
            let bone = &mut self.bones[b];
            match joint {
                Joint::Hinge { axis, .. } => {
                    bone.angle_before = bone.angle;
                    bone.angle += dt * self.rates[d];
                    bone.turn = Quat::from_scaled_axis(bone.angle * axis);
                }
                _ => bone.turn = Quat::from_scaled_axis(dt * (pq.inverse() * rate(0))) * bone.turn,
            }
            bone.orientation = pq * bone.turn;
            bone.centre = pc + pq * (pivot + bone.turn * (bone.start - pivot) - ps);
            self.place(b, x);
        }
        self.posed = Skeleton::posed(&self.bones, self.dofs()).expect("a skeleton checked when built stays well posed");
    }

    /// Puts bone `b`'s particles in `x` where it carries them.
    fn place(&self, b: usize, x: &mut [Vec3]) {
        let bone = &self.bones[b];
        for (&i, offset) in bone.particles.iter().zip(&bone.offsets) {
            x[i as usize] = bone.centre + bone.orientation * offset;
        }
    }

    /// The largest distance of a particle from where its bone puts it (m): 0 to rounding.
    pub fn binding_error(&self, x: &[Vec3]) -> Real {
        self.bones
            .iter()
            .flat_map(|bone| bone.particles.iter().zip(&bone.offsets).map(move |(&i, offset)| (x[i as usize] - bone.centre - bone.orientation * offset).norm()))
            .fold(0.0, Real::max)
    }

    /// Where each bone is, for outputs.
    pub fn poses(&self) -> Vec<crate::solids::BonePose> {
        self.bones
            .iter()
            .map(|b| crate::solids::BonePose {
                name: b.name.clone(),
                position: b.centre,
                orientation: b.orientation,
                angle: matches!(b.joint, Joint::Hinge { .. }).then_some(b.angle),
            })
            .collect()
    }

    /// The pose state (centres, orientations, angles, turns) for a checkpoint.
    pub fn pose_state(&self) -> Vec<(Vec3, Quat, Real, Quat)> {
        self.bones.iter().map(|b| (b.centre, b.orientation, b.angle, b.turn)).collect()
    }

    /// Restores a pose state taken with [`Skeleton::pose_state`].
    pub fn set_pose_state(&mut self, state: &[(Vec3, Quat, Real, Quat)]) {
        for (bone, (centre, orientation, angle, turn)) in self.bones.iter_mut().zip(state) {
            (bone.centre, bone.orientation, bone.angle, bone.angle_before, bone.turn) = (*centre, *orientation, *angle, *angle, *turn);
        }
        self.posed = Skeleton::posed(&self.bones, self.dofs()).expect("a skeleton checked when built stays well posed");
    }
}
