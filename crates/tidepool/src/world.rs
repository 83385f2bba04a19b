//! The state of one simulation. No loop and no I/O here.

use crate::error::SceneError;
use crate::fluids::eulerian::{LevelSetLiquid, LiquidParams};
use crate::fluids::flip::{Explosion, FlipLiquid, FlipParams};
use crate::fluids::lattice::{LatticeGas, SurfaceFlow};
use crate::fluids::multiphase::{Phase, PhaseChange, Phases, Reaction};
use crate::fluids::smoke::{SmokeFluid, SmokeParams, SmokeSource};
use crate::fluids::viscoelasticity::Elasticity;
use crate::fluids::viscosity::Viscosity;
use crate::fluids::{Fluid, LevelSetFluid};
use crate::geometry::Shape;
use crate::grid::{Array3, Grid, Location};
use crate::math::{vec3, Real, Vec3};
use crate::scene::surface::{LoadedSurfaceScene, SurfaceSetup};
use crate::scene::ModelMesh;
use crate::scene::{AnyScene, BodySetup, DeformableMethod, ElasticChange, LiquidMethod, LoadedScene, Operation, ReducedSetup};
pub use crate::settings::{Clock, Settings};
use crate::solids::contact::StaticGeometry;
use crate::solids::contact::STATIC_MATERIAL;
use crate::solids::deformable::body::PinMotion;
use crate::solids::deformable::skeleton::BoneSetup;
use crate::solids::deformable::{DeformableBody, DeformableModel};
use crate::solids::mass_spring::ElasticSheet;
use crate::solids::reduced::articulated::Articulated;
use crate::solids::reduced::body::{ReducedBody, ReducedModel};
use crate::solids::rigid::{BodyKind, Material, RigidBody};
use crate::solids::Boundary;
use crate::solids::{CoupledSolid, Solids, StaticSolids};
use std::sync::Arc;
use tidepool_linalg::PcgParams;

/// The surface flow a scene's setup starts.
fn surface_flow(s: &SurfaceSetup) -> SurfaceFlow {
    let mut sheet = ElasticSheet::new(s.dims, s.spacing, |i, j| s.heights[i + s.dims[0] * j], s.mass, s.stiffness, s.damping);
    if s.pinned_edges {
        sheet.pin_edges();
    }
    let mut gas = LatticeGas::new(s.dims, s.particle_height);
    gas.counters = s.counters.clone();
    gas.active = s.active.clone();
    gas.open = s.open;
    let mut flow = SurfaceFlow::new(sheet, gas, s.dt);
    flow.gravity = s.gravity;
    flow.particle_weight = s.particle_weight;
    flow.forces = s.forces.clone();
    flow.wave = s.wave;
    flow.exchange = s.exchange.clone();
    flow
}

/// The stopping rule of the liquid's pressure (and viscous) solves.
fn pressure_solve(liquid: &crate::scene::schema::Liquid) -> PcgParams {
    PcgParams { tolerance: liquid.pressure_tolerance, max_iterations: liquid.pressure_max_iterations as usize }
}

/// The liquid's viscosity as the solves take it (kinematic; its solve stops as the pressure's).
fn viscosity(liquid: &crate::scene::schema::Liquid) -> Viscosity {
    Viscosity { kinematic: liquid.viscosity / liquid.density, density: liquid.density, slip: liquid.slip, solve: pressure_solve(liquid) }
}

/// The elasticity of a viscoelastic liquid's or phase's `[.elastic]` table (none without).
fn elasticity(elastic: Option<crate::scene::schema::Elastic>) -> Elasticity {
    elastic.map_or(Elasticity::NONE, |e| Elasticity {
        modulus: e.modulus,
        yield_strain: e.yield_strain.unwrap_or(Real::INFINITY),
        plastic_rate: e.plastic_rate.unwrap_or(Real::INFINITY),
    })
}

