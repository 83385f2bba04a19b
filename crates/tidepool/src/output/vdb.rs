//! OpenVDB files (format version 224, the one OpenVDB 6 to 12 write): sampled fields become
//! sparse grids with the standard 5-4-3 tree (a root over internal nodes of 32³ and 16³
//! children over leaves of 8³ voxels), zip-compressed node values, and grid offsets so that
//! readers can load one grid alone.
//!
//! A lattice sample `(i, j, k)` is voxel `(i, j, k)`; the grid's transform
//! (`UniformScaleTranslateMap`) puts voxel centres where the samples are. Voxels outside the
//! lattice are the background. A block of 8³ voxels (or a whole internal node) whose voxels
//! share one value and one active state is written as a tile, not as a leaf: the inside of a
//! level set and the full inside of a fog volume cost a few bytes.

use super::{frame_file, write_atomic};
use crate::driver::{Frame, FrameSink};
use crate::error::Result;
use crate::fluids::Fluid;
use crate::grid::{Array3, Sampled};
use crate::math::{Real, Vec3};
use flate2::write::ZlibEncoder;
use flate2::Compression;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `OPENVDB_MAGIC`, the first eight bytes of every file.
const MAGIC: i64 = 0x5644_4220;
/// The file format version written.
const FILE_VERSION: u32 = 224;
/// `COMPRESS_ZIP`: node values are zlib-compressed.
const COMPRESS_ZIP: u32 = 0x1;
/// Per-node flag: no selection mask, every value written (`NO_MASK_AND_ALL_VALS`).
const ALL_VALUES: u8 = 6;
/// log2 of the edge (in children) of each tree level: leaf, lower internal, upper internal.
const LOG2_DIMS: [u32; 3] = [3, 4, 5];

/// A voxel value type of a VDB tree.
pub trait Voxel: Copy + PartialEq + Send + Sync {
    /// The value's name in the grid type (`Tree_<name>_5_4_3`).
    const TYPE: &'static str;
    /// Little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
    /// The zero value.
    fn zero() -> Self;
}

impl Voxel for f32 {
    const TYPE: &'static str = "float";
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn zero() -> Self {
        0.0
    }
}

impl Voxel for [f32; 3] {
    const TYPE: &'static str = "vec3s";
    fn put(self, out: &mut Vec<u8>) {
        self.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    }
    fn zero() -> Self {
        [0.0; 3]
    }
}

/// What a grid holds, as OpenVDB's `class` metadata says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridClass {
    /// A narrow-band signed distance: active voxels within the band, `±background` elsewhere.
    LevelSet,
    /// A density in `[0, 1]` with background 0.
    FogVolume,
    /// Anything else (a velocity).
    Unknown,
}

impl GridClass {
    fn name(self) -> &'static str {
        match self {
            GridClass::LevelSet => "level set",
            GridClass::FogVolume => "fog volume",
            GridClass::Unknown => "unknown",
        }
    }
}

/// One grid: a name, a class, voxels on a lattice and which of them are active.
pub struct Grid<T: Voxel> {
    name: String,
    class: GridClass,
    /// `vector_type` metadata of a vector grid (how it transforms).
    vector_type: Option<&'static str>,
    background: T,
    values: Array3<T>,
    active: Array3<bool>,
    origin: Vec3,
    spacing: Real,
}

impl Grid<f32> {
    /// A level set from a signed distance: values clamped to `±half_width` voxels, active
    /// within it; the background is `half_width` voxels of distance.
    pub fn level_set(name: &str, phi: &Sampled<Real>, half_width: Real) -> Self {
        let band = (half_width * phi.spacing) as f32;
        let values = phi.values.par_map(|_, _, _, v| (v as f32).clamp(-band, band));
        let active = values.par_map(|_, _, _, v| v.abs() < band);
        Grid { name: name.into(), class: GridClass::LevelSet, vector_type: None, background: band, values, active, origin: phi.origin, spacing: phi.spacing }
    }

    /// A fog volume from a signed distance: the fraction of each voxel inside,
    /// `clamp(1/2 − phi / spacing, 0, 1)`, active where above zero.
    pub fn fog_volume(name: &str, phi: &Sampled<Real>) -> Self {
        let density = Sampled { values: phi.values.par_map(|_, _, _, v| (0.5 - v / phi.spacing).clamp(0.0, 1.0)), origin: phi.origin, spacing: phi.spacing };
        Grid::scalar(name, &density, GridClass::FogVolume)
    }

    /// A scalar grid of `field`'s values (a smoke's density, its temperature) in `class`, with
    /// background 0, active where not zero.
    pub fn scalar(name: &str, field: &Sampled<Real>, class: GridClass) -> Self {
        let values = field.values.par_map(|_, _, _, v| v as f32);
        let active = values.par_map(|_, _, _, v| v != 0.0);
        Grid { name: name.into(), class, vector_type: None, background: 0.0, values, active, origin: field.origin, spacing: field.spacing }
    }
}

