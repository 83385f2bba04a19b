//! The frame loop: CFL-limited substeps per frame, then every [`FrameSink`] sees the frame.

use crate::error::{Error, Result};
use crate::fluids::eulerian::{LiquidMeasures, LiquidSurface};
use crate::math::Real;
use crate::pipeline::{self, PhaseTimings};
use crate::world::World;
use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Shortest substep before the run is declared unstable (s).
const MIN_DT: Real = 1e-7;

/// Everything measured about one frame (one line of `stats.jsonl`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameRecord {
    /// Frame number (0 is the initial state).
    pub frame: u32,
    /// Simulated time at the end of the frame (s).
    pub time: Real,
    /// Substeps taken in the frame.
    pub substeps: u32,
    /// Wall-clock seconds spent simulating the frame (outputs excluded).
    pub wall_seconds: f64,
    /// Volume, kinetic energy, maximum speed of the liquid.
    pub measures: LiquidMeasures,
    /// Pressure iterations summed over the frame's substeps.
    pub pressure_iterations: usize,
    /// Largest final relative residual of the frame's pressure solves.
    pub pressure_residual: Real,
    /// Whether every pressure solve of the frame met its tolerance.
    pub pressure_converged: bool,
    /// Marker particles at the end of the frame.
    pub particles: usize,
    /// Seconds per phase summed over the frame's substeps.
    pub timings: PhaseTimings,
}

/// A finished frame as sinks see it: the world, the record, and the liquid surface extracted on
/// first use (so several sinks share one extraction).
pub struct Frame<'a> {
    /// The state at the end of the frame.
    pub world: &'a World,
    /// Measurements.
    pub record: &'a FrameRecord,
    surface: OnceCell<LiquidSurface>,
}

impl<'a> Frame<'a> {
    /// A frame view.
    pub fn new(world: &'a World, record: &'a FrameRecord) -> Self {
        Frame { world, record, surface: OnceCell::new() }
    }

    /// The liquid surface mesh with per-vertex velocities.
    pub fn surface(&self) -> &LiquidSurface {
        self.surface.get_or_init(|| self.world.liquid.surface(&self.world.grid))
    }
}

/// Something that consumes finished frames (files, checkpoints). Sinks never change the world.
pub trait FrameSink {
    /// Handles one finished frame (frame 0 is the initial state).
    fn write(&mut self, frame: &Frame) -> Result<()>;
}

/// Progress after each substep.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Frame being computed.
    pub frame: u32,
    /// Last frame of the run.
    pub last_frame: u32,
    /// Substeps taken in this frame so far.
    pub substeps: u32,
    /// Simulated time (s).
    pub time: Real,
    /// Length of the last substep (s).
    pub dt: Real,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// All frames were computed.
    Completed,
    /// Stopped on request after writing this frame.
    Interrupted {
        /// Last frame written.
        frame: u32,
    },
}

/// Runs frames of a [`World`] and hands them to sinks.
pub struct Driver {
    /// The simulation.
    pub world: World,
    sinks: Vec<Box<dyn FrameSink>>,
}

impl Driver {
    /// A driver over `world` writing to `sinks`.
    pub fn new(world: World, sinks: Vec<Box<dyn FrameSink>>) -> Self {
        Driver { world, sinks }
    }

    /// Measures the current state as frame `world.clock.frame` and hands it to the sinks
    /// (used for the initial frame 0).
    pub fn write_current_frame(&mut self) -> Result<FrameRecord> {
        let record = FrameRecord {
            frame: self.world.clock.frame,
            time: self.world.clock.time,
            measures: self.world.liquid.measures(&self.world.grid, &self.world.solids),
            pressure_converged: true,
            particles: self.world.liquid.particles.len(),
            ..FrameRecord::default()
        };
        self.emit(&record)?;
        Ok(record)
    }

    fn emit(&mut self, record: &FrameRecord) -> Result<()> {
        let frame = Frame::new(&self.world, record);
        for sink in &mut self.sinks {
            sink.write(&frame)?;
        }
        Ok(())
    }

    /// Computes frames until `last_frame`. `stop` is polled between frames: when set, the frame
    /// in progress is finished and written, then the run returns [`RunOutcome::Interrupted`].
    pub fn run(&mut self, last_frame: u32, stop: &AtomicBool, progress: &mut dyn FnMut(&Progress)) -> Result<RunOutcome> {
        while self.world.clock.frame < last_frame {
            let record = self.advance_frame(last_frame, progress)?;
            self.emit(&record)?;
            if stop.load(Ordering::SeqCst) && self.world.clock.frame < last_frame {
                return Ok(RunOutcome::Interrupted { frame: self.world.clock.frame });
            }
        }
        Ok(RunOutcome::Completed)
    }

    /// Simulates one frame and measures it.
    pub fn advance_frame(&mut self, last_frame: u32, progress: &mut dyn FnMut(&Progress)) -> Result<FrameRecord> {
        let world = &mut self.world;
        let frame = world.clock.frame + 1;
        let t_end = frame as Real / world.settings.fps;
        let start = Instant::now();
        let mut record = FrameRecord { frame, pressure_converged: true, ..FrameRecord::default() };
        loop {
            let remaining = t_end - world.clock.time;
            if remaining <= 1e-9 / world.settings.fps {
                break;
            }
            let dt_cfl = world.cfl_dt();
            let dt = remaining / (remaining / dt_cfl).ceil().max(1.0);
            if dt < MIN_DT {
                return Err(Error::BlowUp { frame, time: world.clock.time, reason: format!("the CFL condition asks for substeps shorter than {MIN_DT} s") });
            }
            let report = pipeline::step(world, dt).map_err(|reason| Error::BlowUp { frame, time: world.clock.time, reason })?;
            record.substeps += 1;
            record.pressure_iterations += report.projection.iterations;
            record.pressure_residual = record.pressure_residual.max(report.projection.residual);
            record.pressure_converged &= report.projection.converged;
            record.timings.accumulate(&report.timings);
            progress(&Progress { frame, last_frame, substeps: record.substeps, time: world.clock.time, dt });
        }
        world.clock.time = t_end;
        world.clock.frame = frame;
        record.time = t_end;
        record.wall_seconds = start.elapsed().as_secs_f64();
        record.measures = world.liquid.measures(&world.grid, &world.solids);
        record.particles = world.liquid.particles.len();
        Ok(record)
    }
}
