//! The scene file schema: plain serde data, strict (unknown keys are errors). SI units, y up.
//! `docs/scene-format.md` documents every key.

use crate::grid::advection::AdvectionScheme;
pub use crate::solids::rigid::BodyKind;
pub use crate::solids::Boundary;
use serde::{Deserialize, Serialize};

/// A whole scene file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// Time range and global physics.
    pub simulation: Simulation,
    /// The simulated box and its grid.
    pub domain: Domain,
    /// The liquid: material, solver settings, initial regions, sources.
    #[serde(default)]
    pub liquid: Liquid,
    /// Smoke-laden air as the fluid instead of a liquid (`[smoke]`; the scene then has no
    /// liquid).
    pub smoke: Option<Smoke>,
    /// Static obstacles.
    #[serde(default, rename = "obstacle")]
    pub obstacles: Vec<Obstacle>,
    /// Rigid bodies, two-way coupled to the liquid.
    #[serde(default, rename = "body")]
    pub bodies: Vec<Body>,
    /// Passive tracer particles (plankton) carried by the liquid.
    #[serde(default)]
    pub tracers: Vec<Tracers>,
    /// What is written, where and how often.
    #[serde(default)]
    pub output: Output,
}

/// `[simulation]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// Number of frames to simulate after the initial frame 0.
    pub frames: u32,
    /// Frames per second.
    #[serde(default = "default_fps")]
    pub fps: f64,
    /// Largest distance, in cells, that the fastest liquid may travel in one substep.
    #[serde(default = "default_cfl")]
    pub cfl: f64,
    /// Gravitational acceleration (m/s^2).
    #[serde(default = "default_gravity")]
    pub gravity: [f64; 3],
    /// Seed of the particle placement (runs with the same seed are identical).
    #[serde(default)]
    pub seed: u64,
    /// A liquid speed above this (m/s) is treated as a numerical blow-up and stops the run.
    #[serde(default = "default_max_speed")]
    pub max_speed: f64,
}

fn default_fps() -> f64 {
    24.0
}
fn default_cfl() -> f64 {
    1.0
}
fn default_gravity() -> [f64; 3] {
    [0.0, -9.81, 0.0]
}
fn default_max_speed() -> f64 {
    100.0
}

impl Simulation {
    /// The run's settings.
    pub fn settings(&self) -> crate::settings::Settings {
        crate::settings::Settings { frames: self.frames, fps: self.fps, cfl: self.cfl, gravity: crate::math::vec3(self.gravity), max_speed: self.max_speed }
    }
}

/// `[domain]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    /// Minimum corner (m).
    pub min: [f64; 3],
    /// Maximum corner (m).
    pub max: [f64; 3],
    /// Cells along the longest side (give this or `cell_size`).
    pub resolution: Option<u32>,
    /// Cell edge length in m (give this or `resolution`).
    pub cell_size: Option<f64>,
    /// What each side of the box is.
    #[serde(default)]
    pub boundary: Boundaries,
}

/// The six sides of the domain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundaries {
    #[serde(default)]
    pub x_min: Boundary,
    #[serde(default)]
    pub x_max: Boundary,
    #[serde(default)]
    pub y_min: Boundary,
    #[serde(default)]
    pub y_max: Boundary,
    #[serde(default)]
    pub z_min: Boundary,
    #[serde(default)]
    pub z_max: Boundary,
}

impl Boundaries {
    /// `[axis][side]` with side 0 = min, 1 = max.
    pub fn sides(&self) -> [[Boundary; 2]; 3] {
        [[self.x_min, self.x_max], [self.y_min, self.y_max], [self.z_min, self.z_max]]
    }
}

