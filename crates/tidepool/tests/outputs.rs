//! Frame outputs: every format is written and readable by an independent reader; resuming is
//! bit-identical; a blow-up stops the run and keeps the frames before it.

mod common;

use std::collections::HashMap;
use std::path::Path;
use tidepool::driver::RunOutcome;
use tidepool::scene::{AnyScene, LoadedScene};
use tidepool::{session, Error};

fn small_scene(frames: u32, extra: &str) -> LoadedScene {
    common::load(&format!(
        r#"
[simulation]
frames = {frames}
fps = 30
{extra}
[domain]
min = [0.0, 0.0, 0.0]
max = [1.0, 0.6, 0.4]
resolution = 20
[[liquid.region]]
shape.box = {{ min = [0.0, 0.0, 0.0], max = [0.35, 0.45, 0.4] }}
[[obstacle]]
shape.box = {{ min = [0.6, 0.0, 0.1], max = [0.75, 0.15, 0.3] }}
[[body]]
name = "ball"
shape.sphere = {{ center = [0.5, 0.3, 0.2], radius = 0.07 }}
density = 600.0
velocity = [-0.5, 0.0, 0.0]
[output]
formats = ["ply", "obj", "vtk", "png"]
camera = {{ width = 320, height = 180 }}
"#
    ))
}

fn run(loaded: &LoadedScene, dir: &Path, resume: bool) -> Result<RunOutcome, Error> {
    let (mut driver, _) = session::start(&AnyScene::Liquid(Box::new(loaded.clone())), dir, resume, common::info())?;
    driver.run(loaded.scene.simulation.frames, &common::never(), &mut |_| {})
}

/// A mesh as read back: positions, velocities, triangles.
type ReadMesh = (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<Vec<i32>>);

