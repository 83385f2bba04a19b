//! One substep: the fixed order of phases. [`step`] runs the world's fluid model's phases;
//! the solids join the grid fluids' phases through [`Solids`] (Newmark's scheme), whatever
//! their kind.
//!
//! The level-set liquid:
//! 1. surface: particles and level set advected with `u^n`, particle correction, reinitialisation,
//!    the level set extended into obstacles and bodies;
//! 2. bodies' positions (Newmark's first half, Lu, Jin, Fedkiw sec. 6): collisions with
//!    restitution on the time-n velocities; a coupled solve over half a step of gravity
//!    gives `v^{n+1/2}`; contact on it, and where bodies touched, that solve's liquid projected
//!    again as in 6; samples of one body found deeper inside another (or the static world)
//!    than the contact margin where those velocities lead get the pseudo-velocity that moves
//!    them out (interpenetration resolution, [`contact::separate`]); positions and orientations advance over the step;
//! 3. velocity advection `u* = u^n - dt (u^n . grad) u^n`;
//! 4. sources: emitter regions become liquid with the emitter velocity; reactions between
//!    phases put spheres of their product where the reactants touch
//!    ([`crate::fluids::multiphase::Reaction`]);
//! 5. gravity `u* += dt g` on the liquid and `v* = v^n + dt g` on the bodies (from their
//!    time-n velocities after collisions); a viscoelastic liquid's elastic stress pushes `u*`
//!    ([`crate::fluids::viscoelasticity`]);
//! 6. the coupled projection at the new positions (ghost-fluid free surface, cut-cell
//!    obstacles, bodies through their dual cells: see [`crate::coupling`]) gives `u^{n+1}` and
//!    `v^{n+1}` (a viscous liquid's projected velocity then diffuses implicitly with the bodies,
//!    [`crate::fluids::viscosity`], and is projected again, Shinar sec. 4.3.2: diffusing the
//!    unprojected velocity, which still carries the step's gravity, let a ball sink several
//!    times faster than Stokes' law, the faster the longer the substep); contact on `v^{n+1}`
//!    for the bodies that touch, and where any did, the liquid is projected again with the
//!    bodies held along the normals of their contact points and free along every other
//!    direction, so the liquid moves with a body the floor has stopped and the other bodies
//!    take their share of that (held wholly, floating bodies kept the pull of a liquid that ran
//!    after a body the floor then stopped, and sank); velocity extension; a viscoelastic
//!    liquid's strain is carried on with `u^{n+1}`;
//! 7. the world's health check ([`World::check`]): a non-finite value or a speed above
//!    `simulation.max_speed` anywhere is a blow-up.
//!
//! FLIP runs the phases of [`crate::fluids::flip`] with the same body phases around its
//! velocity solve, smoke those of [`crate::fluids::smoke`] with them around its projection;
//! the surface flow steps its automaton.

use crate::coupling::poisson::ProjectionReport;
use crate::coupling::{Contacts, TrialLiquid};
use crate::fluids::flip::{FlipLiquid, FlipTimings, SolveReport};
use crate::fluids::smoke::SmokeFluid;
use crate::fluids::viscosity::DiffusionReport;
use crate::fluids::{Fluid, LevelSetFluid};
use crate::math::{Real, Vec3};
use crate::solids::contact;
use crate::solids::{CoupledSolid, Solids};
use crate::world::{Clock, Settings, World};
use serde::Serialize;
use std::time::Instant;

/// Wall-clock seconds spent in each phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PhaseTimings {
    /// Particles, level set advection, correction, reinitialisation, reseeding.
    pub surface: f64,
    /// Velocity self-advection (smoke: with its smoke and heat).
    pub velocity_advection: f64,
    /// Sources and gravity.
    pub forces: f64,
    /// The viscous solve (zero for an inviscid liquid).
    pub viscosity: f64,
    /// A viscoelastic liquid's strain: its stress's push and its update (zero without
    /// elasticity).
    pub elasticity: f64,
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
        self.viscosity += other.viscosity;
        self.elasticity += other.elasticity;
        self.projection += other.projection;
        self.extrapolation += other.extrapolation;
        self.bodies += other.bodies;
    }

    /// Total of all phases.
    pub fn total(&self) -> f64 {
        self.surface + self.velocity_advection + self.forces + self.viscosity + self.elasticity + self.projection + self.extrapolation + self.bodies
    }
}

/// What the fluid's phases did in one substep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FluidStep {
    /// The level-set liquid's (or smoke's: no viscosity) viscous and pressure solves and phase
    /// timings.
    LevelSet { viscosity: DiffusionReport, projection: ProjectionReport, timings: PhaseTimings },
    /// FLIP's solves and phase timings.
    Flip { solve: SolveReport, timings: FlipTimings },
    /// One automaton step of the surface flow.
    Surface,
}

