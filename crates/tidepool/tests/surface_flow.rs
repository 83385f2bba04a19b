//! Surface-flow scenes (a `[surface]` table): every example runs and writes its frames; water
//! is conserved where nothing adds or removes it; bad values get located errors.

mod common;

use tidepool::fluids::Fluid;
use tidepool::scene::surface::{is_surface_scene, load_surface, parse_surface};
use tidepool::scene::AnyScene;

#[test]
fn every_surface_scene_runs_and_writes_its_frames() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(common::scenes_dir()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if path.extension().is_none_or(|e| e != "toml") || !is_surface_scene(&text) {
            continue;
        }
        let loaded = load_surface(&path).unwrap_or_else(|e| panic!("{e}"));
        let dir = common::temp_dir(&format!("surface-{}", loaded.name));
        let scene = AnyScene::Surface(Box::new(loaded.clone()));
        let world = common::run_into(&scene, &dir, 2, false).unwrap();
        let Fluid::Surface(flow) = &world.fluid else { panic!("{}: not a surface flow", loaded.name) };
        for frame in 0..=2 {
            for (stem, ext) in [("terrain", "ply"), ("water", "ply"), ("preview", "png")] {
                assert!(dir.join(format!("{stem}_{frame:04}.{ext}")).is_file(), "{}: no {stem} for frame {frame}", loaded.name);
            }
        }
        let stats = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap();
        assert_eq!(stats.lines().count(), 3, "{}", loaded.name);
        let lines: Vec<serde_json::Value> = stats.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        for v in &lines {
            assert!(v["particles"].as_u64().is_some() && v["elastic_energy"].as_f64().is_some());
        }
        // Particles are only ever moved, rained in, evaporated or run off an open edge.
        let (first, last) = (&lines[0], lines.last().unwrap());
        let count = |v: &serde_json::Value, key: &str| v[key].as_u64().unwrap();
        assert_eq!(count(last, "particles") + count(last, "left") + count(last, "evaporated"), count(first, "particles") + count(last, "rained"), "{}", loaded.name);
        assert_eq!(flow.steps, 2 * loaded.scene.simulation.steps_per_frame as u64);
        names.push(loaded.name);
    }
    names.sort();
    assert_eq!(names.len(), 6, "surface-flow scenes: {names:?}");
}

#[test]
fn bad_surface_scenes_get_located_errors() {
    let head = "[simulation]\nframes = 2\n\n[surface]\n";
    let cases = [
        (format!("{head}nodes = [16, 16]\nstiffness = -1.0\n"), Some(6), "positive spring stiffness"),
        (format!("{head}stiffness = 1.0\n"), Some(4), "missing `nodes"),
        (format!("{head}nodes = [16, 16]\nstiffness = 1.0\n\n[water]\nparticle_height = 0.0\n"), Some(9), "positive particle height"),
        (format!("{head}stiffness = 1.0\nterrain.height-map = {{ path = \"nowhere.png\", height = 1.0 }}\n"), Some(6), "nowhere.png"),
        (format!("{head}nodes = [16, 16]\nstiffness = 1.0\nsprings = 3\n"), Some(7), "unknown field `springs`"),
        (format!("{head}nodes = [16, 16]\nstiffness = 1.0\n\n[water]\nrain = {{ particles = 1, start = 5.0, end = 1.0 }}\n"), Some(9), "end time after the start"),
    ];
    let dir = common::temp_dir("surface-bad");
    for (text, line, needle) in cases {
        let err = parse_surface(&text, "bad.toml", "bad", None, &dir).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(needle), "`{message}` does not mention `{needle}`");
        assert_eq!(err.position.map(|p| p.0), line, "`{message}`");
    }
}

/// The water's volume is its particles times their height times the lattice cell's area,
/// also on a hilly terrain whose springs are longer than the node spacing.
#[test]
fn water_volume_counts_lattice_cells_on_hilly_terrain() {
    let text = "[simulation]\nframes = 1\n\n[surface]\nnodes = [20, 20]\nspacing = 0.5\nstiffness = 1.0\nmass = 4.0\nterrain.gaussian = { centre = [0.0, 0.0], height = 3.0, width = 1.5 }\n\n[water]\nparticle_height = 0.01\ninitial.uniform = { particles = 3 }\n";
    let loaded = parse_surface(text, "hill.toml", "hill", None, &common::temp_dir("surface-hill")).unwrap();
    let world = tidepool::world::World::from_surface(&loaded);
    let Fluid::Surface(flow) = &world.fluid else { panic!("not a surface flow") };
    let (particles, water_volume) = (flow.gas.total(), flow.water_volume());
    assert_eq!(particles, 3 * 400);
    assert!((water_volume - 1200.0 * 0.01 * 0.25).abs() < 1e-12, "volume {water_volume}");
}
