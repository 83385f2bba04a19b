//! Fluid models. Each owns its state and its phases; shared grid pieces live in [`crate::grid`].
//! A world holds one [`Fluid`]: a new model is one more variant, its phases (called by
//! [`crate::pipeline::step`]) and its part of the outputs.

pub mod eulerian;
pub mod flip;
pub mod lattice;

use crate::grid::{Array3, Grid, Location};
use crate::math::{Real, Vec3};
use crate::solids::StaticSolids;
use eulerian::{LevelSetLiquid, LiquidMeasures, LiquidSource, LiquidSurface};
use flip::FlipLiquid;
use lattice::SurfaceFlow;
use std::borrow::Cow;

/// The level-set liquid with what it lives in: the grid, the domain's walls and obstacles, and
/// the sources that feed it.
#[derive(Clone, Debug)]
pub struct LevelSetFluid {
    /// The MAC grid.
    pub grid: Grid,
    /// Domain walls and obstacles.
    pub statics: StaticSolids,
    /// The liquid.
    pub liquid: LevelSetLiquid,
    /// Liquid emitters.
    pub sources: Vec<LiquidSource>,
}

/// The fluid of a world.
#[derive(Clone, Debug)]
pub enum Fluid {
    /// Free-surface liquid with a particle level set on a MAC grid ([`eulerian`]).
    LevelSet(Box<LevelSetFluid>),
    /// Mass-full FLIP particles with unilateral or bilateral incompressibility ([`flip`]).
    Flip(Box<FlipLiquid>),
    /// Water as a lattice gas on an elastic height field ([`lattice`]).
    Surface(Box<SurfaceFlow>),
}

impl Fluid {
    /// The health check of the model's whole state: a non-finite value, or (grid liquids) a
    /// speed above `max_speed`, is a blow-up.
    pub fn check(&self, max_speed: Real) -> Result<(), String> {
        match self {
            Fluid::LevelSet(f) => f.liquid.check(max_speed),
            Fluid::Flip(f) => f.check(max_speed),
            Fluid::Surface(f) => f.check(),
        }
    }

    /// The model's name in outputs: `level-set`, `flip` or `surface-flow`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fluid::LevelSet(_) => "level-set",
            Fluid::Flip(_) => "flip",
            Fluid::Surface(_) => "surface-flow",
        }
    }

    /// The MAC grid of a grid fluid.
    pub fn grid(&self) -> Option<&Grid> {
        match self {
            Fluid::LevelSet(f) => Some(&f.grid),
            Fluid::Flip(f) => Some(&f.grid),
            Fluid::Surface(_) => None,
        }
    }

    /// The domain walls and obstacles of a grid fluid.
    pub fn statics(&self) -> Option<&StaticSolids> {
        match self {
            Fluid::LevelSet(f) => Some(&f.statics),
            Fluid::Flip(f) => Some(&f.statics),
            Fluid::Surface(_) => None,
        }
    }

    /// A level set of a grid fluid's liquid at cell centres (negative inside, extended into
    /// solids): the particle level set, or FLIP's from its cells' fill
    /// ([`FlipLiquid::liquid_phi`] around `bodies`).
    pub fn cell_phi(&self, bodies: &[&dyn crate::solids::CoupledSolid]) -> Option<Cow<'_, Array3<Real>>> {
        match self {
            Fluid::LevelSet(f) => Some(Cow::Borrowed(&f.liquid.phi)),
            Fluid::Flip(f) => Some(Cow::Owned(f.liquid_phi(&f.density, bodies))),
            Fluid::Surface(_) => None,
        }
    }

    /// Volume (m^3), kinetic energy (J), momentum (kg m/s) and the largest speed (m/s) of the
    /// liquid (a surface flow: its water volume, and the sheet's kinetic energy).
    pub fn measures(&self) -> LiquidMeasures {
        match self {
            Fluid::LevelSet(f) => f.liquid.measures(&f.grid, &f.statics),
            Fluid::Flip(f) => f.measures(),
            Fluid::Surface(f) => {
                let energy = f.sheet.energy(f.dt, &f.gravity);
                LiquidMeasures { volume: f.water_volume(), kinetic_energy: energy.kinetic, momentum: Vec3::zeros(), max_speed: 0.0 }
            }
        }
    }

    /// The liquid's surface as a mesh with the liquid's velocity at each vertex.
    pub fn surface(&self) -> LiquidSurface {
        match self {
            Fluid::LevelSet(f) => f.liquid.surface(&f.grid),
            Fluid::Flip(f) => f.surface(),
            Fluid::Surface(f) => {
                let (_, water) = f.meshes();
                let velocities = vec![Vec3::zeros(); water.vertices.len()];
                LiquidSurface { mesh: water, velocities }
            }
        }
    }

    /// Heap bytes held by the state.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Fluid::LevelSet(f) => f.statics.heap_bytes() + f.liquid.heap_bytes(),
            Fluid::Flip(f) => f.heap_bytes(),
            Fluid::Surface(f) => f.heap_bytes(),
        }
    }

    /// The fluid's state for a checkpoint.
    pub fn save_state(&self) -> Vec<u8> {
        match self {
            Fluid::LevelSet(f) => f.liquid.save_state(),
            Fluid::Flip(f) => f.save_state(),
            Fluid::Surface(f) => f.save_state(),
        }
    }

    /// Restores a state written by [`Fluid::save_state`] for the same scene.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Fluid::LevelSet(f) => f.liquid.restore_state(bytes),
            Fluid::Flip(f) => f.restore_state(bytes),
            Fluid::Surface(f) => f.restore_state(bytes),
        }
    }
}

/// Volume of `solid` below a liquid's surface given by `phi` at cell centres (m^3): the cells
/// around it weighted by the smoothed fractions of the cell inside the solid and inside the
/// liquid (first order in the cell size).
pub fn submerged_volume(grid: &Grid, phi: &Array3<Real>, solid: &dyn crate::solids::CoupledSolid) -> Real {
    let (centre, radius) = solid.bounding_sphere();
    let reach = Vec3::repeat(radius + grid.dx);
    let (lo, hi) = (grid.cell_of(&(centre - reach)), grid.cell_of(&(centre + reach)));
    let mut volume = 0.0;
    for k in lo[2]..=hi[2] {
        for j in lo[1]..=hi[1] {
            for i in lo[0]..=hi[0] {
                let x = grid.position(Location::Cell, i, j, k);
                let inside = (0.5 - solid.signed_distance(&x) / grid.dx).clamp(0.0, 1.0);
                let wet = (0.5 - phi.get(i, j, k) / grid.dx).clamp(0.0, 1.0);
                volume += inside * wet;
            }
        }
    }
    volume * grid.dx.powi(3)
}
