//! Checkpoints: the complete simulation state after a frame, so that a resumed run continues
//! bit-for-bit as if it had never stopped. Files are `checkpoint/checkpoint_NNNN.bin`; only the
//! newest is kept.
//!
//! Layout (little endian): 16-byte magic, `u32` format version, `u64` physics fingerprint of the
//! scene, `u32` frame, `f64` time, `u64` substep count, the volume control (`f64` target,
//! error integral, last divergence), then the arrays `u`, `v`, `w`, `phi`,
//! `pressure` (each `u64` length + `f64`s), the particles (`u64` count + 5 `f32` each) and the
//! rigid bodies (`u64` count + 13 `f64` each: position, orientation quaternion w x y z,
//! velocity, angular momentum), and the reduced deformable bodies (`u64` count + the same 13
//! `f64` plus `q` and `qdot`, `modes` each).

use super::{frame_file, write_atomic};
use crate::driver::{Frame, FrameSink};
use crate::error::{Error, Result};
use crate::fluids::eulerian::particles::MarkerParticle;
use crate::grid::Array3;
use crate::math::{Quat, Vec3};
use crate::scene::Scene;
use crate::world::World;
use nalgebra::Quaternion;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"TIDEPOOL-CKPT\0\0\0";
const VERSION: u32 = 3;

