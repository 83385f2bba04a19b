//! PNG previews: a small software rasteriser drawing the liquid surface, the obstacles and the
//! far walls and floor of the domain from the scene's camera, 2x2 supersampled.

use super::{frame_file, write_atomic};
use crate::driver::{Frame, FrameSink};
use crate::error::Result;
use crate::fluids::lattice::SurfaceFlow;
use crate::fluids::Fluid;
use crate::geometry::TriMesh;
use crate::grid::{Grid, Location};
use crate::math::{vec3, Real, Vec3};
use crate::solids::Solid;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// A pinhole camera.
#[derive(Clone, Copy, Debug)]
pub struct Camera {
    eye: Vec3,
    forward: Vec3,
    right: Vec3,
    up: Vec3,
    /// Focal length in pixels.
    focal: Real,
    width: usize,
    height: usize,
}

impl Camera {
    /// The scene's camera; a missing position or target frames the whole domain from the front,
    /// a little to the right and above.
    pub fn from_scene(cam: &crate::scene::Camera, grid: &Grid, width: usize, height: usize) -> Self {
        let (lo, hi) = (grid.origin, grid.max_corner());
        let centre = 0.5 * (lo + hi);
        let look_at = cam.look_at.map_or(centre, vec3);
        let half_fov = 0.5 * cam.fov.to_radians();
        let eye = cam.position.map_or_else(
            || {
                let radius = 0.5 * (hi - lo).norm();
                let aspect = width as Real / height as Real;
                let fit = half_fov.tan().min(half_fov.tan() * aspect);
                centre + Vec3::new(0.35, 0.55, 1.0).normalize() * (0.95 * radius / fit.atan().sin())
            },
            vec3,
        );
        let forward = (look_at - eye).normalize();
        let helper = if forward.y.abs() > 0.99 { Vec3::z() } else { Vec3::y() };
        let right = forward.cross(&helper).normalize();
        let up = right.cross(&forward);
        Camera { eye, forward, right, up, focal: 0.5 * height as Real / half_fov.tan(), width, height }
    }

    /// Pixel coordinates and view depth of `p`, or `None` behind the camera.
    fn project(&self, p: &Vec3) -> Option<(Real, Real, Real)> {
        let d = p - self.eye;
        let z = d.dot(&self.forward);
        if z <= 1e-6 {
            return None;
        }
        let x = 0.5 * self.width as Real + self.focal * d.dot(&self.right) / z;
        let y = 0.5 * self.height as Real - self.focal * d.dot(&self.up) / z;
        Some((x, y, z))
    }
}

#[derive(Clone, Copy)]
enum Material {
    /// A liquid's surface, drawn into transparent layer `layer` in colour `base`.
    Liquid {
        layer: usize,
        base: Vec3,
    },
    Solid,
    /// A body's surface in colour `base`.
    Body {
        base: Vec3,
    },
    Tracer,
    /// A far wall or the floor; `checker` tiles it (tile size in m).
    Wall {
        checker: Option<Real>,
    },
}

/// The colour of rigid and modal bodies.
const BODY_COLOUR: Vec3 = Vec3::new(0.90, 0.78, 0.25);

/// The colour of deformable bodies simulated in full.
const SOFT_BODY_COLOUR: Vec3 = Vec3::new(0.92, 0.45, 0.38);

/// Opacity of a liquid's nearest surface over what lies behind it.
const WATER_OPACITY: Real = 0.7;

/// Opacity of a liquid's nearest surface in front of another liquid's (a drop inside a
/// liquid shows through it).
const OUTER_OPACITY: Real = 0.4;

/// The colour of the water, and of a liquid's first phase.
const WATER: [Real; 3] = [0.08, 0.36, 0.68];

/// The colours of a liquid's phases after the first, in turn: orange (oil), red, green, violet,
/// white.
const PHASE_COLOURS: [[Real; 3]; 5] = [[0.9, 0.42, 0.08], [0.75, 0.15, 0.12], [0.2, 0.6, 0.25], [0.5, 0.3, 0.7], [0.9, 0.9, 0.88]];

