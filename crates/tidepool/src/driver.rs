//! The frame loop: CFL-limited substeps per frame, then every [`FrameSink`] sees the frame.

use crate::error::{Error, Result};
use crate::fluids::eulerian::{LiquidMeasures, LiquidSurface};
use crate::fluids::flip::FlipTotals;
use crate::fluids::Fluid;
use crate::grid::Sampled;
use crate::math::Real;
use crate::pipeline::{self, FluidStep, PhaseTimings};
use crate::world::World;
use serde::Serialize;
use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Shortest substep before the run is declared unstable (s).
const MIN_DT: Real = 1e-7;

/// Everything measured about one frame (with the world, one line of `stats.jsonl`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameRecord {
    /// Frame number (0 is the initial state).
    pub frame: u32,
    /// Simulated time at the end of the frame (s).
    pub time: Real,
    /// Substeps taken in the frame.
    pub substeps: u32,
    /// Wall-clock seconds spent simulating the frame (outputs excluded).
    pub wall_seconds: f64,
    /// Volume, kinetic energy, momentum and maximum speed of the liquid.
    pub measures: LiquidMeasures,
    /// The fluid's solver figures summed over the frame's substeps.
    pub totals: FluidTotals,
}

/// The level-set liquid's solves over a frame; its fields are part of the stats line.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LevelSetTotals {
    /// Pressure iterations summed over the frame's substeps.
    pub pressure_iterations: usize,
    /// Largest final relative residual of the frame's pressure solves.
    pub pressure_residual: Real,
    /// Whether every pressure solve of the frame met its tolerance.
    pub pressure_converged: bool,
    /// Iterations of the viscous solves summed over the frame's substeps.
    pub viscosity_iterations: usize,
    /// Whether every viscous solve of the frame met its tolerance.
    pub viscosity_converged: bool,
    /// Seconds per phase summed over the frame's substeps.
    #[serde(rename = "phase_seconds")]
    pub timings: PhaseTimings,
}

impl Default for LevelSetTotals {
    fn default() -> Self {
        LevelSetTotals {
            pressure_iterations: 0,
            pressure_residual: 0.0,
            pressure_converged: true,
            viscosity_iterations: 0,
            viscosity_converged: true,
            timings: PhaseTimings::default(),
        }
    }
}

/// A fluid's solver figures summed over a frame's substeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FluidTotals {
    /// The level-set liquid's (or smoke's) pressure solves.
    LevelSet(LevelSetTotals),
    /// FLIP's velocity solves and density corrections.
    Flip(FlipTotals),
    /// The surface flow has no solver.
    Surface,
}

impl FluidTotals {
    /// Nothing yet, for `fluid`.
    pub fn new(fluid: &Fluid) -> Self {
        match fluid {
            Fluid::LevelSet(_) | Fluid::Smoke(_) => FluidTotals::LevelSet(LevelSetTotals::default()),
            Fluid::Flip(_) => FluidTotals::Flip(FlipTotals::default()),
            Fluid::Surface(_) => FluidTotals::Surface,
        }
    }

    /// Adds one substep.
    pub fn add(&mut self, step: &FluidStep) {
        match (self, step) {
            (FluidTotals::LevelSet(t), FluidStep::LevelSet { viscosity, projection, timings }) => {
                t.viscosity_iterations += viscosity.iterations;
                t.viscosity_converged &= viscosity.converged;
                t.pressure_iterations += projection.iterations;
                t.pressure_residual = t.pressure_residual.max(projection.residual);
                t.pressure_converged &= projection.converged;
                t.timings.accumulate(timings);
            }
            (FluidTotals::Flip(t), FluidStep::Flip { solve, timings }) => t.add(solve, timings),
            _ => {}
        }
    }

    /// What did not converge in the frame, if anything (for a warning on the log).
    pub fn unconverged(&self) -> Option<&'static str> {
        match self {
            FluidTotals::LevelSet(t) if !t.pressure_converged => Some("pressure solve"),
            FluidTotals::LevelSet(t) if !t.viscosity_converged => Some("viscous solve"),
            FluidTotals::Flip(t) if !t.converged => Some("velocity solve"),
            FluidTotals::Flip(t) if !t.correction_converged => Some("density correction"),
            FluidTotals::Flip(t) if !t.viscosity_converged => Some("viscous solve"),
            _ => None,
        }
    }
}

/// A finished frame as sinks see it: the world, the record, and the liquid's `phi` and surface
/// extracted on first use (so several sinks share one extraction).
pub struct Frame<'a> {
    /// The state at the end of the frame.
    pub world: &'a World,
    /// Measurements.
    pub record: &'a FrameRecord,
    phi: OnceCell<Option<Sampled<Real>>>,
    surface: OnceCell<LiquidSurface>,
    phase_surfaces: OnceCell<Vec<(String, LiquidSurface)>>,
}

impl<'a> Frame<'a> {
    /// A frame view.
    pub fn new(world: &'a World, record: &'a FrameRecord) -> Self {
        Frame { world, record, phi: OnceCell::new(), surface: OnceCell::new(), phase_surfaces: OnceCell::new() }
    }

