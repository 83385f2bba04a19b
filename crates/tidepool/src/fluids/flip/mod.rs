//! Mass-full FLIP with unilateral incompressibility and blurred obstacles (Gerszewski, thesis,
//! ch. 3). Particles carry mass and velocity; every substep they are rasterized to the MAC
//! grid with the trilinear kernel, the grid velocity is made to respect the maximum density
//! (unilateral: cells may empty, never overfill; bilateral: the standard incompressible
//! projection), and the particles take the grid's change (PIC/FLIP) and move through it.
//! Mass is conserved exactly: it is the particle count times the particle mass.
//!
//! One substep, sec. 3.2, in the phases [`crate::pipeline`] calls with the bodies' phases
//! between them ([`FlipLiquid::rasterize`], `prepare`, `project`, `finish`):
//! 1. sources emit; explosions fire;
//! 2. particles sorted by cell, rasterization of mass to cells and of mass and momentum to
//!    faces (eq. 3.10–3.12); (the bodies move to the end of the step);
//! 3. the blurred obstacle fractions (eq. 3.13) where bodies are now;
//! 4. density correction (unilateral): an LCP on positions that brings every cell's density
//!    under its maximum; its face displacements move the particles before advection (eq. 3.9);
//! 5. gravity on the faces that have mass;
//! 6. the unilateral LCP (eq. 3.3–3.7) by MPRGP with MIC(0), and the velocity update (eq. 3.8);
//!    or, bilateral, the monolithic solve with the bodies ([`crate::coupling`]): the Poisson
//!    equation on the cells at least half full, sharp obstacles, and the bodies' impulses;
//! 7. velocity extrapolation by sweeps over the faces that received mass (sec. 3.2.2);
//! 8. particle velocities by PIC/FLIP (sec. 3.2.3);
//! 9. advection, trapezoidal or Euler, kept outside obstacles and inside the domain (3.2.4).

pub mod raster;
pub mod sheets;
pub mod solve;
pub mod surface;

use crate::coupling::{self, Contacts, FluidView, PhaseView, TrialLiquid};
use crate::fluids::eulerian::{LiquidSource, LiquidSurface, VOLUME_BAND};
use crate::fluids::viscosity::{self, DiffusionReport, Viscosity};
use crate::grid::{Array3, Grid, Location, MacVelocity, Sampled};
use crate::math::{Real, SplitMix64, Vec3};
use crate::settings::Settings;
use crate::solids::Boundary;
use crate::solids::{body_holding, CoupledSolid, StaticSolids};
use raster::{Bins, Indicator};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sheets::Sheets;
use solve::System;
use std::time::Instant;
use surface::ParticleKernel;
use tidepool_linalg::{largest_eigenvalue, mprgp, CsrMatrix, FreeSetMic0, FreeSetPreconditioner, MprgpParams, Packing, PcgParams};

/// How the liquid resists compression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Incompressibility {
    /// Cells may not exceed their maximum density and pressures are never negative, but cells
    /// may empty: the liquid separates and splashes freely (sec. 3.1).
    #[default]
    Unilateral,
    /// The standard incompressible FLIP: every cell holding a particle keeps zero divergence.
    Bilateral,
}

/// How particles move through the grid velocity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParticleAdvection {
    /// Second order: the average of the velocities at the start and at an Euler step's end.
    #[default]
    Trapezoidal,
    /// First order.
    Euler,
}

/// A radial kick to the liquid inside a ball at one moment (an underwater explosion).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Explosion {
    /// Centre (m) and radius (m) of the ball.
    pub center: Vec3,
    pub radius: Real,
    /// Outward speed given at the ball's rim, growing linearly from zero at the centre (m/s).
    pub speed: Real,
    /// When (s).
    pub time: Real,
}

/// Settings of the FLIP liquid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlipParams {
    /// Unilateral or bilateral.
    pub incompressibility: Incompressibility,
    /// Share of FLIP in the particle velocity update (the rest is PIC), in `[0, 1]`.
    pub flip_ratio: Real,
    /// Particles per cell where the liquid is at rest density.
    pub particles_per_cell: usize,
    /// Trapezoidal or Euler.
    pub advection: ParticleAdvection,
    /// Rest density `rho_0` (kg/m^3).
    pub density: Real,
    /// Relative tolerance and iteration cap of the solves (LCPs and Poisson).
    pub solver: PcgParams,
    /// The preconditioner of the bilateral solve's pressure block.
    pub preconditioner: crate::coupling::PressurePreconditioner,
    /// Whether the density correction runs (unilateral only).
    pub density_correction: bool,
    /// Cells at least this deep inside the liquid may take negative pressures (suction);
    /// 0 turns suction off.
    pub suction_depth: usize,
    /// Seed of the particle placement.
    pub seed: u64,
    /// Whether dynamic bodies float in the liquid: the velocity solve is then the monolithic
    /// one with them in either mode.
    pub moves_bodies: bool,
    /// Viscosity (off where its kinematic viscosity is 0).
    pub viscosity: Viscosity,
    /// The unit vector against gravity (the coupled solve continues the surface level through
    /// bodies along it).
    pub up: Vec3,
}

/// Cells and faces with less mass than this share of a full cell's are air (sec. 3.2.1).
pub const MASS_THRESHOLD: Real = 0.01;

/// What the solves of one substep did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveReport {
    /// Cells with a pressure unknown.
    pub unknowns: usize,
    /// Steps of the velocity solve (MPRGP or PCG).
    pub iterations: usize,
    /// Unknowns at zero pressure at the end of the unilateral solve (the active set).
    pub active: usize,
    /// Whether the velocity solve met its tolerance.
    pub converged: bool,
    /// Steps of the density correction (0 when nothing was overfull or it is off).
    pub correction_iterations: usize,
    /// Whether the density correction met its tolerance.
    pub correction_converged: bool,
    /// Largest `(rho_c - rho_max) / rho_0` before and after the density correction.
    pub excess_before: Real,
    pub excess_after: Real,
    /// The viscous solve.
    pub viscosity: DiffusionReport,
    /// Where the unilateral solves' time went (the density correction's and the velocity
    /// solve's together).
    pub lcp_seconds: LcpSeconds,
}

/// Wall-clock seconds of a substep's unilateral solves by part, for `tidepool bench`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LcpSeconds {
    /// The system, its right-hand side and bounds, and its packing over the unknowns.
    pub assembly: f64,
    /// The norm estimate for MPRGP's step length.
    pub norm: f64,
    /// MPRGP less its preconditioner.
    pub iterations: f64,
    /// MIC(0) of the free set, factorised each time it changes.
    pub factorisations: f64,
    /// MIC(0)'s triangular solves.
    pub applications: f64,
    /// The pressure gradient's update of the velocity or the density.
    pub update: f64,
}

impl LcpSeconds {
    /// Adds another's.
    pub fn accumulate(&mut self, other: &LcpSeconds) {
        self.assembly += other.assembly;
        self.norm += other.norm;
        self.iterations += other.iterations;
        self.factorisations += other.factorisations;
        self.applications += other.applications;
        self.update += other.update;
    }
}

/// A free-set preconditioner that counts the seconds spent in it.
struct Timed<P> {
    inner: P,
    factorisations: f64,
    applications: std::sync::Mutex<f64>,
}

impl<P: FreeSetPreconditioner> FreeSetPreconditioner for Timed<P> {
    fn set_free(&mut self, free: &[bool]) {
        let clock = Instant::now();
        self.inner.set_free(free);
        self.factorisations += clock.elapsed().as_secs_f64();
    }

    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let clock = Instant::now();
        self.inner.apply(r, z);
        *self.applications.lock().unwrap_or_else(|e| e.into_inner()) += clock.elapsed().as_secs_f64();
    }
}

/// Wall-clock seconds of one substep's phases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct FlipTimings {
    /// Sorting, obstacle fractions, rasterization.
    pub rasterize: f64,
    /// Density correction and the velocity solve.
    pub solve: f64,
    /// Velocity extrapolation.
    pub extrapolate: f64,
    /// Particle velocity update and advection.
    pub advect: f64,
}

