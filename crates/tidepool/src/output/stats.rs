//! `stats.jsonl`: one JSON object per frame (the contract with tests and tools; schema in
//! `docs/outputs.md`).

use super::write_atomic;
use crate::driver::{FluidTotals, Frame, FrameSink, LevelSetTotals};
use crate::error::{Error, Result};
use crate::fluids::flip::{FlipTotals, Incompressibility};
use crate::fluids::Fluid;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One line of `stats.jsonl`: what every run reports, the fluid model's own figures (flattened
/// into the same object) and the bodies.
#[derive(Clone, Debug, Serialize)]
pub struct StatsLine {
    /// Frame number (0 = initial state).
    pub frame: u32,
    /// Simulated time (s).
    pub time: f64,
    /// Substeps in the frame.
    pub substeps: u32,
    /// Wall-clock seconds simulating the frame.
    pub wall_seconds: f64,
    /// The fluid model: `level-set`, `flip`, `surface-flow` or `smoke`.
    pub fluid: &'static str,
    /// The fluid's figures.
    #[serde(flatten)]
    pub figures: FluidLine,
    /// Each body's state: the rigid bodies, then the reduced deformable ones.
    pub bodies: Vec<BodyLine>,
}

/// The fluid model's part of a stats line.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum FluidLine {
    LevelSet(LevelSetLine),
    Flip(FlipLine),
    Surface(SurfaceLine),
    Smoke(SmokeLine),
}

/// The level-set liquid's figures.
#[derive(Clone, Debug, Serialize)]
pub struct LevelSetLine {
    /// Liquid volume (m^3).
    pub liquid_volume: f64,
    /// A liquid of several phases: each phase's volume by name (m^3).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub phase_volumes: std::collections::BTreeMap<String, f64>,
    /// Liquid kinetic energy (J).
    pub kinetic_energy: f64,
    /// Largest liquid speed (m/s).
    pub max_speed: f64,
    /// Marker particles.
    pub particles: usize,
    /// Linear momentum of liquid and bodies together (kg m/s).
    pub total_momentum: [f64; 3],
    /// Pressure iterations, residual, convergence and seconds per phase over the frame.
    #[serde(flatten)]
    pub totals: LevelSetTotals,
}

/// The FLIP liquid's figures.
#[derive(Clone, Debug, Serialize)]
pub struct FlipLine {
    /// `unilateral` or `bilateral`.
    pub incompressibility: Incompressibility,
    pub particle_count: usize,
    /// Particle count times particle mass (kg).
    pub liquid_mass: f64,
    pub kinetic_energy: f64,
    pub max_speed: f64,
    /// Linear momentum of liquid and bodies together (kg m/s).
    pub total_momentum: [f64; 3],
    /// The frame's solves and seconds per phase.
    #[serde(flatten)]
    pub totals: FlipTotals,
}

/// Smoke's figures.
#[derive(Clone, Debug, Serialize)]
pub struct SmokeLine {
    /// The smoke's amount, its density summed over the cells times their volume (m^3).
    pub smoke_amount: f64,
    /// The heat: the temperature above ambient summed over the cells times their volume (K m^3).
    pub heat: f64,
    /// The air's kinetic energy (J).
    pub kinetic_energy: f64,
    /// Largest air speed (m/s).
    pub max_speed: f64,
    /// Linear momentum of the air and the bodies together (kg m/s).
    pub total_momentum: [f64; 3],
    /// Pressure iterations, residual, convergence and seconds per phase over the frame.
    #[serde(flatten)]
    pub totals: LevelSetTotals,
}

/// The surface flow's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SurfaceLine {
    /// Automaton steps so far.
    pub steps: u64,
    /// Particles on the lattice.
    pub particles: u64,
    /// Their volume, `particles * particle_height * spacing²` (m³).
    pub water_volume: f64,
    /// Particles that ran off an open edge, rained in and evaporated so far.
    pub left: u64,
    pub rained: u64,
    pub evaporated: u64,
    /// The sheet's spring energy and kinetic energy (J).
    pub elastic_energy: f64,
    pub kinetic_energy: f64,
}

/// One body in a stats line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BodyLine {
    /// The body's name.
    pub name: String,
    /// Centre of mass (m).
    pub position: [f64; 3],
    /// Orientation quaternion `[w, x, y, z]`.
    pub orientation: [f64; 4],
    /// Velocity of the centre of mass (m/s).
    pub linear_velocity: [f64; 3],
    /// Angular velocity (rad/s).
    pub angular_velocity: [f64; 3],
    /// Volume below the liquid's surface (m^3).
    pub submerged_volume: f64,
    /// Energy in a reduced deformable body's modes (J; absent for rigid bodies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modal_energy: Option<f64>,
    /// Energy stored in a deformable body's elements (J; only for deformable bodies simulated
    /// in full, `deformable.method = "fem"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elastic_energy: Option<f64>,
    /// The bones inside a deformable body simulated in full.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bones: Vec<BoneLine>,
}

