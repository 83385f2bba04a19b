//! Smoke: the whole domain is air on the MAC grid, incompressible and without a free surface,
//! carrying a smoke density `s` and a temperature `T` (kelvin above the ambient), after Fedkiw,
//! Stam and Jensen (2001), coupled to the solids as Shinar (ch. 5, Figure 5.10) couples them:
//!
//! 1. `s` and `T` are carried with the flow in flux form ([`advect_conservative`]: the smoke in a
//!    closed box is conserved to round-off), the velocity by itself;
//! 2. sources fill their shapes with smoke, heat and wind;
//! 3. buoyancy, in the Boussinesq form `f = (g T / T_ambient - alpha s) up` per unit mass (hot
//!    air rises as its lower density would make it; `alpha`, `smoke.weight`, lets dense smoke
//!    sink), and vorticity confinement `f = epsilon dx (N x omega)`, `N` the unit gradient of
//!    `|omega|` (Fedkiw et al. eq. 9–11), which spins up the small swirls the grid damps;
//! 4. the coupled projection with the solids ([`crate::coupling`]), every cell an unknown: the
//!    walls are closed, an open side holds the ambient pressure, the faces whose dual cells a
//!    body reaches move with it, and so do the faces whose two cells a sheet of cloth separates
//!    (no air, and so no smoke, passes through cloth).
//!
//! Gravity acts on the solids only: the still air's own weight is balanced by its hydrostatic
//! pressure, which is left out of `p` (the bodies lose the air's buoyancy, a thousandth of
//! water's).

use crate::coupling::poisson::ProjectionReport;
use crate::coupling::{self, Contacts, CouplingReport, FluidView, PhaseView, PressurePreconditioner, TrialLiquid};
use crate::fluids::eulerian::{extend_velocity, impose_velocity, LiquidMeasures};
use crate::geometry::Shape;
use crate::grid::advection::{advect_conservative, advect_velocity, AdvectionScheme};
use crate::grid::{Array3, Grid, Location, MacVelocity, Sampled};
use crate::math::{Real, Vec3};
use crate::solids::{CoupledSolid, StaticSolids};
use rayon::prelude::*;
use tidepool_linalg::reduce::sum_by;
use tidepool_linalg::PcgParams;

/// The air's and the smoke's properties.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmokeParams {
    /// Density of the air (kg/m^3).
    pub air_density: Real,
    /// Temperature of the still air (K).
    pub ambient_temperature: Real,
    /// Sinking acceleration per unit of smoke density (m/s^2), `alpha`.
    pub weight: Real,
    /// Vorticity confinement `epsilon` (dimensionless).
    pub vorticity: Real,
    /// Velocity advection scheme.
    pub advection: AdvectionScheme,
    /// Stopping rule of the pressure solve.
    pub pressure: PcgParams,
    /// Preconditioner of the pressure solve.
    pub preconditioner: PressurePreconditioner,
    /// The strength of gravity (m/s^2).
    pub gravity: Real,
    /// The unit vector against gravity: buoyancy's direction.
    pub up: Vec3,
}

impl SmokeParams {
    /// The buoyant acceleration along `up` (m/s^2) of air `t` kelvin above ambient carrying
    /// smoke of density `s`: `g t / T_ambient - alpha s`.
    pub fn lift(&self, t: Real, s: Real) -> Real {
        self.gravity * t / self.ambient_temperature - self.weight * s
    }
}

/// An emitter of smoke, heat and wind.
#[derive(Clone, Debug)]
pub struct SmokeSource {
    /// Where smoke appears.
    pub shape: Shape,
    /// Smoke density it keeps inside the shape (at least).
    pub density: Real,
    /// Kelvin above ambient it keeps inside the shape (at least).
    pub temperature: Real,
    /// Velocity of the air inside the shape (m/s).
    pub velocity: Vec3,
    /// Switch-on time (s).
    pub start: Real,
    /// Switch-off time (s).
    pub end: Real,
}