/// The preview colour of phase `k` of a liquid.
fn phase_colour(k: usize) -> Vec3 {
    vec3(if k == 0 { WATER } else { PHASE_COLOURS[(k - 1) % PHASE_COLOURS.len()] })
}

/// A transparent z-buffer: the nearest surface of one liquid (one phase) at each sample.
struct Layer {
    depth: Vec<f32>,
    color: Vec<[u8; 3]>,
}

/// The supersampled picture: a z-buffer for opaque surfaces and a transparent one per liquid
/// phase for its nearest surface, blended over them far to near (so bodies under water, and a
/// drop inside another liquid, show through). Per sample the depths and colours are kept in
/// single precision and 8 bits per channel (14 bytes a sample with one liquid: 29 MB at the
/// default 960 x 540 supersampled 2x2; in double precision it was 133 MB, most of a default
/// run's memory).
struct Raster {
    camera: Camera,
    depth: Vec<f32>,
    color: Vec<[u8; 3]>,
    layers: Vec<Layer>,
}

/// Bytes the renderer holds while drawing a picture of `camera`'s size with `liquids`
/// transparent layers ([`Raster`]).
pub fn raster_bytes(camera: &crate::scene::Camera, liquids: usize) -> usize {
    4 * camera.width as usize * camera.height as usize * (1 + liquids) * (std::mem::size_of::<f32>() + 3)
}

/// A colour in [0, 1] to 8 bits per channel.
fn to_bytes(c: Vec3) -> [u8; 3] {
    [0, 1, 2].map(|a| (c[a].clamp(0.0, 1.0) * 255.0).round() as u8)
}

/// 8 bits per channel back to a colour in [0, 1].
fn from_bytes(c: [u8; 3]) -> Vec3 {
    Vec3::new(Real::from(c[0]), Real::from(c[1]), Real::from(c[2])) / 255.0
}

const LIGHT: [Real; 3] = [-0.35, 0.85, 0.4];

impl Raster {
    fn new(camera: Camera, liquids: usize) -> Self {
        let n = camera.width * camera.height;
        let color = (0..n)
            .map(|c| {
                let t = (c / camera.width) as Real / camera.height as Real;
                to_bytes(Vec3::new(0.93, 0.95, 0.98) * (1.0 - t) + Vec3::new(0.72, 0.77, 0.84) * t)
            })
            .collect();
        let layers = (0..liquids).map(|_| Layer { depth: vec![f32::INFINITY; n], color: vec![[0; 3]; n] }).collect();
        Raster { camera, depth: vec![f32::INFINITY; n], color, layers }
    }

    fn shade(&self, material: Material, p: &Vec3, n: &Vec3) -> Vec3 {
        let light = vec3(LIGHT).normalize();
        let view = (self.camera.eye - p).normalize();
        let n = if n.dot(&view) < 0.0 { -n } else { *n };
        let diffuse = n.dot(&light).max(0.0);
        match material {
            Material::Liquid { base, .. } => {
                let half = (light + view).normalize();
                let specular = n.dot(&half).max(0.0).powi(80) * 0.8;
                let fresnel = 0.04 + 0.96 * (1.0 - n.dot(&view).clamp(0.0, 1.0)).powi(5);
                let sky = Vec3::new(0.82, 0.9, 1.0);
                let lit = base * (0.35 + 0.65 * diffuse);
                lit * (1.0 - 0.7 * fresnel) + sky * (0.7 * fresnel) + Vec3::repeat(specular)
            }
            Material::Solid => Vec3::new(0.80, 0.55, 0.36) * (0.35 + 0.65 * diffuse),
            Material::Body { base } => base * (0.35 + 0.65 * diffuse),
            Material::Tracer => Vec3::new(1.0, 1.0, 0.95) * (0.7 + 0.3 * diffuse),
            Material::Wall { checker } => {
                let tone = checker.map_or(0.9, |s| {
                    let parity = ((p.x / s).floor() + (p.z / s).floor()) as i64;
                    if parity.rem_euclid(2) == 0 {
                        0.92
                    } else {
                        0.80
                    }
                });
                Vec3::new(0.93, 0.93, 0.95) * tone * (0.7 + 0.3 * diffuse)
            }
        }
    }

