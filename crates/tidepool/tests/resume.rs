//! Every fluid model runs through the one driver: a run stopped after a frame and resumed
//! from its checkpoint writes the same files, byte for byte, as a run that never stopped
//! (level set with bodies, FLIP with a floating body, surface flow); a checkpoint with one
//! flipped byte is refused, never used.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use tidepool::driver::{Event, RunOutcome};
use tidepool::scene::surface::parse_surface;
use tidepool::scene::AnyScene;
use tidepool::{session, Error};

/// A tank with a floating box and a ball, for a liquid `method` (and its extra keys and
/// tables); `phases` are the lines naming the phase of each of its two regions (empty for one
/// liquid).
fn tank_with_bodies(liquid: &str, phases: [&str; 2]) -> AnyScene {
    let [pool, column] = phases;
    AnyScene::Liquid(Box::new(common::load(&format!(
        r#"
[simulation]
frames = 4
fps = 30
[domain]
min = [0.0, 0.0, 0.0]
max = [0.6, 0.4, 0.3]
resolution = 16
[liquid]
{liquid}
[[liquid.region]]
{pool}
shape.box = {{ min = [0.0, 0.0, 0.0], max = [0.6, 0.2, 0.3] }}
[[liquid.region]]
{column}
shape.box = {{ min = [0.0, 0.0, 0.0], max = [0.2, 0.32, 0.3] }}
[[body]]
name = "crate"
shape.box = {{ min = [0.3, 0.16, 0.08], max = [0.46, 0.26, 0.22] }}
density = 500.0
[[body]]
name = "ball"
shape.sphere = {{ center = [0.12, 0.34, 0.15], radius = 0.04 }}
density = 800.0
velocity = [0.3, 0.0, 0.0]
[output]
formats = ["ply", "obj", "vtk", "png"]
camera = {{ width = 96, height = 64 }}
"#
    ))))
}

/// A small surface-flow scene: rain on a hill.
fn surface_flow() -> AnyScene {
    let text = "[simulation]\nframes = 4\nsteps_per_frame = 5\n\n[surface]\nnodes = [24, 20]\nspacing = 0.5\nstiffness = 2.0\nmass = 4.0\ngravity = 1.0\n\
                terrain.gaussian = { centre = [6.0, 5.0], height = 2.0, width = 2.0 }\n\n[water]\nparticle_height = 0.01\ninitial.uniform = { particles = 4 }\n\
                rain = { particles = 1, start = 0.0, end = 100.0 }\n";
    AnyScene::Surface(Box::new(parse_surface(text, "rain.toml", "rain", None, &common::scenes_dir()).unwrap_or_else(|e| panic!("{e}"))))
}

/// Runs `scene` into `dir` to its last frame, stopping (as Ctrl-C does, after writing the
/// frame) once frame `stop_after` is written, if given.
fn run(scene: &AnyScene, dir: &Path, resume: bool, stop_after: Option<u32>) -> Result<RunOutcome, Error> {
    let (mut driver, _) = session::start(scene, dir, resume, common::info())?;
    let stop = AtomicBool::new(false);
    driver.run(scene.frames(), &stop, &mut |event| {
        if let Event::Frame(record) = event {
            if Some(record.frame) == stop_after {
                stop.store(true, Ordering::SeqCst);
            }
        }
    })
}

/// Stats lines without their wall-clock fields.
fn stats_without_timing(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("stats.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            for key in ["wall_seconds", "phase_seconds", "timings"] {
                o.remove(key);
            }
            v
        })
        .collect()
}

/// Every frame file (all but the stats, the run record and the checkpoint) of `dir`, sorted.
fn frame_files(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !["stats.jsonl", "run.json", "checkpoint"].contains(&name.as_str()))
        .collect();
    files.sort();
    files
}

