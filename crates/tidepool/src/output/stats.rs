//! `stats.jsonl`: one JSON object per frame (the contract with tests and tools; schema in
//! `docs/outputs.md`).

use super::write_atomic;
use crate::driver::{Frame, FrameSink};
use crate::error::{Error, Result};
use crate::math::{Quat, Vec3};
use crate::pipeline::PhaseTimings;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One line of `stats.jsonl`.
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
    /// Liquid volume (m^3).
    pub liquid_volume: f64,
    /// Liquid kinetic energy (J).
    pub kinetic_energy: f64,
    /// Largest liquid speed (m/s).
    pub max_speed: f64,
    /// Pressure PCG iterations summed over the frame.
    pub pressure_iterations: usize,
    /// Largest final relative residual of the frame's pressure solves.
    pub pressure_residual: f64,
    /// Whether every pressure solve met its tolerance.
    pub pressure_converged: bool,
    /// Marker particles.
    pub particles: usize,
    /// Linear momentum of liquid and bodies together (kg m/s).
    pub total_momentum: [f64; 3],
    /// Each body's state: the rigid bodies, then the reduced deformable ones.
    pub bodies: Vec<BodyLine>,
    /// Seconds per phase, summed over the frame.
    pub phase_seconds: PhaseTimings,
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
}

impl StatsLine {
    /// The line for a frame.
    pub fn of(frame: &Frame) -> Self {
        let r = frame.record;
        StatsLine {
            frame: r.frame,
            time: r.time,
            substeps: r.substeps,
            wall_seconds: r.wall_seconds,
            liquid_volume: r.measures.volume,
            kinetic_energy: r.measures.kinetic_energy,
            max_speed: r.measures.max_speed,
            pressure_iterations: r.pressure_iterations,
            pressure_residual: r.pressure_residual,
            pressure_converged: r.pressure_converged,
            particles: r.particles,
            total_momentum: {
                let world = frame.world;
                let rigid: Vec3 = world.bodies.iter().filter(|b| b.is_dynamic()).map(|b| b.mass * b.velocity).sum();
                let reduced: Vec3 = world.reduced_bodies().map(|b| b.model.mass * b.velocity).sum();
                (r.measures.momentum + rigid + reduced).into()
            },
            bodies: {
                let world = frame.world;
                let rigid = world.bodies.iter().map(|b| BodyLine::of(&b.name, &b.position, &b.orientation, &b.velocity, &b.angular_velocity(), world.submerged_volume_of(b), None));
                let reduced = world
                    .reduced_bodies()
                    .map(|b| BodyLine::of(&b.name, &b.position, &b.orientation, &b.velocity, &b.angular_velocity(), world.submerged_volume_of(b), Some(b.modal_energy())));
                rigid.chain(reduced).collect()
            },
            phase_seconds: r.timings,
        }
    }
}

impl BodyLine {
    /// The line of a body with this state.
    fn of(name: &str, position: &Vec3, orientation: &Quat, velocity: &Vec3, angular_velocity: &Vec3, submerged_volume: f64, modal_energy: Option<f64>) -> Self {
        let q = orientation.quaternion();
        BodyLine {
            name: name.to_string(),
            position: (*position).into(),
            orientation: [q.w, q.i, q.j, q.k],
            linear_velocity: (*velocity).into(),
            angular_velocity: (*angular_velocity).into(),
            submerged_volume,
            modal_energy,
        }
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
