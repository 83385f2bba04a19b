//! Triangle meshes as binary PLY (with per-vertex velocity) and Wavefront OBJ.

use super::{frame_file, write_atomic};
use crate::driver::{Frame, FrameSink};
use crate::error::Result;
use crate::fluids::Fluid;
use crate::geometry::TriMesh;
use crate::math::Vec3;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The axes and units of every mesh file, stated in its header: tidepool's world is Y-up
/// (gravity along -y by default) in metres, and Z-up tools (Blender) need to be told.
pub const AXES: &str = "units: metres; up axis: +Y (in a Z-up tool such as Blender import with up = Y, forward = -Z)";

/// Binary little-endian PLY: `x y z` and, when given, `vx vy vz` per vertex as float32, faces
/// as `uchar`-counted `int` lists; the header's comments say what it is and [`AXES`].
pub fn ply_bytes(mesh: &TriMesh, velocities: Option<&[Vec3]>, comment: &str) -> Vec<u8> {
    let mut header = String::from("ply\nformat binary_little_endian 1.0\n");
    let _ = writeln!(header, "comment {comment}\ncomment {AXES}");
    let _ = writeln!(header, "element vertex {}", mesh.vertices.len());
    for p in ["x", "y", "z"] {
        let _ = writeln!(header, "property float {p}");
    }
    if velocities.is_some() {
        for p in ["vx", "vy", "vz"] {
            let _ = writeln!(header, "property float {p}");
        }
    }
    let _ = writeln!(header, "element face {}", mesh.triangles.len());
    header.push_str("property list uchar int vertex_indices\nend_header\n");
    let per_vertex = if velocities.is_some() { 24 } else { 12 };
    let mut bytes = Vec::with_capacity(header.len() + mesh.vertices.len() * per_vertex + mesh.triangles.len() * 13);
    bytes.extend_from_slice(header.as_bytes());
    for (n, v) in mesh.vertices.iter().enumerate() {
        for c in v.iter() {
            bytes.extend_from_slice(&(*c as f32).to_le_bytes());
        }
        if let Some(vel) = velocities {
            for c in vel[n].iter() {
                bytes.extend_from_slice(&(*c as f32).to_le_bytes());
            }
        }
    }
    for t in &mesh.triangles {
        bytes.push(3);
        for &i in t {
            bytes.extend_from_slice(&(i as i32).to_le_bytes());
        }
    }
    bytes
}

/// Wavefront OBJ text, its first lines saying what it is and [`AXES`].
pub fn obj_text(mesh: &TriMesh, comment: &str) -> String {
    let mut s = String::with_capacity(mesh.vertices.len() * 40 + mesh.triangles.len() * 24);
    let _ = writeln!(s, "# {comment}\n# {AXES}");
    for v in &mesh.vertices {
        let _ = writeln!(s, "v {} {} {}", v.x as f32, v.y as f32, v.z as f32);
    }
    for t in &mesh.triangles {
        let _ = writeln!(s, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    s
}

/// Writes `surface_NNNN.ply` / `.obj` and, with bodies, `bodies_NNNN.ply` / `.obj` (all
/// bodies' surfaces in world space) every `every` frames, and the obstacles once
/// (`obstacles.ply` / `.obj`).
pub struct MeshSink {
    dir: PathBuf,
    every: u32,
    ply: bool,
    obj: bool,
    wrote_obstacles: bool,
}

impl MeshSink {
    /// A sink writing into `dir`.
    pub fn new(dir: &Path, every: u32, ply: bool, obj: bool) -> Self {
        MeshSink { dir: dir.to_path_buf(), every, ply, obj, wrote_obstacles: false }
    }

    fn write_mesh(&self, stem: &Path, mesh: &TriMesh, velocities: Option<&[Vec3]>, comment: &str) -> Result<()> {
        if self.ply {
            write_atomic(&stem.with_extension("ply"), &ply_bytes(mesh, velocities, comment))?;
        }
        if self.obj {
            write_atomic(&stem.with_extension("obj"), obj_text(mesh, comment).as_bytes())?;
        }
        Ok(())
    }
}

impl FrameSink for MeshSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let world = frame.world;
        if let Some(statics) = world.fluid.statics().filter(|s| !self.wrote_obstacles && s.has_obstacles()) {
            let mut all = TriMesh::default();
            for (_, shape) in &statics.obstacles {
                all.append(&shape.surface_mesh());
            }
            self.write_mesh(&self.dir.join("obstacles"), &all, None, "tidepool static obstacles")?;
            self.wrote_obstacles = true;
        }
        let r = frame.record;
        if r.frame % self.every != 0 {
            return Ok(());
        }
        let stem = |name: &str| frame_file(&self.dir, name, r.frame, "ply").with_extension("");
        if !world.solids.is_empty() {
            let (mesh, velocities) = world.solids.surface();
            let comment = format!("tidepool bodies, frame {}, time {} s", r.frame, r.time);
            self.write_mesh(&stem("bodies"), &mesh, Some(&velocities), &comment)?;
        }
        if self.ply && !world.tracers.is_empty() {
            let tracers = TriMesh { vertices: world.tracers.clone(), triangles: Vec::new() };
            write_atomic(&stem("tracers").with_extension("ply"), &ply_bytes(&tracers, None, "tidepool tracers (plankton)"))?;
        }
        match &world.fluid {
            Fluid::Surface(flow) => {
                let (terrain, water) = flow.meshes();
                self.write_mesh(&stem("terrain"), &terrain, None, "tidepool surface flow: terrain")?;
                return self.write_mesh(&stem("water"), &water, None, "tidepool surface flow: water surface");
            }
            Fluid::Flip(f) if self.ply => {
                let particles = TriMesh { vertices: f.positions.clone(), triangles: Vec::new() };
                write_atomic(&stem("particles").with_extension("ply"), &ply_bytes(&particles, Some(&f.velocities), "tidepool FLIP particles"))?;
            }
            // Smoke has no surface: its meshes are the bodies' (the smoke is in the volumes).
            Fluid::Smoke(_) => return Ok(()),
            _ => {}
        }
        for (name, surface) in frame.phase_surfaces() {
            let comment = format!("tidepool liquid surface of phase {name}, frame {}, time {} s", r.frame, r.time);
            self.write_mesh(&stem(&format!("surface_{name}")), &surface.mesh, Some(&surface.velocities), &comment)?;
        }
        let surface = frame.surface();
        let comment = format!("tidepool liquid surface, frame {}, time {} s", r.frame, r.time);
        self.write_mesh(&stem("surface"), &surface.mesh, Some(&surface.velocities), &comment)
    }
}
