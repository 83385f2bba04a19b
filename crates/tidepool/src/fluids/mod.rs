//! Fluid models. Each owns its state and its phases; shared grid pieces live in [`crate::grid`].
//! A world holds one [`Fluid`]: a new model is one more variant, its phases (called by
//! [`crate::pipeline::step`]) and its part of the outputs.

pub mod eulerian;
pub mod flip;
pub mod lattice;
pub mod multiphase;
pub mod smoke;
pub mod viscoelasticity;
pub mod viscosity;

use crate::grid::advection::advect_points;
use crate::grid::fraction::{box_fraction_inside, sub_boxes};
use crate::grid::{Array3, Grid, Location, Sampled};
use crate::math::{Real, Vec3};
use crate::solids::StaticSolids;
use eulerian::{LevelSetLiquid, LiquidMeasures, LiquidSource, LiquidSurface};
use flip::FlipLiquid;
use lattice::SurfaceFlow;
use smoke::SmokeFluid;
use std::borrow::Cow;
use tidepool_linalg::reduce::sum_by;

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

impl LevelSetFluid {
    /// Whether there is no liquid and none can appear (no sources): only solids move.
    pub fn is_dry(&self) -> bool {
        self.sources.is_empty() && self.liquid.phases.is_none() && self.liquid.phi.as_slice().iter().all(|phi| *phi > 0.0)
    }
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
    /// Smoke-laden air filling the grid ([`smoke`]).
    Smoke(Box<SmokeFluid>),
}

impl Fluid {
    /// The health check of the model's whole state: a non-finite value, or (grid liquids) a
    /// speed above `max_speed`, is a blow-up.
    pub fn check(&self, max_speed: Real) -> Result<(), String> {
        match self {
            Fluid::LevelSet(f) => f.liquid.check(max_speed),
            Fluid::Flip(f) => f.check(max_speed),
            Fluid::Surface(f) => f.check(),
            Fluid::Smoke(f) => f.check(max_speed),
        }
    }