/// Smoke-laden air filling a MAC grid.
#[derive(Clone, Debug)]
pub struct SmokeFluid {
    /// The MAC grid.
    pub grid: Grid,
    /// Domain walls and obstacles.
    pub statics: StaticSolids,
    /// Properties.
    pub params: SmokeParams,
    /// Emitters.
    pub sources: Vec<SmokeSource>,
    /// Face velocities (m/s).
    pub velocity: MacVelocity,
    /// Pressure at cell centres (Pa), the next solve's first guess.
    pub pressure: Array3<Real>,
    /// Smoke density at cell centres (dimensionless).
    pub density: Array3<Real>,
    /// Temperature above the ambient at cell centres (K).
    pub temperature: Array3<Real>,
    /// The coupled solve's view of the air: a level set negative everywhere (no free surface).
    air: Array3<Real>,
    /// The last pressure solve.
    pub last_projection: ProjectionReport,
}

impl SmokeFluid {
    /// Still air on `grid`, with each `(shape, density, temperature)` of `regions` filled with
    /// that smoke and heat (the later regions over the earlier).
    pub fn new(grid: Grid, statics: StaticSolids, params: SmokeParams, regions: &[(Shape, Real, Real)], sources: Vec<SmokeSource>) -> Self {
        // The last region each cell lies in, found once for both fields.
        let region = grid.zeros(Location::Cell).par_map(|i, j, k, _| {
            let x = grid.position(Location::Cell, i, j, k);
            regions.iter().rposition(|r| r.0.signed_distance(&x) < 0.0)
        });
        let fill = |pick: fn(&(Shape, Real, Real)) -> Real| region.par_map(|_, _, _, r| r.map_or(0.0, |r| pick(&regions[r])));
        let far = grid.dx * grid.dims.iter().sum::<usize>() as Real;
        SmokeFluid {
            density: fill(|r| r.1),
            temperature: fill(|r| r.2),
            velocity: MacVelocity::zeros(&grid),
            pressure: grid.zeros(Location::Cell),
            air: Array3::filled(grid.dims, -far),
            grid,
            statics,
            params,
            sources,
            last_projection: ProjectionReport::default(),
        }
    }

    /// Carries the smoke, the heat and the velocity over `dt` (phase 1).
    pub fn advect(&mut self, dt: Real) {
        let open = &self.statics.face_open;
        self.density = advect_conservative(&self.grid, &self.velocity, open, &self.density, dt);
        self.temperature = advect_conservative(&self.grid, &self.velocity, open, &self.temperature, dt);
        self.velocity = advect_velocity(&self.grid, &self.velocity, dt, self.params.advection);
    }

    /// Fills the shapes of the sources active at time `t` with their smoke, heat and wind
    /// (phase 2).
    pub fn apply_sources(&mut self, t: Real) {
        let grid = self.grid;
        for source in self.sources.iter().filter(|s| s.start <= t && t < s.end) {
            let inside = self.density.par_map(|i, j, k, _| source.shape.signed_distance(&grid.position(Location::Cell, i, j, k)) < 0.0);
            for (field, least) in [(&mut self.density, source.density), (&mut self.temperature, source.temperature)] {
                field.par_update(|i, j, k, value| {
                    if inside.get(i, j, k) {
                        *value = value.max(least);
                    }
                });
            }
            impose_velocity(&grid, &mut self.velocity, &source.shape, &source.velocity);
        }
    }

    /// The buoyant acceleration along `up` at each cell (m/s^2).
    fn buoyancy(&self) -> Array3<Real> {
        self.temperature.par_map(|i, j, k, t| self.params.lift(t, self.density.get(i, j, k)))
    }

    /// The vorticity confinement force per unit mass at each cell (m/s^2): `epsilon dx (N x
    /// omega)`, zero inside obstacles.
    fn confinement(&self) -> Array3<Vec3> {
        let (grid, statics) = (&self.grid, &self.statics);
        let centred = self.cell_velocities();
        let omega = centred.par_map(|i, j, k, _| {
            if statics.phi_cells.get(i, j, k) < 0.0 {
                return Vec3::zeros();
            }
            let d = [0, 1, 2].map(|a| central(&centred, [i, j, k], a, grid.dx));
            Vec3::new(d[1].z - d[2].y, d[2].x - d[0].z, d[0].y - d[1].x)
        });
        let strength = omega.par_map(|_, _, _, w| w.norm());
        let epsilon = self.params.vorticity * grid.dx;
        omega.par_map(|i, j, k, w| {
            let gradient = Vec3::from([0, 1, 2].map(|a| central(&strength, [i, j, k], a, grid.dx)));
            match gradient.try_normalize(1e-12) {
                Some(n) => epsilon * n.cross(&w),
                None => Vec3::zeros(),
            }
        })
    }

