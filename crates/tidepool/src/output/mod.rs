//! Frame sinks: `stats.jsonl`, meshes (PLY, OBJ), VTK (ParaView), USD stages, OpenVDB volumes, PNG
//! previews, checkpoints; and the run's record (`scene.toml` copy, `run.json`). Every file is written
//! atomically: to a temporary file in the same directory, then renamed over the target.

pub mod checkpoint;
pub mod mesh_files;
pub mod preview;
pub mod stats;
pub mod usd;
pub mod vdb;
pub mod vtk;

use crate::driver::FrameSink;
use crate::error::{Error, Result};
use crate::geometry::TriMesh;
use crate::scene::{AnyScene, Format, LiquidMethod};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (temporary file, then rename). On failure (a full
/// disk) the temporary file is removed and `path` is as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("output");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let written = std::fs::File::create(&tmp)
        .map_err(Error::io("create", &tmp))
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.flush()).map_err(Error::io("write", path)))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(Error::io("rename into place", path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Frame-numbered file name, e.g. `surface_0007.ply`.
pub fn frame_file(dir: &Path, stem: &str, frame: u32, ext: &str) -> PathBuf {
    dir.join(format!("{stem}_{frame:04}.{ext}"))
}

/// How this run was started (written to `run.json`).
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    /// tidepool version.
    pub version: String,
    /// The command line.
    pub command_line: Vec<String>,
    /// Worker threads.
    pub threads: usize,
    /// Start time (UTC, RFC 3339).
    pub start_time: String,
    /// Scene file, if not the built-in one.
    pub scene: Option<String>,
    /// Frame the run resumed after, if resumed.
    pub resumed_after_frame: Option<u32>,
}

/// Creates the output directory and writes the scene copy and `run.json`.
pub fn prepare(dir: &Path, scene: &AnyScene, info: &RunInfo) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
    write_atomic(&dir.join("scene.toml"), scene.text().as_bytes())?;
    let json = serde_json::to_string_pretty(info).expect("run info serialises");
    write_atomic(&dir.join("run.json"), json.as_bytes())
}

/// The sinks a scene asks for. When resuming after `resume_after`, sinks keep the records of
/// frames up to it (stats lines, time series entries) and continue from there. A surface-flow
/// run writes its meshes (PLY) and previews every frame. A frame's files come first, then its
/// `stats.jsonl` line, then the checkpoint: a frame whose files could not be written is never
/// listed.
pub fn sinks(scene: &AnyScene, dir: &Path, resume_after: Option<u32>) -> Result<Vec<Box<dyn FrameSink>>> {
    let stats = Box::new(stats::StatsSink::new(dir, resume_after)?);
    let mut sinks: Vec<Box<dyn FrameSink>> = Vec::new();
    match scene {
        AnyScene::Liquid(loaded) => {
            let out = &loaded.scene.output;
            let wants = |f: Format| out.formats.contains(&f);
            if wants(Format::Ply) || wants(Format::Obj) {
                sinks.push(Box::new(mesh_files::MeshSink::new(dir, out.every, wants(Format::Ply), wants(Format::Obj))));
            }
            if wants(Format::Vtk) {
                let fluid: &[&'static str] = match loaded.scene.liquid.method {
                    _ if loaded.scene.smoke.is_some() => &["fields"],
                    LiquidMethod::Flip => &["particles", "surface"],
                    LiquidMethod::LevelSet => &["fields", "surface"],
                };
                sinks.push(Box::new(vtk::VtkSink::new(dir, out.every, loaded.scene.simulation.fps, resume_after, fluid, !loaded.bodies.is_empty())));
            }
            if wants(Format::Vdb) {
                sinks.push(Box::new(vdb::VdbSink::new(dir, out.every)));
            }
            let mut obstacles = TriMesh::default();
            for (_, shape) in &loaded.obstacles {
                obstacles.append(&shape.surface_mesh());
            }
            if wants(Format::Usd) {
                let fps = loaded.scene.simulation.fps;
                let animated = [!loaded.bodies.is_empty(), !loaded.tracers.is_empty()];
                sinks.push(Box::new(usd::UsdSink::new(dir, out.every, fps, resume_after, animated, obstacles.clone())?));
            }
            if wants(Format::Png) {
                sinks.push(Box::new(preview::PreviewSink::new(dir, out.every, &out.camera, obstacles)));
            }
        }
        AnyScene::Surface(_) => {
            sinks.push(Box::new(mesh_files::MeshSink::new(dir, 1, true, false)));
            sinks.push(Box::new(preview::PreviewSink::new(dir, 1, &Default::default(), TriMesh::default())));
        }
    }
    sinks.push(stats);
    if scene.checkpoint_every() > 0 {
        sinks.push(Box::new(checkpoint::CheckpointSink::new(dir, scene.checkpoint_every(), scene.fingerprint())));
    }
    Ok(sinks)
}

/// The current UTC time as RFC 3339 (seconds precision).
pub fn utc_now_rfc3339() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem / 60) % 60, rem % 60)
}
