//! Surface-flow scenes: a file with a `[surface]` table describes water as a lattice gas on an
//! elastic sheet ([`crate::fluids::lattice`]) instead of a liquid in a box. Schema, validation
//! with located errors, and the [`SurfaceFlow`] it builds.

use super::validate::Context;
use super::{from_toml, SceneError, SceneFile};
use crate::fluids::lattice::terrain::{read_grayscale_png, InitialWater, Terrain};
use crate::fluids::lattice::{HarmonicWave, VerticalForce, WaterExchange};
use crate::math::{Real, Vec3};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A surface-flow scene as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceScene {
    /// Frames and steps.
    pub simulation: SurfaceSimulation,
    /// The elastic surface.
    pub surface: SurfaceSpec,
    /// The water on it.
    #[serde(default)]
    pub water: WaterSpec,
    /// Vertical forces on every node over time windows (eq. 8).
    #[serde(default, rename = "force")]
    pub forces: Vec<ForceSpec>,
    /// A travelling wave of vertical force (eq. 10).
    pub wave: Option<WaveSpec>,
    /// Where frames go.
    #[serde(default)]
    pub output: SurfaceOutput,
}

/// `[simulation]` of a surface-flow scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceSimulation {
    /// Frames after frame 0.
    pub frames: u32,
    /// Automaton steps between two frames.
    #[serde(default = "ten")]
    pub steps_per_frame: u32,
    /// Length of one step (s).
    #[serde(default = "one")]
    pub dt: f64,
}

/// `[surface]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceSpec {
    /// Nodes along x and z (not with a height map, whose pixels are the nodes).
    pub nodes: Option<[usize; 2]>,
    /// Distance between neighbouring nodes (m).
    #[serde(default = "one")]
    pub spacing: f64,
    /// The initial shape.
    #[serde(default)]
    pub terrain: TerrainSpec,
    /// Mass of each node (kg).
    #[serde(default = "one")]
    pub mass: f64,
    /// Spring stiffness (N/m).
    pub stiffness: f64,
    /// Damping factor (N s/m).
    #[serde(default)]
    pub damping: f64,
    /// Whether the nodes on the lattice's edge are held in place.
    #[serde(default = "yes")]
    pub pinned_edges: bool,
    /// Gravity on the sheet's own masses, downwards (m/s²).
    #[serde(default)]
    pub gravity: f64,
}

/// `surface.terrain.<kind>`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum TerrainSpec {
    /// Level.
    #[default]
    Flat,
    /// A Gaussian hill.
    Gaussian { centre: [f64; 2], height: f64, width: f64 },
    /// A peak ringed by a valley.
    MexicanHat { centre: [f64; 2], height: f64, width: f64 },
    /// Smooth value noise.
    Noise {
        amplitude: f64,
        scale: f64,
        #[serde(default)]
        seed: u64,
    },
    /// A grayscale PNG (16-bit for fine heights): white is `height` metres up.
    HeightMap { path: String, height: f64 },
}

/// `[water]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaterSpec {
    /// Height of water one particle makes at a node (m).
    #[serde(default = "hundredth")]
    pub particle_height: f64,
    /// Weight each particle puts on its node (N).
    #[serde(default)]
    pub particle_weight: f64,
    /// The water at the start.
    #[serde(default)]
    pub initial: WaterInitSpec,
    /// `"closed"` keeps the water on the lattice; `"open"` lets it run off the edge.
    #[serde(default)]
    pub boundary: EdgeSpec,
    /// Circular holes in the domain (the water cannot go there).
    #[serde(default)]
    pub holes: Vec<HoleSpec>,
    /// Rain: particles added to every node each step while it lasts.
    pub rain: Option<RainSpec>,
    /// Evaporation: particles taken from every node every `every` steps from `start`.
    pub evaporation: Option<EvaporationSpec>,
}

impl Default for WaterSpec {
    fn default() -> Self {
        WaterSpec {
            particle_height: hundredth(),
            particle_weight: 0.0,
            initial: WaterInitSpec::default(),
            boundary: EdgeSpec::default(),
            holes: Vec::new(),
            rain: None,
            evaporation: None,
        }
    }
}