/// The run stopped after frame 2 and resumed matches the uninterrupted run in every file.
fn resume_is_bit_identical(scene: &AnyScene, name: &str) {
    let whole = common::temp_dir(&format!("resume-{name}-whole"));
    let split = common::temp_dir(&format!("resume-{name}-split"));
    assert_eq!(run(scene, &whole, false, None).unwrap(), RunOutcome::Completed);
    assert_eq!(run(scene, &split, false, Some(2)).unwrap(), RunOutcome::Interrupted { frame: 2 }, "{name}");
    assert_eq!(stats_without_timing(&split).len(), 3, "{name}: frames 0 to 2 before the stop");
    assert_eq!(run(scene, &split, true, None).unwrap(), RunOutcome::Completed);
    let files = frame_files(&whole);
    assert_eq!(files, frame_files(&split), "{name}");
    assert!(files.iter().any(|f| f.ends_with("_0004.ply")), "{name}: {files:?}");
    for file in &files {
        assert!(std::fs::read(whole.join(file)).unwrap() == std::fs::read(split.join(file)).unwrap(), "{name}: {file} differs after resuming");
    }
    assert_eq!(stats_without_timing(&whole), stats_without_timing(&split), "{name}");
}

/// The level-set liquid with all its state: viscous, under surface tension, and viscoelastic
/// (its strain is in the checkpoint).
#[test]
fn level_set_with_bodies_resumes_bit_identically() {
    let liquid = "method = \"level-set\"\nviscosity = 0.5\nsurface_tension = 0.07\nelastic = { modulus = 2000.0, yield_strain = 0.3 }";
    resume_is_bit_identical(&tank_with_bodies(liquid, ["", ""]), "level-set");
}

/// A liquid of three phases, one viscous under surface tension, one viscoelastic, with a
/// source of the second, the first two reacting into the third (their level sets, particles,
/// volume controls, the reaction's pending volume and the strain are in the checkpoint); the
/// second changes its properties before the stop at frame 2 and after it.
#[test]
fn several_liquids_resume_bit_identically() {
    let liquid = "method = \"level-set\"\n\
                  [[liquid.phase]]\nname = \"water\"\ndensity = 1000.0\nviscosity = 0.5\nsurface_tension = 0.07\n\
                  [[liquid.phase]]\nname = \"jelly\"\ndensity = 1200.0\nelastic = { modulus = 2000.0 }\n\
                  [[liquid.phase.change]]\ntime = 0.04\nviscosity = 0.2\n\
                  [[liquid.phase.change]]\ntime = 0.08\ndensity = 900.0\nelastic = false\n\
                  [[liquid.phase]]\nname = \"gas\"\ndensity = 50.0\n\
                  [[liquid.reaction]]\nbetween = [\"water\", \"jelly\"]\nproduct = \"gas\"\nrate = 0.2\nexpansion = 1.5\nbubble_radius = 0.04\n\
                  [[liquid.source]]\nphase = \"jelly\"\nshape.sphere = { center = [0.52, 0.3, 0.15], radius = 0.04 }\nend = 0.05";
    resume_is_bit_identical(&tank_with_bodies(liquid, ["phase = \"water\"", "phase = \"jelly\""]), "phases");
}