/// What one substep did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepReport {
    /// The substep length (s).
    pub dt: Real,
    /// Total impulse the solids gave the liquid (N s); they received its opposite.
    pub impulse_on_liquid: Vec3,
    /// The fluid's part.
    pub fluid: FluidStep,
}

/// Newmark's position update for the solids (Lu, Jin, Fedkiw sec. 6; Shinar sec. 5.6, S1):
/// collisions on the time-n velocities; half a step of the solids' forces and `solve`, a
/// coupled solve with the liquid's time-n velocity (no advection; the liquid's result is
/// discarded), give the solids `v^{n+1/2}`; contact on those, and where any touched, `solve`
/// again on that solve's liquid with the solids held along their contacts (as the velocity
/// update projects again) and contact once more; the interpenetration resolution adds the
/// pseudo-velocity that ends every overlap deeper than the contact margin; the solids move over the whole step with
/// them. The solids then start the velocity update from their time-n velocities after the
/// collisions.
fn advance_solid_positions(solids: &mut Solids, time: Real, gravity: &Vec3, dt: Real, solve: Option<&CoupledSolve>) {
    {
        let (mut parts, groups, statics) = solids.contact_parts();
        contact::collide(&mut parts, &groups, statics, dt, &(dt * gravity));
    }
    for solid in solids.iter_mut() {
        solid.after_contact();
        solid.collide_with_itself(dt);
        solid.prescribe(time, dt);
    }
    let start: Vec<Vec<Real>> = solids.iter().map(|s| s.velocity_state()).collect();
    for solid in solids.iter_mut() {
        solid.predict_velocities(0.5 * dt, gravity, time);
    }
    // Only a solid that impulses move has a velocity to find, and only with a liquid.
    let touching = if let Some(solve) = solve.filter(|_| solids.iter().any(|s| s.is_dynamic())) {
        let trial = solve(&mut solids.coupled_mut(), None);
        contact_all(solids, dt).and_then(|(_, contacts)| {
            solve(&mut solids.coupled_mut(), Some((trial, &contacts)));
            // The solve moves bodies that touch each other (only the static geometry holds
            // them): contact again before they move.
            contact_all(solids, dt)
        })
    } else {
        contact_all(solids, dt)
    };
    // Only bodies within the contact margin of each other can overlap.
    if let Some((pairs, _)) = touching {
        let (mut parts, _, statics) = solids.contact_parts();
        contact::separate(&mut parts, statics, dt, &pairs);
    }
    for solid in solids.iter_mut() {
        solid.after_contact();
        solid.advance_positions(dt);
    }
    for (solid, velocities) in solids.iter_mut().zip(start) {
        solid.set_velocity_state(&velocities);
    }
}

/// The coupled solve of the solids' position update with a grid liquid, over half a step:
/// without contacts, or again on a first solve's liquid with the solids held along their
/// contacts.
type CoupledSolve<'a> = dyn Fn(&mut [&mut dyn CoupledSolid], Option<(TrialLiquid, &Contacts)>) -> TrialLiquid + 'a;

/// The pairs of solid parts that touch, and each solid's points of contact with the static
/// geometry with the normals there.
type Touching = (Vec<contact::Pair>, Vec<Vec<(Vec3, Vec3)>>);

/// Each solid's contact with itself, then contact (inelastic, with friction and shock
/// propagation) on every pair of solid parts that touches at the positions their velocities
/// lead to over `dt`, then the solids' internal constraints restored. Where any pair touched,
/// returns those pairs, and each solid's points of contact with the static geometry and its
/// normals there, the ones contact acts on (in the order of [`Solids::iter`]): a coupled solve
/// after contact holds the solids along them. (Found after
/// contact, where the stopped bodies' velocities lead, a resting ball was often just outside
/// the contact margin, left free, and dragged down again by the water.)
fn contact_all(solids: &mut Solids, dt: Real) -> Option<Touching> {
    for solid in solids.iter_mut() {
        solid.collide_with_itself(dt);
    }
    let contacts = {
        let (mut parts, groups, statics) = solids.contact_parts();
        let (touching, static_points) = contact::touching(&parts, &groups, statics, dt);
        if touching.is_empty() {
            return None;
        }
        let mut contacts = vec![Vec::new(); groups.last().map_or(0, |g| g + 1)];
        for (part, points) in static_points.into_iter().enumerate() {
            contacts[groups[part]].extend(points);
        }
        contact::contact(&mut parts, statics, dt, &touching);
        (touching, contacts)
    };
    for solid in solids.iter_mut() {
        solid.after_contact();
    }
    Some(contacts)
}