/// `water.initial.<kind>`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum WaterInitSpec {
    /// No water.
    #[default]
    Dry,
    /// The same count everywhere.
    Uniform { particles: u32 },
    /// A Gaussian blob of `peak` particles at its centre.
    Gaussian { centre: [f64; 2], peak: f64, width: f64 },
    /// A grayscale PNG of the lattice's size: white is `peak` particles.
    Mask { path: String, peak: f64 },
}

/// `water.boundary`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeSpec {
    /// Water stays on the lattice.
    #[default]
    Closed,
    /// Water runs off the edge and is counted.
    Open,
}

/// `[[water.holes]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoleSpec {
    pub centre: [f64; 2],
    pub radius: f64,
}

/// `[water.rain]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RainSpec {
    pub particles: u32,
    #[serde(default)]
    pub start: f64,
    pub end: f64,
}

/// `[water.evaporation]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaporationSpec {
    pub particles: u32,
    #[serde(default)]
    pub start: f64,
    #[serde(default = "one_step")]
    pub every: u64,
}

/// `[[force]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForceSpec {
    /// Force per node, up positive (N).
    pub magnitude: f64,
    #[serde(default)]
    pub start: f64,
    #[serde(default = "forever")]
    pub end: f64,
}

/// `[wave]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaveSpec {
    pub amplitude: f64,
    pub wavenumber: f64,
    pub frequency: f64,
}

/// `[output]` of a surface-flow scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceOutput {
    /// Output directory (default `out/<scene name>`).
    pub directory: Option<String>,
    /// Write a checkpoint every this many frames (0: never).
    #[serde(default = "one_u32")]
    pub checkpoint_every: u32,
}

impl Default for SurfaceOutput {
    fn default() -> Self {
        SurfaceOutput { directory: None, checkpoint_every: 1 }
    }
}

fn one_u32() -> u32 {
    1
}

fn one() -> f64 {
    1.0
}
fn ten() -> u32 {
    10
}
fn yes() -> bool {
    true
}
fn hundredth() -> f64 {
    0.01
}
fn one_step() -> u64 {
    1
}
fn forever() -> f64 {
    f64::INFINITY
}

/// A validated surface-flow scene and the initial state it resolves to.
#[derive(Clone, Debug)]
pub struct LoadedSurfaceScene {
    pub scene: SurfaceScene,
    pub text: String,
    pub name: String,
    pub path: Option<PathBuf>,
    /// The initial state (the world builds the simulation from it).
    pub setup: SurfaceSetup,
}

/// A surface flow's initial state as its scene resolves it: the sheet's nodes and material,
/// the water on it and what adds, removes and pushes it.
#[derive(Clone, Debug)]
pub struct SurfaceSetup {
    /// Nodes along x and z, their spacing (m) and initial heights (m, x fastest).
    pub dims: [usize; 2],
    pub spacing: Real,
    pub heights: Vec<Real>,
    /// Node mass (kg), spring stiffness (N/m), damping (N s/m), pinned edges.
    pub mass: Real,
    pub stiffness: Real,
    pub damping: Real,
    pub pinned_edges: bool,
    /// Water: the height of one particle (m), the particles per node, the nodes in the domain,
    /// whether the edge is open.
    pub particle_height: Real,
    pub counters: Vec<u32>,
    pub active: Vec<bool>,
    pub open: bool,
    /// Rain and evaporation, vertical forces, a travelling wave.
    pub exchange: WaterExchange,
    pub forces: Vec<VerticalForce>,
    pub wave: Option<HarmonicWave>,
    /// Step length (s), gravity on the sheet (m/s^2), each particle's weight on its node (N).
    pub dt: Real,
    pub gravity: Vec3,
    pub particle_weight: Real,
}

/// Whether scene text describes a surface flow (it has a `[surface]` table).
pub fn is_surface_scene(text: &str) -> bool {
    text.parse::<toml::Table>().is_ok_and(|t| t.contains_key("surface"))
}

/// Parses and validates a surface-flow scene; image paths are relative to `base_dir`.
pub fn parse_surface(text: &str, label: &str, name: &str, path: Option<PathBuf>, base_dir: &Path) -> Result<LoadedSurfaceScene, SceneError> {
    let scene: SurfaceScene = from_toml(text, label)?;
    let cx = Context { text, label, base_dir };
    let setup = resolve(&scene, &cx)?;
    Ok(LoadedSurfaceScene { scene, text: text.to_string(), name: name.to_string(), path, setup })
}