impl FlipTimings {
    /// Adds another substep's.
    pub fn accumulate(&mut self, other: &FlipTimings) {
        self.rasterize += other.rasterize;
        self.solve += other.solve;
        self.extrapolate += other.extrapolate;
        self.advect += other.advect;
    }
}

/// What the solves of a frame's substeps did (summed unless said otherwise); its fields are
/// part of a FLIP run's `stats.jsonl` lines.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FlipTotals {
    /// Steps of the velocity solves (MPRGP or PCG), and whether all met the tolerance.
    #[serde(rename = "lcp_iterations")]
    pub iterations: usize,
    #[serde(rename = "lcp_converged")]
    pub converged: bool,
    /// Steps of the density corrections, and whether all met the tolerance.
    pub correction_iterations: usize,
    pub correction_converged: bool,
    /// Iterations of the viscous solves, and whether all met the tolerance.
    pub viscosity_iterations: usize,
    pub viscosity_converged: bool,
    /// Pressure unknowns and the active set (zero-pressure unknowns) of the last substep.
    pub unknowns: usize,
    #[serde(rename = "active_set")]
    pub active: usize,
    /// Largest `(rho_c - rho_max) / rho_0` left after a density correction in the frame.
    #[serde(rename = "density_excess")]
    pub excess_after_correction: Real,
    /// Seconds per phase.
    pub timings: FlipTimings,
}

impl Default for FlipTotals {
    fn default() -> Self {
        FlipTotals {
            iterations: 0,
            converged: true,
            correction_iterations: 0,
            correction_converged: true,
            viscosity_iterations: 0,
            viscosity_converged: true,
            unknowns: 0,
            active: 0,
            excess_after_correction: 0.0,
            timings: FlipTimings::default(),
        }
    }
}

impl FlipTotals {
    /// Adds one substep's solves and timings.
    pub fn add(&mut self, last: &SolveReport, timings: &FlipTimings) {
        self.iterations += last.iterations;
        self.converged &= last.converged;
        self.correction_iterations += last.correction_iterations;
        self.correction_converged &= last.correction_converged;
        self.viscosity_iterations += last.viscosity.iterations;
        self.viscosity_converged &= last.viscosity.converged;
        self.active = last.active;
        self.unknowns = last.unknowns;
        self.excess_after_correction = self.excess_after_correction.max(last.excess_after);
        self.timings.accumulate(timings);
    }
}

/// The grid quantities of one substep, between its phases ([`FlipLiquid::rasterize`] to
/// [`FlipLiquid::finish`]).
pub struct FlipSubstep {
    /// Rasterized cell density (kg/m^3), after the density correction.
    density: Array3<Real>,
    /// Rasterized face densities (kg/m^3).
    face_density: [Array3<Real>; 3],
    /// The face velocities being updated, and those before gravity and the solve (for FLIP).
    u: [Array3<Real>; 3],
    old: [Array3<Real>; 3],
    /// Faces that received mass.
    marked: [Array3<bool>; 3],
    /// The density correction's displacements of the particles.
    offsets: Option<MacVelocity>,
    /// Seconds per phase.
    timings: FlipTimings,
}

/// Which solid is nearest to a point, as [`FlipLiquid::nearest_solid`] found it.
#[derive(Clone, Copy, Debug)]
enum Solid {
    /// A static obstacle or none, from the sampled distance (farther than two cells).
    Sampled,
    /// A static obstacle, from the obstacles' exact distance.
    Obstacles,
    /// Body number `b` of those coupled.
    Body(usize),
}

/// The nearest solid to a point and its signed distance there (negative inside).
#[derive(Clone, Copy, Debug)]
struct NearestSolid {
    distance: Real,
    solid: Solid,
}

/// The FLIP liquid: the grid, the particles and the static obstacles. Bodies (moving
/// obstacles) are the world's solids, passed to each phase.
#[derive(Clone, Debug)]
pub struct FlipLiquid {
    /// The MAC grid.
    pub grid: Grid,
    /// FLIP settings.
    pub params: FlipParams,
    /// Mass of each particle (kg): `rho_0 dx^3 / particles_per_cell`.
    pub particle_mass: Real,
    /// Particle positions (m) and velocities (m/s).
    pub positions: Vec<Vec3>,
    pub velocities: Vec<Vec3>,
    /// The grid velocity after the last substep (extrapolated).
    pub velocity: MacVelocity,
    /// Pressure of the last velocity solve (Pa; zero where there was no unknown).
    pub pressure: Array3<Real>,
    /// Rasterized density of the last substep (kg/m^3).
    pub density: Array3<Real>,
    /// Maximum density per cell, `rho_max` (eq. 3.13).
    pub max_density: Array3<Real>,
    /// Face volume fractions `v_f`: the blurred share of a face's neighbourhood open to liquid.
    pub face_fraction: [Array3<Real>; 3],
    /// Domain sides and static obstacles.
    pub statics: StaticSolids,
    /// Emitters, and the cells whose centres each covers (found once).
    pub sources: Vec<LiquidSource>,
    source_cells: Vec<Vec<usize>>,
    /// Explosions, and whether each has fired.
    pub explosions: Vec<(Explosion, bool)>,
    /// The last substep's solves and timings.
    pub last: SolveReport,
    pub timings: FlipTimings,
    /// Where the static obstacles leave room for liquid (sub-sampled).
    static_indicator: Indicator,
    /// The power iteration's vector, kept to warm-start the next norm estimate.
    norm_vector: Vec<f64>,
    /// Per-cell stratified sub-positions particles are placed at.
    pattern: Vec<Vec3>,
}

/// Bytes a FLIP run holds per cell at its peak (the obstacle indicator's 64 sub-samples, about
/// 30 cell and face arrays, the solver's vectors) and per particle (position and velocity,
/// their sorted copies, the advected copies).
const BYTES_PER_CELL: usize = 700;
const BYTES_PER_PARTICLE: usize = 176;

/// Particles and bytes a FLIP scene will need: the initial liquid's cells times
/// `particles_per_cell`, plus what the sources emit over `duration` seconds (each source's
/// cells refilled as often as its liquid moves a cell), at most a full domain.
pub fn estimate_memory(grid: &Grid, inside: impl Fn(&Vec3, Real) -> bool + Sync, sources: &[LiquidSource], particles_per_cell: usize, duration: Real) -> (usize, usize) {
    let cells_inside = |inside: &(dyn Fn(&Vec3) -> bool + Sync)| -> usize {
        (0..grid.cell_count())
            .into_par_iter()
            .filter(|&c| {
                let [nx, ny, _] = grid.dims;
                inside(&grid.position(Location::Cell, c % nx, (c / nx) % ny, c / (nx * ny)))
            })
            .count()
    };
    // Cells the liquid reaches into (centre within half a cell of it).
    let reach = 0.5 * grid.dx;
    let initial = cells_inside(&|x: &Vec3| inside(x, reach));
    let emitted: Real = sources
        .iter()
        .map(|source| {
            let on = (source.end.min(duration) - source.start).max(0.0);
            let refills = 1.0 + on * source.velocity.norm() / grid.dx;
            cells_inside(&|x: &Vec3| source.shape.signed_distance(x) < reach) as Real * refills
        })
        .sum();
    let cells = (initial as Real + emitted).min(grid.cell_count() as Real) as usize;
    let particles = cells * particles_per_cell;
    (particles, grid.cell_count() * BYTES_PER_CELL + particles * BYTES_PER_PARTICLE)
}