/// `[liquid]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Liquid {
    /// How the liquid is simulated.
    #[serde(default)]
    pub method: LiquidMethod,
    /// Settings of the FLIP method (`method = "flip"`).
    #[serde(default)]
    pub flip: Flip,
    /// Density (kg/m^3).
    #[serde(default = "default_density")]
    pub density: f64,
    /// Velocity and level-set advection scheme.
    #[serde(default)]
    pub advection: AdvectionScheme,
    /// Relative residual at which the pressure solve stops.
    #[serde(default = "default_pressure_tolerance")]
    pub pressure_tolerance: f64,
    /// Iteration cap of the pressure solve.
    #[serde(default = "default_pressure_max_iterations")]
    pub pressure_max_iterations: u32,
    /// Preconditioner of the pressure solve: `mic0` or `multigrid`.
    #[serde(default)]
    pub pressure_preconditioner: crate::coupling::PressurePreconditioner,
    /// Dynamic viscosity (Pa s): 0 is inviscid (water is about 0.001, olive oil 0.08, honey
    /// about 10). Solved implicitly, so any value is stable.
    #[serde(default)]
    pub viscosity: f64,
    /// How a viscous liquid meets walls and obstacles: `no-slip` (it sticks) or `free-slip`.
    #[serde(default)]
    pub slip: crate::fluids::viscosity::Slip,
    /// Surface tension against the air (N/m): 0 is none (water 0.072, olive oil 0.032,
    /// mercury 0.49). Level-set liquids only; it limits the substep at fine grids.
    #[serde(default)]
    pub surface_tension: f64,
    /// A viscoelastic liquid's elasticity (`[liquid.elastic]`; none by default).
    #[serde(default)]
    pub elastic: Option<Elastic>,
    /// Marker particles per cell near the surface (0 turns the particle correction off).
    #[serde(default = "default_particles_per_cell")]
    pub particles_per_cell: u32,
    /// Substeps between particle reseedings.
    #[serde(default = "default_reseed_every")]
    pub reseed_every: u32,
    /// Steer the liquid volume back to its target when the level set drifts.
    #[serde(default = "yes")]
    pub volume_correction: bool,
    /// Several liquids in one (`[[liquid.phase]]`; level set only): each with its density
    /// and surface tension against the air. Without any, the liquid is one phase of
    /// `density` and `surface_tension`.
    #[serde(default)]
    pub phase: Vec<PhaseSpec>,
    /// Surface tensions between two phases (`[[liquid.interface]]`; none where not given).
    #[serde(default)]
    pub interface: Vec<InterfaceSpec>,
    /// Reactions between phases, or a phase and the air (`[[liquid.reaction]]`).
    #[serde(default)]
    pub reaction: Vec<ReactionSpec>,
    /// Initial liquid, built in order: each region is added to or subtracted from the ones before.
    #[serde(default)]
    pub region: Vec<Region>,
    /// Emitters adding liquid over time.
    #[serde(default)]
    pub source: Vec<Source>,
}

impl Default for Liquid {
    fn default() -> Self {
        Liquid {
            method: LiquidMethod::default(),
            flip: Flip::default(),
            density: default_density(),
            advection: AdvectionScheme::default(),
            pressure_tolerance: default_pressure_tolerance(),
            pressure_max_iterations: default_pressure_max_iterations(),
            pressure_preconditioner: Default::default(),
            viscosity: 0.0,
            slip: Default::default(),
            surface_tension: 0.0,
            elastic: None,
            phase: Vec::new(),
            interface: Vec::new(),
            reaction: Vec::new(),
            particles_per_cell: default_particles_per_cell(),
            reseed_every: default_reseed_every(),
            volume_correction: true,
            region: Vec::new(),
            source: Vec::new(),
        }
    }
}