/// The phases of a liquid of several, filling their level sets `phi`, on a grid of cells `dx`
/// wide (the reactions' bubbles are three cells by default).
fn phases(liquid: &crate::scene::schema::Liquid, phi: Vec<Array3<Real>>, dx: Real) -> Phases {
    let n = liquid.phase.len();
    let list = liquid
        .phase
        .iter()
        .map(|p| Phase { name: p.name.clone(), density: p.density, viscosity: p.viscosity, elasticity: elasticity(p.elastic), air_tension: p.surface_tension })
        .collect();
    let index = |name: &String| liquid.phase.iter().position(|p| &p.name == name).unwrap_or(0);
    let mut tension = vec![0.0; n * n];
    for interface in &liquid.interface {
        let (a, b) = (index(&interface.between[0]), index(&interface.between[1]));
        tension[a * n + b] = interface.surface_tension;
        tension[b * n + a] = interface.surface_tension;
    }
    let region = |name: &String| crate::scene::region_index(liquid, name);
    let reactions = liquid
        .reaction
        .iter()
        .map(|r| Reaction {
            reactants: r.between.each_ref().map(region),
            product: region(&r.product),
            rate: r.rate,
            bubble_radius: r.bubble_radius.unwrap_or(3.0 * dx),
            expansion: r.expansion,
        })
        .collect();
    let changes = liquid
        .phase
        .iter()
        .map(|p| {
            p.change
                .iter()
                .map(|c| PhaseChange {
                    time: c.time,
                    density: c.density,
                    viscosity: c.viscosity,
                    air_tension: c.surface_tension,
                    elasticity: c.elastic.map(|e| match e {
                        ElasticChange::Off(_) => Elasticity::NONE,
                        ElasticChange::To(e) => elasticity(Some(e)),
                    }),
                })
                .collect()
        })
        .collect();
    Phases::new(list, tension, phi).with_reactions(reactions).with_changes(changes)
}

/// The FLIP settings of a scene.
pub fn flip_params(loaded: &LoadedScene) -> FlipParams {
    let scene = &loaded.scene;
    let (liquid, flip) = (&scene.liquid, &scene.liquid.flip);
    FlipParams {
        incompressibility: flip.incompressibility,
        flip_ratio: flip.flip_ratio,
        particles_per_cell: flip.particles_per_cell as usize,
        advection: flip.advection,
        density: liquid.density,
        solver: pressure_solve(liquid),
        preconditioner: liquid.pressure_preconditioner,
        density_correction: flip.density_correction,
        suction_depth: flip.suction_depth as usize,
        viscosity: viscosity(liquid),
        seed: scene.simulation.seed,
        moves_bodies: loaded.bodies.iter().any(|b| b.kind == BodyKind::Dynamic || b.reduced.is_some()),
        up: scene.simulation.settings().up(),
    }
}

/// The smoke of a scene with `[smoke]`, in the domain's walls and obstacles `statics`.
fn smoke(loaded: &LoadedScene, statics: StaticSolids) -> SmokeFluid {
    let scene = &loaded.scene;
    let smoke = scene.smoke.as_ref().expect("a smoke scene");
    let settings = scene.simulation.settings();
    let params = SmokeParams {
        air_density: smoke.air_density,
        ambient_temperature: smoke.ambient_temperature,
        weight: smoke.weight,
        vorticity: smoke.vorticity,
        advection: smoke.advection,
        pressure: PcgParams { tolerance: smoke.pressure_tolerance, max_iterations: smoke.pressure_max_iterations as usize },
        preconditioner: smoke.pressure_preconditioner,
        gravity: settings.gravity.norm(),
        up: settings.up(),
    };
    let regions: Vec<(Shape, Real, Real)> = smoke.region.iter().zip(&loaded.smoke_regions).map(|(r, shape)| (shape.clone(), r.density, r.temperature)).collect();
    let sources = smoke
        .source
        .iter()
        .zip(&loaded.smoke_sources)
        .map(|(s, shape)| SmokeSource {
            shape: shape.clone(),
            density: s.density,
            temperature: s.temperature,
            velocity: vec3(s.velocity),
            start: s.start,
            end: s.end.unwrap_or(Real::INFINITY),
        })
        .collect();
    SmokeFluid::new(loaded.grid, statics, params, &regions, sources)
}

/// The scene's explosions (FLIP).
fn explosions(loaded: &LoadedScene) -> Vec<Explosion> {
    loaded.scene.liquid.flip.explosion.iter().map(|e| Explosion { center: vec3(e.center), radius: e.radius, speed: e.speed, time: e.time }).collect()
}

