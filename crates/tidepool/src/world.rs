//! The state of one simulation. No loop and no I/O here.

use crate::coupling::CoupledSolid;
use crate::fluids::eulerian::{LevelSetLiquid, LiquidParams, LiquidSource};
use crate::grid::{Array3, Grid, Location};
use crate::math::{vec3, Real, Vec3};
use crate::scene::Boundary;
use crate::scene::{BodySetup, LoadedScene, Operation, ReducedSetup};
use crate::solids::contact::StaticGeometry;
use crate::solids::reduced::articulated::Articulated;
use crate::solids::reduced::body::ReducedBody;
use crate::solids::rigid::{BodyKind, Material, RigidBody};
use crate::solids::StaticSolids;
use tidepool_linalg::PcgParams;

/// Restitution and friction of the domain walls and obstacles in collisions with bodies.
pub const STATIC_MATERIAL: Material = Material { restitution: 0.2, friction: 0.5 };

/// Global settings from `[simulation]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Frames to simulate after frame 0.
    pub frames: u32,
    /// Frames per second.
    pub fps: Real,
    /// CFL number of the substeps.
    pub cfl: Real,
    /// Gravitational acceleration (m/s^2).
    pub gravity: Vec3,
    /// Liquid speed treated as a blow-up (m/s).
    pub max_speed: Real,
}

impl Settings {
    /// The settings of `[simulation]`.
    pub fn of(sim: &crate::scene::Simulation) -> Self {
        Settings { frames: sim.frames, fps: sim.fps, cfl: sim.cfl, gravity: vec3(sim.gravity), max_speed: sim.max_speed }
    }
}

/// The scene's liquid sources.
pub fn liquid_sources(loaded: &LoadedScene) -> Vec<LiquidSource> {
    loaded
        .scene
        .liquid
        .source
        .iter()
        .zip(&loaded.sources)
        .map(|(s, shape)| LiquidSource { shape: shape.clone(), velocity: vec3(s.velocity), start: s.start, end: s.end.unwrap_or(Real::INFINITY) })
        .collect()
}

/// A rigid body as its setup describes it: a dynamic one with its initial velocities, a
/// kinematic one with its velocities or path, a static one at rest.
pub fn rigid_body(b: &crate::scene::BodySetup, grid: &Grid) -> RigidBody {
    let material = Material { restitution: b.restitution, friction: b.friction };
    let mut body = RigidBody::new(&b.name, b.kind.into(), &b.shape, b.density, material, 0.5 * grid.dx);
    body.orientation = b.orientation;
    match body.kind {
        BodyKind::Dynamic => {
            body.velocity = b.velocity;
            body.angular_momentum = body.inertia * b.angular_velocity;
        }
        BodyKind::Kinematic => {
            body.velocity = b.velocity;
            body.spin = b.angular_velocity;
            body.path = b.path.iter().map(|(t, offset)| (*t, body.position + offset)).collect();
        }
        BodyKind::Static => {}
    }
    body
}

/// Where the simulation is in time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    /// Last completed frame.
    pub frame: u32,
    /// Simulated time (s).
    pub time: Real,
    /// Substeps taken since the start.
    pub step: u64,
}

/// One simulation: grid, static solids, liquid, sources, clock.
#[derive(Clone, Debug)]
pub struct World {
    /// The MAC grid.
    pub grid: Grid,
    /// Global settings.
    pub settings: Settings,
    /// Domain walls and obstacles.
    pub solids: StaticSolids,
    /// The liquid.
    pub liquid: LevelSetLiquid,
    /// Liquid emitters.
    pub sources: Vec<LiquidSource>,
    /// Rigid bodies.
    pub bodies: Vec<RigidBody>,
    /// Reduced deformable bodies, each on its own or articulated with others.
    pub reduced: Vec<Articulated>,
    /// The static world the bodies collide with: closed domain sides and obstacles.
    pub body_statics: StaticGeometry,
    /// Time.
    pub clock: Clock,
}