/// A fingerprint of everything in a scene that affects the simulated state (the output settings
/// and the frame count may change between a run and its resumption).
pub fn fingerprint(scene: &Scene) -> u64 {
    let mut physics = scene.clone();
    physics.output = Default::default();
    physics.simulation.frames = 0;
    let text = serde_json::to_string(&physics).expect("scene serialises");
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Serialises the state of `world`.
pub fn encode(world: &World, fingerprint: u64) -> Vec<u8> {
    let liquid = &world.liquid;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    out.extend_from_slice(&world.clock.frame.to_le_bytes());
    out.extend_from_slice(&world.clock.time.to_le_bytes());
    out.extend_from_slice(&world.clock.step.to_le_bytes());
    for v in [liquid.volume.target, liquid.volume.error_integral, liquid.volume.divergence] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let arrays = [&liquid.velocity.faces[0], &liquid.velocity.faces[1], &liquid.velocity.faces[2], &liquid.phi, &liquid.pressure];
    for a in arrays {
        out.extend_from_slice(&(a.as_slice().len() as u64).to_le_bytes());
        for v in a.as_slice() {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out.extend_from_slice(&(liquid.particles.len() as u64).to_le_bytes());
    for p in &liquid.particles {
        for v in p.position.iter().chain([&p.radius, &p.sign]) {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out.extend_from_slice(&(world.bodies.len() as u64).to_le_bytes());
    for b in &world.bodies {
        let q = b.orientation.quaternion();
        let values = b.position.iter().chain([&q.w, &q.i, &q.j, &q.k]).chain(b.velocity.iter()).chain(b.angular_momentum.iter());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out.extend_from_slice(&(world.reduced_bodies().count() as u64).to_le_bytes());
    for b in world.reduced_bodies() {
        let q = b.orientation.quaternion();
        let values = b.position.iter().chain([&q.w, &q.i, &q.j, &q.k]).chain(b.velocity.iter()).chain(b.angular_momentum.iter()).chain(b.q.iter()).chain(b.qdot.iter());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let chunk = self.bytes.get(self.at..self.at + N)?;
        self.at += N;
        chunk.try_into().ok()
    }

    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    fn f64(&mut self) -> Option<f64> {
        self.take().map(f64::from_le_bytes)
    }

    fn f32(&mut self) -> Option<f32> {
        self.take().map(f32::from_le_bytes)
    }
}

/// Restores the state saved in `bytes` into `world` (built from the same scene).
pub fn decode(bytes: &[u8], world: &mut World, fingerprint: u64) -> std::result::Result<(), String> {
    let truncated = || "the file is truncated or corrupt".to_string();
    let mut r = Reader { bytes, at: 0 };
    if r.take::<16>().as_ref() != Some(MAGIC) {
        return Err("not a tidepool checkpoint".into());
    }
    let version = r.u32().ok_or_else(truncated)?;
    if version != VERSION {
        return Err(format!("format version {version}, this tidepool reads version {VERSION}"));
    }
    if r.u64().ok_or_else(truncated)? != fingerprint {
        return Err("it was written for a scene with different physics, domain or liquid settings".into());
    }
    let frame = r.u32().ok_or_else(truncated)?;
    let time = r.f64().ok_or_else(truncated)?;
    let step = r.u64().ok_or_else(truncated)?;
    let liquid = &mut world.liquid;
    liquid.volume.target = r.f64().ok_or_else(truncated)?;
    liquid.volume.error_integral = r.f64().ok_or_else(truncated)?;
    liquid.volume.divergence = r.f64().ok_or_else(truncated)?;
    let [u, v, w] = &mut liquid.velocity.faces;
    for a in [u, v, w, &mut liquid.phi, &mut liquid.pressure] {
        let n = r.u64().ok_or_else(truncated)? as usize;
        if n != a.as_slice().len() {
            return Err(format!("an array holds {n} values where the scene's grid needs {}", a.as_slice().len()));
        }
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            values.push(r.f64().ok_or_else(truncated)?);
        }
        *a = Array3::from_vec(a.dims(), values);
    }
    let count = r.u64().ok_or_else(truncated)? as usize;
    if count > bytes.len() / 20 {
        return Err(truncated());
    }
    let mut particles = Vec::with_capacity(count);
    for _ in 0..count {
        let mut f = [0f32; 5];
        for v in &mut f {
            *v = r.f32().ok_or_else(truncated)?;
        }
        particles.push(MarkerParticle { position: [f[0], f[1], f[2]], radius: f[3], sign: f[4] });
    }
    let bodies = r.u64().ok_or_else(truncated)? as usize;
    if bodies != world.bodies.len() {
        return Err(format!("it holds {bodies} bodies where the scene has {}", world.bodies.len()));
    }
    for b in &mut world.bodies {
        let mut f = [0.0; 13];
        for v in &mut f {
            *v = r.f64().ok_or_else(truncated)?;
        }
        b.position = Vec3::new(f[0], f[1], f[2]);
        b.orientation = Quat::new_unchecked(Quaternion::new(f[3], f[4], f[5], f[6]));
        b.velocity = Vec3::new(f[7], f[8], f[9]);
        b.angular_momentum = Vec3::new(f[10], f[11], f[12]);
    }
    let reduced = r.u64().ok_or_else(truncated)? as usize;
    if reduced != world.reduced_bodies().count() {
        return Err(format!("it holds {reduced} deformable bodies where the scene has {}", world.reduced_bodies().count()));
    }
    for b in world.reduced.iter_mut().flat_map(|a| a.bodies.iter_mut()) {
        let modes = b.q.len();
        let mut f = vec![0.0; 13 + 2 * modes];
        for v in &mut f {
            *v = r.f64().ok_or_else(truncated)?;
        }
        b.position = Vec3::new(f[0], f[1], f[2]);
        b.orientation = Quat::new_unchecked(Quaternion::new(f[3], f[4], f[5], f[6]));
        b.velocity = Vec3::new(f[7], f[8], f[9]);
        b.angular_momentum = Vec3::new(f[10], f[11], f[12]);
        b.q.copy_from_slice(&f[13..13 + modes]);
        b.qdot.copy_from_slice(&f[13 + modes..]);
    }
    if r.at != bytes.len() {
        return Err("unexpected bytes after the end of the state".into());
    }
    let liquid = &mut world.liquid;
    liquid.particles = particles;
    world.clock.frame = frame;
    world.clock.time = time;
    world.clock.step = step;
    Ok(())
}

/// The newest checkpoint in an output directory, if any.
pub fn latest(dir: &Path) -> Option<(u32, PathBuf)> {
    std::fs::read_dir(dir.join("checkpoint"))
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let frame = name.strip_prefix("checkpoint_")?.strip_suffix(".bin")?.parse().ok()?;
            Some((frame, e.path()))
        })
        .max_by_key(|(frame, _)| *frame)
}

/// Restores the newest checkpoint of `dir` into `world`; returns its frame.
pub fn resume(dir: &Path, world: &mut World, scene: &Scene) -> Result<u32> {
    let (frame, path) = latest(dir)
        .ok_or_else(|| Error::Checkpoint { path: dir.join("checkpoint"), message: "no checkpoint to resume from (was the run started with checkpoints enabled?)".into() })?;
    let bytes = std::fs::read(&path).map_err(Error::io("read", &path))?;
    decode(&bytes, world, fingerprint(scene)).map_err(|message| Error::Checkpoint { path, message })?;
    Ok(frame)
}

/// Writes a checkpoint every `every` frames and removes the previous one.
pub struct CheckpointSink {
    dir: PathBuf,
    every: u32,
    fingerprint: u64,
}

impl CheckpointSink {
    /// A sink writing into `dir/checkpoint`, stamping the scene's [`fingerprint`].
    pub fn new(dir: &Path, every: u32, fingerprint: u64) -> Self {
        CheckpointSink { dir: dir.join("checkpoint"), every, fingerprint }
    }
}

impl FrameSink for CheckpointSink {
    fn write(&mut self, frame: &Frame) -> Result<()> {
        let n = frame.record.frame;
        if n % self.every != 0 {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(Error::io("create directory", &self.dir))?;
        let path = frame_file(&self.dir, "checkpoint", n, "bin");
        write_atomic(&path, &encode(frame.world, self.fingerprint))?;
        let older: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(Error::io("list", &self.dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p != &path && p.extension().is_some_and(|e| e == "bin"))
            .collect();
        for p in older {
            std::fs::remove_file(&p).map_err(Error::io("remove old checkpoint", &p))?;
        }
        Ok(())
    }
}