    /// Adds `dt` of buoyancy and vorticity confinement to the open faces, each the average of
    /// its two cells' (phase 3).
    pub fn apply_forces(&mut self, dt: Real) {
        let up = self.params.up;
        let lift = self.buoyancy();
        let spin = (self.params.vorticity > 0.0).then(|| self.confinement());
        let dims = self.grid.dims;
        for (a, faces) in self.velocity.faces.iter_mut().enumerate() {
            let open = &self.statics.face_open[a];
            faces.par_update(|i, j, k, u| {
                if open.get(i, j, k) == 0.0 {
                    return;
                }
                let mut below = [i, j, k];
                below[a] = below[a].saturating_sub(1);
                let mut above = [i, j, k];
                above[a] = above[a].min(dims[a] - 1);
                let at = |c: [usize; 3]| up[a] * lift.get(c[0], c[1], c[2]) + spin.as_ref().map_or(0.0, |f| f.get(c[0], c[1], c[2])[a]);
                *u += dt * 0.5 * (at(below) + at(above));
            });
        }
    }

    /// The air as the coupled solve sees it: every cell an unknown (a function of the fields,
    /// so that the velocity can be borrowed beside it).
    fn view<'a>(air: &'a Array3<Real>, params: &'a SmokeParams, grid: &'a Grid, statics: &'a StaticSolids) -> FluidView<'a> {
        FluidView {
            grid,
            phi: air,
            statics,
            density: params.air_density,
            phases: PhaseView::single(air, &params.air_density, &0.0),
            capillary: false,
            params: params.pressure,
            preconditioner: params.preconditioner,
            up: params.up,
            unilateral: false,
        }
    }