    /// Draws a triangle with per-vertex normals (perspective-correct interpolation).
    fn triangle(&mut self, p: [Vec3; 3], n: [Vec3; 3], material: Material) {
        let cam = self.camera;
        let Some(s0) = cam.project(&p[0]) else { return };
        let Some(s1) = cam.project(&p[1]) else { return };
        let Some(s2) = cam.project(&p[2]) else { return };
        let area = (s1.0 - s0.0) * (s2.1 - s0.1) - (s2.0 - s0.0) * (s1.1 - s0.1);
        if area.abs() < 1e-12 {
            return;
        }
        let min_x = s0.0.min(s1.0).min(s2.0).floor().max(0.0) as usize;
        let max_x = (s0.0.max(s1.0).max(s2.0).ceil() as isize).min(cam.width as isize - 1);
        let min_y = s0.1.min(s1.1).min(s2.1).floor().max(0.0) as usize;
        let max_y = (s0.1.max(s1.1).max(s2.1).ceil() as isize).min(cam.height as isize - 1);
        if max_x < 0 || max_y < 0 {
            return;
        }
        for y in min_y..=max_y as usize {
            for x in min_x..=max_x as usize {
                let (px, py) = (x as Real + 0.5, y as Real + 0.5);
                let w0 = ((s1.0 - px) * (s2.1 - py) - (s2.0 - px) * (s1.1 - py)) / area;
                let w1 = ((s2.0 - px) * (s0.1 - py) - (s0.0 - px) * (s2.1 - py)) / area;
                let w2 = 1.0 - w0 - w1;
                if w0 < 0.0 || w1 < 0.0 || w2 < 0.0 {
                    continue;
                }
                // Perspective-correct weights.
                let (q0, q1, q2) = (w0 / s0.2, w1 / s1.2, w2 / s2.2);
                let inv = 1.0 / (q0 + q1 + q2);
                let depth = inv as f32;
                let pixel = y * cam.width + x;
                let layer = if let Material::Liquid { layer, .. } = material { Some(layer) } else { None };
                let depths = match layer {
                    Some(l) => &mut self.layers[l].depth,
                    None => &mut self.depth,
                };
                if depth >= depths[pixel] {
                    continue;
                }
                depths[pixel] = depth;
                let (a, b, c) = (q0 * inv, q1 * inv, q2 * inv);
                let position = p[0] * a + p[1] * b + p[2] * c;
                let normal = (n[0] * a + n[1] * b + n[2] * c).try_normalize(1e-12).unwrap_or(n[0]);
                let shaded = self.shade(material, &position, &normal);
                match layer {
                    Some(l) => self.layers[l].color[pixel] = to_bytes(shaded),
                    None => self.color[pixel] = to_bytes(shaded),
                }
            }
        }
    }

    /// Draws a mesh smooth-shaded, except across creases sharper than about 40 degrees (box
    /// edges), where the triangle's own normal is used.
    fn mesh(&mut self, mesh: &TriMesh, material: Material) {
        let normals = mesh.vertex_normals();
        for t in &mesh.triangles {
            let idx = t.map(|i| i as usize);
            let p = idx.map(|i| mesh.vertices[i]);
            let face = (p[1] - p[0]).cross(&(p[2] - p[0])).try_normalize(1e-20).unwrap_or_default();
            let n = idx.map(|i| if normals[i].dot(&face) > 0.77 { normals[i] } else { face });
            self.triangle(p, n, material);
        }
    }