/// Advances `world` by `dt`. On a blow-up, returns what was found (the world is then unusable).
pub fn step(world: &mut World, dt: Real) -> Result<StepReport, String> {
    let dry = matches!(&world.fluid, Fluid::LevelSet(f) if f.is_dry());
    if !dry {
        world.update_solid_distance();
    }
    let World { settings, fluid, solids, tracers, clock } = world;
    let report = match fluid {
        Fluid::LevelSet(_) if dry => dry_step(solids, settings, clock, dt),
        Fluid::LevelSet(f) => level_set_step(f, solids, settings, clock, dt)?,
        Fluid::Flip(f) => flip_step(f, solids, settings, clock, dt)?,
        Fluid::Smoke(f) => smoke_step(f, solids, settings, clock, dt),
        Fluid::Surface(f) => {
            f.step();
            StepReport { dt, impulse_on_liquid: Vec3::zeros(), fluid: FluidStep::Surface }
        }
    };
    fluid.carry(tracers, dt);
    clock.time += dt;
    clock.step += 1;
    fluid.at_time(clock.time);
    world.check()?;
    Ok(report)
}

/// A substep without liquid (a level-set scene with none and no sources): the solids' phases
/// alone — Newmark's position update with collisions and contact, the whole step's velocity
/// prediction, and contact on it.
fn dry_step(solids: &mut Solids, settings: &Settings, clock: &Clock, dt: Real) -> StepReport {
    let start = Instant::now();
    advance_solid_positions(solids, clock.time, &settings.gravity, dt, None);
    for solid in solids.iter_mut() {
        solid.predict_velocities(dt, &settings.gravity, clock.time);
    }
    contact_all(solids, dt);
    let timings = PhaseTimings { bodies: start.elapsed().as_secs_f64(), ..PhaseTimings::default() };
    StepReport { dt, impulse_on_liquid: Vec3::zeros(), fluid: FluidStep::LevelSet { viscosity: DiffusionReport::default(), projection: ProjectionReport::default(), timings } }
}

/// FLIP's substep: its phases with the solids' around the velocity solve, as for the
/// level-set liquid (the bodies move to the end of the step between rasterization and the
/// solve, so obstacle fractions and particle collisions see where they are then).
fn flip_step(f: &mut FlipLiquid, solids: &mut Solids, settings: &Settings, clock: &Clock, dt: Real) -> Result<StepReport, String> {
    let gravity = settings.gravity;
    let mut sub = f.rasterize(clock.time, &solids.coupled());
    if !solids.is_empty() {
        let (liquid, sub) = (&*f, &sub);
        advance_solid_positions(solids, clock.time, &gravity, dt, Some(&|coupled, after_contact| liquid.solve_for_bodies(sub, &gravity, 0.5 * dt, coupled, after_contact)));
    }
    f.prepare(&mut sub, dt, settings, &solids.coupled());
    for solid in solids.iter_mut() {
        solid.predict_velocities(dt, &gravity, clock.time);
    }
    let mut impulse_on_liquid = Vec3::zeros();
    if f.params.viscosity.is_on() {
        // As for the level-set liquid: projected, diffused, projected again.
        impulse_on_liquid += f.project(&mut sub, dt, &mut solids.coupled_mut());
        impulse_on_liquid += f.apply_viscosity(&mut sub, dt, &mut solids.coupled_mut());
        impulse_on_liquid += f.reproject(&mut sub, dt, &mut solids.coupled_mut());
    } else {
        impulse_on_liquid += f.project(&mut sub, dt, &mut solids.coupled_mut());
    }
    if let Some((_, contacts)) = contact_all(solids, dt) {
        impulse_on_liquid += f.project_held(&mut sub, dt, &mut solids.coupled_mut(), &contacts);
    }
    f.finish(sub, dt, settings, &solids.coupled());
    Ok(StepReport { dt, impulse_on_liquid, fluid: FluidStep::Flip { solve: f.last, timings: f.timings } })
}