    /// The coupled projection with `bodies` over `dt` (phase 4, [`coupling::project`]).
    pub fn project(&mut self, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> ([Array3<bool>; 3], CouplingReport) {
        let view = Self::view(&self.air, &self.params, &self.grid, &self.statics);
        let (valid, report) = coupling::project(view, &mut self.velocity, &mut self.pressure, dt, 0.0, bodies, &[]);
        self.last_projection = report.projection;
        (valid, report)
    }

    /// The projection again with the bodies held along their `contacts` after contact
    /// ([`coupling::project_held`]).
    pub fn project_held(&mut self, dt: Real, bodies: &mut [&mut dyn CoupledSolid], contacts: &Contacts) -> ([Array3<bool>; 3], CouplingReport) {
        let view = Self::view(&self.air, &self.params, &self.grid, &self.statics);
        let (valid, report) = coupling::project_held(view, &mut self.velocity, &mut self.pressure, dt, 0.0, bodies, contacts);
        self.last_projection = report.projection;
        (valid, report)
    }

    /// The coupled solve of the bodies' position update over `dt` (the air's velocity, no
    /// advection and no buoyancy; see
    /// [`crate::fluids::eulerian::LevelSetLiquid::solve_for_bodies`]). The air's own state is
    /// left as it was.
    pub fn solve_for_bodies(&self, dt: Real, bodies: &mut [&mut dyn CoupledSolid], after_contact: Option<(TrialLiquid, &Contacts)>) -> TrialLiquid {
        let view = Self::view(&self.air, &self.params, &self.grid, &self.statics);
        let (mut trial, contacts) = TrialLiquid::resume(after_contact, &self.velocity, &self.pressure, &Vec3::zeros(), dt);
        trial.solve(view, dt, 0.0, bodies, contacts);
        trial
    }

    /// Extends the velocity from the `valid` faces into the solids and constrains it there
    /// ([`extend_velocity`]).
    pub fn extend_velocity(&mut self, valid: [Array3<bool>; 3], layers: usize) {
        extend_velocity(&self.grid, &self.statics, &mut self.velocity, valid, layers);
    }

    /// Largest substep the CFL number allows: the fastest face or source (plus the speed
    /// the strongest buoyancy adds over one cell) crosses `cfl` cells.
    pub fn cfl_dt(&self, cfl: Real) -> Real {
        let source_max = self.sources.iter().map(|s| s.velocity.norm()).fold(0.0, Real::max);
        let lift = self.temperature.as_slice().par_iter().zip(self.density.as_slice().par_iter()).map(|(&t, &s)| self.params.lift(t, s).abs()).reduce(|| 0.0, Real::max);
        let strongest = self.sources.iter().map(|s| self.params.lift(s.temperature, s.density).abs()).fold(lift, Real::max);
        let speed = self.velocity.max_abs().max(source_max) + (self.grid.dx * strongest).sqrt();
        if speed > 0.0 {
            cfl * self.grid.dx / speed
        } else {
            Real::INFINITY
        }
    }

    /// Largest speed at a cell centre (m/s).
    fn max_speed(&self) -> Real {
        (0..self.grid.cell_count())
            .into_par_iter()
            .map(|c| {
                let [i, j, k] = self.density.coords(c);
                self.velocity.at_cell(i, j, k).norm()
            })
            .reduce(|| 0.0, Real::max)
    }

    /// The health check: a non-finite value or a speed above `max_speed` is a blow-up.
    pub fn check(&self, max_speed: Real) -> Result<(), String> {
        if self.velocity.faces.iter().any(|f| f.as_slice().par_iter().any(|u| !u.is_finite())) {
            return Err("a velocity is not a finite number".into());
        }
        for (field, what) in [(&self.density, "smoke density"), (&self.temperature, "temperature"), (&self.pressure, "pressure")] {
            if field.as_slice().par_iter().any(|v| !v.is_finite()) {
                return Err(format!("a {what} is not a finite number"));
            }
        }
        let speed = self.max_speed();
        if speed > max_speed {
            return Err(format!("the air reached {speed:.3} m/s, above simulation.max_speed = {max_speed} m/s"));
        }
        Ok(())
    }

    /// The smoke's amount `sum s dx^3` (m^3 of unit density) as the volume, the air's kinetic
    /// energy and momentum, the largest speed. Summed in a fixed order, so that a resumed run
    /// reports the same figures.
    pub fn measures(&self) -> LiquidMeasures {
        let mass = self.params.air_density * self.grid.dx.powi(3);
        let velocity = |c: usize| {
            let [i, j, k] = self.density.coords(c);
            self.velocity.at_cell(i, j, k)
        };
        let n = self.grid.cell_count();
        let kinetic_energy = sum_by(n, |c| 0.5 * mass * velocity(c).norm_squared());
        let momentum = Vec3::from_fn(|a, _| sum_by(n, |c| mass * velocity(c)[a]));
        LiquidMeasures { volume: self.amount(&self.density), kinetic_energy, momentum, max_speed: self.max_speed() }
    }

    /// `sum q dx^3` of a cell field (in a fixed order).
    pub fn amount(&self, q: &Array3<Real>) -> Real {
        sum_by(q.as_slice().len(), |c| q.as_slice()[c]) * self.grid.dx.powi(3)
    }

    /// A cell field as a volume of the caches (samples at the cell centres).
    pub fn volume(&self, q: &Array3<Real>) -> Sampled<Real> {
        Sampled { values: q.clone(), origin: self.grid.position(Location::Cell, 0, 0, 0), spacing: self.grid.dx }
    }

    /// The velocity at the cell centres.
    fn cell_velocities(&self) -> Array3<Vec3> {
        self.density.par_map(|i, j, k, _| self.velocity.at_cell(i, j, k))
    }

    /// The velocity at the cell centres, as a volume of the caches.
    pub fn velocity_volume(&self) -> Sampled<Vec3> {
        Sampled { values: self.cell_velocities(), origin: self.grid.position(Location::Cell, 0, 0, 0), spacing: self.grid.dx }
    }

    /// Heap bytes held by the state.
    pub fn heap_bytes(&self) -> usize {
        self.statics.heap_bytes()
            + self.velocity.faces.iter().map(Array3::heap_bytes).sum::<usize>()
            + [&self.pressure, &self.density, &self.temperature, &self.air].iter().map(|a| a.heap_bytes()).sum::<usize>()
    }

    /// The state for a checkpoint: velocity, pressure, smoke and heat.
    pub fn save_state(&self) -> Vec<u8> {
        postcard::to_allocvec(&(&self.velocity, &self.pressure, &self.density, &self.temperature)).expect("smoke state serialises")
    }

    /// Restores a state written by [`SmokeFluid::save_state`] for the same scene.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        let (velocity, pressure, density, temperature): (MacVelocity, Array3<Real>, Array3<Real>, Array3<Real>) =
            postcard::from_bytes(bytes).map_err(|e| format!("the smoke's state does not decode: {e}"))?;
        self.velocity.restore_from(velocity)?;
        self.pressure.restore_from(pressure)?;
        self.density.restore_from(density)?;
        self.temperature.restore_from(temperature)
    }
}

