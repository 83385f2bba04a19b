//! A USD stage per run (ASCII `.usda`): `tidepool.usda` holds the scene's layout and metadata
//! (Y up, metres, the frame rate) and takes its animation from value clips, one small layer per
//! written frame (`usd/frame_NNNN.usda`), so that a frame's data is written once and a stage of
//! any length opens as one time-sampled scene. The stage is rewritten (atomically) with each
//! frame, so it always lists exactly the frames on disk.
//!
//! Prims under `/World`: `Liquid` (the surface mesh with `velocities`), `Bodies` (every body's
//! surface in world space with the velocity of its material), `Particles` (FLIP's particles,
//! `UsdGeomPoints` with velocities), `Tracers` (the passive tracers, points 5 mm wide) and
//! `Obstacles` (static, written once in `usd/obstacles.usda` and referenced).

use super::write_atomic;
use crate::driver::{Frame, FrameSink};
use crate::error::{Error, Result};
use crate::fluids::Fluid;
use crate::geometry::TriMesh;
use crate::math::{Real, Vec3};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The animated prims: name, schema, and the attributes the clips provide.
const ANIMATED: [(&str, &str, &[&str]); 4] = [
    ("Liquid", "Mesh", &MESH_ATTRIBUTES),
    ("Bodies", "Mesh", &MESH_ATTRIBUTES),
    ("Particles", "Points", &["point3f[] points", "vector3f[] velocities", "float3[] extent"]),
    ("Tracers", "Points", &["point3f[] points", "float3[] extent"]),
];

/// The time-varying attributes of a mesh.
const MESH_ATTRIBUTES: [&str; 5] = ["point3f[] points", "vector3f[] velocities", "int[] faceVertexCounts", "int[] faceVertexIndices", "float3[] extent"];

/// Writes the clip layer of every `every`-th frame and keeps `tidepool.usda` up to date.
pub struct UsdSink {
    dir: PathBuf,
    every: u32,
    fps: f64,
    /// Frames written so far (the clips, in order).
    frames: Vec<u32>,
    /// Whether there are bodies and tracers (prims the stage declares).
    bodies: bool,
    tracers: bool,
    /// FLIP's particle spacing, the particles' width (`None` for other liquids).
    particles: Option<Real>,
    /// The static obstacles, if any.
    obstacles: Option<TriMesh>,
    /// Whether the manifest and the obstacles' layer are written.
    wrote_static: bool,
}

impl UsdSink {
    /// A sink writing into `dir` (its clip layers into `dir/usd`); when resuming after
    /// `resume_after`, the stage lists the frames written before.
    pub fn new(dir: &Path, every: u32, fps: f64, resume_after: Option<u32>, [bodies, tracers]: [bool; 2], obstacles: TriMesh) -> Result<Self> {
        let clips = dir.join("usd");
        std::fs::create_dir_all(&clips).map_err(Error::io("create directory", &clips))?;
        let frames = resume_after.map_or(Vec::new(), |last| (0..=last).filter(|f| f % every == 0).collect());
        let obstacles = (!obstacles.triangles.is_empty()).then_some(obstacles);
        Ok(UsdSink { dir: dir.to_path_buf(), every, fps, frames, bodies, tracers, particles: None, obstacles, wrote_static: false })
    }

    /// The prims this run animates.
    fn animated(&self) -> impl Iterator<Item = &(&'static str, &'static str, &'static [&'static str])> {
        ANIMATED.iter().filter(|(name, _, _)| match *name {
            "Bodies" => self.bodies,
            "Particles" => self.particles.is_some(),
            "Tracers" => self.tracers,
            _ => true,
        })
    }

    /// The manifest: the attributes the clips provide, declared once.
    fn manifest(&self) -> String {
        let mut s = String::from("#usda 1.0\n\nover \"World\"\n{\n");
        for (name, _, attributes) in self.animated() {
            let _ = writeln!(s, "    over \"{name}\"\n    {{");
            for attribute in *attributes {
                let _ = writeln!(s, "        {attribute}");
            }
            s.push_str("    }\n");
        }
        s.push_str("}\n");
        s
    }

    /// The stage: metadata, the clips of the frames written so far, and the prims.
    fn stage(&self) -> String {
        let last = self.frames.last().copied().unwrap_or(0);
        let mut s = String::from("#usda 1.0\n(\n    defaultPrim = \"World\"\n    doc = \"tidepool run: liquid, bodies and obstacles, in metres, Y up\"\n");
        let _ = writeln!(s, "    startTimeCode = 0\n    endTimeCode = {last}\n    timeCodesPerSecond = {fps}\n    framesPerSecond = {fps}", fps = self.fps);
        s.push_str("    metersPerUnit = 1\n    upAxis = \"Y\"\n)\n\n");
        let pairs = |f: &dyn Fn(usize, u32) -> String| self.frames.iter().enumerate().map(|(n, &frame)| f(n, frame)).collect::<Vec<_>>().join(", ");
        s.push_str("def Xform \"World\" (\n    clips = {\n        dictionary default = {\n");
        let _ = writeln!(s, "            double2[] active = [{}]", pairs(&|n, frame| format!("({frame}, {n})")));
        let _ = writeln!(s, "            asset[] assetPaths = [{}]", pairs(&|_, frame| format!("@./usd/frame_{frame:04}.usda@")));
        s.push_str("            asset manifestAssetPath = @./usd/manifest.usda@\n            string primPath = \"/World\"\n");
        let _ = writeln!(s, "            double2[] times = [{}]", pairs(&|_, frame| format!("({frame}, {frame})")));
        s.push_str("        }\n    }\n)\n{\n");
        for (name, schema, _) in self.animated() {
            let _ = writeln!(s, "    def {schema} \"{name}\"\n    {{");
            if *schema == "Mesh" {
                s.push_str("        uniform token subdivisionScheme = \"none\"\n");
            }
            if *name == "Tracers" {
                s.push_str("        float[] widths = [0.005] (\n            interpolation = \"constant\"\n        )\n");
            }
            if let (&"Particles", Some(width)) = (name, self.particles) {
                let _ = writeln!(s, "        float[] widths = [{}] (\n            interpolation = \"constant\"\n        )", width as f32);
            }
            s.push_str("    }\n");
        }
        if self.obstacles.is_some() {
            s.push_str("    def Mesh \"Obstacles\" (\n        prepend references = @./usd/obstacles.usda@</Obstacles>\n    )\n    {\n    }\n");
        }
        s.push_str("}\n");
        s
    }
}