/// Smoke's substep (the phases of [`crate::fluids::smoke`]): the solids' position update
/// around a coupled solve with the air, as for the level-set liquid; the smoke, the heat and
/// the velocity carried; sources, buoyancy and vorticity confinement (and the solids' forces);
/// the coupled projection, again after contact with the solids held; velocity extension.
fn smoke_step(f: &mut SmokeFluid, solids: &mut Solids, settings: &Settings, clock: &Clock, dt: Real) -> StepReport {
    let mut timings = PhaseTimings::default();
    let mut stopwatch = Instant::now();
    let mut lap = |slot: &mut f64| {
        let now = Instant::now();
        *slot += (now - stopwatch).as_secs_f64();
        stopwatch = now;
    };
    if !solids.is_empty() {
        let air = &*f;
        advance_solid_positions(solids, clock.time, &settings.gravity, dt, Some(&|coupled, after_contact| air.solve_for_bodies(0.5 * dt, coupled, after_contact)));
        lap(&mut timings.bodies);
    }
    f.advect(dt);
    lap(&mut timings.velocity_advection);
    f.apply_sources(clock.time);
    f.apply_forces(dt);
    for solid in solids.iter_mut() {
        solid.predict_velocities(dt, &settings.gravity, clock.time);
    }
    lap(&mut timings.forces);
    let (mut valid, report) = f.project(dt, &mut solids.coupled_mut());
    let mut impulse_on_liquid = report.impulse_on_liquid;
    lap(&mut timings.projection);
    if let Some((_, contacts)) = contact_all(solids, dt) {
        lap(&mut timings.bodies);
        let (held_valid, report) = f.project_held(dt, &mut solids.coupled_mut(), &contacts);
        valid = held_valid;
        impulse_on_liquid += report.impulse_on_liquid;
        lap(&mut timings.projection);
    }
    f.extend_velocity(valid, settings.cfl.ceil() as usize + 4);
    lap(&mut timings.extrapolation);
    StepReport { dt, impulse_on_liquid, fluid: FluidStep::LevelSet { viscosity: DiffusionReport::default(), projection: f.last_projection, timings } }
}

/// The level-set liquid's substep (the phases in the module documentation).
fn level_set_step(f: &mut LevelSetFluid, solids: &mut Solids, settings: &Settings, clock: &Clock, dt: Real) -> Result<StepReport, String> {
    let grid = f.grid;
    let mut timings = PhaseTimings::default();
    let mut stopwatch = Instant::now();
    let mut lap = |slot: &mut f64| {
        let now = Instant::now();
        *slot += (now - stopwatch).as_secs_f64();
        stopwatch = now;
    };
    f.liquid.advect_surface(&grid, &f.statics, dt, clock.step);
    lap(&mut timings.surface);
    let gravity = settings.gravity;
    if !solids.is_empty() {
        let (liquid, statics) = (&f.liquid, &f.statics);
        advance_solid_positions(
            solids,
            clock.time,
            &gravity,
            dt,
            Some(&|coupled, after_contact| liquid.solve_for_bodies(&grid, statics, &gravity, 0.5 * dt, coupled, after_contact)),
        );
        lap(&mut timings.bodies);
    }
    f.liquid.advect_velocity(&grid, dt);
    lap(&mut timings.velocity_advection);
    f.liquid.apply_sources(&grid, &f.statics, &f.sources, clock.time);
    f.liquid.react(&grid, &f.statics, dt, clock.step);
    f.liquid.add_gravity(&gravity, dt);
    for solid in solids.iter_mut() {
        solid.predict_velocities(dt, &gravity, clock.time);
    }
    lap(&mut timings.forces);
    f.liquid.apply_elastic_stress(&grid, dt);
    lap(&mut timings.elasticity);
    let mut impulse_on_liquid = Vec3::zeros();
    let mut viscosity = DiffusionReport::default();
    let (mut valid, coupling) = if f.liquid.is_viscous() {
        // Shinar sec. 4.3.2: the projected velocity diffuses, and is projected again.
        impulse_on_liquid += f.liquid.project(&grid, &f.statics, dt, &mut solids.coupled_mut()).1.impulse_on_liquid;
        lap(&mut timings.projection);
        viscosity = f.liquid.apply_viscosity(&grid, &f.statics, dt, &mut solids.coupled_mut());
        impulse_on_liquid += viscosity.impulse_on_liquid;
        lap(&mut timings.viscosity);
        f.liquid.reproject(&grid, &f.statics, dt, &mut solids.coupled_mut())
    } else {
        f.liquid.project(&grid, &f.statics, dt, &mut solids.coupled_mut())
    };
    impulse_on_liquid += coupling.impulse_on_liquid;
    lap(&mut timings.projection);
    if let Some((_, contacts)) = contact_all(solids, dt) {
        lap(&mut timings.bodies);
        let (held_valid, report) = f.liquid.project_held(&grid, &f.statics, dt, &mut solids.coupled_mut(), &contacts);
        valid = held_valid;
        impulse_on_liquid += report.impulse_on_liquid;
        lap(&mut timings.projection);
    }
    let layers = settings.cfl.ceil() as usize + 4;
    crate::fluids::eulerian::extend_velocity(&grid, &f.statics, &mut f.liquid.velocity, valid, layers);
    lap(&mut timings.extrapolation);
    f.liquid.evolve_strain(&grid, dt);
    lap(&mut timings.elasticity);
    Ok(StepReport { dt, impulse_on_liquid, fluid: FluidStep::LevelSet { viscosity, projection: f.liquid.last_projection, timings } })
}
