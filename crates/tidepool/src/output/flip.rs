//! The outputs of a FLIP run, per frame: the particles (`particles_NNNN.ply`, binary points
//! with velocity; `particles_NNNN.vtp` for ParaView, listed in `tidepool.pvd`), the liquid
//! surface reconstructed from them (`surface_NNNN.ply` / `.obj`), a preview
//! (`preview_NNNN.png`), and one line of `stats.jsonl` per frame.

use super::mesh_files::{obj_text, ply_bytes};
use super::preview::render_scene;
use super::vtk::{points_vtp, pvd};
use super::{frame_file, write_atomic};
use crate::error::{Error, Result};
use crate::fluids::flip::raster::Bins;
use crate::fluids::flip::surface::particle_surface;
use crate::fluids::flip::{FlipFrame, FlipTimings, FlipWorld, Incompressibility};
use crate::geometry::TriMesh;
use crate::math::Real;
use crate::scene::{Format, LoadedScene};
use serde::Serialize;
use std::path::Path;

/// One line of a FLIP run's `stats.jsonl`.
#[derive(Clone, Debug, Serialize)]
pub struct FlipStats {
    pub frame: u32,
    pub time: Real,
    pub substeps: u32,
    pub wall_seconds: f64,
    /// `unilateral` or `bilateral`.
    pub incompressibility: Incompressibility,
    pub particle_count: usize,
    /// Particle count times particle mass (kg).
    pub liquid_mass: Real,
    pub kinetic_energy: Real,
    pub max_speed: Real,
    /// Steps of the frame's velocity solves (MPRGP or PCG), and whether all converged.
    pub lcp_iterations: usize,
    pub lcp_converged: bool,
    /// Pressure unknowns and the active set (unknowns at zero pressure) of the last substep.
    pub unknowns: usize,
    pub active_set: usize,
    /// Steps of the frame's density corrections, whether all converged, and the largest
    /// density above the maximum they left, relative to the rest density.
    pub correction_iterations: usize,
    pub correction_converged: bool,
    pub density_excess: Real,
    /// Seconds per phase over the frame.
    pub timings: FlipTimings,
}

impl FlipStats {
    fn of(world: &FlipWorld, frame: &FlipFrame) -> Self {
        FlipStats {
            frame: frame.frame,
            time: world.time,
            substeps: frame.substeps,
            wall_seconds: frame.wall_seconds,
            incompressibility: world.params.incompressibility,
            particle_count: world.positions.len(),
            liquid_mass: world.liquid_mass(),
            kinetic_energy: world.kinetic_energy(),
            max_speed: world.max_speed(),
            lcp_iterations: frame.iterations,
            lcp_converged: frame.converged,
            unknowns: frame.unknowns,
            active_set: frame.active,
            correction_iterations: frame.correction_iterations,
            correction_converged: frame.correction_converged,
            density_excess: frame.excess_after_correction,
            timings: frame.timings,
        }
    }
}

/// Writes the files of one frame in the scene's formats (every `output.every` frames) and
/// appends its stats line.
struct FlipOutput<'a> {
    loaded: &'a LoadedScene,
    dir: &'a Path,
    obstacles: TriMesh,
    stats: Vec<String>,
    series: Vec<(f64, usize, String)>,
}

impl FlipOutput<'_> {
    fn write(&mut self, world: &FlipWorld, frame: &FlipFrame) -> Result<FlipStats> {
        let out = &self.loaded.scene.output;
        let (dir, n) = (self.dir, frame.frame);
        if n % out.every == 0 {
            let wants = |f: Format| out.formats.contains(&f);
            let particles = TriMesh { vertices: world.positions.clone(), triangles: Vec::new() };
            if wants(Format::Ply) {
                write_atomic(&frame_file(dir, "particles", n, "ply"), &ply_bytes(&particles, Some(&world.velocities), "tidepool FLIP particles"))?;
            }
            if wants(Format::Vtk) {
                let file = frame_file(dir, "particles", n, "vtp");
                write_atomic(&file, &points_vtp(&world.positions, &world.velocities))?;
                self.series.push((world.time, 0, format!("particles_{n:04}.vtp")));
                write_atomic(&dir.join("tidepool.pvd"), pvd(&self.series).as_bytes())?;
            }
            if wants(Format::Ply) || wants(Format::Obj) || wants(Format::Png) {
                let grid = world.grid;
                let mut positions = world.positions.clone();
                let mut velocities = world.velocities.clone();
                let bins = Bins::sort(&grid, &mut positions, &mut [&mut velocities]);
                let spacing = grid.dx / (world.params.particles_per_cell as Real).cbrt();
                let (surface, surface_velocities) = particle_surface(&grid, &bins, &positions, &velocities, spacing);
                if wants(Format::Ply) {
                    write_atomic(&frame_file(dir, "surface", n, "ply"), &ply_bytes(&surface, Some(&surface_velocities), "tidepool FLIP liquid surface"))?;
                }
                if wants(Format::Obj) {
                    write_atomic(&frame_file(dir, "surface", n, "obj"), obj_text(&surface, "tidepool FLIP liquid surface").as_bytes())?;
                }
                if wants(Format::Png) {
                    let bodies: Vec<TriMesh> = world.bodies.iter().map(|b| b.world_surface()).collect();
                    write_atomic(&frame_file(dir, "preview", n, "png"), &render_scene(&grid, &out.camera, &self.obstacles, &bodies, &surface))?;
                }
            }
        }
        let line = FlipStats::of(world, frame);
        self.stats.push(serde_json::to_string(&line).expect("stats serialise"));
        write_atomic(&dir.join("stats.jsonl"), (self.stats.join("\n") + "\n").as_bytes())?;
        Ok(line)
    }
}

/// Runs a FLIP scene into `dir`: a copy of the scene, frame 0, then `frames` frames; `on_frame`
/// sees each frame's stats. A blow-up stops the run with [`Error::BlowUp`]; the frames
/// written before stay.
pub fn run(loaded: &LoadedScene, dir: &Path, frames: u32, mut on_frame: impl FnMut(&FlipStats)) -> Result<FlipWorld> {
    std::fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
    write_atomic(&dir.join("scene.toml"), loaded.text.as_bytes())?;
    let mut world = FlipWorld::from_scene(loaded);
    let mut obstacles = TriMesh::default();
    for (_, shape) in &loaded.obstacles {
        obstacles.append(&shape.surface_mesh());
    }
    let mut output = FlipOutput { loaded, dir, obstacles, stats: Vec::new(), series: Vec::new() };
    let initial = FlipFrame { converged: true, correction_converged: true, ..FlipFrame::default() };
    on_frame(&output.write(&world, &initial)?);
    for _ in 0..frames {
        let frame = world.advance_frame().map_err(|reason| Error::BlowUp { frame: world.frame + 1, time: world.time, reason })?;
        on_frame(&output.write(&world, &frame)?);
    }
    Ok(world)
}