    /// The domain sides seen from inside (those facing the camera across the domain), the floor
    /// with a checker pattern.
    fn far_walls(&mut self, grid: &Grid) {
        let (lo, hi) = (grid.origin, grid.max_corner());
        let tile = (hi - lo).max() / 12.0;
        for axis in 0..3 {
            for side in 0..2 {
                let plane = if side == 0 { lo[axis] } else { hi[axis] };
                let outward = if side == 0 { -1.0 } else { 1.0 };
                if (self.camera.eye[axis] - plane) * outward > 0.0 {
                    continue;
                }
                let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                let corner = |a: Real, b: Real| {
                    let mut p = Vec3::zeros();
                    p[axis] = plane;
                    p[u] = a;
                    p[v] = b;
                    p
                };
                let quad = [corner(lo[u], lo[v]), corner(hi[u], lo[v]), corner(hi[u], hi[v]), corner(lo[u], hi[v])];
                let mut normal = Vec3::zeros();
                normal[axis] = -outward;
                let checker = (axis == 1 && side == 0).then_some(tile);
                let material = Material::Wall { checker };
                // Split into a grid of small quads so perspective stays accurate and cheap.
                let n = 8;
                for a in 0..n {
                    for b in 0..n {
                        let at = |i: usize, j: usize| {
                            let (s, t) = (i as Real / n as Real, j as Real / n as Real);
                            quad[0] * ((1.0 - s) * (1.0 - t)) + quad[1] * (s * (1.0 - t)) + quad[2] * (s * t) + quad[3] * ((1.0 - s) * t)
                        };
                        let (p00, p10, p11, p01) = (at(a, b), at(a + 1, b), at(a + 1, b + 1), at(a, b + 1));
                        self.triangle([p00, p10, p11], [normal; 3], material);
                        self.triangle([p00, p11, p01], [normal; 3], material);
                    }
                }
            }
        }
    }

    /// Blends the liquids' layers over the opaque surfaces, far to near, then the `smoke` in
    /// front of them ([`Smoke::over`]), and box-filters 2x2 blocks into 8-bit RGB.
    fn downsample(&self, smoke: Option<&Smoke>) -> Vec<u8> {
        let (w, h) = (self.camera.width / 2, self.camera.height / 2);
        let row = |y: usize| {
            let mut rgb = Vec::with_capacity(w * 3);
            let mut in_front: Vec<(f32, Vec3)> = Vec::with_capacity(self.layers.len());
            for x in 0..w {
                let mut samples = [(0.0, Vec3::zeros()); 4];
                for (sample, (dx, dy)) in samples.iter_mut().zip([(0, 0), (1, 0), (0, 1), (1, 1)]) {
                    let pixel = (2 * y + dy) * self.camera.width + 2 * x + dx;
                    in_front.clear();
                    in_front.extend(self.layers.iter().filter(|l| l.depth[pixel] < self.depth[pixel]).map(|l| (l.depth[pixel], from_bytes(l.color[pixel]))));
                    in_front.sort_by(|a, b| b.0.total_cmp(&a.0));
                    let blend = |(behind, opacity): (Vec3, Real), (_, liquid): &(f32, Vec3)| (liquid * opacity + behind * (1.0 - opacity), OUTER_OPACITY);
                    let nearest = in_front.last().map_or(self.depth[pixel], |l| l.0);
                    *sample = (Real::from(nearest), in_front.iter().fold((from_bytes(self.color[pixel]), WATER_OPACITY), blend).0);
                }
                if let Some(smoke) = smoke {
                    smoke.over(&self.camera, 2 * x + 1, 2 * y + 1, &mut samples);
                }
                let c: Vec3 = samples.iter().map(|s| s.1).sum();
                for v in (c * 0.25).iter() {
                    rgb.push((v.clamp(0.0, 1.0).powf(1.0 / 1.1) * 255.0).round() as u8);
                }
            }
            rgb
        };
        (0..h).into_par_iter().flat_map_iter(row).collect()
    }
}

/// Optical depth of a unit smoke density over one cell: ten cells of it let through
/// `exp(-3)`, 5% of what lies behind.
const SMOKE_OPACITY: Real = 0.3;

/// The colour of cool smoke, and of the hottest.
const SMOKE_COLOUR: [Real; 3] = [0.33, 0.34, 0.38];
const FLAME_COLOUR: [Real; 3] = [0.95, 0.5, 0.12];

/// Kelvin above ambient at which smoke shows the flame colour whole.
const GLOWING: Real = 300.0;

