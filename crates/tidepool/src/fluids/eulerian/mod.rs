//! Free-surface liquid on a MAC grid with a particle level set.
//!
//! State: face velocities, the level set `phi` (negative in the liquid) at cell centres, the last
//! pressure, and marker particles. The phases of one substep are methods called in order by
//! [`crate::pipeline`]; `docs/methods/eulerian-liquid.md` gives the equations.

pub mod particles;

use crate::coupling::poisson::ProjectionReport;
use crate::coupling::{self, Contacts, CouplingReport, FluidView, PhaseView, TrialLiquid};
use crate::fluids::multiphase::{self, Phases};
use crate::fluids::viscoelasticity::{Elasticity, Strain};
use crate::fluids::viscosity::{self, DiffusionReport, Viscosity};
use crate::geometry::{Shape, TriMesh};
use crate::grid::advection::{advect, advect_velocity, AdvectionScheme};
use crate::grid::extrapolate::extrapolate;
use crate::grid::level_set::{reinitialize, volume_inside};
use crate::grid::marching_cubes::marching_cubes;
use crate::grid::{Array3, Grid, Location, MacVelocity, Sampled};
use crate::math::{Real, SplitMix64, Vec3};
use crate::solids::CoupledSolid;
use crate::solids::StaticSolids;
use particles::MarkerParticle;
use rayon::prelude::*;
use tidepool_linalg::PcgParams;

/// Distance (in cells) beyond which the level set is clamped by reinitialisation.
pub const LEVEL_SET_BAND: Real = 6.0;

/// The capillary time-step limit of explicit surface tension (Brackbill, Kothe, Zemach 1992,
/// `dt <= sqrt(rho_mean dx^3 / (2 pi sigma))`, with the mean of the liquid's and the empty
/// air's densities, `rho / 2`): `dt <= sqrt(rho dx^3 / (4 pi sigma))`, about the time the
/// shortest capillary wave the grid holds takes to cross a cell. Infinite without surface
/// tension.
pub fn capillary_dt(grid: &Grid, density: Real, surface_tension: Real) -> Real {
    if surface_tension > 0.0 {
        (density * grid.dx.powi(3) / (4.0 * std::f64::consts::PI * surface_tension)).sqrt()
    } else {
        Real::INFINITY
    }
}

/// Solver settings of the liquid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LiquidParams {
    /// Density (kg/m^3).
    pub density: Real,
    /// Advection scheme for velocity and level set.
    pub advection: AdvectionScheme,
    /// Pressure solve stopping rule.
    pub pressure: PcgParams,
    /// The preconditioner of the pressure solve.
    pub preconditioner: crate::coupling::PressurePreconditioner,
    /// Viscosity (off where its kinematic viscosity is 0).
    pub viscosity: Viscosity,
    /// Surface tension against the air (N/m; 0: none).
    pub surface_tension: Real,
    /// Elasticity (a viscoelastic liquid; off where its modulus is 0).
    pub elasticity: Elasticity,
    /// Marker particles per band cell (0: plain level set).
    pub particles_per_cell: usize,
    /// Substeps between reseedings.
    pub reseed_every: u64,
    /// Seed of particle placement.
    pub seed: u64,
    /// Whether the volume is steered back to its target ([`VolumeControl`]).
    pub volume_correction: bool,
    /// The unit vector against gravity (the coupled solve continues the surface level through
    /// bodies along it).
    pub up: Vec3,
}

/// An emitter: inside `shape`, while `start <= t < end`, the cells are liquid moving at `velocity`.
#[derive(Clone, Debug)]
pub struct LiquidSource {
    /// Region that is filled.
    pub shape: Shape,
    /// Velocity imposed inside it (m/s).
    pub velocity: Vec3,
    /// Switch-on time (s).
    pub start: Real,
    /// Switch-off time (s).
    pub end: Real,
    /// The phase it adds, in a liquid of several ([`Phases`]; 0 otherwise).
    pub phase: usize,
}

/// Integral quantities of the liquid.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiquidMeasures {
    /// Liquid volume (m^3), excluding obstacle interiors.
    pub volume: Real,
    /// Kinetic energy (J).
    pub kinetic_energy: Real,
    /// Linear momentum (kg m/s).
    pub momentum: Vec3,
    /// Largest speed in a liquid cell (m/s).
    pub max_speed: Real,
}

impl LiquidMeasures {
    /// Whether every measure is a finite number (a state can be finite and still overflow
    /// them: a sheet stepped past its stability limit).
    pub fn is_finite(&self) -> bool {
        [self.volume, self.kinetic_energy, self.max_speed].iter().chain(self.momentum.iter()).all(|v| v.is_finite())
    }
}

/// Volume control: the level set's volume drifts (films thinner than a cell vanish, merging and
/// splitting surfaces gain or lose a little), so the projection may impose a small uniform
/// divergence `s` in the liquid that steers the volume back to its target, with a critically
/// damped proportional-integral law on the relative error `e = (V - V_target) / V_target`:
/// `s = -(2 e / tau + integral(e dt) / tau^2)`, `tau` = [`VolumeControl::TIME_CONSTANT`].
/// The target is the initial volume plus what sources add minus what leaves through open sides.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VolumeControl {
    /// Whether the correction is applied (`liquid.volume_correction`).
    pub enabled: bool,
    /// The volume the liquid should have (m^3).
    pub target: Real,
    /// Time integral of the relative volume error (s).
    pub error_integral: Real,
    /// The divergence imposed in the last projection (1/s).
    pub divergence: Real,
}

