//! VTK XML files for ParaView: per frame, the grid fields as image data (`fields_NNNN.vti`) and
//! the liquid surface as poly data (`surface_NNNN.vtp`), listed in a `tidepool.pvd` time series.
//! Binary data goes in a raw appended block (UInt64 headers, little endian).

use super::{frame_file, write_atomic};
use crate::driver::{Frame, FrameSink};
use crate::error::Result;
use crate::fluids::Fluid;
use crate::geometry::TriMesh;
use crate::grid::Location;
use crate::grid::{Array3, Grid, MacVelocity};
use crate::math::Real;
use crate::math::Vec3;
use crate::solids::StaticSolids;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Collects named arrays and writes them as an appended raw block.
#[derive(Default)]
struct Appended {
    xml: String,
    data: Vec<u8>,
}

impl Appended {
    fn float32(&mut self, name: &str, components: usize, values: impl Iterator<Item = f64>) {
        let values: Vec<f32> = values.map(|v| v as f32).collect();
        self.array("Float32", name, components, &values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    }

    fn int64(&mut self, name: &str, values: impl Iterator<Item = i64>) {
        let bytes: Vec<u8> = values.flat_map(|v| v.to_le_bytes()).collect();
        self.array("Int64", name, 1, &bytes);
    }

    fn array(&mut self, ty: &str, name: &str, components: usize, bytes: &[u8]) {
        let _ = writeln!(self.xml, r#"        <DataArray type="{ty}" Name="{name}" NumberOfComponents="{components}" format="appended" offset="{}"/>"#, self.data.len());
        self.data.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.data.extend_from_slice(bytes);
    }

    fn take_xml(&mut self) -> String {
        std::mem::take(&mut self.xml)
    }
}

fn finish(head: &str, body: String, data: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + data.len() + 256);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(body.as_bytes());
    out.extend_from_slice(b"  <AppendedData encoding=\"raw\">\n   _");
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\n  </AppendedData>\n</VTKFile>\n");
    out
}

/// Image data over the cell centres of `grid`: the named `scalars` (the first the default), `velocity`
/// (m/s, averaged to centres) and `obstacle_distance` (m) of `statics`.
pub fn fields_vti(grid: &Grid, scalars: &[(&str, &Array3<Real>)], velocity: &MacVelocity, statics: &StaticSolids) -> Vec<u8> {
    let [nx, ny, nz] = grid.dims;
    let origin = grid.position(Location::Cell, 0, 0, 0);
    let mut a = Appended::default();
    for (name, values) in scalars {
        a.float32(name, 1, values.as_slice().iter().copied());
    }
    let cells = (0..grid.cell_count()).map(|c| statics.phi_cells.coords(c));
    a.float32(
        "velocity",
        3,
        cells.flat_map(|[i, j, k]| {
            let v = velocity.at_cell(i, j, k);
            [v.x, v.y, v.z]
        }),
    );
    a.float32("obstacle_distance", 1, statics.phi_cells.as_slice().iter().copied());
    let extent = format!("0 {} 0 {} 0 {}", nx - 1, ny - 1, nz - 1);
    let mut head = String::from("<?xml version=\"1.0\"?>\n");
    head.push_str("<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n");
    let _ = writeln!(head, "  <ImageData WholeExtent=\"{extent}\" Origin=\"{} {} {}\" Spacing=\"{dx} {dx} {dx}\">", origin.x, origin.y, origin.z, dx = grid.dx);
    let _ = writeln!(head, "    <Piece Extent=\"{extent}\">\n      <PointData Scalars=\"{}\" Vectors=\"velocity\">", scalars.first().map_or("obstacle_distance", |s| s.0));
    let body = format!("{}      </PointData>\n    </Piece>\n  </ImageData>\n", a.take_xml());
    finish(&head, body, a.data)
}

/// The liquid surface as poly data with a `velocity` point array.
pub fn surface_vtp(frame: &Frame) -> Vec<u8> {
    let surface = frame.surface();
    mesh_vtp(&surface.mesh, &surface.velocities)
}

/// All bodies' surfaces in world space as poly data, with the velocity of the body's
/// material at each point.
pub fn bodies_vtp(frame: &Frame) -> Vec<u8> {
    let (mesh, velocities) = frame.world.solids.surface();
    mesh_vtp(&mesh, &velocities)
}

/// A triangle mesh as poly data with a `velocity` point array.
fn mesh_vtp(mesh: &TriMesh, velocities: &[Vec3]) -> Vec<u8> {
    let mut a = Appended::default();
    a.float32("Points", 3, mesh.vertices.iter().flat_map(|v| [v.x, v.y, v.z]));
    let points = a.take_xml();
    a.float32("velocity", 3, velocities.iter().flat_map(|v| [v.x, v.y, v.z]));
    let point_data = a.take_xml();
    a.int64("connectivity", mesh.triangles.iter().flat_map(|t| t.map(i64::from)));
    a.int64("offsets", (1..=mesh.triangles.len() as i64).map(|n| 3 * n));
    let polys = a.take_xml();
    let mut head = String::from("<?xml version=\"1.0\"?>\n");
    head.push_str("<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n");
    let _ = writeln!(
        head,
        "  <PolyData>\n    <Piece NumberOfPoints=\"{}\" NumberOfVerts=\"0\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"{}\">",
        mesh.vertices.len(),
        mesh.triangles.len()
    );
    let body = format!(
        "      <Points>\n{points}      </Points>\n      <PointData Vectors=\"velocity\">\n{point_data}      </PointData>\n      <Polys>\n{polys}      </Polys>\n    </Piece>\n  </PolyData>\n"
    );
    finish(&head, body, a.data)
}

/// Points as poly data (one vertex cell each) with a `velocity` point array.
pub fn points_vtp(points: &[Vec3], velocities: &[Vec3]) -> Vec<u8> {
    let mut a = Appended::default();
    a.float32("Points", 3, points.iter().flat_map(|v| [v.x, v.y, v.z]));
    let xml_points = a.take_xml();
    a.float32("velocity", 3, velocities.iter().flat_map(|v| [v.x, v.y, v.z]));
    let point_data = a.take_xml();
    a.int64("connectivity", 0..points.len() as i64);
    a.int64("offsets", 1..=points.len() as i64);
    let verts = a.take_xml();
    let mut head = String::from("<?xml version=\"1.0\"?>\n");
    head.push_str("<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n");
    let _ = writeln!(head, "  <PolyData>\n    <Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"{n}\" NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">", n = points.len());
    let body = format!(
        "      <Points>\n{xml_points}      </Points>\n      <PointData Vectors=\"velocity\">\n{point_data}      </PointData>\n      <Verts>\n{verts}      </Verts>\n    </Piece>\n  </PolyData>\n"
    );
    finish(&head, body, a.data)
}

/// Writes the VTK files every `every` frames and keeps `tidepool.pvd` up to date.
pub struct VtkSink {
    dir: PathBuf,
    every: u32,
    /// The datasets of each written frame: `fields` (level set, smoke) or `particles` (FLIP),
    /// the liquid's `surface` (not for smoke), and `bodies` with bodies.
    stems: Vec<&'static str>,
    /// (time, part, file) of every dataset written so far.
    entries: Vec<(f64, usize, String)>,
}

impl VtkSink {
    /// A sink writing into `dir` the `fluid`'s datasets (see [`VtkSink::stems`]) and the
    /// bodies'; when resuming after `resume_after`, the series lists the frames written before.
    pub fn new(dir: &Path, every: u32, fps: f64, resume_after: Option<u32>, fluid: &[&'static str], with_bodies: bool) -> Self {
        let mut stems = fluid.to_vec();
        if with_bodies {
            stems.push("bodies");
        }
        let mut sink = VtkSink { dir: dir.to_path_buf(), every, stems, entries: Vec::new() };
        if let Some(last) = resume_after {
            for frame in (0..=last).filter(|f| f % every == 0) {
                sink.add_entries(frame, frame as f64 / fps);
            }
        }
        sink
    }

    fn add_entries(&mut self, frame: u32, time: f64) {
        for (part, stem) in self.stems.iter().enumerate() {
            let ext = if *stem == "fields" { "vti" } else { "vtp" };
            self.entries.push((time, part, format!("{stem}_{frame:04}.{ext}")));
        }
    }
}

/// A `.pvd` time series listing `(time, part, file)` datasets.
pub fn pvd(entries: &[(f64, usize, String)]) -> String {
    let mut s = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <Collection>\n");
    for (time, part, file) in entries {
        let _ = writeln!(s, "    <DataSet timestep=\"{time}\" group=\"\" part=\"{part}\" file=\"{file}\"/>");
    }
    s.push_str("  </Collection>\n</VTKFile>\n");
    s
}

impl FrameSink for VtkSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let r = frame.record;
        if r.frame % self.every != 0 {
            return Ok(());
        }
        match &frame.world.fluid {
            Fluid::LevelSet(f) => {
                let (liquid, fields) = (&f.liquid, frame_file(&self.dir, "fields", r.frame, "vti"));
                write_atomic(&fields, &fields_vti(&f.grid, &[("phi", &liquid.phi), ("pressure", &liquid.pressure)], &liquid.velocity, &f.statics))?;
            }
            Fluid::Smoke(f) => {
                let scalars = [("density", &f.density), ("temperature", &f.temperature), ("pressure", &f.pressure)];
                write_atomic(&frame_file(&self.dir, "fields", r.frame, "vti"), &fields_vti(&f.grid, &scalars, &f.velocity, &f.statics))?;
            }
            Fluid::Flip(f) => write_atomic(&frame_file(&self.dir, "particles", r.frame, "vtp"), &points_vtp(&f.positions, &f.velocities))?,
            Fluid::Surface(_) => {}
        }
        if self.stems.contains(&"surface") {
            write_atomic(&frame_file(&self.dir, "surface", r.frame, "vtp"), &surface_vtp(frame))?;
        }
        if self.stems.contains(&"bodies") {
            write_atomic(&frame_file(&self.dir, "bodies", r.frame, "vtp"), &bodies_vtp(frame))?;
        }
        self.add_entries(r.frame, r.time);
        write_atomic(&self.dir.join("tidepool.pvd"), pvd(&self.entries).as_bytes())
    }
}