/// `[smoke]`: the domain is filled with air that carries smoke and heat (Fedkiw, Stam and
/// Jensen 2001): incompressible, no free surface, buoyant where it is hot or laden with smoke.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smoke {
    /// Density of the air (kg/m^3): the mass the bodies push against.
    #[serde(default = "default_air_density")]
    pub air_density: f64,
    /// Temperature of the still air (K): air `T` kelvin hotter rises with `g T / ambient_temperature`.
    #[serde(default = "default_ambient_temperature")]
    pub ambient_temperature: f64,
    /// How much the smoke weighs down the air (m/s^2 per unit of smoke density; 0: weightless).
    #[serde(default)]
    pub weight: f64,
    /// Vorticity confinement (dimensionless; 0 is none): puts back the small swirls the grid
    /// smooths away.
    #[serde(default = "default_vorticity")]
    pub vorticity: f64,
    /// Velocity advection scheme.
    #[serde(default)]
    pub advection: AdvectionScheme,
    /// Relative residual at which the pressure solve stops.
    #[serde(default = "default_pressure_tolerance")]
    pub pressure_tolerance: f64,
    /// Iteration cap of the pressure solve.
    #[serde(default = "default_pressure_max_iterations")]
    pub pressure_max_iterations: u32,
    /// Preconditioner of the pressure solve: `mic0` or `multigrid`.
    #[serde(default)]
    pub pressure_preconditioner: crate::coupling::PressurePreconditioner,
    /// Smoke and heat at the start (`[[smoke.region]]`).
    #[serde(default)]
    pub region: Vec<SmokeRegion>,
    /// Emitters of smoke, heat and wind (`[[smoke.source]]`).
    #[serde(default)]
    pub source: Vec<SmokeSource>,
}

fn default_air_density() -> f64 {
    1.2
}
fn default_ambient_temperature() -> f64 {
    293.0
}
fn default_vorticity() -> f64 {
    0.2
}

/// `[[smoke.region]]`: smoke and heat in a shape at the start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmokeRegion {
    /// The shape.
    pub shape: ShapeSpec,
    /// Smoke density inside (dimensionless; 1 renders nearly opaque over ten cells).
    #[serde(default = "one")]
    pub density: f64,
    /// Kelvin above the ambient temperature.
    #[serde(default)]
    pub temperature: f64,
}

/// `[[smoke.source]]`: an emitter that keeps its shape filled with smoke and heat and blowing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmokeSource {
    /// Where smoke appears.
    pub shape: ShapeSpec,
    /// Smoke density inside (dimensionless).
    #[serde(default = "one")]
    pub density: f64,
    /// Kelvin above the ambient temperature.
    #[serde(default)]
    pub temperature: f64,
    /// Velocity of the air inside the shape (m/s).
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Time the emitter switches on (s).
    #[serde(default)]
    pub start: f64,
    /// Time the emitter switches off (s); runs to the end when absent.
    pub end: Option<f64>,
}

/// How the liquid is simulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LiquidMethod {
    /// A particle level set on the MAC grid, two-way coupled to rigid bodies: sharp surfaces.
    #[default]
    LevelSet,
    /// Mass-full FLIP particles with unilateral (or bilateral) incompressibility and blurred
    /// obstacles: big splashing liquid.
    Flip,
}

/// `[liquid.elastic]`: a viscoelastic liquid.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Elastic {
    /// The elastic modulus (Pa): how hard the liquid springs back from a strain.
    pub modulus: f64,
    /// The strain beyond which it flows instead (none: it springs back from any strain).
    #[serde(default)]
    pub yield_strain: Option<f64>,
    /// How fast strain beyond the yield strain flows away (1/s; none: at once).
    #[serde(default)]
    pub plastic_rate: Option<f64>,
}

/// `[[liquid.phase]]`: one of several liquids.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// Name: regions and sources name it, outputs carry it.
    pub name: String,
    /// Density (kg/m^3).
    pub density: f64,
    /// Dynamic viscosity (Pa s; 0: inviscid).
    #[serde(default)]
    pub viscosity: f64,
    /// Surface tension against the air (N/m; 0: none).
    #[serde(default)]
    pub surface_tension: f64,
    /// A viscoelastic phase's elasticity (`[liquid.phase.elastic]`; none by default).
    #[serde(default)]
    pub elastic: Option<Elastic>,
    /// Changes of its properties over time (`[[liquid.phase.change]]`, in time order).
    #[serde(default)]
    pub change: Vec<PhaseChangeSpec>,
}

/// `[[liquid.phase.change]]`: a phase's new properties from a time on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseChangeSpec {
    /// When (s).
    pub time: f64,
    /// New density (kg/m^3).
    #[serde(default)]
    pub density: Option<f64>,
    /// New dynamic viscosity (Pa s).
    #[serde(default)]
    pub viscosity: Option<f64>,
    /// New surface tension against the air (N/m).
    #[serde(default)]
    pub surface_tension: Option<f64>,
    /// New elasticity: a table, or `false` for none.
    #[serde(default)]
    pub elastic: Option<ElasticChange>,
}