impl VolumeControl {
    /// Response time of the correction (s).
    pub const TIME_CONSTANT: Real = 0.1;

    /// The divergence to impose now for the measured `volume`, advancing the integral by `dt`.
    pub(crate) fn update(&mut self, volume: Real, dt: Real) -> Real {
        self.divergence = if self.enabled && self.target > 0.0 {
            let e = (volume - self.target) / self.target;
            self.error_integral += e * dt;
            let tau = Self::TIME_CONSTANT;
            -(2.0 * e / tau + self.error_integral / (tau * tau))
        } else {
            0.0
        };
        self.divergence
    }
}

/// The liquid surface as a closed triangle mesh with the flow velocity at each vertex.
#[derive(Clone, Debug, Default)]
pub struct LiquidSurface {
    /// Triangles facing out of the liquid.
    pub mesh: TriMesh,
    /// Velocity at each vertex (m/s), for motion blur.
    pub velocities: Vec<Vec3>,
}

/// How far outside the surface (in cells) a liquid's velocity volume reaches.
pub const VOLUME_BAND: Real = 3.0;

/// The liquid's state.
#[derive(Clone, Debug)]
pub struct LevelSetLiquid {
    /// Settings.
    pub params: LiquidParams,
    /// Face velocities (m/s).
    pub velocity: MacVelocity,
    /// Signed distance to the surface at cell centres (m), negative in the liquid.
    pub phi: Array3<Real>,
    /// Pressure from the last projection at cell centres (Pa), 0 outside the liquid.
    pub pressure: Array3<Real>,
    /// Marker particles of the particle level set.
    pub particles: Vec<MarkerParticle>,
    /// The last pressure solve.
    pub last_projection: ProjectionReport,
    /// Volume control state.
    pub volume: VolumeControl,
    /// Where there are bodies: the signed distance to obstacles and bodies together at cell
    /// centres (negative inside), set before each substep; the liquid extends into them and is
    /// not counted there. Without bodies the obstacles' own distance is used.
    pub solids_with_bodies: Option<Array3<Real>>,
    /// The elastic strain of a viscoelastic liquid ([`Strain`]); `None` without elasticity.
    pub strain: Option<Strain>,
    /// The phases of a liquid of several ([`crate::fluids::multiphase`]); `phi` is then
    /// all of them together. `None` for one liquid.
    pub phases: Option<Phases>,
}

impl LevelSetLiquid {
    /// A liquid at rest filling `phi < 0` outside the obstacles and the bodies (see
    /// [`LevelSetLiquid::solids_with_bodies`]).
    pub fn new(grid: &Grid, params: LiquidParams, mut phi: Array3<Real>, solids: &StaticSolids, solids_with_bodies: Option<Array3<Real>>) -> Self {
        reinitialize(grid, &mut phi, LEVEL_SET_BAND * grid.dx);
        let mut liquid = LevelSetLiquid {
            params,
            velocity: MacVelocity::zeros(grid),
            phi,
            pressure: grid.zeros(Location::Cell),
            particles: Vec::new(),
            last_projection: ProjectionReport::default(),
            volume: VolumeControl { enabled: params.volume_correction, target: 0.0, error_integral: 0.0, divergence: 0.0 },
            solids_with_bodies,
            strain: params.elasticity.is_on().then(|| Strain::zeros(grid)),
            phases: None,
        };
        liquid.extend_into_solids(solids);
        liquid.volume.target = liquid.volume_without_solids(grid, solids);
        if params.particles_per_cell > 0 {
            liquid.particles = particles::seed(grid, &liquid.phi, params.particles_per_cell, [params.seed, 0]);
        }
        liquid
    }

    /// The liquid made of `phases`, whose level sets cover `phi`'s liquid: each is
    /// reinitialised and seeded with particles of its own, and the level sets are projected
    /// ([`multiphase::project`]).
    pub fn with_phases(mut self, grid: &Grid, solids: &StaticSolids, mut phases: Phases) -> Self {
        for (k, (phi, particles)) in phases.phi.iter_mut().zip(&mut phases.particles).enumerate() {
            reinitialize(grid, phi, LEVEL_SET_BAND * grid.dx);
            if self.params.particles_per_cell > 0 {
                *particles = particles::seed(grid, phi, self.params.particles_per_cell, [Self::phase_seed(self.params.seed, k), 0]);
            }
        }
        multiphase::project(&mut phases.phi, &mut self.phi);
        if phases.ever_elastic() {
            self.strain = Some(Strain::zeros(grid));
        }
        self.phases = Some(phases);
        self.extend_into_solids(solids);
        // Each phase's volume is steered instead of the liquid's.
        let volumes = self.phase_volumes(grid, solids);
        if let Some(phases) = &mut self.phases {
            for (control, target) in phases.volume.iter_mut().zip(volumes) {
                *control = VolumeControl { enabled: self.volume.enabled, target, ..*control };
            }
        }
        self.volume.enabled = false;
        self
    }

    /// The particle seed of phase `k`'s level set.
    fn phase_seed(seed: u64, k: usize) -> u64 {
        seed.wrapping_add((k as u64 + 1) << 32)
    }

