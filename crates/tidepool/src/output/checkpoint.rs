//! Checkpoints: the complete simulation state after a frame, so that a resumed run continues
//! bit-for-bit as if it had never stopped. Files are `checkpoint/checkpoint_NNNN.bin`; only the
//! newest is kept.
//!
//! Layout: a 16-byte magic, then (little endian) the `u32` format version, the `u64` physics
//! fingerprint of the scene, the `u64` length and the `u32` CRC-32 of the payload, then the
//! payload: the clock, the fluid's state, each solid's state and the tracers' positions, in
//! postcard's encoding. Each
//! component writes and reads its own state ([`crate::fluids::Fluid::save_state`],
//! [`crate::solids::Solid::save_state`]); a file whose checksum, length, version or
//! fingerprint does not match is refused, never used.

use super::{frame_file, write_atomic};
use crate::driver::{Frame, FrameSink};
use crate::error::{Error, Result};
use crate::math::Vec3;
use crate::scene::AnyScene;
use crate::world::{Clock, World};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"TIDEPOOL-CKPT\0\0\0";
const VERSION: u32 = 5;
/// Bytes before the payload: magic, version, fingerprint, length, checksum.
const HEADER: usize = 16 + 4 + 8 + 8 + 4;

/// The payload of a checkpoint.
#[derive(Serialize, Deserialize)]
struct Payload {
    clock: Clock,
    fluid: Vec<u8>,
    solids: Vec<Vec<u8>>,
    tracers: Vec<Vec3>,
}

/// Serialises the state of `world`.
pub fn encode(world: &World, fingerprint: u64) -> Vec<u8> {
    let solids = world.solids.iter().map(|s| s.save_state()).collect();
    let payload = Payload { clock: world.clock, fluid: world.fluid.save_state(), solids, tracers: world.tracers.clone() };
    let payload = postcard::to_allocvec(&payload).expect("checkpoint serialises");
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&fingerprint.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Restores the state saved in `bytes` into `world` (built from the same scene).
pub fn decode(bytes: &[u8], world: &mut World, fingerprint: u64) -> std::result::Result<(), String> {
    if bytes.len() < HEADER || &bytes[..16] != MAGIC {
        return Err("not a tidepool checkpoint".into());
    }
    let field = |at: usize, n: usize| -> u64 { bytes[at..at + n].iter().rev().fold(0, |v, b| (v << 8) | *b as u64) };
    let version = field(16, 4) as u32;
    if version != VERSION {
        return Err(format!("format version {version}, this tidepool reads version {VERSION}"));
    }
    if field(20, 8) != fingerprint {
        return Err("it was written for a scene with different physics, domain or liquid settings".into());
    }
    let payload = &bytes[HEADER..];
    if field(28, 8) != payload.len() as u64 {
        return Err(format!("the file is truncated or has extra bytes ({} payload bytes, the header says {})", payload.len(), field(28, 8)));
    }
    if field(36, 4) as u32 != crc32fast::hash(payload) {
        return Err("the file is corrupt (its checksum does not match its contents)".into());
    }
    let payload: Payload = postcard::from_bytes(payload).map_err(|e| format!("the state does not decode: {e}"))?;
    let count = world.solids.iter().count();
    if payload.solids.len() != count {
        return Err(format!("it holds {} bodies where the scene has {count}", payload.solids.len()));
    }
    world.fluid.restore_state(&payload.fluid)?;
    for (solid, state) in world.solids.iter_mut().zip(&payload.solids) {
        solid.restore_state(state)?;
    }
    world.tracers = payload.tracers;
    world.clock = payload.clock;
    world.fluid.at_time(world.clock.time);
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
pub fn resume(dir: &Path, world: &mut World, scene: &AnyScene) -> Result<u32> {
    let (frame, path) = latest(dir)
        .ok_or_else(|| Error::Checkpoint { path: dir.join("checkpoint"), message: "no checkpoint to resume from (was the run started with checkpoints enabled?)".into() })?;
    let bytes = std::fs::read(&path).map_err(Error::io("read", &path))?;
    decode(&bytes, world, scene.fingerprint()).map_err(|message| Error::Checkpoint { path, message })?;
    Ok(frame)
}

/// Writes a checkpoint every `every` frames and removes the previous one.
pub struct CheckpointSink {
    dir: PathBuf,
    every: u32,
    fingerprint: u64,
}

impl CheckpointSink {
    /// A sink writing into `dir/checkpoint`, stamping the scene's fingerprint ([`AnyScene::fingerprint`]).
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