/// A change's `elastic`: `false` (no elasticity from then on) or a `[.elastic]` table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElasticChange {
    /// `elastic = false` (`true` is refused).
    Off(bool),
    /// New elasticity.
    To(Elastic),
}

/// `[[liquid.interface]]`: the surface tension between two phases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceSpec {
    /// The two phases' names.
    pub between: [String; 2],
    /// Surface tension (N/m).
    pub surface_tension: f64,
}

/// `[[liquid.reaction]]`: where two regions touch they turn into a third at a rate
/// ([`crate::fluids::multiphase::Reaction`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReactionSpec {
    /// The two reactants: phases' names or "air".
    pub between: [String; 2],
    /// What they turn into: a phase's name, or "air" where one reactant is the air.
    pub product: String,
    /// Reactant volume consumed per area of contact and second (m/s).
    pub rate: f64,
    /// Radius of the spheres of product put in (m; three cells by default: the level sets keep
    /// smaller ones less well).
    #[serde(default)]
    pub bubble_radius: Option<f64>,
    /// Product volume per reactant volume consumed (a phase as product only).
    #[serde(default = "one")]
    pub expansion: f64,
}

/// `[liquid.flip]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flip {
    /// `unilateral` (cells may empty: the liquid separates) or `bilateral` (standard
    /// incompressible FLIP).
    #[serde(default)]
    pub incompressibility: crate::fluids::flip::Incompressibility,
    /// Share of FLIP in the particle velocity update; the rest is PIC (0 to 1).
    #[serde(default = "default_flip_ratio")]
    pub flip_ratio: f64,
    /// Particles per cell at rest density (a cube number places them on an exact lattice).
    #[serde(default = "default_flip_particles_per_cell")]
    pub particles_per_cell: u32,
    /// Particle advection: `trapezoidal` (second order) or `euler`.
    #[serde(default)]
    pub advection: crate::fluids::flip::ParticleAdvection,
    /// Run the density correction of the unilateral mode.
    #[serde(default = "yes")]
    pub density_correction: bool,
    /// Cells at least this deep inside the liquid may take negative pressure (suction); 0: none.
    #[serde(default)]
    pub suction_depth: u32,
    /// Explosions: radial kicks to the liquid inside a ball at a given time.
    #[serde(default)]
    pub explosion: Vec<ExplosionSpec>,
}

impl Default for Flip {
    fn default() -> Self {
        Flip {
            incompressibility: Default::default(),
            flip_ratio: default_flip_ratio(),
            particles_per_cell: default_flip_particles_per_cell(),
            advection: Default::default(),
            density_correction: true,
            suction_depth: 0,
            explosion: Vec::new(),
        }
    }
}

fn default_flip_ratio() -> f64 {
    0.95
}
fn default_flip_particles_per_cell() -> u32 {
    8
}

/// `[[liquid.flip.explosion]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplosionSpec {
    /// Centre of the ball (m).
    pub center: [f64; 3],
    /// Radius of the ball (m).
    pub radius: f64,
    /// Outward speed at the ball's rim, growing linearly from zero at the centre (m/s).
    pub speed: f64,
    /// When it goes off (s).
    pub time: f64,
}

fn yes() -> bool {
    true
}
pub(super) fn default_density() -> f64 {
    1000.0
}
fn default_pressure_tolerance() -> f64 {
    1e-6
}
fn default_pressure_max_iterations() -> u32 {
    2000
}
fn default_particles_per_cell() -> u32 {
    16
}
fn default_reseed_every() -> u32 {
    10
}

/// A piece of the initial liquid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Whether this shape is added to or removed from the liquid so far.
    #[serde(default)]
    pub operation: Operation,
    /// The phase it adds (required with `[[liquid.phase]]`); it takes the shape from the
    /// phases before it.
    pub phase: Option<String>,
    /// The shape.
    pub shape: ShapeSpec,
}

