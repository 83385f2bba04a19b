//! The state of one simulation. No loop and no I/O here.

use crate::fluids::eulerian::{LevelSetLiquid, LiquidParams, LiquidSource};
use crate::grid::{Grid, Location};
use crate::math::{vec3, Real, Vec3};
use crate::scene::{LoadedScene, Operation};
use crate::solids::StaticSolids;
use tidepool_linalg::PcgParams;

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
    /// Time.
    pub clock: Clock,
}

impl World {
    /// Sets up the initial state of a scene.
    pub fn build(loaded: &LoadedScene) -> World {
        let scene = &loaded.scene;
        let grid = loaded.grid;
        let sim = &scene.simulation;
        let settings = Settings {
            frames: sim.frames,
            fps: sim.fps,
            cfl: sim.cfl,
            gravity: vec3(sim.gravity),
            max_speed: sim.max_speed,
        };
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
        let liquid = LevelSetLiquid::new(&grid, params, phi, &solids);
        let sources = l
            .source
            .iter()
            .zip(&loaded.sources)
            .map(|(s, shape)| LiquidSource {
                shape: shape.clone(),
                velocity: vec3(s.velocity),
                start: s.start,
                end: s.end.unwrap_or(Real::INFINITY),
            })
            .collect();
        World { grid, settings, solids, liquid, sources, clock: Clock::default() }
    }

    /// Heap bytes held by the persistent state.
    pub fn heap_bytes(&self) -> usize {
        self.solids.heap_bytes() + self.liquid.heap_bytes()
    }
}