    /// Every level set the liquid tracks, each with its marker particles and their seed: the
    /// liquid's `phi` (against the air) with its `particles`, then each of the `phases`'.
    fn level_sets<'a>(
        phi: &'a mut Array3<Real>,
        particles: &'a mut Vec<MarkerParticle>,
        phases: &'a mut Option<Phases>,
        seed: u64,
    ) -> Vec<(&'a mut Array3<Real>, &'a mut Vec<MarkerParticle>, u64)> {
        let mut sets = vec![(phi, particles, seed)];
        if let Some(phases) = phases {
            sets.extend(phases.phi.iter_mut().zip(&mut phases.particles).enumerate().map(|(k, (phi, particles))| (phi, particles, Self::phase_seed(seed, k))));
        }
        sets
    }

    /// Projects the phases' level sets against the liquid's ([`multiphase::project`]);
    /// nothing for one liquid.
    fn project_phases(&mut self) {
        if let Some(phases) = &mut self.phases {
            multiphase::project(&mut phases.phi, &mut self.phi);
        }
    }

    /// Moves the surface through the current velocity over `dt`: particles and level set are
    /// advected, the level set is corrected by escaped particles and reinitialised (which keeps
    /// the corrected surface in place, so no second correction is needed), particle radii are
    /// updated, and every `reseed_every` substeps particles are reseeded. With several phases
    /// each phase's level set goes the same way, projected against the others after the
    /// correction and after reinitialisation (Shinar 2008 sec. 4.2.2).
    pub fn advect_surface(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, step: u64) {
        let (use_particles, scheme, seed) = (self.params.particles_per_cell > 0, self.params.advection, self.params.seed);
        for (phi, markers, _) in Self::level_sets(&mut self.phi, &mut self.particles, &mut self.phases, seed) {
            if use_particles {
                particles::advect(grid, &self.velocity, markers, dt);
            }
            *phi = advect(grid, &self.velocity, phi, Location::Cell, dt, scheme);
            if use_particles {
                particles::correct(grid, phi, markers);
            }
        }
        self.project_phases();
        for (phi, _, _) in Self::level_sets(&mut self.phi, &mut self.particles, &mut self.phases, seed) {
            reinitialize(grid, phi, LEVEL_SET_BAND * grid.dx);
        }
        self.project_phases();
        if use_particles {
            let (per_cell, reseed) = (self.params.particles_per_cell, (step + 1) % self.params.reseed_every == 0);
            for (phi, markers, seed) in Self::level_sets(&mut self.phi, &mut self.particles, &mut self.phases, seed) {
                particles::adjust_radii(grid, phi, markers);
                if reseed {
                    particles::reseed(grid, phi, &solids.phi_cells, markers, per_cell, [seed, step + 1]);
                }
            }
        }
        self.extend_into_solids(solids);
    }

    /// Extends the level sets into cells whose centre is inside an obstacle, so the surface
    /// meets obstacles at right angles and liquid volume next to them is measured correctly.
    fn extend_into_solids(&mut self, solids: &StaticSolids) {
        let Some(solid) = self.solid_distance(solids) else { return };
        let valid = solid.par_map(|_, _, _, s| s >= 0.0);
        for (phi, _, _) in Self::level_sets(&mut self.phi, &mut self.particles, &mut self.phases, 0) {
            extrapolate(phi, &mut valid.clone(), 2);
        }
    }

    /// Signed distance to all solids, obstacles and bodies, at cell centres (`None` without
    /// any).
    fn solid_distance<'a>(&'a self, solids: &'a StaticSolids) -> Option<&'a Array3<Real>> {
        self.solids_with_bodies.as_ref().or(solids.has_obstacles().then_some(&solids.phi_cells))
    }

    /// Self-advection of the velocity over `dt`: by the liquid's scheme, or semi-Lagrangian
    /// under surface tension. MacCormack's correction sharpens the grid-scale ripples the
    /// capillary pressure raises on the surface, and they feed on it: a wobbling drop gained
    /// kinetic energy beyond the surface energy it had to give (docs/methods/surface-tension.md).
    pub fn advect_velocity(&mut self, grid: &Grid, dt: Real) {
        let scheme = if self.has_surface_tension() { AdvectionScheme::SemiLagrangian } else { self.params.advection };
        self.velocity = advect_velocity(grid, &self.velocity, dt, scheme);
    }

    /// Whether any of the liquid's interfaces has a surface tension.
    fn has_surface_tension(&self) -> bool {
        self.phases.as_ref().map_or(self.params.surface_tension > 0.0, Phases::has_surface_tension)
    }

    /// Adds `dt * gravity` to every face velocity.
    pub fn add_gravity(&mut self, gravity: &Vec3, dt: Real) {
        for a in 0..3 {
            let dv = gravity[a] * dt;
            if dv != 0.0 {
                self.velocity.faces[a].as_mut_slice().par_iter_mut().for_each(|u| *u += dv);
            }
        }
    }

    /// Whether the liquid (or any of its phases) is viscous.
    pub fn is_viscous(&self) -> bool {
        self.phases.as_ref().map_or(self.params.viscosity.is_on(), Phases::is_viscous)
    }

    /// Viscous diffusion of the velocity over `dt` on the faces that carry liquid, with the
    /// `bodies` taking their share ([`viscosity::diffuse`]; with phases, each face with the
    /// density and viscosity of the phases beside it); nothing for an inviscid liquid.
    pub fn apply_viscosity(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> DiffusionReport {
        if !self.is_viscous() {
            return DiffusionReport::default();
        }
        let liquid = viscosity::liquid_faces(grid, &self.phi, solids, self.solids_with_bodies.as_ref());
        let media = self.phases.as_ref().map(|p| p.face_media(grid, &self.phi, self.params.viscosity.density));
        viscosity::diffuse(grid, solids, &liquid, &self.params.viscosity, media.as_ref(), dt, &mut self.velocity.faces, bodies)
    }

    /// The elastic stress's push on the velocity over `dt` (nothing for a liquid without
    /// elasticity; [`Strain::push`]).
    pub fn apply_elastic_stress(&mut self, grid: &Grid, dt: Real) {
        let Some(strain) = &self.strain else { return };
        match &self.phases {
            None => {
                let (modulus, density) = (self.params.elasticity.modulus, self.params.density);
                strain.push(grid, &|_| modulus, &|_, _| density, dt, &mut self.velocity.faces);
            }
            Some(phases) => {
                let phase = phases.view().cell_phases(grid);
                let modulus = |c: usize| phases.phases[phase.as_slice()[c] as usize].elasticity.modulus;
                let reference = self.params.density;
                let media = phases.face_media(grid, &self.phi, reference);
                strain.push(grid, &modulus, &|a, f| reference * media.density[a].get(f[0], f[1], f[2]), dt, &mut self.velocity.faces);
            }
        }
    }

    /// Carries the elastic strain on by `dt` with the (projected) velocity ([`Strain::evolve`]):
    /// in the liquid, or in the elastic phases' cells of a liquid of several.
    pub fn evolve_strain(&mut self, grid: &Grid, dt: Real) {
        let Some(strain) = &mut self.strain else { return };
        let phi = &self.phi;
        match &self.phases {
            None => {
                let elasticity = self.params.elasticity;
                strain.evolve(grid, &self.velocity, &|c| (phi.as_slice()[c] < 0.0).then_some(elasticity), dt);
            }
            Some(phases) => {
                let elastic = |c: usize| {
                    let [i, j, k] = phi.coords(c);
                    let elasticity = phases.phases[phases.phase_at(i, j, k)].elasticity;
                    (phi.as_slice()[c] < 0.0 && elasticity.is_on()).then_some(elasticity)
                };
                strain.evolve(grid, &self.velocity, &elastic, dt);
            }
        }
    }

    /// The volume of region `r` of a liquid of several outside obstacles and bodies (m^3):
    /// phase `r`'s, or for `r` past the phases the air's, counted as minus the liquid's (so
    /// that what the air gains is what the liquid loses).
    fn region_volume(&self, grid: &Grid, solids: &StaticSolids, r: usize) -> Real {
        match self.phases.as_ref().and_then(|p| p.phi.get(r)) {
            Some(phi) => volume_inside(grid, phi, self.solid_distance(solids)),
            None => -self.volume_without_solids(grid, solids),
        }
    }

    /// Liquid volume outside obstacles (m^3).
    fn volume_without_solids(&self, grid: &Grid, solids: &StaticSolids) -> Real {
        volume_inside(grid, &self.phi, self.solid_distance(solids))
    }

    /// Applies the active sources at time `t`: their shapes become liquid moving at their
    /// velocity, and air particles inside them are removed. The added volume joins the volume
    /// control's target.
    pub fn apply_sources(&mut self, grid: &Grid, solids: &StaticSolids, sources: &[LiquidSource], t: Real) {
        let active: Vec<&LiquidSource> = sources.iter().filter(|s| s.start <= t && t < s.end).collect();
        if active.is_empty() {
            return;
        }
        let before = self.volume_without_solids(grid, solids);
        let phases_before = self.phase_volumes(grid, solids);
        for source in active {
            let shape = &source.shape;
            let inside = grid.sample_fn(Location::Cell, |x| shape.signed_distance(&x));
            self.phi = self.phi.par_map(|i, j, k, phi| phi.min(inside.get(i, j, k)));
            let margin = particles::RADIUS_MAX * grid.dx;
            if let Some(phases) = &mut self.phases {
                // The source's phase fills the shape and the others give it up, with their
                // particles on the wrong side of it.
                for (k, (phi, markers)) in phases.phi.iter_mut().zip(&mut phases.particles).enumerate() {
                    let (adds, sign) = if k == source.phase { (true, 1.0) } else { (false, -1.0) };
                    *phi = phi.par_map(|i, j, l, v| if adds { v.min(inside.get(i, j, l)) } else { v.max(-inside.get(i, j, l)) });
                    markers.retain(|p| p.sign != sign || shape.signed_distance(&p.x()) > margin);
                }
            }
            impose_velocity(grid, &mut self.velocity, shape, &source.velocity);
            self.particles.retain(|p| p.sign < 0.0 || shape.signed_distance(&p.x()) > margin);
        }
        self.volume.target += self.volume_without_solids(grid, solids) - before;
        let phases_after = self.phase_volumes(grid, solids);
        if let Some(phases) = &mut self.phases {
            for ((control, after), before) in phases.volume.iter_mut().zip(phases_after).zip(phases_before) {
                control.target += after - before;
            }
        }
    }

    /// Runs the phases' reactions over `dt` ([`multiphase::Reaction`]): each adds what its
    /// reactants' contact consumes to its pending volume, and while that fills a sphere, puts
    /// one into the product at a contact cell picked by the seed and `step`. The phases'
    /// volume targets follow what each sphere took and gave; a product phase that expands
    /// grows by the rest in the next projection ([`Phases::control_volumes`]).
    pub fn react(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, step: u64) {
        let reactions = self.phases.as_ref().map_or(Vec::new(), |p| p.reactions.clone());
        let margin = particles::RADIUS_MAX * grid.dx;
        for (r, reaction) in reactions.iter().enumerate() {
            let Some(phases) = &self.phases else { return };
            let (area, sites) = multiphase::contact(grid, &phases.phi, &self.phi, reaction.reactants, self.solid_distance(solids));
            let bubble = 4.0 / 3.0 * std::f64::consts::PI * reaction.bubble_radius.powi(3);
            let mut pending = phases.pending[r] + reaction.rate * area * dt;
            let mut pick = SplitMix64::keyed(&[self.params.seed, step, r as u64]);
            for _ in 0..sites.len() {
                if pending < bubble {
                    break;
                }
                let [i, j, k] = self.phi.coords(sites[(pick.next_u64() % sites.len() as u64) as usize]);
                let ([a, b], product) = (reaction.reactants, reaction.product);
                let before = [a, b, product].map(|r| self.region_volume(grid, solids, r));
                let phases = self.phases.as_mut().expect("a liquid with reactions has phases");
                multiphase::insert_product(grid, phases, &mut self.phi, &mut self.particles, reaction, &grid.position(Location::Cell, i, j, k), margin);
                let after = [a, b, product].map(|r| self.region_volume(grid, solids, r));
                let gained = after[2] - before[2];
                // The reactants' targets give up what the product gained, shared as they lost
                // it (their measured losses are a little more: where the sphere crosses their
                // interface the sampled level sets leave a sliver of nothing, which the next
                // reinitialisation fills).
                let losses = [0, 1].map(|n| if [a, b][n] == product { 0.0 } else { (before[n] - after[n]).max(0.0) });
                let total = losses[0] + losses[1];
                let phases = self.phases.as_mut().expect("a liquid with reactions has phases");
                for (r, loss) in [a, b].into_iter().zip(losses) {
                    if let Some(control) = phases.volume.get_mut(r).filter(|_| total > 0.0) {
                        control.target -= gained * loss / total;
                    }
                }
                if let (Some(control), Some(expanding)) = (phases.volume.get_mut(product), phases.expanding.get_mut(product)) {
                    control.target += gained;
                    *expanding += (reaction.expansion - 1.0) * gained;
                }
                // A sphere that found little reactant still counts a quarter, so this ends.
                pending -= gained.max(0.25 * bubble);
            }
            self.phases.as_mut().expect("a liquid with reactions has phases").pending[r] = pending;
        }
    }

    /// Pressure projection coupled with the moving `bodies` (see [`crate::coupling`]) with the
    /// volume control's divergence; the liquid leaving through open domain sides is taken off
    /// the volume target. Returns the faces it updated and the coupling's report.
    pub fn project(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> ([Array3<bool>; 3], CouplingReport) {
        let volume = self.volume_without_solids(grid, solids);
        let divergence = self.volume.update(volume, dt);
        let volumes = self.phase_volumes(grid, solids);
        if let Some(phases) = &mut self.phases {
            phases.control_volumes(&volumes, dt);
        }
        let (valid, report) = self.solve(grid, solids, dt, divergence, bodies);
        let outflow = self.outflow(grid, solids);
        self.volume.target -= outflow.iter().sum::<Real>() * dt;
        if let Some(phases) = &mut self.phases {
            for (control, out) in phases.volume.iter_mut().zip(outflow) {
                control.target -= out * dt;
            }
        }
        (valid, report)
    }

    /// Projects the velocity again with the step's divergence after the viscosity has
    /// diffused the projected velocity: a correction, added to the step's pressure
    /// ([`LevelSetLiquid::project_held`] with no contacts).
    pub fn reproject(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, bodies: &mut [&mut dyn CoupledSolid]) -> ([Array3<bool>; 3], CouplingReport) {
        self.project_held(grid, solids, dt, bodies, &[])
    }

    /// Projects the velocity again with the bodies held along their `contacts`, after contact
    /// has changed their velocities ([`coupling::project_held`]). Same divergence as the step's
    /// projection.
    pub fn project_held(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, bodies: &mut [&mut dyn CoupledSolid], contacts: &Contacts) -> ([Array3<bool>; 3], CouplingReport) {
        let view = Self::view(&self.phi, &self.params, &self.phases, grid, solids);
        let (valid, report) = coupling::project_held(view, &mut self.velocity, &mut self.pressure, dt, self.volume.divergence, bodies, contacts);
        self.last_projection = report.projection;
        (valid, report)
    }

    /// The liquid, its level set `phi` and its `params`, as the coupled solve sees it (a
    /// function of the fields, so that the velocity can be borrowed beside it).
    fn view<'a>(phi: &'a Array3<Real>, params: &'a LiquidParams, phases: &'a Option<Phases>, grid: &'a Grid, solids: &'a StaticSolids) -> FluidView<'a> {
        FluidView {
            grid,
            phi,
            statics: solids,
            density: params.density,
            phases: phases.as_ref().map_or(PhaseView::single(phi, &params.density, &params.surface_tension), Phases::view),
            capillary: true,
            params: params.pressure,
            preconditioner: params.preconditioner,
            up: params.up,
            unilateral: false,
        }
    }

    /// The coupled solve of the bodies' position update: the liquid's velocity plus `dt`
    /// of `gravity` (no advection) projected together with `bodies`, which keep their new
    /// velocities; or, given `after_contact`, that solve's liquid projected again with the
    /// bodies held along their contacts ([`coupling::project_held`]). Returns the solve's
    /// liquid; the liquid's own state is left as it was.
    pub fn solve_for_bodies(
        &self,
        grid: &Grid,
        solids: &StaticSolids,
        gravity: &Vec3,
        dt: Real,
        bodies: &mut [&mut dyn CoupledSolid],
        after_contact: Option<(TrialLiquid, &Contacts)>,
    ) -> TrialLiquid {
        let view = Self::view(&self.phi, &self.params, &self.phases, grid, solids);
        let (mut trial, contacts) = TrialLiquid::resume(after_contact, &self.velocity, &self.pressure, gravity, dt);
        trial.solve(view, dt, self.volume.divergence, bodies, contacts);
        trial
    }

    fn solve(&mut self, grid: &Grid, solids: &StaticSolids, dt: Real, divergence: Real, bodies: &mut [&mut dyn CoupledSolid]) -> ([Array3<bool>; 3], CouplingReport) {
        let view = Self::view(&self.phi, &self.params, &self.phases, grid, solids);
        let (valid, report) = coupling::project(view, &mut self.velocity, &mut self.pressure, dt, divergence, bodies, &[]);
        self.last_projection = report.projection;
        (valid, report)
    }

    /// Volume flux (m^3/s) out of the domain through open sides, over faces next to liquid: per
    /// phase (one value for one liquid).
    fn outflow(&self, grid: &Grid, solids: &StaticSolids) -> Vec<Real> {
        let mut flux = vec![0.0; self.phases.as_ref().map_or(1, |p| p.phases.len())];
        for (axis, sides) in solids.boundaries.iter().enumerate() {
            for (side, boundary) in sides.iter().enumerate() {
                if *boundary != crate::solids::Boundary::Open {
                    continue;
                }
                let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                for b in 0..grid.dims[v] {
                    for a in 0..grid.dims[u] {
                        let mut cell = [0; 3];
                        cell[u] = a;
                        cell[v] = b;
                        cell[axis] = if side == 0 { 0 } else { grid.dims[axis] - 1 };
                        if self.phi.get(cell[0], cell[1], cell[2]) >= 0.0 {
                            continue;
                        }
                        let mut face = cell;
                        face[axis] += side;
                        let outward = if side == 0 { -1.0 } else { 1.0 };
                        let open = solids.face_open[axis].get(face[0], face[1], face[2]);
                        let phase = self.phases.as_ref().map_or(0, |p| p.phase_at(cell[0], cell[1], cell[2]));
                        flux[phase] += outward * open * self.velocity.faces[axis].get(face[0], face[1], face[2]) * grid.dx * grid.dx;
                    }
                }
            }
        }
        flux
    }

    /// Largest substep allowed by the CFL number: the fastest face velocity (plus the speed
    /// gravity adds over one cell) may cross `cfl` cells. Under surface tension also the
    /// capillary limit, and in a viscoelastic liquid the elastic one, whatever the CFL number
    /// ([`capillary_dt`], [`Elasticity::stable_dt`]).
    pub fn cfl_dt(&self, grid: &Grid, cfl: Real, gravity: &Vec3, sources: &[LiquidSource]) -> Real {
        let face_max = self.velocity.max_abs();
        let source_max = sources.iter().map(|s| s.velocity.norm()).fold(0.0, Real::max);
        let speed = face_max.max(source_max) + (grid.dx * gravity.norm()).sqrt();
        let advective = if speed > 0.0 { cfl * grid.dx / speed } else { Real::INFINITY };
        let capillary = self.phases.as_ref().map_or(capillary_dt(grid, self.params.density, self.params.surface_tension), |p| p.capillary_dt(grid));
        let elastic = match &self.phases {
            None => self.params.elasticity.stable_dt(grid, self.params.density),
            Some(phases) => phases.phases.iter().map(|p| p.elasticity.stable_dt(grid, p.density)).fold(Real::INFINITY, Real::min),
        };
        advective.min(capillary).min(elastic)
    }

    /// Largest speed at the centre of a liquid cell (m/s).
    pub fn max_speed(&self) -> Real {
        (0..self.phi.as_slice().len())
            .into_par_iter()
            .filter(|&c| self.phi.as_slice()[c] < 0.0)
            .map(|c| {
                let [i, j, k] = self.phi.coords(c);
                self.velocity.at_cell(i, j, k).norm()
            })
            .reduce(|| 0.0, Real::max)
    }

    /// Volume, kinetic energy and maximum speed.
    pub fn measures(&self, grid: &Grid, solids: &StaticSolids) -> LiquidMeasures {
        let volume = self.volume_without_solids(grid, solids);
        let solid = self.solid_distance(solids);
        let cell_volume = grid.dx.powi(3);
        let n = grid.cell_count();
        // Mass of liquid in cell c (a smoothed fraction of the cell below the surface).
        let mass = |c: usize| {
            let phi = self.phi.as_slice()[c];
            let [i, j, k] = self.phi.coords(c);
            let open = if solid.is_some_and(|s| s.get(i, j, k) < 0.0) { 0.0 } else { 1.0 };
            let density = self.phases.as_ref().map_or(self.params.density, |p| p.phases[p.phase_at(i, j, k)].density);
            density * (0.5 - phi / grid.dx).clamp(0.0, 1.0) * open * cell_volume
        };
        let velocity = |c: usize| {
            let [i, j, k] = self.phi.coords(c);
            self.velocity.at_cell(i, j, k)
        };
        let kinetic_energy = tidepool_linalg::reduce::sum_by(n, |c| 0.5 * mass(c) * velocity(c).norm_squared());
        let momentum = Vec3::from_fn(|a, _| tidepool_linalg::reduce::sum_by(n, |c| mass(c) * velocity(c)[a]));
        LiquidMeasures { volume, kinetic_energy, momentum, max_speed: self.max_speed() }
    }

    /// The volume of each phase outside obstacles and bodies (m^3), in the phases' order;
    /// empty for one liquid.
    pub fn phase_volumes(&self, grid: &Grid, solids: &StaticSolids) -> Vec<Real> {
        (0..self.phases.as_ref().map_or(0, |p| p.phi.len())).map(|r| self.region_volume(grid, solids, r)).collect()
    }

    /// The health check: every velocity, level-set value and pressure finite, no liquid
    /// faster than `max_speed`.
    pub fn check(&self, max_speed: Real) -> Result<(), String> {
        if self.velocity.faces.iter().any(|f| f.as_slice().par_iter().any(|u| !u.is_finite())) {
            return Err("a velocity is not a finite number".into());
        }
        if std::iter::once(&self.phi).chain(self.phases.iter().flat_map(|p| &p.phi)).any(|phi| phi.as_slice().par_iter().any(|v| !v.is_finite())) {
            return Err("the level set holds a non-finite value".into());
        }
        if self.pressure.as_slice().par_iter().any(|v| !v.is_finite()) {
            return Err("a pressure is not a finite number".into());
        }
        if self.particles.par_iter().any(|p| !p.position.iter().all(|v| v.is_finite())) {
            return Err("a marker particle has a non-finite position".into());
        }
        let speed = self.max_speed();
        if speed > max_speed {
            return Err(format!("the liquid reached {speed:.3} m/s, above simulation.max_speed = {max_speed} m/s"));
        }
        Ok(())
    }

    /// The level set padded by one cell ([`padded`]).
    pub fn padded_phi(&self, grid: &Grid) -> Sampled<Real> {
        padded(grid, &self.phi)
    }

    /// Each phase's name and surface (by marching cubes of its level set, padded as
    /// [`Self::padded_phi`]) with the velocity at each vertex; empty for one liquid.
    pub fn phase_surfaces(&self, grid: &Grid) -> Vec<(String, LiquidSurface)> {
        let Some(phases) = &self.phases else { return Vec::new() };
        phases.phases.iter().zip(&phases.phi).map(|(phase, phi)| (phase.name.clone(), self.surface_from(grid, &padded(grid, phi)))).collect()
    }

    /// The zero level set of `phi` ([`Self::padded_phi`]) by marching cubes, with the liquid's
    /// velocity at each vertex.
    pub fn surface_from(&self, grid: &Grid, phi: &Sampled<Real>) -> LiquidSurface {
        let mesh = marching_cubes(&phi.values, phi.origin, phi.spacing);
        let velocities = mesh.vertices.par_iter().map(|v| self.velocity.at(grid, v)).collect();
        LiquidSurface { mesh, velocities }
    }

    /// The velocity at the cell centres within [`VOLUME_BAND`] cells of the surface, zero
    /// elsewhere (the velocity volume of the caches).
    pub fn velocity_volume(&self, grid: &Grid) -> Sampled<Vec3> {
        let band = VOLUME_BAND * grid.dx;
        let velocity = self.phi.par_map(|i, j, k, phi| if phi < band { self.velocity.at_cell(i, j, k) } else { Vec3::zeros() });
        Sampled { values: velocity, origin: grid.position(Location::Cell, 0, 0, 0), spacing: grid.dx }
    }

    /// The liquid's state for a checkpoint: volume control, velocity, level set, pressure (the
    /// next solve's initial guess) and marker particles.
    pub fn save_state(&self) -> Vec<u8> {
        let phases = self.phases.as_ref().map(|p| (&p.phi, &p.particles, &p.volume, &p.pending));
        postcard::to_allocvec(&(&self.volume, &self.velocity, &self.phi, &self.pressure, &self.particles, &self.strain, phases)).expect("liquid state serialises")
    }

    /// Restores a state written by [`LevelSetLiquid::save_state`] for the same scene.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        type Phases = (Vec<Array3<Real>>, Vec<Vec<MarkerParticle>>, Vec<VolumeControl>, Vec<Real>);
        type State = (VolumeControl, MacVelocity, Array3<Real>, Array3<Real>, Vec<MarkerParticle>, Option<Strain>, Option<Phases>);
        let (volume, velocity, phi, pressure, particles, strain, phases): State = postcard::from_bytes(bytes).map_err(|e| format!("the liquid's state does not decode: {e}"))?;
        match (&mut self.phases, phases) {
            (Some(mine), Some((phi, particles, volume, pending))) if phi.len() == mine.phi.len() && volume.len() == mine.phi.len() && pending.len() == mine.pending.len() => {
                for (level_set, saved) in mine.phi.iter_mut().zip(phi) {
                    level_set.restore_from(saved)?;
                }
                mine.particles = particles;
                mine.restore_volume_controls(volume);
                mine.pending = pending;
            }
            (None, None) => {}
            _ => return Err("the liquid's state and the scene disagree on the liquid's phases".into()),
        }
        match (&mut self.strain, strain) {
            (Some(mine), Some(saved)) => {
                for (component, saved) in mine.components.iter_mut().zip(saved.components) {
                    component.restore_from(saved)?;
                }
            }
            (None, None) => {}
            _ => return Err("the liquid's state and the scene disagree on whether it is elastic".into()),
        }
        self.velocity.restore_from(velocity)?;
        self.phi.restore_from(phi)?;
        self.pressure.restore_from(pressure)?;
        (self.volume, self.particles) = (volume, particles);
        Ok(())
    }

    /// Heap bytes held by the state.
    pub fn heap_bytes(&self) -> usize {
        self.velocity.faces.iter().map(Array3::heap_bytes).sum::<usize>()
            + self.phi.heap_bytes()
            + self.pressure.heap_bytes()
            + self.particles.capacity() * std::mem::size_of::<MarkerParticle>()
            + self.strain.as_ref().map_or(0, Strain::heap_bytes)
            + self.phases.as_ref().map_or(0, |p| {
                p.phi.iter().map(Array3::heap_bytes).sum::<usize>() + p.particles.iter().map(|v| v.capacity() * std::mem::size_of::<MarkerParticle>()).sum::<usize>()
            })
    }
}

