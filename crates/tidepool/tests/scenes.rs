//! Every example liquid or smoke scene in `scenes/` (level set, FLIP or smoke) is valid, builds, and runs a
//! frame — the paper-scale ones on a coarser grid (common::PAPER_SCALE) — (surface-flow
//! scenes: tests/surface_flow.rs).

mod common;

use tidepool::scene;
use tidepool::world::World;

/// The example liquid and smoke scenes (not the surface-flow ones), by name.
fn example_scenes() -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(common::scenes_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml") && !std::fs::read_to_string(path).is_ok_and(|text| scene::surface::is_surface_scene(&text)))
        .collect();
    paths.sort();
    assert!(paths.len() >= 3, "example scenes: {paths:?}");
    paths
}

/// Every other example scene from the `first` (0 or 1) is valid, builds and runs a frame whose
/// solves converge (two tests, so that the two halves run side by side).
fn every_other_scene_runs_a_frame(first: usize) {
    for path in example_scenes().into_iter().skip(first).step_by(2) {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let loaded = scene::parse(&common::example_text(&path), &path.display().to_string(), name, Some(path.clone()), &common::scenes_dir()).unwrap_or_else(|e| panic!("{e}"));
        let world = World::build(&loaded).expect("the scene builds");
        assert!(world.fluid.measures().volume > 0.0 || !world.solids.is_empty(), "{}: neither liquid, smoke nor bodies", path.display());
        let (_, records) = common::simulate(&loaded, 1);
        assert!(records[1].substeps > 0 && records[1].totals.unconverged().is_none(), "{}: {:?}", path.display(), records[1].totals);
    }
}

#[test]
fn every_example_scene_loads_builds_and_runs_a_frame_first_half() {
    every_other_scene_runs_a_frame(0);
}

#[test]
fn every_example_scene_loads_builds_and_runs_a_frame_second_half() {
    every_other_scene_runs_a_frame(1);
}

#[test]
fn the_built_in_scene_is_scenes_default_toml() {
    let file = std::fs::read_to_string(common::scenes_dir().join("default.toml")).unwrap();
    assert_eq!(file, scene::DEFAULT_SCENE);
    let loaded = scene::load_default().unwrap();
    assert_eq!(loaded.name, "default");
    assert_eq!(loaded.obstacles.len(), 1);
}