impl FlipLiquid {
    /// The initial state: the grid, its walls and obstacles `statics`, particles placed on
    /// the stratified lattice wherever `inside` holds (and no body is), around `bodies` where
    /// they start.
    pub fn new(
        grid: Grid,
        solids: StaticSolids,
        params: FlipParams,
        explosions: Vec<Explosion>,
        sources: Vec<LiquidSource>,
        inside: impl Fn(&Vec3) -> bool + Sync,
        bodies: &[&dyn CoupledSolid],
    ) -> FlipLiquid {
        let outside_open = solids.boundaries.map(|sides| sides.map(|b| b == Boundary::Open));
        let cell_phi = &solids.phi_cells;
        let static_indicator = Indicator::new(&grid, outside_open, |x| {
            let [i, j, k] = grid.cell_of(x);
            let centre = cell_phi.get(i, j, k);
            if centre.abs() > grid.dx {
                centre > 0.0
            } else {
                solids.obstacles.iter().all(|(_, s)| s.signed_distance(x) > 0.0)
            }
        });
        let side = (params.particles_per_cell as Real).cbrt().ceil() as usize;
        let mut lattice: Vec<Vec3> =
            (0..side * side * side).map(|n| Vec3::new((n % side) as Real + 0.5, ((n / side) % side) as Real + 0.5, (n / (side * side)) as Real + 0.5) / side as Real).collect();
        // A fixed shuffle, so that fewer particles than lattice points spread over the cell.
        let mut rng = SplitMix64::keyed(&[params.seed, 0x5eed]);
        for n in (1..lattice.len()).rev() {
            lattice.swap(n, (rng.next_u64() % (n as u64 + 1)) as usize);
        }
        lattice.truncate(params.particles_per_cell);
        let source_cells = sources
            .iter()
            .map(|s: &LiquidSource| {
                (0..grid.cell_count())
                    .into_par_iter()
                    .filter(|&c| {
                        let [nx, ny, _] = grid.dims;
                        s.shape.signed_distance(&grid.position(Location::Cell, c % nx, (c / nx) % ny, c / (nx * ny))) < 0.0
                    })
                    .collect()
            })
            .collect();
        let mut world = FlipLiquid {
            grid,
            params,
            particle_mass: params.density * grid.dx.powi(3) / params.particles_per_cell as Real,
            positions: Vec::new(),
            velocities: Vec::new(),
            velocity: MacVelocity::zeros(&grid),
            pressure: grid.zeros(Location::Cell),
            density: grid.zeros(Location::Cell),
            max_density: grid.zeros(Location::Cell),
            face_fraction: [0, 1, 2].map(|a| grid.zeros(Location::Face(a))),
            statics: solids,
            sources,
            source_cells,
            explosions: explosions.into_iter().map(|e| (e, false)).collect(),
            last: SolveReport::default(),
            timings: FlipTimings::default(),
            static_indicator,
            norm_vector: Vec::new(),
            pattern: lattice,
        };
        world.update_fractions(bodies);
        let cells: Vec<[usize; 3]> = (0..grid.cell_count()).map(|c| world.density.coords(c)).collect();
        let placed: Vec<Vec3> = cells
            .par_iter()
            .flat_map_iter(|&[i, j, k]| {
                let corner = grid.position(Location::Node, i, j, k);
                world.pattern.iter().map(move |s| corner + s * grid.dx).collect::<Vec<_>>()
            })
            .filter(|x| inside(x) && world.solid_distance(bodies, x) > 0.0)
            .collect();
        world.velocities = vec![Vec3::zeros(); placed.len()];
        world.positions = placed;
        let bins = Bins::sort(&grid, &mut world.positions, &mut [&mut world.velocities]);
        world.density = world.cell_density(&bins);
        world
    }

    /// Longest substep the CFL number allows: no particle, body or emitted liquid crosses more
    /// than `cfl` cells, counting what gravity adds over a cell's fall.
    /// `bodies_speed` bounds the speed of the bodies' points.
    pub fn cfl_dt(&self, settings: &Settings, bodies_speed: Real) -> Real {
        let particles = self.velocities.par_iter().map(|v| v.norm()).reduce(|| 0.0, Real::max);
        let sources = self.sources.iter().map(|s| s.velocity.norm()).fold(0.0, Real::max);
        let speed = particles.max(sources).max(bodies_speed) + (settings.gravity.norm() * self.grid.dx).sqrt();
        settings.cfl * self.grid.dx / speed.max(1e-12)
    }

    /// Total liquid mass (kg): particles times particle mass.
    pub fn liquid_mass(&self) -> Real {
        self.positions.len() as Real * self.particle_mass
    }

    /// Kinetic energy of the particles (J).
    pub fn kinetic_energy(&self) -> Real {
        0.5 * self.particle_mass * tidepool_linalg::reduce::sum_by(self.velocities.len(), |p| self.velocities[p].norm_squared())
    }

    /// Fastest particle (m/s).
    pub fn max_speed(&self) -> Real {
        self.velocities.par_iter().map(|v| v.norm()).reduce(|| 0.0, Real::max)
    }

    /// Volume at rest density (m^3), kinetic energy (J), momentum (kg m/s), fastest particle.
    pub fn measures(&self) -> crate::fluids::eulerian::LiquidMeasures {
        let n = self.velocities.len();
        let momentum = Vec3::from_fn(|a, _| self.particle_mass * tidepool_linalg::reduce::sum_by(n, |p| self.velocities[p][a]));
        crate::fluids::eulerian::LiquidMeasures { volume: self.liquid_mass() / self.params.density, kinetic_energy: self.kinetic_energy(), momentum, max_speed: self.max_speed() }
    }

    /// The `phi` of the surface reconstructed from the particles (Zhu–Bridson, see
    /// [`surface`]), on a lattice twice as fine as the grid.
    pub fn surface_phi(&self) -> Sampled<Real> {
        self.with_kernel(|kernel| kernel.phi())
    }

    /// The zero set of `phi` ([`Self::surface_phi`]), with the particles' velocity at each
    /// vertex.
    pub fn surface_from(&self, phi: &Sampled<Real>) -> LiquidSurface {
        self.with_kernel(|kernel| {
            let (mesh, velocities) = kernel.surface_from(phi);
            LiquidSurface { mesh, velocities }
        })
    }

    /// The grid velocity at the cell centres within [`VOLUME_BAND`] cells of the surface
    /// `phi` ([`Self::surface_phi`]), zero elsewhere (the velocity volume of the caches).
    pub fn velocity_volume(&self, phi: &Sampled<Real>) -> Sampled<Vec3> {
        let band = VOLUME_BAND * self.grid.dx;
        let mut velocity = Array3::filled(self.grid.dims, Vec3::zeros());
        // Cell centre (i, j, k) is node (2i + 2, 2j + 2, 2k + 2) of the fine lattice.
        velocity.par_fill_with(|i, j, k| if phi.values.get(2 * i + 2, 2 * j + 2, 2 * k + 2) < band { self.velocity.at_cell(i, j, k) } else { Vec3::zeros() });
        Sampled { values: velocity, origin: self.grid.position(Location::Cell, 0, 0, 0), spacing: self.grid.dx }
    }

    /// Runs `f` with the particles binned and seen through the surface kernel.
    fn with_kernel<T>(&self, f: impl FnOnce(&ParticleKernel) -> T) -> T {
        let grid = self.grid;
        let mut positions = self.positions.clone();
        let mut velocities = self.velocities.clone();
        let bins = Bins::sort(&grid, &mut positions, &mut [&mut velocities]);
        let spacing = grid.dx / (self.params.particles_per_cell as Real).cbrt();
        f(&ParticleKernel::new(&grid, &bins, &positions, &velocities, spacing))
    }

    /// Heap bytes held by the state.
    pub fn heap_bytes(&self) -> usize {
        let fields = [&self.pressure, &self.density, &self.max_density].into_iter().chain(&self.velocity.faces).chain(&self.face_fraction);
        fields.map(Array3::heap_bytes).sum::<usize>() + self.statics.heap_bytes() + (self.positions.capacity() + self.velocities.capacity()) * std::mem::size_of::<Vec3>()
    }

    /// Signed distance from `x` to the nearest obstacle or body (negative inside).
    pub fn solid_distance(&self, bodies: &[&dyn CoupledSolid], x: &Vec3) -> Real {
        self.nearest_solid(bodies, x).distance
    }