impl World {
    /// Sets up the initial state of a scene.
    pub fn build(loaded: &LoadedScene) -> World {
        let scene = &loaded.scene;
        let grid = loaded.grid;
        let sim = &scene.simulation;
        let settings = Settings::of(sim);
        let solids = StaticSolids::new(&grid, scene.domain.boundary.sides(), loaded.obstacles.clone());
        let far = grid.dx * grid.dims.iter().sum::<usize>() as Real;
        let phi = grid.sample_fn(Location::Cell, |x| {
            loaded.regions.iter().fold(far, |phi, (op, shape)| match op {
                Operation::Add => phi.min(shape.signed_distance(&x)),
                Operation::Subtract => phi.max(-shape.signed_distance(&x)),
            })
        });
        let l = &scene.liquid;
        let params = LiquidParams {
            density: l.density,
            advection: l.advection,
            pressure: PcgParams { tolerance: l.pressure_tolerance, max_iterations: l.pressure_max_iterations as usize },
            particles_per_cell: l.particles_per_cell as usize,
            reseed_every: l.reseed_every as u64,
            seed: sim.seed,
            volume_correction: l.volume_correction,
        };
        let sources = liquid_sources(loaded);
        let body_statics = StaticGeometry {
            min: grid.origin,
            max: grid.origin + Vec3::from_fn(|a, _| grid.dims[a] as Real * grid.dx),
            walls: solids.boundaries.map(|sides| sides.map(|b| b == Boundary::Wall)),
            // Contact asks for the obstacles' distance at every sample of every body near them,
            // several times a substep: mesh obstacles are sampled at a quarter cell.
            obstacles: loaded.obstacles.iter().map(|(_, shape)| shape.sampled(0.25 * grid.dx, grid.dx)).collect(),
            material: STATIC_MATERIAL,
        };
        let reduced: Vec<Articulated> = loaded.bodies.iter().filter_map(|b| b.reduced.as_ref().map(|setup| articulated(b, setup))).collect();
        let bodies: Vec<RigidBody> = loaded.bodies.iter().filter(|b| b.reduced.is_none()).map(|b| rigid_body(b, &grid)).collect();
        let solid_bodies = coupled_solids(&bodies, &reduced);
        let distance = solids_with_bodies(&grid, &solids, &solid_bodies);
        let liquid = LevelSetLiquid::new(&grid, params, phi, &solids, distance);
        World { grid, settings, solids, liquid, sources, bodies, reduced, body_statics, clock: Clock::default() }
    }

    /// Longest substep the CFL number allows: neither the liquid nor any point of a body may
    /// cross more than `cfl` cells.
    pub fn cfl_dt(&self) -> Real {
        let s = &self.settings;
        let liquid = self.liquid.cfl_dt(&self.grid, s.cfl, &s.gravity, &self.sources);
        let fastest_rigid = self.bodies.iter().map(|b| b.velocity.norm() + b.angular_velocity().norm() * b.bounding_radius).fold(0.0, Real::max);
        let fastest_body = self.reduced.iter().map(Articulated::max_speed).fold(fastest_rigid, Real::max);
        if fastest_body > 0.0 {
            liquid.min(s.cfl * self.grid.dx / fastest_body)
        } else {
            liquid
        }
    }

    /// Volume of rigid body `b` below the liquid's surface (m^3); see [`World::submerged_volume_of`].
    pub fn submerged_volume(&self, b: usize) -> Real {
        self.submerged_volume_of(&self.bodies[b])
    }

    /// Volume of `solid` below the liquid's surface (m^3): the cells around it weighted by the
    /// smoothed fractions of the cell inside the solid and inside the liquid (first order in
    /// the cell size).
    pub fn submerged_volume_of(&self, solid: &dyn CoupledSolid) -> Real {
        let grid = &self.grid;
        let (centre, radius) = solid.bounding_sphere();
        let reach = Vec3::repeat(radius + grid.dx);
        let (lo, hi) = (grid.cell_of(&(centre - reach)), grid.cell_of(&(centre + reach)));
        let mut volume = 0.0;
        for k in lo[2]..=hi[2] {
            for j in lo[1]..=hi[1] {
                for i in lo[0]..=hi[0] {
                    let x = grid.position(Location::Cell, i, j, k);
                    let inside = (0.5 - solid.signed_distance(&x) / grid.dx).clamp(0.0, 1.0);
                    let wet = (0.5 - self.liquid.phi.get(i, j, k) / grid.dx).clamp(0.0, 1.0);
                    volume += inside * wet;
                }
            }
        }
        volume * grid.dx.powi(3)
    }

    /// Samples the distance to obstacles and bodies at cell centres for the liquid.
    pub fn update_solid_distance(&mut self) {
        self.liquid.solids_with_bodies = solids_with_bodies(&self.grid, &self.solids, &coupled_solids(&self.bodies, &self.reduced));
    }

