//! `stats.jsonl`: one JSON object per frame (the contract with tests and tools; schema in
//! `docs/outputs.md`).

use super::write_atomic;
use crate::driver::{Frame, FrameSink};
use crate::error::{Error, Result};
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
    /// Seconds per phase, summed over the frame.
    pub phase_seconds: PhaseTimings,
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
            phase_seconds: r.timings,
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
                let frame = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("frame").and_then(|f| f.as_u64()));
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