    /// The nearest obstacle or body to `x` and its signed distance. Within two cells of a
    /// static obstacle the obstacles' exact distance is used (the sampled one rounds off
    /// corners, e.g. where an obstacle stands on a wall).
    fn nearest_solid(&self, bodies: &[&dyn CoupledSolid], x: &Vec3) -> NearestSolid {
        let grid = &self.grid;
        let sampled = grid.interpolate(&self.statics.phi_nodes, Location::Node, x);
        let mut best = if sampled < 2.0 * grid.dx {
            NearestSolid { distance: self.obstacle_distance(x), solid: Solid::Obstacles }
        } else {
            NearestSolid { distance: sampled, solid: Solid::Sampled }
        };
        for (b, body) in bodies.iter().enumerate() {
            let (centre, radius) = body.bounding_sphere();
            if (x - centre).norm() - radius < best.distance.min(grid.dx) {
                let d = body.signed_distance(x);
                if d < best.distance {
                    best = NearestSolid { distance: d, solid: Solid::Body(b) };
                }
            }
        }
        best
    }

    /// The exact signed distance to the nearest static obstacle.
    fn obstacle_distance(&self, x: &Vec3) -> Real {
        self.statics.obstacles.iter().map(|(_, s)| s.signed_distance(x)).fold(Real::INFINITY, Real::min)
    }

    /// The outward normal at `x` of the solid `nearest` found there and the solid's velocity.
    fn solid_surface(&self, bodies: &[&dyn CoupledSolid], x: &Vec3, nearest: &NearestSolid) -> (Vec3, Vec3) {
        let grid = &self.grid;
        let gradient = |f: &dyn Fn(&Vec3) -> Real| crate::geometry::unit_gradient(f, x, 1e-3 * grid.dx).unwrap_or_else(Vec3::y);
        match nearest.solid {
            Solid::Obstacles => (gradient(&|x: &Vec3| self.obstacle_distance(x)), Vec3::zeros()),
            Solid::Sampled => (grid.gradient(&self.statics.phi_nodes, Location::Node, x).try_normalize(1e-12).unwrap_or_else(Vec3::y), Vec3::zeros()),
            Solid::Body(b) => {
                let body = bodies[b];
                (gradient(&|x: &Vec3| body.signed_distance(x)), body.velocity_at(x))
            }
        }
    }

    /// Recomputes the maximum densities and face fractions from the static indicator and the
    /// bodies where they are now.
    fn update_fractions(&mut self, bodies: &[&dyn CoupledSolid]) {
        let grid = self.grid;
        let indicator = if bodies.is_empty() {
            None
        } else {
            let mut moved = self.static_indicator.clone();
            for body in bodies {
                let (centre, radius) = body.bounding_sphere();
                let reach = Vec3::repeat(radius + grid.dx);
                moved.close(&grid, &(centre - reach), &(centre + reach), |x| body.signed_distance(x));
            }
            Some(moved)
        };
        let indicator = indicator.as_ref().unwrap_or(&self.static_indicator);
        let density = self.params.density;
        self.max_density = indicator.blurred(&grid, Location::Cell);
        self.max_density.as_mut_slice().iter_mut().for_each(|v| *v *= density);
        self.face_fraction = [0, 1, 2].map(|a| indicator.blurred(&grid, Location::Face(a)));
    }

    /// Emits liquid from the active sources: cells whose centre is inside a source are topped
    /// up to `particles_per_cell` at the stratified positions, and every particle in them takes
    /// the source's velocity. Returns the particles added.
    fn emit(&mut self, time: Real, bodies: &[&dyn CoupledSolid]) -> usize {
        let grid = self.grid;
        if !self.sources.iter().any(|s| s.start <= time && time <= s.end) {
            return 0;
        }
        let [nx, ny, _] = grid.dims;
        let mut source_of: Vec<Option<Vec3>> = vec![None; grid.cell_count()];
        for (source, cells) in self.sources.iter().zip(&self.source_cells).filter(|(s, _)| s.start <= time && time <= s.end) {
            for &c in cells {
                source_of[c].get_or_insert(source.velocity);
            }
        }
        let mut count = vec![0usize; grid.cell_count()];
        for (x, v) in self.positions.iter().zip(self.velocities.iter_mut()) {
            let [i, j, k] = grid.cell_of(x);
            let c = i + nx * (j + ny * k);
            if let Some(velocity) = source_of[c] {
                count[c] += 1;
                *v = velocity;
            }
        }
        let before = self.positions.len();
        for (c, velocity) in source_of.iter().enumerate() {
            let Some(velocity) = velocity else { continue };
            let [i, j, k] = [c % nx, (c / nx) % ny, c / (nx * ny)];
            let corner = grid.position(Location::Node, i, j, k);
            for s in self.pattern.iter().skip(count[c]) {
                let x = corner + s * grid.dx;
                if self.solid_distance(bodies, &x) > 0.0 {
                    self.positions.push(x);
                    self.velocities.push(*velocity);
                }
            }
        }
        self.positions.len() - before
    }

    /// Gives the liquid inside each due explosion's ball its radial kick.
    fn fire_explosions(&mut self, time: Real) {
        for (e, fired) in self.explosions.iter_mut() {
            if *fired || time < e.time {
                continue;
            }
            *fired = true;
            let e = *e;
            self.positions.par_iter().zip(self.velocities.par_iter_mut()).for_each(|(x, v)| {
                let r = x - e.center;
                if r.norm() < e.radius {
                    *v += e.speed * r / e.radius;
                }
            });
        }
    }

    /// Phase 1 of a substep at `time` (sec. 3.2, steps 1 to 3): sources emit, explosions fire,
    /// the particles are sorted by cell and rasterized: cell density, face densities and the
    /// face velocities (momentum over mass), with the faces that carry the liquid marked.
    /// `bodies` are where they are at the start of the step.
    pub fn rasterize(&mut self, time: Real, bodies: &[&dyn CoupledSolid]) -> FlipSubstep {
        let stopwatch = Instant::now();
        let grid = self.grid;
        self.emit(time, bodies);
        self.fire_explosions(time);
        let bins = Bins::sort(&grid, &mut self.positions, &mut [&mut self.velocities]);
        let density = self.cell_density(&bins);
        let mass_per_weight = self.particle_mass / grid.dx.powi(3);
        let (positions, velocities) = (&self.positions, &self.velocities);
        let sheets = Sheets::new(bodies, &grid);
        let mut face_density: [Array3<Real>; 3] = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        let mut u: [Array3<Real>; 3] = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        for a in 0..3 {
            let blocked = (!sheets.is_empty()).then(|| sheets.blocked(&grid, Location::Face(a), positions));
            let (weight, momentum) = raster::rasterize(&grid, &bins, positions, Location::Face(a), |p| velocities[p][a], blocked.as_deref());
            face_density[a] = weight.par_map(|_, _, _, w| w * mass_per_weight);
            u[a] = Array3::from_vec(weight.dims(), weight.as_slice().iter().zip(momentum.as_slice()).map(|(w, m)| if *w > 0.0 { m / w } else { 0.0 }).collect());
        }
        // Faces with mass carry the liquid's velocity; those on closed walls do not (the wall
        // holds them) and take their neighbours' by extrapolation, like faces in the air.
        let boundaries = self.statics.boundaries;
        let marked: [Array3<bool>; 3] = [0, 1, 2].map(|a| face_density[a].par_map(|i, j, k, d| d > 0.0 && !solve::on_closed_wall(&grid, &boundaries, a, [i, j, k])));
        let mut timings = FlipTimings::default();
        timings.rasterize += stopwatch.elapsed().as_secs_f64();
        // `old` is taken once the velocities are extended and held by the bodies (prepare).
        let old = [0, 1, 2].map(|_| Array3::filled([0; 3], 0.0));
        FlipSubstep { density, face_density, u, old, marked, offsets: None, timings }
    }