/// How a region combines with the regions before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Union.
    #[default]
    Add,
    /// Difference.
    Subtract,
}

/// A liquid emitter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Where liquid appears.
    pub shape: ShapeSpec,
    /// Velocity given to the liquid inside the shape (m/s).
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Time the emitter switches on (s).
    #[serde(default)]
    pub start: f64,
    /// Time the emitter switches off (s); runs to the end when absent.
    pub end: Option<f64>,
    /// The phase it adds (required with `[[liquid.phase]]`).
    pub phase: Option<String>,
}

/// A static obstacle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Obstacle {
    /// Name used in outputs.
    pub name: Option<String>,
    /// The solid shape.
    pub shape: ShapeSpec,
}

/// Passive tracer particles, `[[tracers]]`: seeded on a lattice inside a shape, then carried
/// by the liquid's velocity without acting on anything.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tracers {
    /// Where they start.
    pub shape: ShapeSpec,
    /// Distance between neighbouring tracers at the start (m); half a cell by default.
    pub spacing: Option<f64>,
}

/// A rigid body, `[[body]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Body {
    /// Name used in outputs.
    pub name: Option<String>,
    /// The body's shape where it starts.
    pub shape: ShapeSpec,
    /// Moved by the liquid, gravity and contact; fixed; or moving as prescribed.
    #[serde(default)]
    pub kind: BodyKind,
    /// Density (kg/m^3); give this or `mass` for a dynamic body.
    pub density: Option<f64>,
    /// Mass (kg); give this or `density` for a dynamic body.
    pub mass: Option<f64>,
    /// Initial orientation: the shape turned about its centre of mass by these angles
    /// (degrees about x, then y, then z). Copies of one shape turned differently share one
    /// deformable model.
    #[serde(default)]
    pub rotate: [f64; 3],
    /// Initial velocity of the centre of mass (m/s).
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Initial angular velocity (rad/s).
    #[serde(default)]
    pub angular_velocity: [f64; 3],
    /// A kinematic body's path: `[t, dx, dy, dz]` keyframes, the body's displacement from where
    /// it starts at time `t` (s), followed piecewise linearly (held before the first and after
    /// the last). Replaces `velocity`.
    #[serde(default)]
    pub path: Vec<[f64; 4]>,
    /// Coefficient of restitution in collisions (0: no bounce, 1: elastic).
    #[serde(default = "default_restitution")]
    pub restitution: f64,
    /// Coulomb friction coefficient.
    #[serde(default = "default_friction")]
    pub friction: f64,
    /// Rate (1/s) at which a dynamic body's velocity and angular momentum decay, so that it
    /// settles: not physical (0, the default, is undamped). On a body simulated in full
    /// (`fem`, `cloth`) it is the drag `-damping m v` on each particle, like still air's.
    #[serde(default)]
    pub damping: f64,
    /// Makes a dynamic body a reduced deformable body: a rigid frame carrying its lowest
    /// vibration modes.
    pub deformable: Option<Deformable>,
    /// Balanced forces that deform a deformable body (a creature's swimming strokes).
    pub actuation: Option<Actuation>,
    /// Particles of a body simulated in full held where they start, or moved as prescribed.
    #[serde(default)]
    pub pin: Vec<Pin>,
    /// Rigid bones inside a volume simulated in full (`method = "fem"`): a skeleton.
    #[serde(default)]
    pub bone: Vec<Bone>,
}

/// `[[body.bone]]`: a rigid bone inside a volume simulated in full; the particles inside its
/// shape where the body starts are hard-bound to it. Free, or joined to an earlier bone or to
/// the world at a pivot: hinged about an axis (and a hinge may be driven toward a target
/// angle by a PD controller), or, without an axis, at a ball joint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bone {
    /// Name, for `parent` and outputs.
    pub name: String,
    /// The particles inside this shape are bound to the bone.
    pub shape: ShapeSpec,
    /// The bone it is joined to (defined before it), or `"world"`; absent, the bone is free.
    pub parent: Option<String>,
    /// The joint's pivot, where the body starts (m).
    pub pivot: Option<[f64; 3]>,
    /// A hinge's axis, where the body starts; absent, the joint is a ball joint.
    pub axis: Option<[f64; 3]>,
    /// A PD controller turning a hinge toward a target angle.
    pub drive: Option<BoneDrive>,
}

