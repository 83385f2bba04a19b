//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use tidepool::driver::{Driver, FrameRecord};
use tidepool::grid::Location;
use tidepool::math::Real;
use tidepool::math::Vec3;
use tidepool::scene::{self, AnyScene, LoadedScene};
use tidepool::world::World;

/// Parses scene text (mesh paths relative to the repository's `scenes/`).
pub fn load(text: &str) -> LoadedScene {
    scene::parse(text, "test.toml", "test", None, &scenes_dir()).unwrap_or_else(|e| panic!("{e}"))
}

/// A closed tank from the origin to `max`, `resolution` cells along x, filled with water up to
/// `level`; `simulation` holds the `[simulation]` keys and `rest` the tables that follow
/// (bodies, obstacles).
pub fn tank(simulation: &str, max: [f64; 3], resolution: u32, level: f64, rest: &str) -> LoadedScene {
    load(&format!(
        "[simulation]\n{simulation}\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = {max:?}\nresolution = {resolution}\n\
         [[liquid.region]]\nshape.box = {{ min = [-1.0, -1.0, -1.0], max = [2.0, {level:?}, 2.0] }}\n{rest}"
    ))
}

/// The repository's `scenes/` directory.
pub fn scenes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

/// The example scenes at the first paper's scale, which take hours on 2 cores, and the
/// resolution (cells along the longest side) the tests run them at.
pub const PAPER_SCALE: [(&str, u32); 3] = [("starfish_rocks_150", 88), ("tori_pool_50", 64), ("three_jellyfish", 64)];

/// The text of the example scene file at `path`; a paper-scale one's on the tests' coarser
/// grid.
pub fn example_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    match PAPER_SCALE.iter().find(|(paper, _)| *paper == name) {
        Some((_, cells)) => text.lines().map(|line| if line.starts_with("resolution =") { format!("resolution = {cells}\n") } else { format!("{line}\n") }).collect(),
        None => text,
    }
}

/// Runs `frames` frames without writing files and returns the records (frame 0 first).
pub fn simulate(loaded: &LoadedScene, frames: u32) -> (World, Vec<FrameRecord>) {
    let mut records = Vec::new();
    let world = each_frame(loaded, frames, |_, record| records.push(*record));
    (world, records)
}