/// Sets `velocity` to `v` on the faces inside `shape` (an emitter's).
pub fn impose_velocity(grid: &Grid, velocity: &mut MacVelocity, shape: &Shape, v: &Vec3) {
    for (a, faces) in velocity.faces.iter_mut().enumerate() {
        faces.par_update(|i, j, k, u| {
            if shape.signed_distance(&grid.position(Location::Face(a), i, j, k)) < 0.0 {
                *u = v[a];
            }
        });
    }
}

/// Extends `velocity` from the `valid` faces `layers` faces on (zero beyond), then applies the
/// free-slip constraint at solids ([`constrain_at_solids`]).
pub fn extend_velocity(grid: &Grid, solids: &StaticSolids, velocity: &mut MacVelocity, mut valid: [Array3<bool>; 3], layers: usize) {
    for (faces, valid) in velocity.faces.iter_mut().zip(valid.iter_mut()) {
        extrapolate(faces, valid, layers);
        faces.as_mut_slice().par_iter_mut().zip(valid.as_slice().par_iter()).for_each(|(u, &ok)| {
            if !ok {
                *u = 0.0;
            }
        });
    }
    constrain_at_solids(grid, solids, velocity);
}

/// Free-slip condition at blocked faces: the component normal to the solid is removed (for
/// the axis-aligned domain walls this sets the wall-normal velocity to zero).
fn constrain_at_solids(grid: &Grid, solids: &StaticSolids, velocity: &mut MacVelocity) {
    // Only obstacles close faces inside the domain; their normal is taken from the velocity
    // before any face changed.
    let before = solids.has_obstacles().then(|| velocity.clone());
    for (a, faces) in velocity.faces.iter_mut().enumerate() {
        let open = &solids.face_open[a];
        faces.par_update(|i, j, k, u| {
            if open.get(i, j, k) > 0.0 {
                return;
            }
            let on_wall = [i, j, k][a] == 0 || [i, j, k][a] == grid.dims[a];
            match &before {
                Some(before) if !on_wall => {
                    let x = grid.position(Location::Face(a), i, j, k);
                    let n = grid.gradient(&solids.phi_cells, Location::Cell, &x).try_normalize(1e-12).unwrap_or_default();
                    *u -= before.at(grid, &x).dot(&n) * n[a];
                }
                _ => *u = 0.0,
            }
        });
    }
}