/// `drive = { ... }` of a hinged bone: the target angle `offset + amplitude sin(360 frequency t
/// + phase)` (degrees), and the controller's gains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoneDrive {
    /// Torque per radian off the target (N m/rad).
    pub stiffness: f64,
    /// Torque per radian per second off the target's rate (N m s/rad).
    #[serde(default)]
    pub damping: f64,
    /// The target's swing (degrees).
    #[serde(default)]
    pub amplitude: f64,
    /// Swings per second (Hz).
    #[serde(default)]
    pub frequency: f64,
    /// The swing's phase (degrees).
    #[serde(default)]
    pub phase: f64,
    /// The angle it swings about (degrees).
    #[serde(default)]
    pub offset: f64,
}

/// `[[body.pin]]`: the particles of a body simulated in full (`deformable.method = "fem"`)
/// inside a shape where the body starts, held there or moved as prescribed (a clamped end, a
/// handle turned or carried).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The particles inside this shape are pinned.
    pub shape: ShapeSpec,
    /// `[t, dx, dy, dz]` keyframes: the pinned particles' displacement from where they start
    /// at time `t` (s), followed piecewise linearly (held before the first and after the last).
    #[serde(default)]
    pub path: Vec<[f64; 4]>,
    /// Rate (rad/s) at which the pinned particles turn about their centroid.
    #[serde(default)]
    pub angular_velocity: [f64; 3],
    /// A soft pin: each particle tied to where the pin puts it by a zero-length spring of this
    /// stiffness (N/m), integrated implicitly; absent, the pin holds its particles exactly.
    pub stiffness: Option<f64>,
    /// A soft pin's spring damping (N s/m); absent, each particle's spring is critically damped.
    pub damping: Option<f64>,
    /// The name of a kinematic body the pinned particles are bound to: they move with it (its
    /// path or velocity, and its spin about its centre of mass) instead of along the pin's own
    /// `path` and `angular_velocity`.
    pub body: Option<String>,
}

/// `actuation = { ... }` of a deformable `[[body]]`: forces at points of the body, fixed in its
/// frame, scaled by a time profile; their net force and torque are removed, so they only
/// deform the body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actuation {
    /// How the forces vary in time.
    #[serde(default)]
    pub profile: ActuationProfile,
    /// Frequency of a `sine` profile (Hz).
    #[serde(default = "one")]
    pub frequency: f64,
    /// A starfish's or jellyfish's built-in actuation points: the force at each (N).
    pub force: Option<f64>,
    /// Any other shape: the points where forces act, where the body starts (m).
    #[serde(default)]
    pub points: Vec<[f64; 3]>,
    /// The force at each point (N), as the body starts.
    #[serde(default)]
    pub forces: Vec<[f64; 3]>,
}

/// An actuation's time profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActuationProfile {
    /// Always at full strength.
    Constant,
    /// `sin(2 pi frequency t)`.
    #[default]
    Sine,
}

/// `deformable = { ... }` of a `[[body]]`: the material of a deformable body, and how it is
/// simulated (in a few modes, in full, or as cloth).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deformable {
    /// How the body deforms: in a few vibration modes on a rigid frame, or in full.
    #[serde(default)]
    pub method: DeformableMethod,
    /// Young's modulus (Pa).
    pub young: f64,
    /// Poisson's ratio, in [0, 0.5).
    #[serde(default = "default_poisson")]
    pub poisson: f64,
    /// Vibration modes kept by a modal body (0: the body stays rigid); 10 when absent.
    pub modes: Option<u32>,
    /// Stiffness-proportional damping `beta` (s): `C = beta K`.
    #[serde(default)]
    pub damping: f64,
    /// Edge of the lattice cubes the tetrahedral mesh is cut from, or of a cloth sheet's
    /// triangles (m); the grid's cell size or a quarter of the shape's smallest extent (a
    /// sheet's smaller side), whichever is smaller, when absent. A cloth from a mesh file is
    /// simulated on the file's triangles.
    pub spacing: Option<f64>,
    /// Keeps the volume of a body simulated in full (`method = "fem"`): each particle's share
    /// of it is held at its rest value by a pressure projection of the velocities. Of a closed
    /// cloth bag (`method = "cloth"`), the volume it encloses: a bag full of liquid.
    #[serde(default)]
    pub incompressible: bool,
}