/// Rigid and full deformable bodies without liquid: a rubber block (`method = "fem"`,
/// damped; its particles' positions and velocities are in the checkpoint) falls onto a rigid
/// box and tips off it; a rubber bar with a free bone and a driven hinge (the bones' poses,
/// angles and rates are in the checkpoint) wriggles on the floor.
#[test]
fn deformable_bodies_resume_bit_identically() {
    let scene = AnyScene::Liquid(Box::new(common::load(
        "[simulation]\nframes = 4\nfps = 30\n[domain]\nmin = [-0.5, 0.0, -0.5]\nmax = [0.5, 0.6, 0.5]\nresolution = 8\n\
         [[body]]\nname = \"base\"\nshape.box = { min = [-0.1, 0.0, -0.1], max = [0.1, 0.1, 0.1] }\ndensity = 600.0\n\
         [[body]]\nname = \"rubber\"\nshape.box = { min = [0.0, 0.15, -0.05], max = [0.2, 0.25, 0.05] }\ndensity = 1000.0\nangular_velocity = [0.0, 0.0, -2.0]\n\
         deformable = { method = \"fem\", young = 3e4, damping = 0.01, spacing = 0.05 }\n\
         [[body]]\nname = \"worm\"\nshape.box = { min = [-0.4, 0.0, -0.3], max = [-0.2, 0.04, -0.26] }\ndensity = 1000.0\n\
         deformable = { method = \"fem\", young = 3e4, damping = 0.01, spacing = 0.02 }\n\
         [[body.bone]]\nname = \"head\"\nshape.box = { min = [-0.39, 0.01, -0.29], max = [-0.33, 0.05, -0.25] }\n\
         [[body.bone]]\nname = \"tail\"\nshape.box = { min = [-0.27, 0.01, -0.29], max = [-0.21, 0.05, -0.25] }\nparent = \"head\"\npivot = [-0.3, 0.02, -0.28]\naxis = [0.0, 1.0, 0.0]\n\
         drive = { stiffness = 0.5, damping = 0.005, amplitude = 30.0, frequency = 3.0 }\n[output]\nformats = [\"ply\", \"vtk\"]\n",
    )));
    resume_is_bit_identical(&scene, "deformable");
}

/// Smoke with a source and a light ball pushed by it (the air's velocity, pressure, smoke and
/// heat are in the checkpoint).
#[test]
fn smoke_with_a_body_resumes_bit_identically() {
    let scene = AnyScene::Liquid(Box::new(common::load(
        "[simulation]\nframes = 4\nfps = 30\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [0.4, 0.6, 0.4]\nresolution = 12\nboundary = { y_max = \"open\" }\n\
         [smoke]\n[[smoke.source]]\nshape.sphere = { center = [0.2, 0.08, 0.2], radius = 0.06 }\ntemperature = 80.0\nvelocity = [0.0, 1.0, 0.0]\n\
         [[body]]\nname = \"ball\"\nshape.sphere = { center = [0.22, 0.3, 0.2], radius = 0.05 }\ndensity = 5.0\n\
         [output]\nformats = [\"ply\", \"vtk\", \"vdb\"]\n",
    )));
    resume_is_bit_identical(&scene, "smoke");
}

#[test]
fn flip_with_bodies_resumes_bit_identically() {
    resume_is_bit_identical(&tank_with_bodies("method = \"flip\"\nflip.incompressibility = \"bilateral\"", ["", ""]), "flip");
}

#[test]
fn surface_flow_resumes_bit_identically() {
    resume_is_bit_identical(&surface_flow(), "surface");
}

/// One flipped byte anywhere in a checkpoint, header or payload, makes resuming fail with a
/// message naming the file; the file on disk is left as it was.
#[test]
fn a_corrupted_checkpoint_is_refused() {
    let scene = tank_with_bodies("method = \"flip\"\nflip.incompressibility = \"bilateral\"", ["", ""]);
    let dir = common::temp_dir("resume-corrupt");
    let mut short = scene.clone();
    short.set_frames(1);
    run(&short, &dir, false, None).unwrap();
    let path = dir.join("checkpoint").join("checkpoint_0001.bin");
    let good = std::fs::read(&path).unwrap();
    for at in [3, 17, 22, 30, 37, 45, good.len() / 3, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        match run(&scene, &dir, true, None) {
            Err(Error::Checkpoint { path: named, message }) => assert!(named == path && !message.is_empty(), "byte {at}: {named:?}: {message}"),
            other => panic!("byte {at} flipped: {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), bad);
    }
    std::fs::write(&path, &good).unwrap();
    assert_eq!(run(&scene, &dir, true, None).unwrap(), RunOutcome::Completed);
}