    /// Phase 2, with `bodies` where they are at the end of the step: the obstacle fractions,
    /// the velocities extended and held by the solids, the density correction (unilateral,
    /// eq. 3.9, which moves positions, not velocities), and gravity on the faces with mass.
    pub fn prepare(&mut self, sub: &mut FlipSubstep, dt: Real, settings: &Settings, bodies: &[&dyn CoupledSolid]) {
        let stopwatch = Instant::now();
        if !bodies.is_empty() {
            self.update_fractions(bodies);
        }
        let layers = settings.cfl.ceil() as usize + 2;
        extrapolate_faces(&mut sub.u, sub.marked.clone(), layers);
        self.solid_face_velocities(bodies, &mut sub.u);
        sub.old = sub.u.clone();
        sub.timings.rasterize += stopwatch.elapsed().as_secs_f64();
        let stopwatch = Instant::now();
        self.last = SolveReport { correction_converged: true, ..SolveReport::default() };
        if self.params.incompressibility == Incompressibility::Unilateral && self.params.density_correction {
            sub.offsets = self.correct_density(&mut sub.density, &mut sub.face_density);
        }
        for (a, face) in sub.u.iter_mut().enumerate() {
            let g = settings.gravity[a] * dt;
            face.as_mut_slice().par_iter_mut().zip(sub.marked[a].as_slice().par_iter()).for_each(|(v, m)| {
                if *m {
                    *v += g;
                }
            });
        }
        self.solid_face_velocities(bodies, &mut sub.u);
        sub.timings.solve += stopwatch.elapsed().as_secs_f64();
    }