fn default_poisson() -> f64 {
    0.3
}
/// `deformable.method`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeformableMethod {
    /// A reduced body: a rigid frame carrying the lowest vibration modes of a linear
    /// finite-element model (Lu, Jin, Fedkiw).
    #[default]
    Modal,
    /// Every vertex of the tetrahedral mesh a particle, moved by hyperelastic finite elements
    /// (Shinar ch. 2–3).
    Fem,
    /// Cloth or a thin shell (a `sheet` or `shell` shape): every vertex of its triangles a
    /// particle, moved by a membrane's stretch and shear and by bending (Shinar ch. 2–3).
    Cloth,
}

/// Vibration modes a modal body keeps when `deformable.modes` is absent.
pub const DEFAULT_MODES: u32 = 10;

fn default_restitution() -> f64 {
    0.2
}

fn default_friction() -> f64 {
    0.5
}

/// A shape, written `shape.<kind> = { ... }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ShapeSpec {
    /// Axis-aligned box.
    Box { min: [f64; 3], max: [f64; 3] },
    /// Ball.
    Sphere { center: [f64; 3], radius: f64 },
    /// Cylinder with flat caps from `from` to `to`.
    Cylinder { from: [f64; 3], to: [f64; 3], radius: f64 },
    /// The points within `radius` of the segment from `from` to `to`.
    Capsule { from: [f64; 3], to: [f64; 3], radius: f64 },
    /// Ring torus: a tube of radius `minor` around a circle of radius `major` about `axis`.
    Torus {
        center: [f64; 3],
        #[serde(default = "y_axis")]
        axis: [f64; 3],
        major: f64,
        minor: f64,
    },
    /// A five-armed starfish lying flat, arms reaching `radius` from `center`, `thickness`
    /// thick at the centre (a fifth of the radius when absent).
    Starfish { center: [f64; 3], radius: f64, thickness: Option<f64> },
    /// A jellyfish (deformable bodies only): a bell of outer radius `radius` centred at
    /// `center` and four arms below it, separate sub-bodies held by point joints and seen by
    /// the liquid through one skin.
    Jellyfish { center: [f64; 3], radius: f64 },
    /// A thin-walled tray open at the top (+y): walls and floor `wall` thick.
    OpenBox { min: [f64; 3], max: [f64; 3], wall: f64 },
    /// A closed triangle mesh from an OBJ or PLY file, scaled, then rotated (degrees about x,
    /// then y, then z), then translated.
    Mesh {
        path: String,
        #[serde(default = "one")]
        scale: f64,
        #[serde(default)]
        rotate: [f64; 3],
        #[serde(default)]
        translate: [f64; 3],
    },
    /// A flat rectangular sheet `size = [along x, along z]` (m) centred at `center`, facing +y,
    /// `thickness` thick (turn it with the body's `rotate`): a thin box to the liquid and as an
    /// obstacle, and the cloth of a body with `deformable.method = "cloth"`.
    Sheet { center: [f64; 3], size: [f64; 2], thickness: f64 },
    /// A thin wall `thickness` thick around a triangle mesh from an OBJ or PLY file, which may be
    /// open (a hull, a cup); placed like `mesh`.
    Shell {
        path: String,
        thickness: f64,
        #[serde(default = "one")]
        scale: f64,
        #[serde(default)]
        rotate: [f64; 3],
        #[serde(default)]
        translate: [f64; 3],
    },
}

fn one() -> f64 {
    1.0
}