/// A smoke volume as the preview draws it: absorbing and emitting its own colour (from grey to
/// orange as it heats up), marched along each pixel's centre ray a half cell at a time.
struct Smoke<'a> {
    grid: &'a Grid,
    density: &'a crate::grid::Array3<Real>,
    temperature: &'a crate::grid::Array3<Real>,
}

impl Smoke<'_> {
    /// Composites the smoke in front of each of a pixel's `samples` (view depth, colour) over
    /// it, front to back along the ray through the supersampled pixel `(px, py)`.
    fn over(&self, camera: &Camera, px: usize, py: usize, samples: &mut [(Real, Vec3); 4]) {
        let (lo, hi) = (self.grid.origin, self.grid.max_corner());
        // The ray `eye + z dir`, `z` the view depth.
        let dir =
            camera.forward + camera.right * ((px as Real - 0.5 * camera.width as Real) / camera.focal) - camera.up * ((py as Real - 0.5 * camera.height as Real) / camera.focal);
        let (mut enter, mut exit) = (0.0 as Real, Real::INFINITY);
        for a in 0..3 {
            if dir[a].abs() < 1e-12 {
                if camera.eye[a] < lo[a] || camera.eye[a] > hi[a] {
                    return;
                }
                continue;
            }
            let (t0, t1) = ((lo[a] - camera.eye[a]) / dir[a], (hi[a] - camera.eye[a]) / dir[a]);
            enter = enter.max(t0.min(t1));
            exit = exit.min(t0.max(t1));
        }
        let farthest = samples.iter().map(|s| s.0).fold(0.0, Real::max);
        exit = exit.min(farthest);
        if exit <= enter {
            return;
        }
        let step = 0.5 * self.grid.dx / dir.norm();
        let mut order = [0, 1, 2, 3];
        order.sort_by(|&a, &b| samples[a].0.total_cmp(&samples[b].0));
        let (mut light, mut through) = (Vec3::zeros(), 1.0);
        let mut next = 0;
        let mut z = enter;
        while next < 4 {
            let reached = (z + step).min(exit);
            while next < 4 && samples[order[next]].0 <= z {
                let sample = &mut samples[order[next]];
                sample.1 = light + through * sample.1;
                next += 1;
            }
            if z >= exit {
                for &o in &order[next..] {
                    samples[o].1 = light + through * samples[o].1;
                }
                break;
            }
            let x = camera.eye + dir * (0.5 * (z + reached));
            let density = self.grid.interpolate(self.density, Location::Cell, &x).max(0.0);
            if density > 0.0 {
                let heat = (self.grid.interpolate(self.temperature, Location::Cell, &x) / GLOWING).clamp(0.0, 1.0);
                let colour = vec3(SMOKE_COLOUR) * (1.0 - heat) + vec3(FLAME_COLOUR) * heat;
                let absorbed = 1.0 - (-SMOKE_OPACITY * density * (reached - z) * dir.norm() / self.grid.dx).exp();
                light += through * absorbed * colour;
                through *= 1.0 - absorbed;
            }
            z = reached;
        }
    }
}

/// Encodes 8-bit RGB pixels as PNG.
pub fn png_bytes(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().expect("PNG header into memory");
        writer.write_image_data(rgb).expect("PNG data into memory");
    }
    bytes
}