    /// Every reduced deformable body (the sub-bodies of articulations in turn).
    pub fn reduced_bodies(&self) -> impl Iterator<Item = &ReducedBody> {
        self.reduced.iter().flat_map(|a| a.bodies.iter())
    }

    /// Heap bytes held by the persistent state.
    pub fn heap_bytes(&self) -> usize {
        self.solids.heap_bytes() + self.liquid.heap_bytes() + self.bodies_heap_bytes()
    }

    /// Heap bytes of the deformable bodies: each model once, however many bodies share it, and
    /// each body's own state (its modal coordinates).
    pub fn bodies_heap_bytes(&self) -> usize {
        self.reduced_models().iter().map(|m| m.heap_bytes()).sum::<usize>() + self.reduced_bodies().map(|b| (b.q.len() + b.qdot.len()) * 8 + b.name.len()).sum::<usize>()
    }

    /// The deformable models in use, each once however many bodies share it.
    pub fn reduced_models(&self) -> Vec<&std::sync::Arc<crate::solids::reduced::body::ReducedModel>> {
        let mut models: Vec<&std::sync::Arc<crate::solids::reduced::body::ReducedModel>> = self.reduced_bodies().map(|b| &b.model).collect();
        models.sort_by_key(|m| std::sync::Arc::as_ptr(m));
        models.dedup_by(|a, b| std::sync::Arc::ptr_eq(a, b));
        models
    }
}

/// A reduced deformable body as its scene sets it up: turned by its initial orientation about
/// its centre of mass, moving with its initial velocity and spin (about that centre).
fn articulated(setup: &BodySetup, reduced: &ReducedSetup) -> Articulated {
    let mass: Real = reduced.parts.iter().map(|(_, model, _)| model.mass).sum();
    let centre = reduced.parts.iter().map(|(_, model, x)| model.mass * x).sum::<Vec3>() / mass;
    let turn = |x: &Vec3| centre + setup.orientation * (x - centre);
    let bodies = reduced
        .parts
        .iter()
        .map(|(name, model, position)| {
            let mut b = ReducedBody::new(name, model.clone(), turn(position));
            b.orientation = setup.orientation;
            b.velocity = setup.velocity + setup.angular_velocity.cross(&(b.position - centre));
            b.material = Material { restitution: setup.restitution, friction: setup.friction };
            b.set_angular_velocity(&setup.angular_velocity);
            b
        })
        .collect();
    let joints: Vec<(usize, usize, Vec3)> = reduced.joints.iter().map(|&(p, c, x)| (p, c, turn(&x))).collect();
    let actuators: Vec<(usize, Vec3, Vec3)> = reduced.actuators.iter().map(|&(b, x, f)| (b, turn(&x), setup.orientation * f)).collect();
    Articulated::new(&setup.name, bodies, &joints, &actuators, reduced.profile, reduced.skin).expect("joints are checked when the scene is read")
}

/// Rigid and reduced bodies together as coupled solids.
pub fn coupled_solids<'a>(bodies: &'a [RigidBody], reduced: &'a [Articulated]) -> Vec<&'a dyn CoupledSolid> {
    bodies.iter().map(|b| b as &dyn CoupledSolid).chain(reduced.iter().map(|b| b as &dyn CoupledSolid)).collect()
}

/// The signed distance to obstacles and bodies together at cell centres (`None` without
/// bodies). A body is only evaluated within two cells of its bounding sphere; farther out the
/// distance to the sphere stands in (a lower bound, and only the sign and the values near
/// surfaces are used).
fn solids_with_bodies(grid: &Grid, solids: &StaticSolids, bodies: &[&dyn CoupledSolid]) -> Option<Array3<Real>> {
    (!bodies.is_empty()).then(|| {
        let spheres: Vec<(Vec3, Real)> = bodies.iter().map(|b| b.bounding_sphere()).collect();
        solids.phi_cells.par_map(|i, j, k, obstacle| {
            let x = grid.position(Location::Cell, i, j, k);
            bodies.iter().zip(&spheres).fold(obstacle, |d, (b, (centre, radius))| {
                let sphere = (x - centre).norm() - radius;
                d.min(if sphere > 2.0 * grid.dx { sphere } else { b.signed_distance(&x) })
            })
        })
    })
}