    /// Between two velocity solves of a viscous liquid: viscous diffusion of the grid velocity
    /// on the faces with mass, the `bodies` taking their share ([`viscosity::diffuse`]);
    /// nothing for an inviscid liquid. Returns the impulse the bodies gave the liquid.
    pub fn apply_viscosity(&mut self, sub: &mut FlipSubstep, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> Vec3 {
        if !self.params.viscosity.is_on() {
            return Vec3::zeros();
        }
        let stopwatch = Instant::now();
        let (grid, statics) = (self.grid, &self.statics);
        let liquid = {
            // Inside a body by its own distance, as the viscous solve finds its links (the
            // blurred fractions close faces a cell out, which then link to nothing).
            let solids = crate::solids::shared(bodies);
            let spheres: Vec<(Vec3, Real)> = solids.iter().map(|b| b.bounding_sphere()).collect();
            let outside = |x: &Vec3| body_holding(&solids, &spheres, x).is_none();
            [0, 1, 2].map(|a| sub.marked[a].par_map(|i, j, k, m| m && statics.face_open[a].get(i, j, k) > 0.0 && outside(&grid.position(Location::Face(a), i, j, k))))
        };
        self.last.viscosity = viscosity::diffuse(&grid, statics, &liquid, &self.params.viscosity, None, dt, &mut sub.u, bodies);
        sub.timings.solve += stopwatch.elapsed().as_secs_f64();
        self.last.viscosity.impulse_on_liquid
    }

    /// Phase 3: the velocity solve. Unilateral without bodies to move: the LCP by MPRGP
    /// (eq. 3.3-3.8), with moving obstacles as blurred fractions. Bilateral, or unilateral
    /// with bodies the liquid moves: the monolithic solve with the bodies
    /// ([`coupling::project`]) over the cells at least half full
    /// ([`FlipLiquid::liquid_phi`]), the bodies receiving the impulses the liquid's pressure
    /// puts on them; unilateral, its pressures bounded below by zero (MPRGP with the impulses
    /// free). Returns the impulse the bodies gave the liquid.
    pub fn project(&mut self, sub: &mut FlipSubstep, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> Vec3 {
        self.solve_velocity(sub, dt, bodies, false)
    }

    /// Phase 3 again after the viscosity has diffused the solved velocity: a correction,
    /// added to the pressure of the first solve ([`coupling::project_held`] with no contacts
    /// for the monolithic solve). Returns the impulse the bodies gave the liquid.
    pub fn reproject(&mut self, sub: &mut FlipSubstep, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> Vec3 {
        self.solve_velocity(sub, dt, bodies, true)
    }

    /// The velocity solve of [`FlipLiquid::project`], or of [`FlipLiquid::reproject`] where
    /// `correction`.
    fn solve_velocity(&mut self, sub: &mut FlipSubstep, dt: Real, bodies: &mut [&mut dyn CoupledSolid], correction: bool) -> Vec3 {
        let stopwatch = Instant::now();
        let impulse = match self.params.incompressibility {
            Incompressibility::Unilateral if !self.params.moves_bodies => {
                let density = std::mem::replace(&mut sub.density, Array3::filled([0; 3], 0.0));
                let p = self.unilateral_projection(dt, &density, &sub.face_density, &mut sub.u);
                sub.density = density;
                let solved = Array3::from_vec(self.grid.dims, p.iter().map(|p| p / dt).collect());
                if correction {
                    self.pressure.as_mut_slice().par_iter_mut().zip(solved.as_slice().par_iter()).for_each(|(p, c)| *p += c);
                } else {
                    self.pressure = solved;
                }
                Vec3::zeros()
            }
            _ => {
                let phi = self.liquid_phi(&sub.density, &crate::solids::shared(bodies));
                let (_, report) = self.coupled_solve(&phi, &mut sub.u, |view, velocity, pressure| {
                    if correction {
                        coupling::project_held(view, velocity, pressure, dt, 0.0, bodies, &[])
                    } else {
                        coupling::project(view, velocity, pressure, dt, 0.0, bodies, &[])
                    }
                });
                self.last.unknowns = report.projection.unknowns;
                self.last.iterations = report.projection.iterations;
                self.last.active = report.active;
                self.last.converged = report.projection.converged;
                report.impulse_on_liquid
            }
        };
        sub.timings.solve += stopwatch.elapsed().as_secs_f64();
        impulse
    }

    /// Phase 3 again where contact changed the bodies' velocities after a monolithic solve:
    /// the liquid projected with the bodies held along their `contacts` and free along every
    /// other direction ([`coupling::project_held`], which adds its correction to the pressure
    /// kept). Returns the impulse the bodies gave the liquid.
    pub fn project_held(&mut self, sub: &mut FlipSubstep, dt: Real, bodies: &mut [&mut dyn CoupledSolid], contacts: &Contacts) -> Vec3 {
        if self.params.incompressibility == Incompressibility::Unilateral && !self.params.moves_bodies {
            return Vec3::zeros();
        }
        let stopwatch = Instant::now();
        let phi = self.liquid_phi(&sub.density, &crate::solids::shared(bodies));
        let (_, report) = self.coupled_solve(&phi, &mut sub.u, |view, velocity, pressure| coupling::project_held(view, velocity, pressure, dt, 0.0, bodies, contacts));
        sub.timings.solve += stopwatch.elapsed().as_secs_f64();
        report.impulse_on_liquid
    }

    /// Phase 4 (sec. 3.2, steps 7 to 9): velocity extrapolation, PIC/FLIP, and advection of
    /// the particles through the new velocity, kept out of `bodies` where they now are.
    pub fn finish(&mut self, mut sub: FlipSubstep, dt: Real, settings: &Settings, bodies: &[&dyn CoupledSolid]) {
        let stopwatch = Instant::now();
        let layers = settings.cfl.ceil() as usize + 2;
        extrapolate_faces(&mut sub.u, sub.marked, layers);
        self.solid_face_velocities(bodies, &mut sub.u);
        self.velocity = MacVelocity { faces: sub.u };
        self.density = sub.density;
        sub.timings.extrapolate += stopwatch.elapsed().as_secs_f64();
        let stopwatch = Instant::now();
        let sheets = Sheets::new(bodies, &self.grid);
        self.update_particle_velocities(&MacVelocity { faces: sub.old }, &sheets);
        self.advect(dt, sub.offsets.as_ref(), bodies, &sheets);
        sub.timings.advect += stopwatch.elapsed().as_secs_f64();
        self.timings = sub.timings;
    }

    /// The coupled solve of the bodies' position update: the grid velocity of the last step
    /// plus `h` of `gravity`, projected over `h` with `bodies`, which keep their new
    /// velocities; or, given `after_contact`, that solve's liquid projected again with the
    /// bodies held along their contacts ([`coupling::project_held`]). Returns the solve's
    /// liquid; the liquid's own state is left as it was. `sub` holds this step's density.
    pub fn solve_for_bodies(
        &self,
        sub: &FlipSubstep,
        gravity: &Vec3,
        h: Real,
        bodies: &mut [&mut dyn CoupledSolid],
        after_contact: Option<(TrialLiquid, &Contacts)>,
    ) -> TrialLiquid {
        let phi = self.liquid_phi(&sub.density, &crate::solids::shared(bodies));
        let view = self.view(&phi);
        let (mut trial, contacts) = TrialLiquid::resume(after_contact, &self.velocity, &self.pressure, gravity, h);
        trial.solve(view, h, 0.0, bodies, contacts);
        trial
    }

    /// The liquid as the coupled solve sees it.
    fn view<'a>(&'a self, phi: &'a Array3<Real>) -> FluidView<'a> {
        let unilateral = self.params.incompressibility == Incompressibility::Unilateral;
        FluidView {
            grid: &self.grid,
            phi,
            statics: &self.statics,
            density: self.params.density,
            phases: PhaseView::single(phi, &self.params.density, &0.0),
            capillary: false,
            params: self.params.solver,
            preconditioner: self.params.preconditioner,
            up: self.params.up,
            unilateral,
        }
    }

    /// Runs a coupled `solve` ([`coupling::project`] or [`coupling::project_held`]) on the face
    /// velocities `u` with the liquid given by `phi` (sharp obstacles) and the pressure kept
    /// (Pa), which it starts from and updates.
    fn coupled_solve<R>(&mut self, phi: &Array3<Real>, u: &mut [Array3<Real>; 3], solve: impl FnOnce(FluidView, &mut MacVelocity, &mut Array3<Real>) -> R) -> R {
        let mut velocity = MacVelocity { faces: std::mem::replace(u, [0, 1, 2].map(|_| Array3::filled([0; 3], 0.0))) };
        let mut pressure = std::mem::replace(&mut self.pressure, Array3::filled([0; 3], 0.0));
        let result = solve(self.view(phi), &mut velocity, &mut pressure);
        *u = velocity.faces;
        self.pressure = pressure;
        result
    }

    /// The liquid as a level set at cell centres for the coupled solve and the bodies'
    /// submerged volumes: `(1/2 - f) dx` with `f` a cell's rasterized `density` over its
    /// maximum (how full the room the cell has is, at most 1), so a column's free surface sits
    /// where its partly full top cell puts it; cells whose centre is inside an obstacle or a
    /// body take their neighbours' values (extrapolated), as the level-set liquid extends into
    /// solids.
    pub fn liquid_phi(&self, density: &Array3<Real>, bodies: &[&dyn CoupledSolid]) -> Array3<Real> {
        let grid = self.grid;
        let mut phi = density.par_map(|i, j, k, rho| {
            let room = self.max_density.get(i, j, k);
            let full = if room > 0.0 { (rho / room).min(1.0) } else { 0.0 };
            (0.5 - full) * grid.dx
        });
        let spheres: Vec<(Vec3, Real)> = bodies.iter().map(|b| b.bounding_sphere()).collect();
        let mut outside = self.statics.phi_cells.par_map(|i, j, k, d| {
            let x = grid.position(Location::Cell, i, j, k);
            d >= 0.0 && body_holding(bodies, &spheres, &x).is_none()
        });
        let layers = spheres.iter().map(|(_, r)| (r / grid.dx).ceil() as usize + 1).fold(2, usize::max);
        crate::grid::extrapolate::extrapolate(&mut phi, &mut outside, layers);
        phi
    }

    /// The density of the particles sorted in `bins`, rasterized to the cells (kg/m^3).
    fn cell_density(&self, bins: &Bins) -> Array3<Real> {
        let (weight, _) = raster::rasterize(&self.grid, bins, &self.positions, Location::Cell, |_| 0.0, None);
        let mass_per_weight = self.particle_mass / self.grid.dx.powi(3);
        weight.par_map(|_, _, _, w| w * mass_per_weight)
    }

    /// Faces no liquid may cross take the solid's velocity: on closed walls the normal
    /// velocity may not point into the wall (pointing away it stays: liquid separates from
    /// walls and ceilings, sec. 3.3), zero in static obstacles, a body's velocity inside it.
    fn solid_face_velocities(&self, bodies: &[&dyn CoupledSolid], u: &mut [Array3<Real>; 3]) {
        let grid = self.grid;
        for (a, face) in u.iter_mut().enumerate() {
            let fraction = &self.face_fraction[a];
            let boundaries = self.statics.boundaries[a];
            let n = grid.dims[a];
            face.par_update(|i, j, k, v| {
                let idx = [i, j, k];
                if idx[a] == 0 && boundaries[0] == Boundary::Wall {
                    *v = v.max(0.0);
                } else if idx[a] == n && boundaries[1] == Boundary::Wall {
                    *v = v.min(0.0);
                } else if fraction.get(i, j, k) <= 0.0 {
                    let x = grid.position(Location::Face(a), i, j, k);
                    let nearest = self.nearest_solid(bodies, &x);
                    if nearest.distance <= 0.0 {
                        *v = self.solid_surface(bodies, &x, &nearest).1[a];
                    }
                }
            });
        }
    }

    /// Cells with enough mass for a pressure and room for liquid.
    fn liquid_cells(&self, density: &Array3<Real>) -> Vec<bool> {
        let threshold = MASS_THRESHOLD * self.params.density;
        density.as_slice().iter().zip(self.max_density.as_slice()).map(|(d, m)| *d >= threshold && *m > 0.0).collect()
    }

    /// The norm estimate MPRGP needs for `matrix` (a system packed by `packing`), by power
    /// iteration warm-started from the last one (kept over the whole grid).
    fn mprgp_params(&mut self, matrix: &CsrMatrix, packing: &Packing) -> MprgpParams {
        let n = self.grid.cell_count();
        let mut v = if self.norm_vector.len() == n { packing.gather(&self.norm_vector) } else { Vec::new() };
        let (norm, _) = largest_eigenvalue(matrix, &mut v, 1e-3, 200);
        self.norm_vector.resize(n, 0.0);
        packing.scatter(&v, &mut self.norm_vector);
        let s = self.params.solver;
        MprgpParams { tolerance: s.tolerance, max_iterations: s.max_iterations, gamma: 1.0, step_length: 1.8 / norm.max(1e-300) }
    }

    /// Solves `min 1/2 x^T A x + c^T x, x >= lower` on `system`'s unknowns (zero elsewhere).
    ///
    /// A set of unknowns enclosed by walls (no zero-pressure neighbour) only shifts its
    /// pressures by a constant at no cost, so the problem is bounded only if its `c` sums to
    /// at least zero (the liquid fits in the room it has); when round-off or advection error
    /// leaves it slightly negative, the deficit is spread evenly over the set (the enclosed
    /// liquid stays compressed by that share instead of the solve diverging).
    fn solve_lcp(&mut self, system: &System, c: &[Real], lower: &[Real]) -> (Vec<Real>, tidepool_linalg::MprgpInfo) {
        // Over the unknowns only: the grid around the liquid costs nothing.
        let clock = Instant::now();
        let (matrix, packing) = system.matrix.packed();
        let packed = clock.elapsed().as_secs_f64();
        let params = self.mprgp_params(&matrix, &packing);
        self.last.lcp_seconds.norm += clock.elapsed().as_secs_f64() - packed;
        let clock = Instant::now();
        let mut c = c.to_vec();
        for set in system.matrix.floating_sets(&system.unknown) {
            let sum: Real = set.iter().map(|&i| c[i as usize]).sum();
            if sum < 0.0 {
                let share = sum / set.len() as Real;
                for &i in &set {
                    c[i as usize] -= share;
                }
            }
        }
        let (c, lower, mut part) = (packing.gather(&c), packing.gather(lower), vec![0.0; matrix.n]);
        let seconds = &mut self.last.lcp_seconds;
        seconds.assembly += packed + clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        let mut mic = Timed { inner: FreeSetMic0::new(&matrix), factorisations: 0.0, applications: Default::default() };
        mic.factorisations += clock.elapsed().as_secs_f64();
        let info = mprgp(&matrix, &mut mic, &c, &lower, &mut part, params);
        let applications = mic.applications.into_inner().unwrap_or_else(|e| e.into_inner());
        seconds.factorisations += mic.factorisations;
        seconds.applications += applications;
        seconds.iterations += clock.elapsed().as_secs_f64() - mic.factorisations - applications;
        let clock = Instant::now();
        let mut x = vec![0.0; system.unknown.len()];
        packing.scatter(&part, &mut x);
        seconds.update += clock.elapsed().as_secs_f64();
        (x, info)
    }

    /// The density correction (Gerszewski sec. 3.1, after Narain et al.): the LCP with
    /// `A` of `dt = 1` and `b = rho_max - rho_c` gives pseudo-pressures `y`; the face
    /// displacements `-v_f grad y / rho_f` move mass so that `rho_c += div(v_f grad y)`
    /// (eq. 3.9) respects `rho_max`; face densities take the average change of their cells.
    /// Returns the displacements, or `None` when no cell was overfull.
    fn correct_density(&mut self, density: &mut Array3<Real>, face_density: &mut [Array3<Real>; 3]) -> Option<MacVelocity> {
        let grid = self.grid;
        let rho0 = self.params.density;
        let max_density = self.max_density.clone();
        let excess = |d: &Array3<Real>| d.as_slice().iter().zip(max_density.as_slice()).map(|(d, m)| (d - m) / rho0).fold(Real::NEG_INFINITY, Real::max);
        self.last.excess_before = excess(density);
        self.last.excess_after = self.last.excess_before;
        self.last.correction_converged = true;
        if self.last.excess_before <= self.params.solver.tolerance {
            return None;
        }
        let clock = Instant::now();
        let candidate = self.liquid_cells(density);
        let threshold = MASS_THRESHOLD * rho0;
        let system = System::assemble(&grid, &self.statics.boundaries, &self.face_fraction, &candidate, |a, f| face_density[a].as_slice()[f] >= threshold, 1.0);
        let c: Vec<Real> = (0..grid.cell_count()).map(|i| if system.unknown[i] { self.max_density.as_slice()[i] - density.as_slice()[i] } else { 0.0 }).collect();
        self.last.lcp_seconds.assembly += clock.elapsed().as_secs_f64();
        let (y, info) = self.solve_lcp(&system, &c, &vec![0.0; c.len()]);
        let clock = Instant::now();
        self.last.correction_iterations = info.iterations;
        self.last.correction_converged = info.converged;
        let mut displacement = [0, 1, 2].map(|a| grid.zeros(Location::Face(a)));
        system.apply_gradient(&grid, &self.face_fraction, &y, face_density, &mut displacement);
        let mut change = vec![0.0; c.len()];
        tidepool_linalg::LinearOperator::apply(&system.matrix, &y, &mut change);
        for (d, dc) in density.as_mut_slice().iter_mut().zip(&change) {
            *d -= dc;
        }
        for (a, (faces, used_faces)) in face_density.iter_mut().zip(&system.faces).enumerate() {
            let dims = faces.dims();
            faces.par_update(|i, j, k, d| {
                if used_faces[i + dims[0] * (j + dims[1] * k)] {
                    let cells = solve::face_cells(&grid, a, [i, j, k]);
                    let (sum, count) = cells.iter().flatten().fold((0.0, 0), |(s, n), &c| (s - change[c], n + 1));
                    *d += sum / count as Real;
                }
            });
        }
        self.last.excess_after = excess(density);
        self.last.lcp_seconds.update += clock.elapsed().as_secs_f64();
        Some(MacVelocity { faces: displacement })
    }

    /// The unilateral incompressibility LCP (eq. 3.3–3.7): `A p + b >= 0`, `p >= 0`,
    /// `p (A p + b) = 0` with `A = -dt div(v_f grad)` and `b = rho_max - rho_c + dt div(rho_f u)`,
    /// then `u -= v_f grad p / rho_f` (eq. 3.8). Cells deeper than `suction_depth` inside the
    /// liquid may take negative pressures. Returns `p` (pressure times `dt`).
    fn unilateral_projection(&mut self, dt: Real, density: &Array3<Real>, face_density: &[Array3<Real>; 3], u: &mut [Array3<Real>; 3]) -> Vec<Real> {
        let grid = self.grid;
        let clock = Instant::now();
        let threshold = MASS_THRESHOLD * self.params.density;
        let candidate = self.liquid_cells(density);
        let system = System::assemble(&grid, &self.statics.boundaries, &self.face_fraction, &candidate, |a, f| face_density[a].as_slice()[f] >= threshold, dt);
        let div = solve::divergence(&grid, &mass_flux(&grid, &self.statics.boundaries, u, face_density));
        let b: Vec<Real> = (0..grid.cell_count()).map(|c| if system.unknown[c] { self.max_density.as_slice()[c] - density.as_slice()[c] + dt * div[c] } else { 0.0 }).collect();
        let lower = self.suction_bounds(&system.unknown);
        self.last.lcp_seconds.assembly += clock.elapsed().as_secs_f64();
        let (p, info) = self.solve_lcp(&system, &b, &lower);
        let clock = Instant::now();
        self.last.unknowns = system.unknown.iter().filter(|u| **u).count();
        self.last.iterations = info.iterations;
        self.last.converged = info.converged;
        self.last.active = info.active;
        system.apply_gradient(&grid, &self.face_fraction, &p, face_density, u);
        self.last.lcp_seconds.update += clock.elapsed().as_secs_f64();
        p
    }

    /// Lower bounds of the unilateral pressures: 0, or `-inf` for unknowns at least
    /// `suction_depth` cells (in steps between face neighbours) from any cell without one.
    fn suction_bounds(&self, unknown: &[bool]) -> Vec<Real> {
        let depth = self.params.suction_depth;
        let mut lower = vec![0.0; unknown.len()];
        if depth == 0 {
            return lower;
        }
        let grid = self.grid;
        let [nx, ny, nz] = grid.dims;
        // Distance in cell steps to the nearest cell without an unknown (the domain's outside
        // counts as liquid: walls do not make a cell shallow).
        let mut distance: Vec<usize> = unknown.iter().map(|u| if *u { usize::MAX } else { 0 }).collect();
        for _ in 0..depth {
            let previous = distance.clone();
            for c in 0..unknown.len() {
                if previous[c] == usize::MAX {
                    let [i, j, k] = [c % nx, (c / nx) % ny, c / (nx * ny)];
                    let near = [
                        (i > 0, c.wrapping_sub(1)),
                        (i + 1 < nx, c + 1),
                        (j > 0, c.wrapping_sub(nx)),
                        (j + 1 < ny, c + nx),
                        (k > 0, c.wrapping_sub(nx * ny)),
                        (k + 1 < nz, c + nx * ny),
                    ];
                    if let Some(d) = near.iter().filter(|(inside, _)| *inside).map(|(_, n)| previous[*n]).filter(|d| *d != usize::MAX).min() {
                        distance[c] = d + 1;
                    }
                }
            }
        }
        for (l, d) in lower.iter_mut().zip(&distance) {
            if *d == usize::MAX {
                *l = Real::NEG_INFINITY;
            }
        }
        lower
    }

    /// PIC/FLIP (sec. 3.2.3): each particle takes `flip_ratio` of its own velocity plus the
    /// grid's change, and the rest as the grid velocity itself; neither read across a sheet.
    fn update_particle_velocities(&mut self, old: &MacVelocity, sheets: &Sheets) {
        let grid = self.grid;
        let ratio = self.params.flip_ratio;
        let new = &self.velocity;
        self.positions.par_iter().zip(self.velocities.par_iter_mut()).for_each(|(x, v)| {
            let [pic, before] = sheets.velocities(&grid, [new, old], x);
            let flip = *v + pic - before;
            *v = ratio * flip + (1.0 - ratio) * pic;
        });
    }

    /// Moves the particles (sec. 3.2.4): the density correction's displacement first, then
    /// trapezoidal or Euler steps through the grid velocity; a particle that ends inside a
    /// solid steps out along the distance gradient, or, failing that, back along its path by
    /// bisection, and loses its velocity into the solid; particles leaving through an open
    /// side are removed, walls hold the rest. The grid velocity is not read across a sheet.
    fn advect(&mut self, dt: Real, offsets: Option<&MacVelocity>, bodies: &[&dyn CoupledSolid], sheets: &Sheets) {
        let grid = self.grid;
        let u = &self.velocity;
        let (lo, hi) = (grid.origin, grid.max_corner());
        let margin = 1e-3 * grid.dx;
        let boundaries = self.statics.boundaries;
        let this = &*self;
        let moved: Vec<Option<(Vec3, Vec3)>> = self
            .positions
            .par_iter()
            .zip(self.velocities.par_iter())
            .map(|(x0, v0)| {
                let start = offsets.map_or(*x0, |o| *x0 + o.at(&grid, x0));
                let start = if this.solid_distance(bodies, &start) > 0.0 { start } else { *x0 };
                let [v1] = sheets.velocities(&grid, [u], &start);
                let mut x = match this.params.advection {
                    ParticleAdvection::Euler => start + dt * v1,
                    ParticleAdvection::Trapezoidal => start + 0.5 * dt * (v1 + sheets.velocities(&grid, [u], &(start + dt * v1))[0]),
                };
                let mut v = *v0;
                let mut nearest = this.nearest_solid(bodies, &x);
                for _ in 0..4 {
                    if nearest.distance >= margin {
                        break;
                    }
                    // Out along the distance gradient, but not out of the domain (an obstacle
                    // standing on a wall has its nearest face in the wall).
                    let (normal, _) = this.solid_surface(bodies, &x, &nearest);
                    x = (x + (margin - nearest.distance) * normal).zip_zip_map(&lo, &hi, |c, l, h| c.clamp(l + margin, h - margin));
                    nearest = this.nearest_solid(bodies, &x);
                }
                let d = nearest.distance;
                if d < 0.0 {
                    let (mut outside, mut inside) = (start, x);
                    for _ in 0..8 {
                        let mid = 0.5 * (outside + inside);
                        if this.solid_distance(bodies, &mid) > 0.0 {
                            outside = mid;
                        } else {
                            inside = mid;
                        }
                    }
                    x = outside;
                    nearest = this.nearest_solid(bodies, &x);
                }
                if d < margin {
                    let (normal, solid) = this.solid_surface(bodies, &x, &nearest);
                    let into = (v - solid).dot(&normal);
                    if into < 0.0 {
                        v -= into * normal;
                    }
                }
                for a in 0..3 {
                    for (side, bound) in [(0, lo[a] + margin), (1, hi[a] - margin)] {
                        let beyond = if side == 0 { x[a] < bound } else { x[a] > bound };
                        if beyond {
                            if boundaries[a][side] == Boundary::Open {
                                return None;
                            }
                            x[a] = bound;
                            if (side == 0 && v[a] < 0.0) || (side == 1 && v[a] > 0.0) {
                                v[a] = 0.0;
                            }
                        }
                    }
                }
                Some((x, v))
            })
            .collect();
        let (positions, velocities): (Vec<Vec3>, Vec<Vec3>) = moved.into_iter().flatten().unzip();
        self.positions = positions;
        self.velocities = velocities;
    }

    /// The liquid's state for a checkpoint: everything a later step reads (the particles, the
    /// grid velocity, the obstacle fractions where the bodies are, the explosions fired, the
    /// power iteration's warm start) and the fields outputs show.
    pub fn save_state(&self) -> Vec<u8> {
        let fired: Vec<bool> = self.explosions.iter().map(|(_, f)| *f).collect();
        let fields = (&self.velocity, &self.pressure, &self.density, &self.max_density, &self.face_fraction);
        postcard::to_allocvec(&(&self.positions, &self.velocities, fields, fired, &self.norm_vector)).expect("FLIP state serialises")
    }

    /// Restores a state written by [`FlipLiquid::save_state`] for the same scene.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        type Fields = (MacVelocity, Array3<Real>, Array3<Real>, Array3<Real>, [Array3<Real>; 3]);
        type State = (Vec<Vec3>, Vec<Vec3>, Fields, Vec<bool>, Vec<f64>);
        let (positions, velocities, fields, fired, norm_vector): State = postcard::from_bytes(bytes).map_err(|e| format!("the FLIP state does not decode: {e}"))?;
        if positions.len() != velocities.len() || fired.len() != self.explosions.len() {
            return Err("the FLIP state's particles or explosions do not match the scene".into());
        }
        let (velocity, pressure, density, max_density, face_fraction) = fields;
        self.velocity.restore_from(velocity)?;
        self.pressure.restore_from(pressure)?;
        self.density.restore_from(density)?;
        self.max_density.restore_from(max_density)?;
        for (fraction, saved) in self.face_fraction.iter_mut().zip(face_fraction) {
            fraction.restore_from(saved)?;
        }
        for ((_, f), saved) in self.explosions.iter_mut().zip(fired) {
            *f = saved;
        }
        (self.positions, self.velocities, self.norm_vector) = (positions, velocities, norm_vector);
        Ok(())
    }

    /// The health check: every particle's position and velocity and every grid velocity
    /// and pressure finite, no particle faster than `max_speed`.
    pub fn check(&self, max_speed: Real) -> Result<(), String> {
        if let Some(p) = self.positions.iter().zip(&self.velocities).position(|(x, v)| !(x.iter().chain(v.iter()).all(|c| c.is_finite()))) {
            return Err(format!("particle {p} has a non-finite position or velocity"));
        }
        if self.velocity.faces.iter().chain([&self.pressure]).any(|f| f.as_slice().par_iter().any(|v| !v.is_finite())) {
            return Err("a grid velocity or pressure is not a finite number".into());
        }
        let speed = self.max_speed();
        if speed > max_speed {
            return Err(format!("the liquid reached {speed:.3} m/s, above simulation.max_speed = {max_speed} m/s"));
        }
        Ok(())
    }
}

/// The mass flux `rho_f u` on every face; none through closed walls (whose velocity only
/// says how the liquid next to them moves).
fn mass_flux(grid: &Grid, boundaries: &[[Boundary; 2]; 3], u: &[Array3<Real>; 3], face_density: &[Array3<Real>; 3]) -> [Array3<Real>; 3] {
    [0, 1, 2].map(|a| {
        let mut flux = Array3::from_vec(u[a].dims(), u[a].as_slice().iter().zip(face_density[a].as_slice()).map(|(v, d)| v * d).collect());
        flux.par_update(|i, j, k, f| {
            if solve::on_closed_wall(grid, boundaries, a, [i, j, k]) {
                *f = 0.0;
            }
        });
        flux
    })
}

/// Velocity extrapolation (sec. 3.2.2): per component, `layers` sweeps in which every
/// unmarked face with marked neighbours takes their average and is marked.
fn extrapolate_faces(u: &mut [Array3<Real>; 3], marked: [Array3<bool>; 3], layers: usize) {
    for (face, mut valid) in u.iter_mut().zip(marked) {
        crate::grid::extrapolate::extrapolate(face, &mut valid, layers);
    }
}
