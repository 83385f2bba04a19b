//! One substep: the fixed order of phases.
//!
//! 1. surface: particles and level set advected with `u^n`, particle correction, reinitialisation,
//!    the level set extended into obstacles and bodies;
//! 2. bodies' positions (Newmark's first half, Lu, Jin, Fedkiw sec. 6): collisions with
//!    restitution on the time-n velocities; a coupled solve over half a step of gravity
//!    gives `v^{n+1/2}`; contact on it; positions and orientations advance over the step;
//! 3. velocity advection `u* = u^n - dt (u^n . grad) u^n`;
//! 4. sources: emitter regions become liquid with the emitter velocity;
//! 5. gravity `u* += dt g` on the liquid and `v* = v^n + dt g` on the bodies (from their
//!    time-n velocities after collisions);
//! 6. the coupled projection at the new positions (ghost-fluid free surface, cut-cell
//!    obstacles, bodies through their dual cells: see [`crate::coupling`]) gives `u^{n+1}` and
//!    `v^{n+1}`; contact on `v^{n+1}` for the bodies that touch, and where any did, the liquid
//!    is projected again with the bodies' velocities after contact prescribed, so the liquid
//!    moves with a body the floor has stopped; velocity extension;
//! 7. checks: a non-finite value or a speed above `simulation.max_speed` is a blow-up.

use crate::coupling::CoupledSolid;
use crate::fluids::eulerian::projection::ProjectionReport;
use crate::math::{Real, Vec3};
use crate::solids::contact::{self, ContactBody};
use crate::solids::reduced::articulated::Articulated;
use crate::solids::rigid::{self, RigidBody};
use crate::world::World;
use serde::Serialize;
use std::time::Instant;

/// Wall-clock seconds spent in each phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PhaseTimings {
    /// Particles, level set advection, correction, reinitialisation, reseeding.
    pub surface: f64,
    /// Velocity self-advection.
    pub velocity_advection: f64,
    /// Sources and gravity.
    pub forces: f64,
    /// The coupled solve of the velocity update (assembly, solve, velocity update), and the
    /// liquid's re-projection after contact.
    pub projection: f64,
    /// Velocity extension and solid constraint.
    pub extrapolation: f64,
    /// The bodies' position update (collisions, the half-step coupled solve, contact,
    /// positions) and contact after the velocity update.
    pub bodies: f64,
}

impl PhaseTimings {
    /// Adds another substep's timings.
    pub fn accumulate(&mut self, other: &PhaseTimings) {
        self.surface += other.surface;
        self.velocity_advection += other.velocity_advection;
        self.forces += other.forces;
        self.projection += other.projection;
        self.extrapolation += other.extrapolation;
        self.bodies += other.bodies;
    }

    /// Total of all phases.
    pub fn total(&self) -> f64 {
        self.surface + self.velocity_advection + self.forces + self.projection + self.extrapolation + self.bodies
    }
}

/// What one substep did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// The substep length (s).
    pub dt: Real,
    /// The pressure solve.
    pub projection: ProjectionReport,
    /// Total impulse the bodies gave the liquid (N s); they received its opposite.
    pub impulse_on_liquid: Vec3,
    /// Time per phase.
    pub timings: PhaseTimings,
}

/// Newmark's position update for the bodies (Lu, Jin, Fedkiw sec. 6; Shinar sec. 5.6, S1):
/// collisions on the time-n velocities; half a step of gravity and a coupled solve with the
/// liquid's time-n velocity (no advection; the liquid's result is discarded) give the bodies
/// `v^{n+1/2}`; contact on those; the bodies move over the whole step with them. The bodies
/// then start the velocity update from their time-n velocities after the collisions.
fn advance_body_positions(world: &mut World, gravity: &Vec3, dt: Real) {
    let grid = world.grid;
    let groups = contact_groups(world);
    contact::collide(&mut contact_bodies(&mut world.bodies, &mut world.reduced), &groups, &world.body_statics, dt, &(dt * gravity));
    world.reduced.iter_mut().for_each(Articulated::restore_joints);
    for body in world.bodies.iter_mut() {
        body.follow_path(world.clock.time, dt);
    }
    let start: Vec<(Vec3, Vec3)> = world.bodies.iter().map(|b| (b.velocity, b.angular_momentum)).collect();
    let start_reduced: Vec<(Vec3, Vec3, Vec<Real>)> = world.reduced_bodies().map(|b| (b.velocity, b.angular_momentum, b.qdot.clone())).collect();
    for body in world.bodies.iter_mut().filter(|b| b.is_dynamic()) {
        body.velocity += 0.5 * dt * gravity;
    }
    for body in world.reduced.iter_mut() {
        body.predict_velocities(0.5 * dt, gravity, world.clock.time);
    }
    let mut coupled = coupled_bodies(&mut world.bodies, &mut world.reduced);
    world.liquid.solve_for_bodies(&grid, &world.solids, gravity, 0.5 * dt, &mut coupled);
    contact_all(world, &groups, dt);
    rigid::advance_poses(&mut world.bodies, dt);
    for body in world.reduced.iter_mut() {
        body.advance_positions(dt);
    }
    for (body, (velocity, angular_momentum)) in world.bodies.iter_mut().zip(start) {
        if body.is_dynamic() {
            body.velocity = velocity;
            body.angular_momentum = angular_momentum;
        }
    }
    for (body, (velocity, angular_momentum, qdot)) in world.reduced.iter_mut().flat_map(|a| a.bodies.iter_mut()).zip(start_reduced) {
        body.velocity = velocity;
        body.angular_momentum = angular_momentum;
        body.qdot = qdot;
    }
}