    /// The model's name in outputs: `level-set`, `flip`, `surface-flow` or `smoke`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fluid::LevelSet(_) => "level-set",
            Fluid::Flip(_) => "flip",
            Fluid::Surface(_) => "surface-flow",
            Fluid::Smoke(_) => "smoke",
        }
    }

    /// The MAC grid of a grid fluid.
    pub fn grid(&self) -> Option<&Grid> {
        match self {
            Fluid::LevelSet(f) => Some(&f.grid),
            Fluid::Flip(f) => Some(&f.grid),
            Fluid::Smoke(f) => Some(&f.grid),
            Fluid::Surface(_) => None,
        }
    }

    /// The domain walls and obstacles of a grid fluid.
    pub fn statics(&self) -> Option<&StaticSolids> {
        match self {
            Fluid::LevelSet(f) => Some(&f.statics),
            Fluid::Flip(f) => Some(&f.statics),
            Fluid::Smoke(f) => Some(&f.statics),
            Fluid::Surface(_) => None,
        }
    }

    /// A level set of a grid fluid's liquid at cell centres (negative inside, extended into
    /// solids): the particle level set, or FLIP's from its cells' fill
    /// ([`FlipLiquid::liquid_phi`] around `bodies`); `None` for smoke, which has no surface.
    pub fn cell_phi(&self, bodies: &[&dyn crate::solids::CoupledSolid]) -> Option<Cow<'_, Array3<Real>>> {
        match self {
            Fluid::LevelSet(f) => Some(Cow::Borrowed(&f.liquid.phi)),
            Fluid::Flip(f) => Some(Cow::Owned(f.liquid_phi(&f.density, bodies))),
            Fluid::Surface(_) | Fluid::Smoke(_) => None,
        }
    }

    /// Volume (m^3), kinetic energy (J), momentum (kg m/s) and the largest speed (m/s) of the
    /// liquid (a surface flow: its water volume, and the sheet's kinetic energy; smoke: the
    /// smoke's amount as the volume, [`SmokeFluid::measures`]).
    pub fn measures(&self) -> LiquidMeasures {
        match self {
            Fluid::LevelSet(f) => f.liquid.measures(&f.grid, &f.statics),
            Fluid::Flip(f) => f.measures(),
            Fluid::Surface(f) => {
                let energy = f.sheet.energy(f.dt, &f.gravity);
                LiquidMeasures { volume: f.water_volume(), kinetic_energy: energy.kinetic, momentum: Vec3::zeros(), max_speed: 0.0 }
            }
            Fluid::Smoke(f) => f.measures(),
        }
    }

    /// The liquid's surface as a mesh with the liquid's velocity at each vertex.
    pub fn surface(&self) -> LiquidSurface {
        self.surface_from(self.surface_phi().as_ref())
    }

    /// The liquid's surface from its `phi` ([`Self::surface_phi`]; `None` for the surface
    /// flow, whose water mesh it is, and for smoke, which has none: an empty mesh).
    pub fn surface_from(&self, phi: Option<&Sampled<Real>>) -> LiquidSurface {
        match (self, phi) {
            (Fluid::LevelSet(f), Some(phi)) => f.liquid.surface_from(&f.grid, phi),
            (Fluid::Flip(f), Some(phi)) => f.surface_from(phi),
            (Fluid::LevelSet(_) | Fluid::Flip(_), None) => self.surface(),
            (Fluid::Surface(f), _) => {
                let (_, water) = f.meshes();
                let velocities = vec![Vec3::zeros(); water.vertices.len()];
                LiquidSurface { mesh: water, velocities }
            }
            (Fluid::Smoke(_), _) => LiquidSurface { mesh: Default::default(), velocities: Vec::new() },
        }
    }

    /// Carries passive `points` (tracers) through the liquid's velocity over `dt` (midpoint
    /// rule, kept in the domain); the surface flow has no velocity field and leaves them.
    pub fn carry(&self, points: &mut [Vec3], dt: Real) {
        match self {
            Fluid::LevelSet(f) => advect_points(&f.grid, &f.liquid.velocity, points, dt),
            Fluid::Flip(f) => advect_points(&f.grid, &f.velocity, points, dt),
            Fluid::Smoke(f) => advect_points(&f.grid, &f.velocity, points, dt),
            Fluid::Surface(_) => {}
        }
    }

    /// The signed distance (m, negative in the liquid) whose zero set is the surface mesh, on
    /// the lattice it is extracted from; `None` for the surface flow and smoke, which have no
    /// level set.
    pub fn surface_phi(&self) -> Option<Sampled<Real>> {
        match self {
            Fluid::LevelSet(f) => Some(f.liquid.padded_phi(&f.grid)),
            Fluid::Flip(f) => Some(f.surface_phi()),
            Fluid::Surface(_) | Fluid::Smoke(_) => None,
        }
    }

    /// The velocity volume of the caches: the velocity at the cell centres within
    /// [`eulerian::VOLUME_BAND`] cells of the surface `phi` ([`Self::surface_phi`]), zero
    /// elsewhere; `None` for the surface flow.
    pub fn velocity_volume(&self, phi: &Sampled<Real>) -> Option<Sampled<Vec3>> {
        match self {
            Fluid::LevelSet(f) => Some(f.liquid.velocity_volume(&f.grid)),
            Fluid::Flip(f) => Some(f.velocity_volume(phi)),
            Fluid::Surface(_) | Fluid::Smoke(_) => None,
        }
    }

    /// Heap bytes held by the state.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Fluid::LevelSet(f) => f.statics.heap_bytes() + f.liquid.heap_bytes(),
            Fluid::Flip(f) => f.heap_bytes(),
            Fluid::Surface(f) => f.heap_bytes(),
            Fluid::Smoke(f) => f.heap_bytes(),
        }
    }

    /// The fluid's state for a checkpoint.
    pub fn save_state(&self) -> Vec<u8> {
        match self {
            Fluid::LevelSet(f) => f.liquid.save_state(),
            Fluid::Flip(f) => f.save_state(),
            Fluid::Surface(f) => f.save_state(),
            Fluid::Smoke(f) => f.save_state(),
        }
    }

    /// Gives the liquid's phases the properties their changes make them at time `t`
    /// ([`crate::fluids::multiphase::PhaseChange`]); nothing for other fluids.
    pub fn at_time(&mut self, t: Real) {
        if let Fluid::LevelSet(f) = self {
            if let Some(phases) = &mut f.liquid.phases {
                phases.at_time(t);
            }
        }
    }

    /// Restores a state written by [`Fluid::save_state`] for the same scene.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Fluid::LevelSet(f) => f.liquid.restore_state(bytes),
            Fluid::Flip(f) => f.restore_state(bytes),
            Fluid::Surface(f) => f.restore_state(bytes),
            Fluid::Smoke(f) => f.restore_state(bytes),
        }
    }
}