    /// The signed distance the surface mesh is extracted from ([`Fluid::surface_phi`]).
    pub fn surface_phi(&self) -> Option<&Sampled<Real>> {
        self.phi.get_or_init(|| self.world.fluid.surface_phi()).as_ref()
    }

    /// The liquid surface mesh with per-vertex velocities.
    pub fn surface(&self) -> &LiquidSurface {
        self.surface.get_or_init(|| self.world.fluid.surface_from(self.surface_phi()))
    }

    /// A liquid of several phases: each phase's name and surface mesh with per-vertex
    /// velocities (empty otherwise).
    pub fn phase_surfaces(&self) -> &[(String, LiquidSurface)] {
        self.phase_surfaces.get_or_init(|| self.world.level_set().map_or(Vec::new(), |f| f.liquid.phase_surfaces(&f.grid)))
    }
}

/// Something that consumes finished frames (files, checkpoints). Sinks never change the world.
pub trait FrameSink {
    /// Handles one finished frame (frame 0 is the initial state).
    fn write(&mut self, frame: &Frame) -> Result<()>;
}

/// What a running driver reports: each substep, and each frame once its sinks have it.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A substep was taken.
    Substep(Progress),
    /// A frame was simulated and written.
    Frame(&'a FrameRecord),
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
            substeps: 0,
            wall_seconds: 0.0,
            measures: self.world.fluid.measures(),
            totals: FluidTotals::new(&self.world.fluid),
        };
        self.emit(&record)?;
        Ok(record)
    }

    /// Hands a frame to the sinks, after the world's health check and a check of the frame's
    /// measures (a state that fails either is never written).
    fn emit(&mut self, record: &FrameRecord) -> Result<()> {
        let blow_up = |reason: String| Error::BlowUp { frame: record.frame, time: record.time, reason };
        self.world.check().map_err(blow_up)?;
        if !record.measures.is_finite() {
            return Err(blow_up(format!("the frame's measures overflow ({:?})", record.measures)));
        }
        let frame = Frame::new(&self.world, record);
        for sink in &mut self.sinks {
            sink.write(&frame)?;
        }
        Ok(())
    }

    /// Computes frames until `last_frame`. `stop` is polled between frames: when set, the frame
    /// in progress is finished and written, then the run returns [`RunOutcome::Interrupted`].
    pub fn run(&mut self, last_frame: u32, stop: &AtomicBool, events: &mut dyn FnMut(&Event)) -> Result<RunOutcome> {
        while self.world.clock.frame < last_frame {
            let record = self.advance_frame(last_frame, &mut |p| events(&Event::Substep(*p)))?;
            self.emit(&record)?;
            events(&Event::Frame(&record));
            if stop.load(Ordering::SeqCst) && self.world.clock.frame < last_frame {
                return Ok(RunOutcome::Interrupted { frame: self.world.clock.frame });
            }
        }
        Ok(RunOutcome::Completed)
    }

    /// Simulates one frame and measures it (see [`advance_frame`]).
    pub fn advance_frame(&mut self, last_frame: u32, progress: &mut dyn FnMut(&Progress)) -> Result<FrameRecord> {
        advance_frame(&mut self.world, last_frame, progress)
    }
}

/// Simulates frame `world.clock.frame + 1` of a run ending at `last_frame` (for progress
/// reports) in substeps, the fluid's fixed step or CFL-limited ones that end on the frame's
/// time, and measures it. A blow-up is [`Error::BlowUp`] naming the frame.
pub fn advance_frame(world: &mut World, last_frame: u32, progress: &mut dyn FnMut(&Progress)) -> Result<FrameRecord> {
    let frame = world.clock.frame + 1;
    let t_end = frame as Real / world.settings.fps;
    let start = Instant::now();
    let mut substeps = 0;
    let mut totals = FluidTotals::new(&world.fluid);
    loop {
        let remaining = t_end - world.clock.time;
        let dt = match world.fixed_dt() {
            Some(h) if remaining < 0.5 * h => break,
            Some(h) => h,
            None if remaining <= 1e-9 / world.settings.fps => break,
            None => remaining / (remaining / world.cfl_dt()).ceil().max(1.0),
        };
        if dt < MIN_DT {
            return Err(Error::BlowUp { frame, time: world.clock.time, reason: format!("the CFL condition asks for substeps shorter than {MIN_DT} s") });
        }
        let report = pipeline::step(world, dt).map_err(|reason| Error::BlowUp { frame, time: world.clock.time, reason })?;
        substeps += 1;
        totals.add(&report.fluid);
        progress(&Progress { frame, last_frame, substeps, time: world.clock.time, dt });
    }
    world.clock.time = t_end;
    world.clock.frame = frame;
    Ok(FrameRecord { frame, time: t_end, substeps, wall_seconds: start.elapsed().as_secs_f64(), measures: world.fluid.measures(), totals })
}
