//! Every example liquid scene in `scenes/` (level set or FLIP) is valid, builds, and runs a
//! frame — the paper-scale ones on a coarser grid (common::PAPER_SCALE) — (surface-flow
//! scenes: tests/surface_flow.rs).

mod common;

use tidepool::scene;
use tidepool::world::World;

#[test]
fn every_example_scene_loads_builds_and_runs_a_frame() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(common::scenes_dir()).unwrap() {
        let path = entry.unwrap().path();
        let surface_flow = std::fs::read_to_string(&path).is_ok_and(|text| scene::surface::is_surface_scene(&text));
        if path.extension().is_some_and(|e| e == "toml") && !surface_flow {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            let loaded = scene::parse(&common::example_text(&path), &path.display().to_string(), name, Some(path.clone()), &common::scenes_dir()).unwrap_or_else(|e| panic!("{e}"));
            let world = World::build(&loaded).expect("the scene builds");
            assert!(world.fluid.measures().volume > 0.0 || !world.solids.is_empty(), "{}: neither liquid nor bodies", path.display());
            let (_, records) = common::simulate(&loaded, 1);
            assert!(records[1].substeps > 0 && records[1].totals.unconverged().is_none(), "{}: {:?}", path.display(), records[1].totals);
            names.push(loaded.name);
        }
    }
    names.sort();
    assert!(names.len() >= 3, "example scenes: {names:?}");
}

#[test]
fn the_built_in_scene_is_scenes_default_toml() {
    let file = std::fs::read_to_string(common::scenes_dir().join("default.toml")).unwrap();
    assert_eq!(file, scene::DEFAULT_SCENE);
    let loaded = scene::load_default().unwrap();
    assert_eq!(loaded.name, "default");
    assert_eq!(loaded.obstacles.len(), 1);
}