/// Runs `frames` frames without writing files, calling `visit` with the world and the record
/// after each (frame 0 first); returns the final world.
pub fn each_frame(loaded: &LoadedScene, frames: u32, mut visit: impl FnMut(&World, &FrameRecord) + Send) -> World {
    tidepool::on_pool(|| {
        let mut driver = Driver::new(World::build(loaded).expect("the scene builds"), Vec::new());
        let first = driver.write_current_frame().expect("frame 0");
        visit(&driver.world, &first);
        for _ in 0..frames {
            let record = driver.advance_frame(frames, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
            visit(&driver.world, &record);
        }
        driver.world
    })
}

/// Steps `world` by the substeps its limits allow (CFL, capillary, elastic; at most a frame,
/// which a still weightless liquid would otherwise exceed without bound), calling `visit` with
/// the time after each, until `visit` says stop.
pub fn run(world: &mut World, mut visit: impl FnMut(&World, Real) -> bool + Send) {
    tidepool::on_pool(|| {
        let mut t = 0.0;
        loop {
            let dt = world.cfl_dt().min(1.0 / world.settings.fps);
            tidepool::pipeline::step(world, dt).unwrap_or_else(|e| panic!("{e}"));
            t += dt;
            if !visit(world, t) {
                return;
            }
        }
    })
}

/// How a run started by the tests records itself in `run.json`.
pub fn info() -> tidepool::output::RunInfo {
    tidepool::output::RunInfo {
        version: "test".into(),
        command_line: vec!["test".into()],
        threads: rayon::current_num_threads(),
        start_time: tidepool::output::utc_now_rfc3339(),
        scene: None,
        resumed_after_frame: None,
    }
}

/// Runs `scene` into `dir` (resuming from its checkpoint with `resume`) up to frame `frames`
/// with all its outputs; returns the final world.
pub fn run_into(scene: &AnyScene, dir: &Path, frames: u32, resume: bool) -> Result<World, tidepool::Error> {
    let (mut driver, _) = tidepool::session::start(scene, dir, resume, info())?;
    driver.run(frames, &never(), &mut |_| {})?;
    Ok(driver.world)
}

/// A fresh, empty temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tidepool-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A flag that is never set (runs to completion).
pub fn never() -> AtomicBool {
    AtomicBool::new(false)
}

/// Height of the free surface at horizontal position (x, z): the zero of the liquid's level set
/// in that column (the particle level set, or FLIP's from its cells' fill), linearly
/// interpolated.
pub fn surface_height(world: &World, x: Real, z: Real) -> Real {
    let grid = world.fluid.grid().expect("a grid liquid");
    level_height(grid, &world.fluid.cell_phi(&world.solids.coupled()).expect("a grid liquid"), x, z)
}

/// The lowest zero of the level set `phi` (at cell centres) in the column at (x, z), from
/// inside to outside, linearly interpolated.
pub fn level_height(grid: &tidepool::grid::Grid, phi: &tidepool::grid::Array3<Real>, x: Real, z: Real) -> Real {
    let [i, _, k] = grid.cell_of(&Vec3::new(x, 0.0, z));
    for j in 0..grid.dims[1] - 1 {
        let (a, b) = (phi.get(i, j, k), phi.get(i, j + 1, k));
        if a < 0.0 && b >= 0.0 {
            let y = grid.position(Location::Cell, i, j, k).y;
            return y + grid.dx * a / (a - b);
        }
    }
    panic!("no surface in the column at ({x}, {z})");
}

/// The volume of a ball of radius `r` below a level surface `draft` above its lowest point:
/// the cap `pi h^2 (3r - h) / 3`, `h` clamped to the ball.
pub fn submerged_cap(draft: Real, r: Real) -> Real {
    let h = draft.clamp(0.0, 2.0 * r);
    std::f64::consts::PI * h * h * (3.0 * r - h) / 3.0
}

/// The mean of the last two seconds (48 frames): the body heaves about its equilibrium, the
/// waves it makes reflecting from the tank's walls.
pub fn settled(fractions: &[Real]) -> Real {
    let tail = &fractions[fractions.len() - 48..];
    tail.iter().sum::<Real>() / tail.len() as Real
}

/// Runs `substeps` CFL substeps (at most 10 ms) of a world with one rigid body, asserting
/// every substep that the body's momentum changed by exactly minus the impulse the coupled
/// solves gave the liquid (to 1e-10 of its momentum); returns the total impulse the body
/// received (N s). `what` names the case in failures.
pub fn exchanged_impulse(world: &mut World, substeps: usize, what: &str) -> Real {
    let mut exchanged = 0.0;
    for _ in 0..substeps {
        let before = world.solids.rigid[0].mass * world.solids.rigid[0].velocity;
        let dt = world.cfl_dt().min(0.01);
        let report = tidepool::pipeline::step(world, dt).unwrap();
        let received = world.solids.rigid[0].mass * world.solids.rigid[0].velocity - before;
        assert!((received + report.impulse_on_liquid).norm() <= 1e-10 * before.norm(), "{what}: {received:?} vs {:?}", report.impulse_on_liquid);
        exchanged += received.norm();
    }
    exchanged
}

/// A Python interpreter that can import `module` (Debian's `/usr/bin/python3` first, where
/// `apt` installs modules, then `python3` on `PATH`), or `None` after saying loudly on stderr
/// that the check it serves is skipped and how to install the module.
pub fn python_with(module: &str, install: &str) -> Option<String> {
    let found = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|python| std::process::Command::new(python).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        eprintln!("\n*** SKIPPED: no Python here imports `{module}`; install it with `{install}` to run this check ***\n");
    }
    found.map(String::from)
}

/// Runs the Python `script` with `args` and returns its standard output as JSON.
pub fn python_json(python: &str, script: &str, args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(python).arg("-c").arg(script).args(args).output().expect("python runs");
    assert!(out.status.success(), "python failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}