/// `phi` over the cell centres padded by one cell whose value mirrors the boundary cell's
/// magnitude, so that a liquid touching a domain side is closed off exactly on that side.
fn padded(grid: &Grid, phi: &Array3<Real>) -> Sampled<Real> {
    let dims = grid.dims.map(|n| n + 2);
    let mut padded = Array3::filled(dims, 0.0);
    padded.par_fill_with(|i, j, k| {
        let inner = [i, j, k];
        let clamped: [usize; 3] = std::array::from_fn(|a| inner[a].clamp(1, grid.dims[a]) - 1);
        let v = phi.get(clamped[0], clamped[1], clamped[2]);
        let outside = (0..3).any(|a| inner[a] == 0 || inner[a] == grid.dims[a] + 1);
        if outside {
            v.abs()
        } else {
            v
        }
    });
    Sampled { values: padded, origin: grid.origin - Vec3::repeat(0.5 * grid.dx), spacing: grid.dx }
}

/// Memory estimate for a liquid on `grid` (and bodies, `with_bodies`): persistent state and solids (about 104 bytes per
/// cell), the pressure solve's matrix, multigrid preconditioner (its three fine vectors and the
/// coarse levels) and vectors (about 112), advection and extrapolation temporaries (about 40),
/// and particles in a band around a surface assumed to be as large as the domain's floor.
pub fn estimate_memory_bytes(grid: &Grid, particles_per_cell: usize, with_bodies: bool) -> usize {
    let cells = grid.cell_count();
    let [nx, _, nz] = grid.dims;
    let band_cells = (2.0 * particles::BAND) as usize * nx * nz;
    // With bodies: their distance at cells (8 bytes) and the coupled solve's index of the dual
    // cells they reach, one per face (12).
    let bodies = if with_bodies { 20 } else { 0 };
    cells * (256 + bodies) + band_cells * particles_per_cell * std::mem::size_of::<MarkerParticle>()
}