impl Grid<[f32; 3]> {
    /// A vector grid (a velocity: it turns with the transform, `contravariant relative`),
    /// active where not zero.
    pub fn vector(name: &str, field: &Sampled<Vec3>) -> Self {
        let values = field.values.par_map(|_, _, _, v| [v.x as f32, v.y as f32, v.z as f32]);
        let active = values.par_map(|_, _, _, v| v != [0.0; 3]);
        let vector_type = Some("contravariant relative");
        Grid { name: name.into(), class: GridClass::Unknown, vector_type, background: [0.0; 3], values, active, origin: field.origin, spacing: field.spacing }
    }
}

/// A grid of any value type, as the file writer sees it.
pub trait AnyGrid {
    /// Writes the grid's descriptor and body (metadata, transform, topology, buffers) at the
    /// end of `out`, which is the whole file so far (the descriptor holds offsets from the
    /// file's start).
    fn write(&self, out: &mut Vec<u8>);
}

/// A whole `.vdb` file holding `grids`, with `creator` in the file's metadata.
pub fn file(grids: &[&dyn AnyGrid], creator: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&FILE_VERSION.to_le_bytes());
    // The library version the layout follows (OpenVDB 10.0), then "has grid offsets".
    out.extend_from_slice(&10u32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.push(1);
    // The file's UUID, 36 ASCII characters, is made from the contents (so that a rerun writes
    // the same bytes) once they are written.
    let uuid_at = out.len();
    out.extend_from_slice(&[b'0'; 36]);
    let mut meta = Metadata::default();
    meta.string("creator", creator);
    meta.write(&mut out);
    out.extend_from_slice(&(grids.len() as i32).to_le_bytes());
    for grid in grids {
        grid.write(&mut out);
    }
    let (hash, len) = (crc32fast::hash(&out[uuid_at + 36..]), out.len() as u32);
    let hex = format!("{hash:08x}{:08x}{len:08x}{:08x}", hash.rotate_left(16) ^ 0x5a5a_5a5a, hash ^ len);
    let uuid = format!("{}-{}-4{}-8{}-{}", &hex[0..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32]);
    out[uuid_at..uuid_at + 36].copy_from_slice(uuid.as_bytes());
    out
}

impl<T: Voxel> AnyGrid for Grid<T> {
    fn write(&self, out: &mut Vec<u8>) {
        string(out, &self.name);
        string(out, &format!("Tree_{}_5_4_3", T::TYPE));
        // No instance parent.
        string(out, "");
        let offsets_at = out.len();
        out.extend_from_slice(&[0; 24]);
        let grid_start = out.len();
        out.extend_from_slice(&COMPRESS_ZIP.to_le_bytes());
        self.metadata().write(out);
        // The map: translation, scale, then what OpenVDB derives from the scale and stores
        // too (voxel size, inverse scale, its square, half of it).
        string(out, "UniformScaleTranslateMap");
        let h = self.spacing;
        for v in [self.origin.x, self.origin.y, self.origin.z].into_iter().chain([h, h, 1.0 / h, 1.0 / (h * h), 0.5 / h].into_iter().flat_map(|v| [v; 3])) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let root = self.root();
        // Topology: the buffer count (one value buffer per leaf), the background, the root's
        // tiles and children, each child's topology depth first; then the leaves' values.
        out.extend_from_slice(&1i32.to_le_bytes());
        self.background.put(out);
        let (tiles, children): (Vec<_>, Vec<_>) = root.iter().partition(|(_, node)| matches!(node, Node::Tile(..)));
        out.extend_from_slice(&(tiles.len() as u32).to_le_bytes());
        out.extend_from_slice(&(children.len() as u32).to_le_bytes());
        for (origin, node) in &tiles {
            let Node::Tile(value, active) = node else { unreachable!("partitioned") };
            origin.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
            value.put(out);
            out.push(u8::from(*active));
        }
        for (origin, node) in &children {
            origin.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
            node.write_topology(out);
        }
        let block_start = out.len();
        for (_, node) in &children {
            node.write_buffers(out);
        }
        let end = out.len();
        for (n, offset) in [grid_start, block_start, end].into_iter().enumerate() {
            out[offsets_at + 8 * n..offsets_at + 8 * n + 8].copy_from_slice(&(offset as i64).to_le_bytes());
        }
    }
}