/// Renders the liquid surface (or the smoke), the obstacles and the bodies of a frame of a grid
/// fluid, or the top-down picture of a surface flow.
pub fn render(frame: &Frame, camera: &crate::scene::Camera, obstacles: &TriMesh) -> Vec<u8> {
    let world = frame.world;
    let grid_scene = |grid: &Grid, smoke: Option<Smoke>| {
        // Bodies simulated in full in coral, the others (rigid and modal) in gold.
        let solids = &world.solids;
        let full = solids.deformable.iter().map(|s| (Solid::surface(s).0, SOFT_BODY_COLOUR));
        let bodies: Vec<(TriMesh, Vec3)> =
            solids.rigid.iter().map(|s| Solid::surface(s).0).chain(solids.reduced.iter().map(|s| Solid::surface(s).0)).map(|m| (m, BODY_COLOUR)).chain(full).collect();
        let liquids: Vec<&TriMesh> = match frame.phase_surfaces() {
            [] => vec![&frame.surface().mesh],
            phases => phases.iter().map(|(_, s)| &s.mesh).collect(),
        };
        render_scene(grid, camera, obstacles, &bodies, &world.tracers, &liquids, smoke.as_ref())
    };
    match &world.fluid {
        Fluid::LevelSet(f) => grid_scene(&f.grid, None),
        Fluid::Flip(f) => grid_scene(&f.grid, None),
        Fluid::Smoke(f) => grid_scene(&f.grid, Some(Smoke { grid: &f.grid, density: &f.density, temperature: &f.temperature })),
        Fluid::Surface(flow) => lattice_preview(flow),
    }
}

/// Renders the domain's far walls and floor, `obstacles`, `bodies`, `tracers` (white dots 0.6
/// of a cell across), the surfaces of the `liquids` (one, or each phase of several, in
/// the phases' colours) and the `smoke` from `camera` as PNG bytes.
fn render_scene(
    grid: &Grid,
    camera: &crate::scene::Camera,
    obstacles: &TriMesh,
    bodies: &[(TriMesh, Vec3)],
    tracers: &[Vec3],
    liquids: &[&TriMesh],
    smoke: Option<&Smoke>,
) -> Vec<u8> {
    let (w, h) = (camera.width as usize, camera.height as usize);
    let mut raster = Raster::new(Camera::from_scene(camera, grid, 2 * w, 2 * h), liquids.len());
    raster.far_walls(grid);
    raster.mesh(obstacles, Material::Solid);
    for (body, base) in bodies {
        raster.mesh(body, Material::Body { base: *base });
    }
    raster.mesh(&dots(tracers, 0.3 * grid.dx), Material::Tracer);
    for (layer, liquid) in liquids.iter().enumerate() {
        raster.mesh(liquid, Material::Liquid { layer, base: phase_colour(layer) });
    }
    png_bytes(w as u32, h as u32, &raster.downsample(smoke))
}

/// An octahedron of `radius` at each point (triangles facing out).
fn dots(points: &[Vec3], radius: Real) -> TriMesh {
    let axes = [Vec3::x(), -Vec3::x(), Vec3::y(), -Vec3::y(), Vec3::z(), -Vec3::z()];
    // The eight faces as (x, y, z) corners, counter-clockwise from outside.
    const FACES: [[u32; 3]; 8] = [[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]];
    let mut mesh = TriMesh::default();
    for (n, p) in points.iter().enumerate() {
        mesh.vertices.extend(axes.iter().map(|a| p + radius * a));
        mesh.triangles.extend(FACES.iter().map(|f| f.map(|v| v + 6 * n as u32)));
    }
    mesh
}

/// Writes `preview_NNNN.png` every `every` frames.
pub struct PreviewSink {
    dir: PathBuf,
    every: u32,
    camera: crate::scene::Camera,
    obstacles: TriMesh,
}

impl PreviewSink {
    /// A sink writing into `dir` with the scene's camera; `obstacles` are the static
    /// obstacles' surfaces.
    pub fn new(dir: &Path, every: u32, camera: &crate::scene::Camera, obstacles: TriMesh) -> Self {
        PreviewSink { dir: dir.to_path_buf(), every, camera: camera.clone(), obstacles }
    }
}

impl FrameSink for PreviewSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        if frame.record.frame % self.every != 0 {
            return Ok(());
        }
        let png = render(frame, &self.camera, &self.obstacles);
        write_atomic(&frame_file(&self.dir, "preview", frame.record.frame, "png"), &png)
    }
}

/// A top-down picture (rows along z), each node a square of pixels so that the picture is
/// about 512 pixels across: the terrain in sand colours shaded by its slope, under water
/// coloured by depth (a depth of 20 particles is nearly opaque); holes are dark.
pub fn lattice_preview(flow: &SurfaceFlow) -> Vec<u8> {
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