impl ShapeSpec {
    /// The point that places the shape (a centre, a first corner or end, a mesh's
    /// translation), and the same shape placed with that point at the origin: copies of one
    /// shape at different places have equal specs there (and share a deformable model).
    pub fn split_placement(&self) -> ([f64; 3], ShapeSpec) {
        let zero = [0.0; 3];
        let less = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        match self.clone() {
            ShapeSpec::Box { min, max } => (min, ShapeSpec::Box { min: zero, max: less(max, min) }),
            ShapeSpec::Sphere { center, radius } => (center, ShapeSpec::Sphere { center: zero, radius }),
            ShapeSpec::Cylinder { from, to, radius } => (from, ShapeSpec::Cylinder { from: zero, to: less(to, from), radius }),
            ShapeSpec::Capsule { from, to, radius } => (from, ShapeSpec::Capsule { from: zero, to: less(to, from), radius }),
            ShapeSpec::Torus { center, axis, major, minor } => (center, ShapeSpec::Torus { center: zero, axis, major, minor }),
            ShapeSpec::Starfish { center, radius, thickness } => (center, ShapeSpec::Starfish { center: zero, radius, thickness }),
            ShapeSpec::Jellyfish { center, radius } => (center, ShapeSpec::Jellyfish { center: zero, radius }),
            ShapeSpec::OpenBox { min, max, wall } => (min, ShapeSpec::OpenBox { min: zero, max: less(max, min), wall }),
            ShapeSpec::Mesh { path, scale, rotate, translate } => (translate, ShapeSpec::Mesh { path, scale, rotate, translate: zero }),
            ShapeSpec::Sheet { center, size, thickness } => (center, ShapeSpec::Sheet { center: zero, size, thickness }),
            ShapeSpec::Shell { path, thickness, scale, rotate, translate } => (translate, ShapeSpec::Shell { path, thickness, scale, rotate, translate: zero }),
        }
    }
}

fn y_axis() -> [f64; 3] {
    [0.0, 1.0, 0.0]
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Output directory; `out/<scene name>` when absent. Overridden by `--out`.
    pub directory: Option<String>,
    /// Per-frame files to write besides `stats.jsonl`.
    #[serde(default = "default_formats")]
    pub formats: Vec<Format>,
    /// Write files every this many frames.
    #[serde(default = "one_u32")]
    pub every: u32,
    /// Write a checkpoint every this many frames (0: never).
    #[serde(default = "one_u32")]
    pub checkpoint_every: u32,
    /// The preview camera.
    #[serde(default)]
    pub camera: Camera,
}

impl Default for Output {
    fn default() -> Self {
        Output { directory: None, formats: default_formats(), every: 1, checkpoint_every: 1, camera: Camera::default() }
    }
}

fn one_u32() -> u32 {
    1
}
fn default_formats() -> Vec<Format> {
    vec![Format::Ply, Format::Vtk, Format::Png]
}

/// A per-frame output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Liquid surface (and obstacles) as binary PLY with per-vertex velocity.
    Ply,
    /// Liquid surface as Wavefront OBJ.
    Obj,
    /// VTK image data (level set, velocity, pressure) and a `.pvd` time series.
    Vtk,
    /// A shaded preview image.
    Png,
    /// OpenVDB volumes of the liquid (level set, fog, velocity).
    Vdb,
    /// A USD stage of the run (liquid, bodies, particles, obstacles).
    Usd,
}

/// The preview camera.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Camera {
    /// Eye position (m); chosen to frame the domain when absent.
    pub position: Option<[f64; 3]>,
    /// Point looked at (m); the domain centre when absent.
    pub look_at: Option<[f64; 3]>,
    /// Vertical field of view (degrees).
    #[serde(default = "default_fov")]
    pub fov: f64,
    /// Image width (pixels).
    #[serde(default = "default_width")]
    pub width: u32,
    /// Image height (pixels).
    #[serde(default = "default_height")]
    pub height: u32,
}

impl Default for Camera {
    fn default() -> Self {
        Camera { position: None, look_at: None, fov: default_fov(), width: default_width(), height: default_height() }
    }
}

fn default_fov() -> f64 {
    40.0
}
fn default_width() -> u32 {
    960
}
fn default_height() -> u32 {
    540
}