/// The central difference of `field` along axis `a` at cell `c` (one-sided at the domain's
/// sides), per metre.
fn central<T>(field: &Array3<T>, c: [usize; 3], a: usize, dx: Real) -> T
where
    T: Copy + Send + Sync + std::ops::Sub<Output = T> + std::ops::Div<Real, Output = T>,
{
    let (mut lo, mut hi) = (c, c);
    lo[a] = c[a].saturating_sub(1);
    hi[a] = (c[a] + 1).min(field.dims()[a] - 1);
    (field.get(hi[0], hi[1], hi[2]) - field.get(lo[0], lo[1], lo[2])) / (dx * (hi[a] - lo[a]).max(1) as Real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solids::Boundary;

    /// Still air in a closed box of `n`^2 x 4 cells of 1/`n` m, its vorticity confinement `epsilon`.
    fn air(n: usize, epsilon: Real) -> SmokeFluid {
        let grid = Grid { dims: [n, n, 4], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let statics = StaticSolids::new(&grid, [[Boundary::Wall; 2]; 3], Vec::new());
        let params = SmokeParams {
            air_density: 1.2,
            ambient_temperature: 293.0,
            weight: 0.0,
            vorticity: epsilon,
            advection: AdvectionScheme::MacCormack,
            pressure: PcgParams { tolerance: 1e-8, max_iterations: 1000 },
            preconditioner: PressurePreconditioner::default(),
            gravity: 9.81,
            up: Vec3::y(),
        };
        SmokeFluid::new(grid, statics, params, &[], Vec::new())
    }

    /// The velocity about the vertical line through the box's middle, swirling at `speed(r)`.
    fn swirl(f: &mut SmokeFluid, speed: impl Fn(Real) -> Real + Sync) {
        let grid = f.grid;
        let centre = Vec3::new(0.5, 0.5, 0.0);
        for a in 0..2 {
            f.velocity.faces[a].par_fill_with(|i, j, k| {
                let x = grid.position(Location::Face(a), i, j, k) - centre;
                let r = x.x.hypot(x.y);
                if r < 1e-12 {
                    return 0.0;
                }
                let tangent = Vec3::new(-x.y, x.x, 0.0) / r;
                speed(r) * tangent[a]
            });
        }
    }

    /// A Gaussian vortex: confinement pushes its air along the swirl (the force does positive
    /// work on it, spinning the vortex up) and points no way in the box's depth; without
    /// `epsilon` there is none. In solid rotation, whose vorticity is the same everywhere, it
    /// is zero (away from the walls, where the one-sided differences see a change).
    #[test]
    fn vorticity_confinement_spins_a_vortex_up_and_leaves_solid_rotation_alone() {
        let mut f = air(32, 0.5);
        swirl(&mut f, |r| r * (-(r / 0.15).powi(2)).exp() / 0.15);
        let force = f.confinement();
        let power: Real = (0..f.grid.cell_count())
            .map(|c| {
                let [i, j, k] = force.coords(c);
                force.get(i, j, k).dot(&f.velocity.at_cell(i, j, k))
            })
            .sum();
        let largest = force.as_slice().iter().map(|v| v.norm()).fold(0.0, Real::max);
        let depthwise = force.as_slice().iter().map(|v| v.z.abs()).fold(0.0, Real::max);
        assert!(power > 0.0 && largest > 0.0, "power {power}, largest force {largest}");
        assert!(depthwise < 1e-12 * largest, "a force of {depthwise} across the vortex's plane");
        f.params.vorticity = 0.0;
        assert!(f.confinement().as_slice().iter().all(|v| v.norm() == 0.0));

        let mut solid = air(32, 0.5);
        swirl(&mut solid, |r| r);
        let force = solid.confinement();
        let inner = (3..29).flat_map(|j| (3..29).map(move |i| (i, j))).map(|(i, j)| force.get(i, j, 1).norm()).fold(0.0, Real::max);
        assert!(inner < 1e-9, "confinement of solid rotation: {inner}");
    }
}
