//! Starting a run of a scene into an output directory (fresh or resumed): the set-up shared by
//! the `tidepool run` command and library users, for every kind of scene.

use crate::driver::Driver;
use crate::error::Result;
use crate::output::{self, checkpoint, RunInfo};
use crate::scene::AnyScene;
use crate::world::World;
use std::path::{Path, PathBuf};

/// The output directory a scene writes to: `override_dir`, else the scene's
/// `output.directory`, else `out/<scene name>`.
pub fn output_directory(scene: &AnyScene, override_dir: Option<&Path>) -> PathBuf {
    override_dir.map(Path::to_path_buf).or_else(|| scene.output_directory().map(PathBuf::from)).unwrap_or_else(|| Path::new("out").join(scene.name()))
}

/// Builds the world, restores the newest checkpoint of `dir` when `resume` is set, writes the
/// scene copy and `run.json`, creates the sinks and, for a fresh run, writes frame 0. Returns the
/// driver ready to run and the frame it resumed after, if any.
pub fn start(scene: &AnyScene, dir: &Path, resume: bool, mut info: RunInfo) -> Result<(Driver, Option<u32>)> {
    let mut world = World::of(scene)?;
    let resumed = if resume { Some(checkpoint::resume(dir, &mut world, scene)?) } else { None };
    info.resumed_after_frame = resumed;
    output::prepare(dir, scene, &info)?;
    let sinks = output::sinks(scene, dir, resumed)?;
    let mut driver = Driver::new(world, sinks);
    if resumed.is_none() {
        driver.write_current_frame()?;
    }
    Ok((driver, resumed))
}