impl<T: Voxel> Grid<T> {
    /// The grid's metadata: name, class, vector type and the bounds and count of the active
    /// voxels, as OpenVDB writes them.
    fn metadata(&self) -> Metadata {
        let (mut min, mut max, mut count) = ([i32::MAX; 3], [i32::MIN; 3], 0i64);
        for (c, _) in self.active.as_slice().iter().enumerate().filter(|(_, &a)| a) {
            let ijk = self.active.coords(c).map(|v| v as i32);
            for a in 0..3 {
                min[a] = min[a].min(ijk[a]);
                max[a] = max[a].max(ijk[a]);
            }
            count += 1;
        }
        if count == 0 {
            (min, max) = ([0; 3], [0; 3]);
        }
        let mut meta = Metadata::default();
        meta.string("class", self.class.name());
        meta.vec3i("file_bbox_max", max);
        meta.vec3i("file_bbox_min", min);
        meta.string("file_compression", "zip");
        meta.int64("file_voxel_count", count);
        meta.boolean("is_local_space", false);
        meta.boolean("is_saved_as_half_float", false);
        meta.string("name", &self.name);
        if let Some(vector_type) = self.vector_type {
            meta.string("vector_type", vector_type);
        }
        meta
    }

    /// The value and active state of voxel `ijk`: the lattice's inside it, the background
    /// (inactive) outside.
    fn voxel(&self, ijk: [i64; 3]) -> (T, bool) {
        let dims = self.values.dims();
        if (0..3).all(|a| ijk[a] >= 0 && (ijk[a] as usize) < dims[a]) {
            let [i, j, k] = ijk.map(|v| v as usize);
            (self.values.get(i, j, k), self.active.get(i, j, k))
        } else {
            (self.background, false)
        }
    }

    /// Whether the cube of `edge` voxels at `origin` misses the lattice.
    fn outside(&self, origin: [i64; 3], edge: i64) -> bool {
        let dims = self.values.dims();
        (0..3).any(|a| origin[a] + edge <= 0 || origin[a] >= dims[a] as i64)
    }

    /// The root's table: the upper internal nodes (or tiles) over the lattice, by origin.
    fn root(&self) -> Vec<([i32; 3], Node<T>)> {
        let edge = 1i64 << LOG2_DIMS.iter().sum::<u32>();
        let dims = self.values.dims().map(|n| (n as i64 + edge - 1) / edge);
        let mut table = Vec::new();
        for x in 0..dims[0] {
            for y in 0..dims[1] {
                for z in 0..dims[2] {
                    let origin = [x * edge, y * edge, z * edge];
                    match self.node(origin, 2) {
                        Node::Tile(value, false) if value == self.background => {}
                        node => table.push((origin.map(|v| v as i32), node)),
                    }
                }
            }
        }
        table
    }

    /// The node of tree level `level` (0 = leaf) at `origin`, or a tile if its voxels are
    /// uniform.
    fn node(&self, origin: [i64; 3], level: usize) -> Node<T> {
        let log2 = LOG2_DIMS[level];
        let child_log2: u32 = LOG2_DIMS[..level].iter().sum();
        if self.outside(origin, 1 << (log2 + child_log2)) {
            return Node::Tile(self.background, false);
        }
        let n = 1i64 << log2;
        let mut entries = Vec::with_capacity(1 << (3 * log2));
        // Offsets run x slowest, z fastest, as OpenVDB numbers a node's entries.
        for x in 0..n {
            for y in 0..n {
                for z in 0..n {
                    let at = [origin[0] + (x << child_log2), origin[1] + (y << child_log2), origin[2] + (z << child_log2)];
                    entries.push(if level == 0 {
                        let (value, active) = self.voxel(at);
                        Node::Tile(value, active)
                    } else {
                        self.node(at, level - 1)
                    });
                }
            }
        }
        match entries[0] {
            Node::Tile(value, active) if entries.iter().all(|e| matches!(e, Node::Tile(v, a) if *v == value && *a == active)) => Node::Tile(value, active),
            _ => Node::Branch { log2, entries },
        }
    }
}

/// A node of the tree: a uniform tile, or a node with one entry per child (a leaf's entries are
/// its voxels, as tiles).
enum Node<T: Voxel> {
    Tile(T, bool),
    Branch { log2: u32, entries: Vec<Node<T>> },
}

impl<T: Voxel> Node<T> {
    /// A mask of `entries.len()` bits, bit `n` set where `test` holds for entry `n`.
    fn mask(entries: &[Node<T>], test: impl Fn(&Node<T>) -> bool, out: &mut Vec<u8>) {
        let mut words = vec![0u64; entries.len().div_ceil(64)];
        for (n, entry) in entries.iter().enumerate() {
            if test(entry) {
                words[n / 64] |= 1 << (n % 64);
            }
        }
        words.iter().for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    }

    fn is_branch(&self) -> bool {
        matches!(self, Node::Branch { .. })
    }

