//! Hardening: no bad value can crash, hang, exhaust memory or write NaN. Every input that ever
//! failed is kept in `tests/bad_input/`, named after what it guards (`zero_volume_`, `alloc_`,
//! `hang_`, `nan_`, `nonsense_`), with the text its error must hold on its first line
//! (`# expect: ...`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use tidepool::driver::Driver;
use tidepool::math::{Quat, Vec3};
use tidepool::scene;
use tidepool::world::World;
use tidepool::{session, Error};

const KINDS: [&str; 5] = ["zero_volume_", "alloc_", "hang_", "nan_", "nonsense_"];

fn bad_input_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input")
}

/// The kept scenes whose names start with `prefix`.
fn kept(prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(bad_input_dir())
        .expect("tests/bad_input exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
        .collect();
    files.sort();
    files
}

/// Loads the scene at `path` and builds its world, as `tidepool check` does: it must be
/// refused with an error located in the file (`path:line:column:`) holding the text after
/// `# expect:` on the file's first line.
fn assert_refused(path: &Path) {
    let text = std::fs::read_to_string(path).expect("readable");
    let expected = text.lines().next().and_then(|l| l.strip_prefix("# expect: ")).unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display()));
    let err = match scene::load_any(path).map(|s| World::of(&s)) {
        Ok(Ok(_)) => panic!("{}: accepted", path.display()),
        Ok(Err(e)) | Err(e) => e,
    };
    let message = err.to_string();
    assert!(message.contains(expected), "{}: `{message}` does not hold `{expected}`", path.display());
    let located = err.position.is_some_and(|(line, _)| message.starts_with(&format!("{}:{line}:", path.display())));
    assert!(located, "{}: `{message}` is not located", path.display());
}

fn assert_all_refused(prefix: &str) {
    let files = kept(prefix);
    assert!(!files.is_empty(), "no kept inputs start with `{prefix}`");
    files.iter().for_each(|f| assert_refused(f));
}

#[test]
fn every_kept_input_is_guarded_by_a_test() {
    let all = kept("");
    let guarded: usize = KINDS.iter().map(|k| kept(k).len()).sum();
    assert_eq!(all.len(), guarded, "a file in tests/bad_input/ starts with none of {KINDS:?}");
}

/// A flat tetrahedron and a two-sided triangle are closed but enclose nothing: as an
/// obstacle they made the whole domain solid, as a region filled it, as a body gave 0 kg.
#[test]
fn zero_volume_meshes_are_refused() {
    assert_all_refused("zero_volume_");
}

/// A body coordinate of 1e308, a lattice spacing of 1e-5 m and a TetGen header promising 4e9
/// nodes each asked for more memory than exists before any check; a device or a FIFO as a mesh
/// was read forever or blocked.
#[test]
fn sizes_are_checked_before_anything_is_allocated() {
    assert_all_refused("alloc_");
    let dir = common::temp_dir("hardening-devices");
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.obj")).expect("symlink");
    let fifo = dir.join("fifo.obj");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    for mesh in ["zero.obj", "fifo.obj"] {
        let text =
            format!("[simulation]\nframes = 1\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 1.0, 1.0]\nresolution = 8\n[[obstacle]]\nshape.mesh = {{ path = \"{mesh}\" }}\n");
        let err = scene::parse(&text, "bad.toml", "bad", None, &dir).expect_err(mesh);
        assert!(err.to_string().contains("not a regular file"), "{mesh}: {err}");
    }
}

/// A suction depth of 4e9 cells, a frame rate of 1e-300 and a starfish a thousand
/// kilometres across ran (or were built) for ever.
#[test]
fn values_that_hung_are_bounded() {
    assert_all_refused("hang_");
}

/// A body density of 1e300 wrote NaN orientations with exit 0; 4294967295 raindrops per node
/// wrapped the particle counts.
#[test]
fn values_that_wrote_nan_are_refused() {
    assert_all_refused("nan_");
}

/// An empty output directory, extra array elements, two equal bodies, duplicate names and a
/// frame rate or CFL number out of any useful range were accepted.
#[test]
fn nonsense_is_refused() {
    assert_all_refused("nonsense_");
}

/// The health check sees every field of every solid, orientation and spin included, and it
/// runs before frame 0 is written: a body whose orientation is not a number, or that spins
/// faster than `simulation.max_speed` at its rim, is a blow-up and no file is written.
#[test]
fn the_health_check_covers_orientation_and_spin_and_frame_0() {
    let loaded = common::tank("frames = 1", [1.0, 1.0, 1.0], 8, 0.4, "[[body]]\nshape.box = { min = [0.4, 0.5, 0.4], max = [0.6, 0.7, 0.6] }\ndensity = 500.0\n");
    let mut world = World::build(&loaded).expect("the scene builds");
    assert!(world.check().is_ok());
    let good = world.solids.rigid[0].clone();
    world.solids.rigid[0].orientation = Quat::new_unchecked(nalgebra::Quaternion::new(f64::NAN, 0.0, 0.0, 0.0));
    assert!(world.check().is_err_and(|e| e.contains("orientation")));
    world.solids.rigid[0] = good;
    world.solids.rigid[0].angular_momentum = Vec3::new(0.0, 1e9, 0.0);
    assert!(world.check().is_err_and(|e| e.contains("max_speed")));

    let dir = common::temp_dir("hardening-frame-0");
    let sinks = tidepool::output::sinks(&scene::AnyScene::Liquid(Box::new(loaded)), &dir, None).expect("sinks");
    let mut driver = Driver::new(world, sinks);
    assert!(matches!(driver.write_current_frame(), Err(Error::BlowUp { frame: 0, .. })));
    let written = std::fs::read_dir(&dir).map_or(0, |d| d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x != "jsonl"))).count());
    assert_eq!(written, 0, "frame 0 files written for a state that fails the health check");
    assert!(std::fs::read_to_string(dir.join("stats.jsonl")).unwrap_or_default().is_empty(), "frame 0 listed");
}

/// A surface flow stepped far beyond its stability limit used to write frames of infinite
/// energy before it stopped; it now stops at the first such step and frame 0 alone is on disk.
#[test]
fn a_surface_flow_that_blows_up_stops_before_writing_a_bad_frame() {
    let text = std::fs::read_to_string(common::scenes_dir().join("surface_rain.toml")).expect("scene").replace("dt = 1.0", "dt = 100.0").replace("frames = 96", "frames = 4");
    let scene = scene::AnyScene::Surface(Box::new(scene::surface::parse_surface(&text, "big-step.toml", "big-step", None, &common::scenes_dir()).expect("valid")));
    let dir = common::temp_dir("hardening-surface-blow-up");
    let (mut driver, _) = session::start(&scene, &dir, false, common::info()).expect("starts");
    let outcome = driver.run(scene.frames(), &AtomicBool::new(false), &mut |_| {});
    assert!(matches!(outcome, Err(Error::BlowUp { frame: 1, .. })), "{outcome:?}");
    let stats = std::fs::read_to_string(dir.join("stats.jsonl")).expect("stats");
    assert_eq!(stats.lines().count(), 1, "only frame 0 is listed: {stats}");
    assert!(!stats.contains("null"), "frame 0 holds a non-finite value: {stats}");
    assert!(!dir.join("terrain_0001.ply").exists() && !dir.join("preview_0001.png").exists(), "a frame after the blow-up was written");
}