/// `[(x, y, z), ...]` of `points` as float32.
fn tuples(points: &[Vec3]) -> String {
    let mut s = String::with_capacity(points.len() * 40 + 2);
    s.push('[');
    for (n, p) in points.iter().enumerate() {
        let sep = if n == 0 { "" } else { ", " };
        let _ = write!(s, "{sep}({}, {}, {})", p.x as f32, p.y as f32, p.z as f32);
    }
    s.push(']');
    s
}

/// The bounding box of `points` as an `extent` value.
fn extent(points: &[Vec3]) -> String {
    let (mut lo, mut hi) = (Vec3::repeat(Real::MAX), Vec3::repeat(Real::MIN));
    for p in points {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    if points.is_empty() {
        (lo, hi) = (Vec3::zeros(), Vec3::zeros());
    }
    tuples(&[lo, hi])
}

/// A mesh's attributes, time-sampled at `time` (or with default values when `time` is `None`).
fn mesh_attributes(s: &mut String, mesh: &TriMesh, velocities: Option<&[Vec3]>, time: Option<u32>, indent: &str) {
    let value = |v: String| time.map_or(format!(" = {v}"), |t| format!(".timeSamples = {{\n{indent}    {t}: {v},\n{indent}}}"));
    let _ = writeln!(s, "{indent}point3f[] points{}", value(tuples(&mesh.vertices)));
    if let Some(velocities) = velocities {
        let _ = writeln!(s, "{indent}vector3f[] velocities{}", value(tuples(velocities)));
    }
    let counts = vec!["3"; mesh.triangles.len()].join(", ");
    let _ = writeln!(s, "{indent}int[] faceVertexCounts{}", value(format!("[{counts}]")));
    let indices: Vec<String> = mesh.triangles.iter().flatten().map(u32::to_string).collect();
    let _ = writeln!(s, "{indent}int[] faceVertexIndices{}", value(format!("[{}]", indices.join(", "))));
    let _ = writeln!(s, "{indent}float3[] extent{}", value(extent(&mesh.vertices)));
}

impl FrameSink for UsdSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let r = frame.record;
        if let Fluid::Flip(f) = &frame.world.fluid {
            self.particles = Some(f.grid.dx / (f.params.particles_per_cell as Real).cbrt());
        }
        if !self.wrote_static {
            write_atomic(&self.dir.join("usd/manifest.usda"), self.manifest().as_bytes())?;
            if let Some(obstacles) = &self.obstacles {
                let mut s = String::from("#usda 1.0\n(\n    defaultPrim = \"Obstacles\"\n    metersPerUnit = 1\n    upAxis = \"Y\"\n)\n\ndef Mesh \"Obstacles\"\n{\n");
                mesh_attributes(&mut s, obstacles, None, None, "    ");
                s.push_str("}\n");
                write_atomic(&self.dir.join("usd/obstacles.usda"), s.as_bytes())?;
            }
            self.wrote_static = true;
        }
        if r.frame % self.every != 0 {
            return Ok(());
        }
        let mut s = String::from("#usda 1.0\n\nover \"World\"\n{\n");
        let surface = frame.surface();
        s.push_str("    over \"Liquid\"\n    {\n");
        mesh_attributes(&mut s, &surface.mesh, Some(&surface.velocities), Some(r.frame), "        ");
        s.push_str("    }\n");
        if self.bodies {
            let (mesh, velocities) = frame.world.solids.surface();
            s.push_str("    over \"Bodies\"\n    {\n");
            mesh_attributes(&mut s, &mesh, Some(&velocities), Some(r.frame), "        ");
            s.push_str("    }\n");
        }
        if let Fluid::Flip(f) = &frame.world.fluid {
            let t = r.frame;
            s.push_str("    over \"Particles\"\n    {\n");
            let _ = writeln!(s, "        point3f[] points.timeSamples = {{\n            {t}: {},\n        }}", tuples(&f.positions));
            let _ = writeln!(s, "        vector3f[] velocities.timeSamples = {{\n            {t}: {},\n        }}", tuples(&f.velocities));
            let _ = writeln!(s, "        float3[] extent.timeSamples = {{\n            {t}: {},\n        }}", extent(&f.positions));
            s.push_str("    }\n");
        }
        if self.tracers {
            let t = r.frame;
            let points = &frame.world.tracers;
            s.push_str("    over \"Tracers\"\n    {\n");
            let _ = writeln!(s, "        point3f[] points.timeSamples = {{\n            {t}: {},\n        }}", tuples(points));
            let _ = writeln!(s, "        float3[] extent.timeSamples = {{\n            {t}: {},\n        }}", extent(points));
            s.push_str("    }\n");
        }
        s.push_str("}\n");
        write_atomic(&self.dir.join(format!("usd/frame_{:04}.usda", r.frame)), s.as_bytes())?;
        self.frames.push(r.frame);
        write_atomic(&self.dir.join("tidepool.usda"), self.stage().as_bytes())
    }
}
