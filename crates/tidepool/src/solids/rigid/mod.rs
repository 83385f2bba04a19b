//! Rigid bodies: shapes with mass, a Newmark-style step with collisions, contact, friction and
//! shock propagation (Shinar thesis ch. 3, after Guendelman, Bridson and Fedkiw 2003).

mod body;
mod contact;

pub use body::{BodyKind, Material, RigidBody};
pub use contact::StaticGeometry;

use crate::math::{Real, Vec3};

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
    let touching = contact::collide(bodies, statics, dt, &half_kick);
    kick(bodies, &half_kick);
    contact::contact(bodies, statics, dt, &touching);
    for body in bodies.iter_mut() {
        body.advance_pose(dt);
    }
    kick(bodies, &half_kick);
    contact::contact(bodies, statics, dt, &touching);
}

/// Collisions with restitution for bodies coupled to a liquid, on their time-n velocities
/// before the step's forces (so that a body resting on the floor does not bounce off what
/// gravity adds each step): detected at the positions the velocities plus `kick` (the step's
/// gravity) would reach.
pub fn collide(bodies: &mut [RigidBody], statics: &StaticGeometry, dt: Real, kick: &Vec3) {
    contact::collide(bodies, statics, dt, kick);
}

/// Contact (inelastic, with friction and shock propagation) for bodies whose velocities
/// already hold the step's forces (gravity and the liquid's impulses from the coupled solve),
/// on the pairs that touch at the positions those velocities lead to. Returns whether any
/// pair touches.
pub fn contact(bodies: &mut [RigidBody], statics: &StaticGeometry, dt: Real) -> bool {
    let touching = contact::touching(bodies, statics, dt);
    contact::contact(bodies, statics, dt, &touching);
    !touching.is_empty()
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
