//! Rigid bodies: shapes with mass, a Newmark-style step with collisions, contact, friction and
//! shock propagation (Shinar thesis ch. 3, after Guendelman, Bridson and Fedkiw 2003).

mod body;

pub use body::{along_path, turned, BodyKind, Material, RigidBody};

use crate::math::{Real, Vec3};
use crate::solids::contact::{self, ContactBody, StaticGeometry};

/// Advances `bodies` over `dt` under `gravity`, colliding with each other and with `statics`:
///
/// 1. collisions, with restitution, on the time-n velocities, detected at the positions the
///    bodies would reach with their half-step velocities;
/// 2. the velocities advance half a step under gravity;
/// 3. contact (inelastic, with friction, and a final shock-propagation sweep) on the pairs
///    that collided, at the positions those velocities lead to;
/// 4. positions and orientations advance a full step with the half-step velocities;
/// 5. the velocities advance the second half step, and contact is applied to them again.
pub fn step(bodies: &mut [RigidBody], statics: &StaticGeometry, gravity: &Vec3, dt: Real) {
    let half_kick = 0.5 * dt * gravity;
    let groups: Vec<usize> = (0..bodies.len()).collect();
    let touching = contact::collide(&mut contact_bodies(bodies), &groups, statics, dt, &half_kick);
    kick(bodies, &half_kick);
    contact::contact(&mut contact_bodies(bodies), statics, dt, &touching);
    for body in bodies.iter_mut() {
        body.advance_pose(dt);
    }
    kick(bodies, &half_kick);
    contact::contact(&mut contact_bodies(bodies), statics, dt, &touching);
}

/// The bodies as contact bodies.
fn contact_bodies(bodies: &mut [RigidBody]) -> Vec<&mut dyn ContactBody> {
    bodies.iter_mut().map(|b| b as &mut dyn ContactBody).collect()
}

/// Moves the bodies' positions and orientations over `dt` with their velocities.
pub fn advance_poses(bodies: &mut [RigidBody], dt: Real) {
    for body in bodies.iter_mut() {
        body.advance_pose(dt);
    }
}

/// Adds the velocity change `dv` to every dynamic body.
fn kick(bodies: &mut [RigidBody], dv: &Vec3) {
    for body in bodies.iter_mut().filter(|b| b.is_dynamic()) {
        body.velocity += dv;
    }
}
