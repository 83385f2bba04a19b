//! Frames of a surface-flow run ([`crate::fluids::lattice::SurfaceFlow`]): `stats.jsonl`, the
//! terrain and the water as height-field meshes (`terrain_NNNN.ply`, `water_NNNN.ply`) and a
//! top-down preview (`preview_NNNN.png`: the terrain shaded by its slope, water coloured by
//! depth). Every file is written atomically.

use super::mesh_files::ply_bytes;
use super::preview::png_bytes;
use super::{frame_file, write_atomic};
use crate::error::{Error, Result};
use crate::fluids::lattice::SurfaceFlow;
use crate::geometry::TriMesh;
use crate::math::{Real, Vec3};
use crate::scene::surface::LoadedSurfaceScene;
use serde::Serialize;
use std::path::Path;

/// One line of a surface-flow run's `stats.jsonl`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SurfaceStats {
    pub frame: u32,
    /// Simulated time (s) and automaton steps so far.
    pub time: Real,
    pub steps: u64,
    /// Particles on the lattice.
    pub particles: u64,
    /// Their volume, `particles * particle_height * spacing²` (m³).
    pub water_volume: Real,
    /// Particles that ran off an open edge, rained in and evaporated so far.
    pub left: u64,
    pub rained: u64,
    pub evaporated: u64,
    /// The sheet's spring energy and kinetic energy (J).
    pub elastic_energy: Real,
    pub kinetic_energy: Real,
    /// Wall-clock seconds the frame took.
    pub wall_seconds: f64,
}

impl SurfaceStats {
    /// The figures of `flow` at `frame`.
    pub fn of(flow: &SurfaceFlow, frame: u32, wall_seconds: f64) -> Self {
        let spacing = flow.sheet.spacing;
        let energy = flow.sheet.energy(flow.dt, &flow.gravity);
        let particles = flow.gas.total();
        SurfaceStats {
            frame,
            time: flow.time,
            steps: flow.steps,
            particles,
            water_volume: particles as Real * flow.gas.particle_height * spacing * spacing,
            left: flow.gas.left,
            rained: flow.rained,
            evaporated: flow.evaporated,
            elastic_energy: energy.elastic,
            kinetic_energy: energy.kinetic,
            wall_seconds,
        }
    }
}

/// Triangles over the lattice's quads for which `keep(corners)` holds.
fn lattice_triangles(dims: [usize; 2], keep: impl Fn([usize; 4]) -> bool) -> Vec<[u32; 3]> {
    let [nx, nz] = dims;
    let mut triangles = Vec::new();
    for j in 0..nz - 1 {
        for i in 0..nx - 1 {
            let c = i + nx * j;
            let quad = [c, c + 1, c + nx + 1, c + nx];
            if keep(quad) {
                let [a, b, d, e] = quad.map(|q| q as u32);
                triangles.push([a, d, b]);
                triangles.push([a, e, d]);
            }
        }
    }
    triangles
}

/// The terrain (the sheet's nodes) and the water's free surface over the wet quads, as meshes
/// facing up.
pub fn meshes(flow: &SurfaceFlow) -> (TriMesh, TriMesh) {
    let dims = flow.sheet.dims;
    let terrain = TriMesh { vertices: flow.sheet.positions.clone(), triangles: lattice_triangles(dims, |_| true) };
    let beta = flow.gas.particle_height;
    let water = TriMesh {
        vertices: flow.sheet.positions.iter().zip(&flow.gas.counters).map(|(p, &n)| p + Vec3::new(0.0, beta * n as Real, 0.0)).collect(),
        triangles: lattice_triangles(dims, |quad| quad.iter().all(|&c| flow.gas.counters[c] > 0)),
    };
    (terrain, water)
}

/// A top-down picture (rows along z), each node a square of pixels so that the picture is
/// about 512 pixels across: the terrain in sand colours shaded by its slope, under water
/// coloured by depth (a depth of 20 particles is nearly opaque); holes are dark.
pub fn preview(flow: &SurfaceFlow) -> Vec<u8> {
    let [nx, nz] = flow.sheet.dims;
    let slope = flow.slopes();
    let zoom = (512 / nx.max(nz)).max(1);
    let mut rgb = Vec::with_capacity(nx * nz * 3 * zoom * zoom);
    for p in 0..nx * nz * zoom * zoom {
        let (x, y) = (p % (nx * zoom), p / (nx * zoom));
        let c = x / zoom + nx * (y / zoom);
        let light = Vec3::new(-0.5, 1.0, -0.3).normalize();
        let normal = Vec3::new(slope[c][0], 1.0, slope[c][1]).normalize();
        let shade = 0.35 + 0.65 * normal.dot(&light).max(0.0);
        let ground = Vec3::new(0.78, 0.69, 0.52) * shade;
        let depth = flow.gas.counters[c] as Real;
        let cover = if flow.gas.active[c] { 1.0 - (-depth / 8.0).exp() } else { 0.0 };
        let water = Vec3::new(0.12, 0.35, 0.70);
        let colour = if flow.gas.active[c] { ground * (1.0 - cover) + water * cover } else { Vec3::new(0.1, 0.1, 0.1) };
        rgb.extend(colour.iter().map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8));
    }
    png_bytes((nx * zoom) as u32, (nz * zoom) as u32, &rgb)
}

/// Writes frame `frame` of `flow` into `dir` and appends its line to `stats`.
fn write_frame(dir: &Path, flow: &SurfaceFlow, frame: u32, wall_seconds: f64, stats: &mut Vec<String>) -> Result<SurfaceStats> {
    let (terrain, water) = meshes(flow);
    write_atomic(&frame_file(dir, "terrain", frame, "ply"), &ply_bytes(&terrain, None, "tidepool surface flow: terrain"))?;
    write_atomic(&frame_file(dir, "water", frame, "ply"), &ply_bytes(&water, None, "tidepool surface flow: water surface"))?;
    write_atomic(&frame_file(dir, "preview", frame, "png"), &preview(flow))?;
    let line = SurfaceStats::of(flow, frame, wall_seconds);
    stats.push(serde_json::to_string(&line).expect("stats serialise"));
    write_atomic(&dir.join("stats.jsonl"), (stats.join("\n") + "\n").as_bytes())?;
    Ok(line)
}

/// Runs a surface-flow scene into `dir`: a copy of the scene, frame 0, then `frames` frames of
/// `steps_per_frame` steps each; `on_frame` sees each frame's figures. A non-finite position of
/// the sheet stops the run with [`Error::BlowUp`]; the frames before it stay.
pub fn run(loaded: &LoadedSurfaceScene, dir: &Path, frames: u32, mut on_frame: impl FnMut(&SurfaceStats)) -> Result<SurfaceFlow> {
    std::fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
    write_atomic(&dir.join("scene.toml"), loaded.text.as_bytes())?;
    let mut flow = loaded.flow.clone();
    let mut stats = Vec::new();
    on_frame(&write_frame(dir, &flow, 0, 0.0, &mut stats)?);
    for frame in 1..=frames {
        let start = std::time::Instant::now();
        for _ in 0..loaded.scene.simulation.steps_per_frame {
            flow.step();
        }
        if !flow.sheet.positions.iter().all(|p| p.iter().all(|v| v.is_finite())) {
            return Err(Error::BlowUp { frame, time: flow.time, reason: "a node of the surface has a non-finite position (a stiffer sheet needs a smaller simulation.dt)".into() });
        }
        on_frame(&write_frame(dir, &flow, frame, start.elapsed().as_secs_f64(), &mut stats)?);
    }
    Ok(flow)
}