/// The velocity-carrying binary PLY as ply-rs reads it.
fn read_ply(path: &Path) -> ReadMesh {
    use ply_rs_bw::parser::Parser;
    use ply_rs_bw::ply::{DefaultElement, Property};
    let mut file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let ply = Parser::<DefaultElement>::new().read_ply(&mut file).unwrap();
    let f = |e: &DefaultElement, k: &str| match e.get(k) {
        Some(Property::Float(v)) => *v,
        other => panic!("{k}: {other:?}"),
    };
    let vertices = &ply.payload["vertex"];
    let positions = vertices.iter().map(|e| [f(e, "x"), f(e, "y"), f(e, "z")]).collect();
    let velocities = vertices.iter().map(|e| [f(e, "vx"), f(e, "vy"), f(e, "vz")]).collect();
    let faces = ply.payload["face"]
        .iter()
        .map(|e| match e.get("vertex_indices") {
            Some(Property::ListInt(l)) => l.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    (positions, velocities, faces)
}

#[test]
fn every_format_is_written_and_reads_back() {
    let dir = common::temp_dir("formats");
    let loaded = small_scene(2, "");
    assert_eq!(run(&loaded, &dir, false).unwrap(), RunOutcome::Completed);

    // stats.jsonl: one object per frame with the documented fields.
    let stats = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = stats.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    for (n, line) in lines.iter().enumerate() {
        assert_eq!(line["frame"], n as u64);
        for key in ["time", "substeps", "wall_seconds", "liquid_volume", "kinetic_energy", "max_speed", "pressure_iterations", "pressure_residual"] {
            assert!(line[key].is_number(), "{key} in {line}");
        }
    }
    assert!((lines[2]["time"].as_f64().unwrap() - 2.0 / 30.0).abs() < 1e-12);
    let ball = &lines[2]["bodies"][0];
    assert_eq!(ball["name"], "ball");
    for key in ["position", "orientation", "linear_velocity", "angular_velocity"] {
        assert!(ball[key].is_array(), "{key} in {ball}");
    }
    assert!(ball["submerged_volume"].is_number() && lines[2]["total_momentum"].is_array());
    let (body_points, _, body_faces) = read_ply(&dir.join("bodies_0002.ply"));
    assert!(body_faces.len() > 100 && body_points.iter().all(|p| (p[0] - 0.5).abs() < 0.2));

    // The surface PLY: closed, with a velocity per vertex matching the falling column.
    let (positions, velocities, faces) = read_ply(&dir.join("surface_0002.ply"));
    assert!(faces.len() > 100 && faces.iter().all(|f| f.len() == 3));
    assert!(faces.iter().flatten().all(|&i| (i as usize) < positions.len()));
    let mut edges: HashMap<(i32, i32), u32> = HashMap::new();
    for f in &faces {
        for e in 0..3 {
            *edges.entry((f[e], f[(e + 1) % 3])).or_default() += 1;
        }
    }
    assert!(edges.iter().all(|(&(a, b), &n)| n == 1 && edges.get(&(b, a)) == Some(&1)), "surface is closed");
    assert!(velocities.iter().any(|v| v[1] < -0.1), "the column is falling");
    let (obj, _) = tobj::load_obj(dir.join("surface_0002.obj"), &tobj::LoadOptions::default()).unwrap();
    assert_eq!(obj[0].mesh.positions.len(), 3 * positions.len());
    assert!(dir.join("obstacles.ply").exists() && dir.join("obstacles.obj").exists());

    // VTK image data: extent, and every appended array's byte count.
    let vti = std::fs::read(dir.join("fields_0002.vti")).unwrap();
    let head = String::from_utf8_lossy(&vti[..vti.windows(13).position(|w| w == b"<AppendedData").unwrap()]).to_string();
    assert!(head.contains("WholeExtent=\"0 19 0 11 0 7\""), "{head}");
    let appended = head.len();
    let start = appended + vti[appended..].iter().position(|&b| b == b'_').unwrap() + 1;
    let points = 20 * 12 * 8;
    for (name, components) in [("phi", 1), ("pressure", 1), ("velocity", 3), ("obstacle_distance", 1)] {
        let tag = head.split(&format!("Name=\"{name}\"")).nth(1).unwrap_or_else(|| panic!("{name} missing"));
        let offset: usize = tag.split("offset=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        let bytes = u64::from_le_bytes(vti[start + offset..start + offset + 8].try_into().unwrap());
        assert_eq!(bytes as usize, points * components * 4, "{name}");
    }
    let pvd = std::fs::read_to_string(dir.join("tidepool.pvd")).unwrap();
    assert_eq!(pvd.matches("<DataSet").count(), 9);
    assert!(pvd.contains("file=\"bodies_0002.vtp\""));
    assert!(pvd.contains("file=\"surface_0002.vtp\""));

    // The preview decodes and shows water.
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(dir.join("preview_0002.png")).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    assert_eq!((frame.width, frame.height), (320, 180));
    let blue = buf.chunks(3).filter(|p| p[2] as i32 > p[0] as i32 + 60).count();
    assert!(blue > 1000, "{blue} water-coloured pixels");

    // The run record and the single, latest checkpoint.
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert!(run["version"].is_string() && run["threads"].is_number() && run["start_time"].is_string());
    assert_eq!(std::fs::read_to_string(dir.join("scene.toml")).unwrap(), loaded.text);
    let checkpoints: Vec<_> = std::fs::read_dir(dir.join("checkpoint")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(checkpoints, vec![std::ffi::OsString::from("checkpoint_0002.bin")]);
    assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp")));
}

/// Stats lines without their timing fields.
fn stats_without_timing(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("stats.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("wall_seconds");
            o.remove("phase_seconds");
            v
        })
        .collect()
}

#[test]
fn resuming_gives_bit_identical_frames_on_any_thread_count() {
    let whole = common::temp_dir("resume-whole");
    let split = common::temp_dir("resume-split");
    // Tracers seeded in the column ride along (a table between `[simulation]` and `[domain]`).
    let tracers = "[[tracers]]\nshape.box = { min = [0.05, 0.05, 0.05], max = [0.3, 0.4, 0.35] }\nspacing = 0.05\n";
    run(&small_scene(5, tracers), &whole, false).unwrap();
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    one_thread.install(|| {
        run(&small_scene(2, tracers), &split, false).unwrap();
        assert_eq!(run(&small_scene(5, tracers), &split, true).unwrap(), RunOutcome::Completed);
    });
    for frame in 3..=5 {
        let files = ["surface_{}.ply", "fields_{}.vti", "surface_{}.vtp", "bodies_{}.ply", "bodies_{}.vtp", "tracers_{}.ply"].map(|f| f.replace("{}", &format!("{frame:04}")));
        for file in files {
            let (a, b) = (std::fs::read(whole.join(&file)).unwrap(), std::fs::read(split.join(&file)).unwrap());
            assert!(a == b, "{file} differs after resuming");
        }
    }
    assert_eq!(stats_without_timing(&whole), stats_without_timing(&split));
    assert_eq!(std::fs::read_to_string(split.join("tidepool.pvd")).unwrap(), std::fs::read_to_string(whole.join("tidepool.pvd")).unwrap());
}

#[test]
fn a_checkpoint_of_different_physics_is_refused() {
    let dir = common::temp_dir("resume-mismatch");
    run(&small_scene(1, ""), &dir, false).unwrap();
    let other = small_scene(2, "gravity = [0.0, -3.0, 0.0]");
    match run(&other, &dir, true) {
        Err(Error::Checkpoint { message, .. }) => assert!(message.contains("different physics"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_blow_up_names_the_frame_and_keeps_the_frames_before_it() {
    let dir = common::temp_dir("blow-up");
    // The collapsing column soon moves faster than this (artificially low) bound.
    let loaded = small_scene(12, "max_speed = 1.0");
    let frame = match run(&loaded, &dir, false) {
        Err(Error::BlowUp { frame, reason, .. }) => {
            assert!(reason.contains("max_speed"), "{reason}");
            frame
        }
        other => panic!("{other:?}"),
    };
    assert!((2..12).contains(&frame), "stopped in frame {frame}");
    let stats = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap();
    assert_eq!(stats.lines().count() as u32, frame, "frames 0 to {} are intact", frame - 1);
    let last = format!("surface_{:04}.ply", frame - 1);
    assert!(dir.join(&last).exists() && !dir.join(format!("surface_{frame:04}.ply")).exists());
    read_ply(&dir.join(last));
}