    /// The values of `entries` (a tile's value, zero for a child), flagged as all written and
    /// zip-compressed.
    fn values(entries: &[Node<T>], out: &mut Vec<u8>) {
        let mut raw = Vec::with_capacity(entries.len() * std::mem::size_of::<T>());
        for entry in entries {
            match entry {
                Node::Tile(value, _) => value.put(&mut raw),
                Node::Branch { .. } => T::zero().put(&mut raw),
            }
        }
        out.push(ALL_VALUES);
        let mut zip = ZlibEncoder::new(Vec::new(), Compression::default());
        zip.write_all(&raw).expect("writing to memory");
        let zipped = zip.finish().expect("writing to memory");
        if zipped.len() < raw.len() {
            out.extend_from_slice(&(zipped.len() as i64).to_le_bytes());
            out.extend_from_slice(&zipped);
        } else {
            out.extend_from_slice(&(-(raw.len() as i64)).to_le_bytes());
            out.extend_from_slice(&raw);
        }
    }

    /// An internal node's child mask, value mask and tile values, then its children's
    /// topology; a leaf's value mask.
    fn write_topology(&self, out: &mut Vec<u8>) {
        let Node::Branch { log2, entries } = self else { return };
        if *log2 == LOG2_DIMS[0] {
            Self::mask(entries, |e| matches!(e, Node::Tile(_, true)), out);
            return;
        }
        Self::mask(entries, Node::is_branch, out);
        Self::mask(entries, |e| matches!(e, Node::Tile(_, true)), out);
        Self::values(entries, out);
        entries.iter().filter(|e| e.is_branch()).for_each(|e| e.write_topology(out));
    }

    /// The leaves' value masks and voxel values, depth first.
    fn write_buffers(&self, out: &mut Vec<u8>) {
        let Node::Branch { log2, entries } = self else { return };
        if *log2 == LOG2_DIMS[0] {
            Self::mask(entries, |e| matches!(e, Node::Tile(_, true)), out);
            Self::values(entries, out);
            return;
        }
        entries.iter().for_each(|e| e.write_buffers(out));
    }
}

/// A metadata table: `(name, type, value bytes)` entries.
#[derive(Default)]
struct Metadata(Vec<(String, &'static str, Vec<u8>)>);

impl Metadata {
    fn string(&mut self, name: &str, value: &str) {
        self.0.push((name.into(), "string", value.as_bytes().to_vec()));
    }
    fn boolean(&mut self, name: &str, value: bool) {
        self.0.push((name.into(), "bool", vec![u8::from(value)]));
    }
    fn int64(&mut self, name: &str, value: i64) {
        self.0.push((name.into(), "int64", value.to_le_bytes().to_vec()));
    }
    fn vec3i(&mut self, name: &str, value: [i32; 3]) {
        self.0.push((name.into(), "vec3i", value.iter().flat_map(|v| v.to_le_bytes()).collect()));
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.0.len() as u32).to_le_bytes());
        for (name, ty, value) in &self.0 {
            string(out, name);
            string(out, ty);
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value);
        }
    }
}

/// A length-prefixed string.
fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Writes `volume_NNNN.vdb` every `every` frames: the liquid's `surface` (level set, three
/// voxels of half width), `density` (fog volume) and `vel` (velocity); smoke's `density` (fog
/// volume, the smoke density as it is), `temperature` (kelvin above ambient) and `vel`.
pub struct VdbSink {
    dir: PathBuf,
    every: u32,
}

impl VdbSink {
    /// A sink writing into `dir`.
    pub fn new(dir: &Path, every: u32) -> Self {
        VdbSink { dir: dir.to_path_buf(), every }
    }
}

/// The half width of the written level sets, in voxels (OpenVDB's default).
pub const HALF_WIDTH: Real = 3.0;

impl FrameSink for VdbSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let r = frame.record;
        if r.frame % self.every != 0 {
            return Ok(());
        }
        if let Fluid::Smoke(f) = &frame.world.fluid {
            let density = Grid::scalar("density", &f.volume(&f.density), GridClass::FogVolume);
            let temperature = Grid::scalar("temperature", &f.volume(&f.temperature), GridClass::Unknown);
            let vel = Grid::vector("vel", &f.velocity_volume());
            let bytes = file(&[&density, &temperature, &vel], concat!("tidepool ", env!("CARGO_PKG_VERSION")));
            return write_atomic(&frame_file(&self.dir, "volume", r.frame, "vdb"), &bytes);
        }
        let Some(phi) = frame.surface_phi() else { return Ok(()) };
        let Some(velocity) = frame.world.fluid.velocity_volume(phi) else { return Ok(()) };
        let surface = Grid::level_set("surface", phi, HALF_WIDTH);
        let density = Grid::fog_volume("density", phi);
        let vel = Grid::vector("vel", &velocity);
        let bytes = file(&[&surface, &density, &vel], concat!("tidepool ", env!("CARGO_PKG_VERSION")));
        write_atomic(&frame_file(&self.dir, "volume", r.frame, "vdb"), &bytes)
    }
}