/// Reads, parses and validates a surface-flow scene file.
pub fn load_surface(path: &Path) -> Result<LoadedSurfaceScene, SceneError> {
    let file = SceneFile::read(path)?;
    parse_surface(&file.text, &file.label, &file.name, Some(path.to_path_buf()), &file.base_dir)
}

/// A grayscale image of the scene, read with errors naming the key and the file.
fn image(cx: &Context, key: &str, path: &str) -> Result<([usize; 2], Vec<Real>), SceneError> {
    let file = cx.base_dir.join(path);
    read_grayscale_png(&file).map_err(|e| cx.error(key, format!("image `{}`: {e}", file.display())))
}

fn resolve(scene: &SurfaceScene, cx: &Context) -> Result<SurfaceSetup, SceneError> {
    let sim = &scene.simulation;
    cx.check(sim.frames >= 1, "simulation.frames", || format!("expected at least 1 frame, got {}", sim.frames))?;
    cx.check((1..=100_000).contains(&sim.steps_per_frame), "simulation.steps_per_frame", || format!("expected 1 to 100000 steps per frame, got {}", sim.steps_per_frame))?;
    cx.positive(sim.dt, "simulation.dt", "step length in s")?;
    let s = &scene.surface;
    cx.positive(s.spacing, "surface.spacing", "node spacing in m")?;
    cx.positive(s.mass, "surface.mass", "node mass in kg")?;
    cx.positive(s.stiffness, "surface.stiffness", "spring stiffness in N/m")?;
    cx.check(s.damping.is_finite() && s.damping >= 0.0, "surface.damping", || format!("expected a damping factor >= 0, got {}", s.damping))?;
    cx.check(s.gravity.is_finite(), "surface.gravity", || format!("expected a finite number, got {}", s.gravity))?;
    let (dims, heights) = match &s.terrain {
        TerrainSpec::HeightMap { path, height } => {
            cx.check(s.nodes.is_none(), "surface.nodes", || "a height map's pixels are the nodes: leave out surface.nodes".into())?;
            cx.check(height.is_finite(), "surface.terrain.height-map.height", || format!("expected a finite height, got {height}"))?;
            let (dims, values) = image(cx, "surface.terrain.height-map.path", path)?;
            (dims, values.iter().map(|v| v * height).collect())
        }
        spec => {
            let dims = s.nodes.ok_or_else(|| cx.error("surface", "missing `nodes = [nx, nz]` (the lattice's size)"))?;
            cx.check(dims[0] >= 3 && dims[1] >= 3 && dims[0] * dims[1] <= 1 << 24, "surface.nodes", || format!("expected between 3 x 3 and 16.7 million nodes, got {dims:?}"))?;
            let terrain = match spec {
                TerrainSpec::Gaussian { centre, height, width } => {
                    cx.positive(*width, "surface.terrain.gaussian.width", "hill width in m")?;
                    Terrain::Gaussian { centre: *centre, height: *height, width: *width }
                }
                TerrainSpec::MexicanHat { centre, height, width } => {
                    cx.positive(*width, "surface.terrain.mexican-hat.width", "hat width in m")?;
                    Terrain::MexicanHat { centre: *centre, height: *height, width: *width }
                }
                TerrainSpec::Noise { amplitude, scale, seed } => {
                    cx.positive(*scale, "surface.terrain.noise.scale", "noise cell size in m")?;
                    Terrain::Noise { amplitude: *amplitude, scale: *scale, seed: *seed }
                }
                // A height map was handled above.
                TerrainSpec::Flat | TerrainSpec::HeightMap { .. } => Terrain::Flat,
            };
            (dims, terrain.sample(dims, s.spacing))
        }
    };
    cx.directory(&scene.output.directory, "output.directory")?;
    let w = &scene.water;
    cx.positive(w.particle_height, "water.particle_height", "particle height in m")?;
    cx.check(w.particle_weight.is_finite() && w.particle_weight >= 0.0, "water.particle_weight", || format!("expected a weight >= 0 in N, got {}", w.particle_weight))?;
    let initial = match &w.initial {
        WaterInitSpec::Dry => InitialWater::Dry,
        WaterInitSpec::Uniform { particles } => InitialWater::Uniform { particles: *particles },
        WaterInitSpec::Gaussian { centre, peak, width } => {
            cx.positive(*width, "water.initial.gaussian.width", "blob width in m")?;
            cx.check(peak.is_finite() && *peak >= 0.0, "water.initial.gaussian.peak", || format!("expected a number of particles >= 0, got {peak}"))?;
            InitialWater::Gaussian { centre: *centre, peak: *peak, width: *width }
        }
        WaterInitSpec::Mask { path, peak } => {
            cx.check(peak.is_finite() && *peak >= 0.0, "water.initial.mask.peak", || format!("expected a number of particles >= 0, got {peak}"))?;
            let (mask_dims, values) = image(cx, "water.initial.mask.path", path)?;
            cx.check(mask_dims == dims, "water.initial.mask.path", || format!("the mask is {mask_dims:?} pixels, the lattice {dims:?} nodes"))?;
            InitialWater::Mask { values, peak: *peak }
        }
    };
    let n = dims[0] * dims[1];
    let mut counters = initial.counters(dims, s.spacing);
    let mut active = vec![true; n];
    for (h, hole) in w.holes.iter().enumerate() {
        cx.positive(hole.radius, &format!("water.holes[{h}].radius"), "hole radius in m")?;
        for c in 0..n {
            let (x, z) = ((c % dims[0]) as Real * s.spacing - hole.centre[0], (c / dims[0]) as Real * s.spacing - hole.centre[1]);
            if x * x + z * z < hole.radius * hole.radius {
                active[c] = false;
                counters[c] = 0;
            }
        }
    }
    let initial_total: Real = counters.iter().map(|&c| c as Real).sum();
    cx.check(initial_total <= u32::MAX as Real, "water.initial", || format!("the initial water is {initial_total:.3e} particles, more than a node can count ({})", u32::MAX))?;
    let mut exchange = WaterExchange::default();
    if let Some(rain) = &w.rain {
        cx.check(rain.start.is_finite() && rain.start >= 0.0, "water.rain.start", || format!("expected a time >= 0 s, got {}", rain.start))?;
        cx.check(rain.end.is_finite() && rain.end >= rain.start, "water.rain.end", || format!("expected an end time after the start ({}), got {}", rain.start, rain.end))?;
        // Every node counts its particles in 32 bits: all the water there could ever be must
        // fit in one node's count.
        let steps = (((rain.end - rain.start) / sim.dt).floor() + 1.0).min(sim.frames as Real * sim.steps_per_frame as Real);
        let most = counters.iter().map(|&c| c as Real).sum::<Real>() + rain.particles as Real * active.iter().filter(|&&a| a).count() as Real * steps;
        cx.check(most <= u32::MAX as Real, "water.rain.particles", || {
            format!("the rain could bring the water to {most:.3e} particles, more than a node can count ({}); rain fewer particles or for a shorter time", u32::MAX)
        })?;
        exchange.rain = vec![rain.particles; n];
        exchange.rain_window = (rain.start, rain.end);
    }
    if let Some(evaporation) = &w.evaporation {
        cx.check(evaporation.every >= 1, "water.evaporation.every", || "expected at least 1 step between evaporations".into())?;
        exchange.evaporation = vec![evaporation.particles; n];
        exchange.evaporation_start = evaporation.start;
        exchange.evaporation_every = evaporation.every;
    }
    for (k, f) in scene.forces.iter().enumerate() {
        cx.check(f.magnitude.is_finite() && f.end >= f.start, &format!("force[{k}]"), || format!("expected a finite magnitude and an end after the start, got {f:?}"))?;
    }
    Ok(SurfaceSetup {
        dims,
        spacing: s.spacing,
        heights,
        mass: s.mass,
        stiffness: s.stiffness,
        damping: s.damping,
        pinned_edges: s.pinned_edges,
        particle_height: w.particle_height,
        counters,
        active,
        open: w.boundary == EdgeSpec::Open,
        exchange,
        forces: scene.forces.iter().map(|f| VerticalForce { magnitude: f.magnitude, start: f.start, end: f.end }).collect(),
        wave: scene.wave.as_ref().map(|w| HarmonicWave { amplitude: w.amplitude, wavenumber: w.wavenumber, frequency: w.frequency }),
        dt: sim.dt,
        gravity: Vec3::new(0.0, -s.gravity, 0.0),
        particle_weight: w.particle_weight,
    })
}