/// Every body as a coupled solid the solve may push.
fn coupled_bodies<'a>(bodies: &'a mut [RigidBody], reduced: &'a mut [Articulated]) -> Vec<&'a mut dyn CoupledSolid> {
    bodies.iter_mut().map(|b| b as &mut dyn CoupledSolid).chain(reduced.iter_mut().map(|b| b as &mut dyn CoupledSolid)).collect()
}

/// Every rigid body and every sub-body of a reduced body as a body that collides.
fn contact_bodies<'a>(bodies: &'a mut [RigidBody], reduced: &'a mut [Articulated]) -> Vec<&'a mut dyn ContactBody> {
    bodies.iter_mut().map(|b| b as &mut dyn ContactBody).chain(reduced.iter_mut().flat_map(|a| a.bodies.iter_mut()).map(|b| b as &mut dyn ContactBody)).collect()
}

/// The collision group of each of [`contact_bodies`]: each rigid body its own, the sub-bodies
/// of an articulation one together.
fn contact_groups(world: &World) -> Vec<usize> {
    let rigid = world.bodies.len();
    (0..rigid).chain(world.reduced.iter().enumerate().flat_map(|(a, art)| std::iter::repeat_n(rigid + a, art.bodies.len()))).collect()
}

/// Contact (inelastic, with friction and shock propagation) on every pair of bodies that
/// touches at the positions their velocities lead to over `dt`, then the joints' velocities
/// restored. Returns whether any pair touched.
fn contact_all(world: &mut World, groups: &[usize], dt: Real) -> bool {
    let mut bodies = contact_bodies(&mut world.bodies, &mut world.reduced);
    let touching = contact::touching(&bodies, groups, &world.body_statics, dt);
    contact::contact(&mut bodies, &world.body_statics, dt, &touching);
    drop(bodies);
    if !touching.is_empty() {
        world.reduced.iter_mut().for_each(Articulated::restore_joints);
    }
    !touching.is_empty()
}

/// Advances `world` by `dt`. On a blow-up, returns what was found (the world is then unusable).
pub fn step(world: &mut World, dt: Real) -> Result<StepReport, String> {
    let grid = world.grid;
    let mut timings = PhaseTimings::default();
    let mut clock = Instant::now();
    let mut lap = |slot: &mut f64| {
        let now = Instant::now();
        *slot += (now - clock).as_secs_f64();
        clock = now;
    };
    world.update_solid_distance();
    world.liquid.advect_surface(&grid, &world.solids, dt, world.clock.step);
    lap(&mut timings.surface);
    let gravity = world.settings.gravity;
    if !world.bodies.is_empty() || !world.reduced.is_empty() {
        advance_body_positions(world, &gravity, dt);
        lap(&mut timings.bodies);
    }
    let liquid = &mut world.liquid;
    liquid.advect_velocity(&grid, dt);
    lap(&mut timings.velocity_advection);
    liquid.apply_sources(&grid, &world.solids, &world.sources, world.clock.time);
    liquid.add_gravity(&gravity, dt);
    for body in world.bodies.iter_mut().filter(|b| b.is_dynamic()) {
        body.velocity += dt * gravity;
    }
    for body in world.reduced.iter_mut() {
        body.predict_velocities(dt, &gravity, world.clock.time);
    }
    lap(&mut timings.forces);
    let mut coupled = coupled_bodies(&mut world.bodies, &mut world.reduced);
    let (mut valid, coupling) = world.liquid.project(&grid, &world.solids, dt, &mut coupled);
    lap(&mut timings.projection);
    let groups = contact_groups(world);
    if contact_all(world, &groups, dt) {
        lap(&mut timings.bodies);
        let held = crate::world::coupled_solids(&world.bodies, &world.reduced);
        valid = world.liquid.project_held(&grid, &world.solids, dt, &held);
        lap(&mut timings.projection);
    }
    let layers = world.settings.cfl.ceil() as usize + 4;
    world.liquid.extend_velocity(&grid, &world.solids, valid, layers);
    lap(&mut timings.extrapolation);
    let liquid = &world.liquid;
    world.clock.time += dt;
    world.clock.step += 1;
    if let Some(problem) = liquid.find_non_finite() {
        return Err(problem.to_string());
    }
    for body in &world.reduced {
        body.check(world.settings.max_speed)?;
    }
    for body in &world.bodies {
        let state = body.velocity.iter().chain(body.angular_momentum.iter()).chain(body.position.iter());
        if !state.into_iter().all(|v| v.is_finite()) {
            return Err(format!("body `{}` has a non-finite position or velocity", body.name));
        }
        if body.velocity.norm() > world.settings.max_speed {
            return Err(format!("body `{}` reached {:.3} m/s, above simulation.max_speed = {} m/s", body.name, body.velocity.norm(), world.settings.max_speed));
        }
    }
    let speed = liquid.max_speed();
    if speed > world.settings.max_speed {
        return Err(format!("the liquid reached {speed:.3} m/s, above simulation.max_speed = {} m/s", world.settings.max_speed));
    }
    Ok(StepReport { dt, projection: liquid.last_projection, impulse_on_liquid: coupling.impulse_on_liquid, timings })
}
