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

/// Moves `bodies` over `dt` when their velocities already hold the step's forces (gravity and
/// the liquid's impulses from the coupled solve): collisions and contact with each other and
/// with `statics`, then the positions and orientations.
pub fn advance(bodies: &mut [RigidBody], statics: &StaticGeometry, dt: Real) {
    let touching = contact::collide(bodies, statics, dt, &Vec3::zeros());
    contact::contact(bodies, statics, dt, &touching);
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