/// A bone in [`BodyLine::bones`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoneLine {
    pub name: String,
    /// Centre of mass (m).
    pub position: [f64; 3],
    /// Orientation quaternion `[w, x, y, z]`, from where the body started.
    pub orientation: [f64; 4],
    /// A hinge's angle (rad; absent for a free bone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub angle: Option<f64>,
}

impl StatsLine {
    /// The line for a frame.
    pub fn of(frame: &Frame) -> Self {
        let (r, world) = (frame.record, frame.world);
        let m = &r.measures;
        let total_momentum = (m.momentum + world.solids.momentum()).into();
        let figures = match &world.fluid {
            Fluid::LevelSet(f) => FluidLine::LevelSet(LevelSetLine {
                liquid_volume: m.volume,
                phase_volumes: f.liquid.phases.iter().flat_map(|p| &p.phases).map(|p| p.name.clone()).zip(f.liquid.phase_volumes(&f.grid, &f.statics)).collect(),
                kinetic_energy: m.kinetic_energy,
                max_speed: m.max_speed,
                particles: f.liquid.particles.len() + f.liquid.phases.iter().flat_map(|p| &p.particles).map(Vec::len).sum::<usize>(),
                total_momentum,
                totals: if let FluidTotals::LevelSet(t) = r.totals { t } else { LevelSetTotals::default() },
            }),
            Fluid::Smoke(f) => FluidLine::Smoke(SmokeLine {
                smoke_amount: m.volume,
                heat: f.amount(&f.temperature),
                kinetic_energy: m.kinetic_energy,
                max_speed: m.max_speed,
                total_momentum,
                totals: if let FluidTotals::LevelSet(t) = r.totals { t } else { LevelSetTotals::default() },
            }),
            Fluid::Flip(f) => FluidLine::Flip(FlipLine {
                incompressibility: f.params.incompressibility,
                particle_count: f.positions.len(),
                liquid_mass: f.liquid_mass(),
                kinetic_energy: m.kinetic_energy,
                max_speed: m.max_speed,
                total_momentum,
                totals: if let FluidTotals::Flip(t) = r.totals { t } else { FlipTotals::default() },
            }),
            Fluid::Surface(f) => {
                let energy = f.sheet.energy(f.dt, &f.gravity);
                FluidLine::Surface(SurfaceLine {
                    steps: f.steps,
                    particles: f.gas.total(),
                    water_volume: f.water_volume(),
                    left: f.gas.left,
                    rained: f.rained,
                    evaporated: f.evaporated,
                    elastic_energy: energy.elastic,
                    kinetic_energy: energy.kinetic,
                })
            }
        };
        let bodies = world
            .solids
            .iter()
            .flat_map(|s| s.parts())
            .zip(world.submerged_volumes())
            .map(|((p, _), submerged_volume)| {
                let q = p.orientation.quaternion();
                BodyLine {
                    name: p.name,
                    position: p.position.into(),
                    orientation: [q.w, q.i, q.j, q.k],
                    linear_velocity: p.velocity.into(),
                    angular_velocity: p.angular_velocity.into(),
                    submerged_volume,
                    modal_energy: p.modal_energy,
                    elastic_energy: p.elastic_energy,
                    bones: p
                        .bones
                        .iter()
                        .map(|b| {
                            let q = b.orientation.quaternion();
                            BoneLine { name: b.name.clone(), position: b.position.into(), orientation: [q.w, q.i, q.j, q.k], angle: b.angle }
                        })
                        .collect(),
                }
            })
            .collect();
        StatsLine { frame: r.frame, time: r.time, substeps: r.substeps, wall_seconds: r.wall_seconds, fluid: world.fluid.kind(), figures, bodies }
    }
}

/// Rewrites `stats.jsonl` (atomically) after every frame.
pub struct StatsSink {
    path: PathBuf,
    lines: Vec<String>,
}

impl StatsSink {
    /// A sink writing `dir/stats.jsonl`; when resuming, the lines of frames up to `resume_after`
    /// are kept.
    pub fn new(dir: &Path, resume_after: Option<u32>) -> Result<Self> {
        let path = dir.join("stats.jsonl");
        let mut lines = Vec::new();
        if let Some(last) = resume_after {
            let text = std::fs::read_to_string(&path).map_err(Error::io("read", &path))?;
            for line in text.lines() {
                let frame = serde_json::from_str::<serde_json::Value>(line).ok().and_then(|v| v.get("frame").and_then(|f| f.as_u64()));
                if frame.is_some_and(|f| f <= last as u64) {
                    lines.push(line.to_string());
                }
            }
        }
        Ok(StatsSink { path, lines })
    }
}

impl FrameSink for StatsSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        self.lines.push(serde_json::to_string(&StatsLine::of(frame)).expect("stats serialise"));
        let mut text = self.lines.join("\n");
        text.push('\n');
        write_atomic(&self.path, text.as_bytes())
    }
}