/// Samples per cell along each axis when [`submerged_volume`] integrates over a solid.
const SUBMERGED_SAMPLES: usize = 4;

/// Volume of `solid` below the liquid's surface (m^3), `phi` the liquid's level set at cell
/// centres and `up` the unit vector against gravity.
///
/// Inside a solid and next to it `phi` holds values extended into the solid, not the liquid's
/// surface, so there the surface is continued from the liquid beside the solid at the same
/// height: a cell centre `x` less than two cells outside the solid takes `phi(q)`, `q` the
/// nearest point level with `x` two cells outside the solid (exact for a level surface whatever
/// the values inside, and where `phi` is capped far from the surface it still has the right
/// sign; [`crate::grid::level_set::continue_level`]). The solid's cells are then sampled at
/// [`SUBMERGED_SAMPLES`]^3 boxes each; a box counts by its fraction inside the solid times its
/// fraction below the continued surface, each [`crate::grid::fraction::box_fraction_inside`] of
/// the signed distance at its centre. A sheet's surface is not continued (see
/// [`crate::coupling`]'s `level_through_solids`): the liquid on its two sides is its own.
pub fn submerged_volume(grid: &Grid, phi: &Array3<Real>, solid: &dyn crate::solids::CoupledSolid, up: &Vec3) -> Real {
    let (centre, radius) = solid.bounding_sphere();
    let reach = Vec3::repeat(radius + grid.dx);
    let (lo, hi) = (grid.cell_of(&(centre - reach)), grid.cell_of(&(centre + reach)));
    let local = Grid { dims: [0, 1, 2].map(|a| hi[a] - lo[a] + 1), dx: grid.dx, origin: grid.position(Location::Node, lo[0], lo[1], lo[2]) };
    let distance = |x: &Vec3| solid.signed_distance(x);
    let sheet = solid.is_sheet();
    let surface =
        local.sample_fn(Location::Cell, |x| if sheet { grid.interpolate(phi, Location::Cell, &x) } else { crate::grid::level_set::continue_level(grid, phi, &distance, up, &x) });
    let n = SUBMERGED_SAMPLES;
    let h = grid.dx / n as Real;
    let fraction = |d: Real| box_fraction_inside(d, h);
    // A cell whose centre is farther than this from a surface is wholly on one side of it.
    let whole = 0.5 * (3.0 as Real).sqrt() * grid.dx + h;
    let cells: usize = local.dims.iter().product();
    let samples = sum_by(cells, |c| {
        let [i, j, k] = surface.coords(c);
        let x = local.position(Location::Cell, i, j, k);
        let (d, wet) = (solid.signed_distance(&x), surface.get(i, j, k));
        if d >= whole || wet >= whole {
            return 0.0;
        }
        if d <= -whole && wet <= -whole {
            return (n * n * n) as Real;
        }
        let mut count = 0.0;
        for (_, y) in sub_boxes(x - Vec3::repeat(0.5 * grid.dx), h, n) {
            let inside = if d <= -whole { 1.0 } else { fraction(solid.signed_distance(&y)) };
            if inside > 0.0 {
                count += inside * fraction(local.interpolate(&surface, Location::Cell, &y));
            }
        }
        count
    });
    samples * h.powi(3)
}