/// A rigid body as its setup describes it: a dynamic one with its initial velocities, a
/// kinematic one with its velocities or path, a static one at rest.
pub fn rigid_body(b: &crate::scene::BodySetup, grid: &Grid) -> RigidBody {
    let material = Material { restitution: b.restitution, friction: b.friction };
    let mut body = RigidBody::new(&b.name, b.kind, &b.shape, b.density, material, 0.5 * grid.dx);
    // Asked for at every point near it several times a substep, as the obstacles are: mesh
    // and shell bodies are sampled at a quarter cell.
    body.shape = body.shape.sampled(0.25 * grid.dx, grid.dx);
    body.orientation = b.orientation;
    body.damping = b.damping;
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

/// One simulation: settings, the fluid, the moving solids and the clock. No loop and no I/O.
#[derive(Clone, Debug)]
pub struct World {
    /// Global settings.
    pub settings: Settings,
    /// The fluid model and its state.
    pub fluid: Fluid,
    /// Moving solids by kind, and the static geometry they collide with.
    pub solids: Solids,
    /// Passive tracer particles (plankton): positions carried by the liquid, acting on nothing.
    pub tracers: Vec<Vec3>,
    /// Time.
    pub clock: Clock,
}

impl World {
    /// Sets up the initial state of a scene of either kind.
    pub fn of(scene: &AnyScene) -> Result<World, SceneError> {
        match scene {
            AnyScene::Liquid(loaded) => World::build(loaded),
            AnyScene::Surface(loaded) => Ok(World::from_surface(loaded)),
        }
    }

    /// Sets up the initial state of a liquid scene (level set or FLIP, by `liquid.method`):
    /// runs the modal analysis of its deformable bodies, whose failures (and joints that do
    /// not hold) are errors at the scene's values.
    pub fn build(loaded: &LoadedScene) -> Result<World, SceneError> {
        let scene = &loaded.scene;
        let grid = loaded.grid;
        let settings = scene.simulation.settings();
        let statics = StaticSolids::new(&grid, scene.domain.boundary.sides(), loaded.obstacles.clone());
        let mut solids = Solids::new(StaticGeometry {
            min: grid.origin,
            max: grid.max_corner(),
            walls: statics.boundaries.map(|sides| sides.map(|b| b == Boundary::Wall)),
            // Contact asks for the obstacles' distance at every sample of every body near them,
            // several times a substep: mesh obstacles are sampled at a quarter cell.
            obstacles: loaded.obstacles.iter().map(|(_, shape)| shape.sampled(0.25 * grid.dx, grid.dx)).collect(),
            material: STATIC_MATERIAL,
        });
        let models = reduced_models(loaded)?;
        let full = full_models(loaded)?;
        for b in &loaded.bodies {
            match &b.reduced {
                Some(setup) if setup.method != DeformableMethod::Modal => {
                    solids.deformable.insert(deformable_body(b, setup, &full, &loaded.bodies).map_err(|(key, e)| loaded.error(&format!("{}.{key}", setup.key), e))?);
                }
                Some(setup) => {
                    solids.reduced.insert(articulated(b, setup, &models).map_err(|e| loaded.error(&format!("{}.shape", setup.key), e))?);
                }
                None => {
                    solids.rigid.insert(rigid_body(b, &grid));
                }
            }
        }
        let fluid = match scene.liquid.method {
            _ if scene.smoke.is_some() => Fluid::Smoke(Box::new(smoke(loaded, statics))),
            LiquidMethod::Flip => {
                let inside = |x: &Vec3| loaded.in_initial_liquid(x, 0.0);
                Fluid::Flip(Box::new(FlipLiquid::new(grid, statics, flip_params(loaded), explosions(loaded), loaded.liquid_sources(), inside, &solids.coupled())))
            }
            LiquidMethod::LevelSet => {
                let far = grid.dx * grid.dims.iter().sum::<usize>() as Real;
                // The liquid's level set, or that of one phase (`Some(k)`): a region of another
                // phase takes its shape from it.
                let level_set = |phase: Option<usize>| {
                    grid.sample_fn(Location::Cell, |x| {
                        loaded.regions.iter().fold(far, |phi, (op, shape, k)| match op {
                            Operation::Add if phase.is_none_or(|p| p == *k) => phi.min(shape.signed_distance(&x)),
                            _ => phi.max(-shape.signed_distance(&x)),
                        })
                    })
                };
                let l = &scene.liquid;
                let phases = (!l.phase.is_empty()).then(|| phases(l, (0..l.phase.len()).map(|k| level_set(Some(k))).collect(), grid.dx));
                // With phases, the densest one's density is the reference of the scaled solves.
                let density = phases.as_ref().map_or(l.density, Phases::max_density);
                let params = LiquidParams {
                    density,
                    advection: l.advection,
                    pressure: pressure_solve(l),
                    preconditioner: l.pressure_preconditioner,
                    viscosity: Viscosity { density, ..viscosity(l) },
                    surface_tension: l.surface_tension,
                    elasticity: elasticity(l.elastic),
                    particles_per_cell: l.particles_per_cell as usize,
                    reseed_every: l.reseed_every as u64,
                    seed: scene.simulation.seed,
                    volume_correction: l.volume_correction,
                    up: settings.up(),
                };
                let distance = solids_with_bodies(&grid, &statics, &solids.coupled());
                let mut liquid = LevelSetLiquid::new(&grid, params, level_set(None), &statics, distance);
                if let Some(phases) = phases {
                    liquid = liquid.with_phases(&grid, &statics, phases);
                }
                Fluid::LevelSet(Box::new(LevelSetFluid { grid, statics, liquid, sources: loaded.liquid_sources() }))
            }
        };
        Ok(World { settings, fluid, solids, tracers: loaded.tracers.clone(), clock: Clock::default() })
    }

    /// Sets up the initial state of a surface-flow scene: frames of `steps_per_frame` steps of
    /// the scene's fixed step; no moving solids.
    pub fn from_surface(loaded: &LoadedSurfaceScene) -> World {
        let sim = &loaded.scene.simulation;
        let flow = surface_flow(&loaded.setup);
        let settings = Settings { frames: sim.frames, fps: 1.0 / (sim.steps_per_frame as Real * sim.dt), cfl: 1.0, gravity: flow.gravity, max_speed: Real::INFINITY };
        let statics = StaticGeometry { min: Vec3::zeros(), max: Vec3::zeros(), walls: [[false; 2]; 3], obstacles: Vec::new(), material: STATIC_MATERIAL };
        World { settings, fluid: Fluid::Surface(Box::new(flow)), solids: Solids::new(statics), tracers: Vec::new(), clock: Clock::default() }
    }

    /// The health check of the whole state, the fluid's and every solid's: a non-finite
    /// value or a speed above `simulation.max_speed` anywhere is a blow-up. Run after every
    /// substep and before every frame is written.
    pub fn check(&self) -> Result<(), String> {
        self.fluid.check(self.settings.max_speed)?;
        self.solids.iter().try_for_each(|s| s.check(self.settings.max_speed))
    }

    /// The level-set liquid, if that is the world's fluid.
    pub fn level_set(&self) -> Option<&LevelSetFluid> {
        match &self.fluid {
            Fluid::LevelSet(f) => Some(f),
            _ => None,
        }
    }

    /// The FLIP liquid, if that is the world's fluid.
    pub fn flip(&self) -> Option<&FlipLiquid> {
        match &self.fluid {
            Fluid::Flip(f) => Some(f),
            _ => None,
        }
    }

    /// The fixed step of a fluid that has one (the surface flow's automaton), else `None`
    /// (substeps follow the CFL condition, [`World::cfl_dt`]).
    pub fn fixed_dt(&self) -> Option<Real> {
        match &self.fluid {
            Fluid::Surface(f) => Some(f.dt),
            _ => None,
        }
    }

    /// Longest substep the CFL number allows: neither the liquid nor any point of a body may
    /// cross more than `cfl` cells; and no longer than the solids' own forces allow
    /// ([`Solids::max_time_step`]).
    pub fn cfl_dt(&self) -> Real {
        let s = &self.settings;
        let fastest_body = self.solids.max_point_speed();
        let solids = self.solids.max_time_step();
        solids.min(match &self.fluid {
            Fluid::LevelSet(f) => {
                let liquid = f.liquid.cfl_dt(&f.grid, s.cfl, &s.gravity, &f.sources);
                if fastest_body > 0.0 {
                    liquid.min(s.cfl * f.grid.dx / fastest_body)
                } else {
                    liquid
                }
            }
            Fluid::Flip(f) => f.cfl_dt(s, fastest_body),
            Fluid::Smoke(f) => {
                let air = f.cfl_dt(s.cfl);
                if fastest_body > 0.0 {
                    air.min(s.cfl * f.grid.dx / fastest_body)
                } else {
                    air
                }
            }
            Fluid::Surface(f) => f.dt,
        })
    }

    /// The volume of each solid part below the liquid's surface (m^3), in the order of the
    /// parts of [`Solids::iter`]; zeros without a grid liquid.
    pub fn submerged_volumes(&self) -> Vec<Real> {
        let parts: Vec<&dyn CoupledSolid> = self.solids.iter().flat_map(|s| s.parts().into_iter().map(|(_, part)| part)).collect();
        match (self.fluid.grid(), self.fluid.cell_phi(&self.solids.coupled())) {
            (Some(grid), Some(phi)) => {
                let up = self.settings.up();
                parts.iter().map(|part| crate::fluids::submerged_volume(grid, &phi, *part, &up)).collect()
            }
            _ => vec![0.0; parts.len()],
        }
    }

    /// Samples the distance to obstacles and bodies at cell centres for the level-set liquid.
    pub fn update_solid_distance(&mut self) {
        if let Fluid::LevelSet(f) = &mut self.fluid {
            f.liquid.solids_with_bodies = solids_with_bodies(&f.grid, &f.statics, &self.solids.coupled());
        }
    }

    /// Every reduced deformable body (the sub-bodies of articulations in turn).
    pub fn reduced_bodies(&self) -> impl Iterator<Item = &ReducedBody> {
        self.solids.reduced.iter().flat_map(|a| a.bodies.iter())
    }

    /// Heap bytes held by the persistent state.
    pub fn heap_bytes(&self) -> usize {
        self.fluid.heap_bytes() + self.bodies_heap_bytes()
    }

    /// Heap bytes of the deformable bodies: each model once, however many bodies share it, and
    /// each body's own state and caches.
    pub fn bodies_heap_bytes(&self) -> usize {
        self.reduced_models().iter().map(|m| m.heap_bytes()).sum::<usize>() + self.reduced_bodies().map(ReducedBody::heap_bytes).sum::<usize>()
    }

    /// The deformable models in use, each once however many bodies share it.
    pub fn reduced_models(&self) -> Vec<&Arc<ReducedModel>> {
        let mut models: Vec<&Arc<ReducedModel>> = self.reduced_bodies().map(|b| &b.model).collect();
        models.sort_by_key(|m| Arc::as_ptr(m));
        models.dedup_by(|a, b| Arc::ptr_eq(a, b));
        models
    }
}

/// A reduced deformable body as its scene sets it up: turned by its initial orientation about
/// its centre of mass, moving with its initial velocity and spin (about that centre).
fn articulated(setup: &BodySetup, reduced: &ReducedSetup, models: &[Option<Arc<ReducedModel>>]) -> Result<Articulated, String> {
    // Each part's model is centred on its mesh's centre of mass.
    let parts: Vec<(&str, &Arc<ReducedModel>, Vec3)> = reduced
        .parts
        .iter()
        .map(|p| {
            let model = models[p.model].as_ref().expect("a modal part has a modal model");
            (p.name.as_str(), model, p.position + model.centre_offset)
        })
        .collect();
    let mass: Real = parts.iter().map(|(_, model, _)| model.mass).sum();
    let centre = parts.iter().map(|(_, model, x)| model.mass * x).sum::<Vec3>() / mass;
    let turn = |x: &Vec3| centre + setup.orientation * (x - centre);
    let bodies = parts
        .iter()
        .map(|&(name, model, position)| {
            let mut b = ReducedBody::new(name, Arc::clone(model), turn(&position));
            b.orientation = setup.orientation;
            b.velocity = setup.velocity + setup.angular_velocity.cross(&(b.position - centre));
            b.material = Material { restitution: setup.restitution, friction: setup.friction };
            b.set_angular_velocity(&setup.angular_velocity);
            b
        })
        .collect();
    let joints: Vec<(usize, usize, Vec3)> = reduced.joints.iter().map(|&(p, c, x)| (p, c, turn(&x))).collect();
    let actuators: Vec<(usize, Vec3, Vec3)> = reduced.actuators.iter().map(|&(b, x, f)| (b, turn(&x), setup.orientation * f)).collect();
    Articulated::new(&setup.name, bodies, &joints, &actuators, reduced.profile, reduced.skin)
}

/// The modal analysis of the scene's modal deformable models (kept in the disk cache where
/// there is one), `None` for the models of bodies simulated in full.
fn reduced_models(loaded: &LoadedScene) -> Result<Vec<Option<Arc<ReducedModel>>>, SceneError> {
    let cache = crate::solids::reduced::cache::directory();
    loaded
        .models
        .iter()
        .map(|m| {
            let ModelMesh::Volume { tets, surface } = &m.mesh else { return Ok(None) };
            if m.method != DeformableMethod::Modal {
                return Ok(None);
            }
            ReducedModel::new(tets, &m.material, m.modes, m.damping, false, cache.as_deref())
                .map(|model| {
                    Some(Arc::new(match surface {
                        Some(surface) => model.with_skin(surface),
                        None => model,
                    }))
                })
                .map_err(|e| loaded.error(&format!("{}.modes", m.key), format!("the body's mesh ({}): {e}", m.mesh.size())))
        })
        .collect()
}

/// The finite-element models of the scene's bodies simulated in full (copies of one shape
/// share one), `None` for modal models.
fn full_models(loaded: &LoadedScene) -> Result<Vec<Option<Arc<DeformableModel>>>, SceneError> {
    loaded
        .models
        .iter()
        .map(|m| {
            let (young, poisson, density) = (m.material.young, m.material.poisson, m.material.density);
            let model = match &m.mesh {
                _ if m.method == DeformableMethod::Modal => return Ok(None),
                ModelMesh::Volume { tets, surface } => DeformableModel::new(tets.clone(), young, poisson, m.damping, density, surface.as_ref()),
                ModelMesh::Sheet { triangles, thickness } => DeformableModel::sheet(triangles, *thickness, young, poisson, m.damping, density),
            };
            model.map(|model| Some(Arc::new(model))).map_err(|e| loaded.error(&format!("{}.spacing", m.key), format!("the body's mesh ({}): {e}", m.mesh.size())))
        })
        .collect()
}

/// A deformable body simulated in full as its scene sets it up: its mesh placed and turned
/// like the shape, every particle moving with the initial velocity and spin about the
/// shape's centroid, the particles inside each pin's shape pinned and moved by it (or by the
/// kinematic body it binds them to).
/// An error names the key under the body's where it was found.
fn deformable_body(setup: &BodySetup, reduced: &ReducedSetup, models: &[Option<Arc<DeformableModel>>], bodies: &[BodySetup]) -> Result<DeformableBody, (String, String)> {
    let part = &reduced.parts[0];
    let model = models[part.model].as_ref().expect("a full body's part has a finite-element model");
    let positions: Vec<Vec3> = model.rest.iter().map(|v| part.position + setup.orientation * v).collect();
    let mut body = DeformableBody::new(&setup.name, Arc::clone(model), positions, Material { restitution: setup.restitution, friction: setup.friction });
    body.drag = setup.damping;
    body.velocities = body.positions.iter().map(|x| setup.velocity + setup.angular_velocity.cross(&(x - part.position))).collect();
    for (n, pin) in reduced.pins.iter().enumerate() {
        let taken: Vec<bool> = (0..body.positions.len()).map(|i| body.pins.iter().any(|p| p.particles.contains(&(i as u32)))).collect();
        let particles: Vec<u32> = (0..body.positions.len() as u32).filter(|&i| !taken[i as usize] && pin.shape.signed_distance(&body.positions[i as usize]) <= 0.0).collect();
        if particles.is_empty() {
            return Err((
                format!("pin[{n}].shape"),
                format!("no particle of the body lies inside the pin's shape, or all that do belong to an earlier pin (the body has {} particles)", body.positions.len()),
            ));
        }
        if pin.spring.is_none() {
            for &i in &particles {
                body.pinned[i as usize] = true;
                body.velocities[i as usize] = Vec3::zeros();
            }
        }
        let motion = match pin.body.map(|b| &bodies[b]) {
            None => PinMotion::new(particles, &body.positions, pin.path.clone(), pin.angular_velocity, pin.spring),
            Some(b) => PinMotion::new(particles, &body.positions, b.path.clone(), b.angular_velocity, pin.spring).with_body(b.shape.mass_properties().centroid, b.velocity),
        };
        body.pins.push(motion);
    }
    let mut taken = vec![false; body.positions.len()];
    let mut bones = Vec::with_capacity(reduced.bones.len());
    for (n, bone) in reduced.bones.iter().enumerate() {
        let particles: Vec<u32> = (0..body.positions.len() as u32).filter(|&i| !taken[i as usize] && bone.shape.signed_distance(&body.positions[i as usize]) <= 0.0).collect();
        if particles.is_empty() {
            return Err((
                format!("bone[{n}].shape"),
                format!("no particle of the body lies inside the bone's shape, or all that do belong to an earlier bone (the body has {} particles)", body.positions.len()),
            ));
        }
        for &i in &particles {
            taken[i as usize] = true;
        }
        bones.push(BoneSetup { name: bone.name.clone(), particles, joint: bone.joint.clone() });
    }
    if !bones.is_empty() {
        body.set_bones(bones).map_err(|e| ("bone".to_string(), e))?;
    }
    if reduced.incompressible {
        body.make_incompressible().map_err(|e| ("deformable.incompressible".to_string(), e))?;
    }
    Ok(body)
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
