//! Surface-flow scenes (a `[surface]` table): every example runs and writes its frames; water
//! is conserved where nothing adds or removes it; bad values get located errors; the examples
//! do what their headers say.

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

/// Runs the example scene `name` up to the last of `at` (ascending step counts) and returns
/// the ground's rest elevation at each node, each node's particles after each of `at` steps,
/// and the particles that left across an open edge.
fn run_example(name: &str, at: &[usize]) -> (Vec<f64>, Vec<Vec<u32>>, u64) {
    let loaded = load_surface(&common::scenes_dir().join(format!("{name}.toml"))).unwrap_or_else(|e| panic!("{e}"));
    let mut world = tidepool::world::World::from_surface(&loaded);
    let Fluid::Surface(flow) = &mut world.fluid else { panic!("{name}: not a surface flow") };
    let ground: Vec<f64> = flow.sheet.positions.iter().map(|x| x.y).collect();
    let mut snapshots = Vec::new();
    for step in 1..=*at.last().unwrap() {
        flow.step();
        if at.contains(&step) {
            snapshots.push(flow.gas.counters.clone());
        }
    }
    (ground, snapshots, flow.gas.left)
}

/// The nodes whose ground is in the `lo..hi` share of the elevations (0 the lowest node, 1 the
/// highest), and the particles they hold in `before` and `after`.
fn held_between(ground: &[f64], before: &[u32], after: &[u32], lo: f64, hi: f64) -> (u64, u64) {
    let mut sorted = ground.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |share: f64| sorted[((sorted.len() - 1) as f64 * share) as usize];
    let (a, b) = (at(lo), at(hi));
    let nodes: Vec<usize> = (0..ground.len()).filter(|&c| ground[c] >= a && ground[c] <= b).collect();
    (nodes.iter().map(|&c| before[c] as u64).sum(), nodes.iter().map(|&c| after[c] as u64).sum())
}

/// Particles on the nodes of a 128 × 128 lattice from `lo` to under `hi` away from node
/// `centre`.
fn in_ring(counters: &[u32], centre: f64, lo: f64, hi: f64) -> u64 {
    (0..counters.len()).filter(|&c| (lo..hi).contains(&((c % 128) as f64 - centre).hypot((c / 128) as f64 - centre))).map(|c| counters[c] as u64).sum()
}

fn total(counters: &[u32]) -> u64 {
    counters.iter().map(|&c| c as u64).sum()
}

/// `surface_mexican_hat.toml` does what its header says before its first push (step 1000):
/// the water runs off the peak into the ring and towards the edges. After 900 steps the
/// highest tenth of the nodes has lost most of its water (it keeps 30%), and the lowest
/// quarter holds more than half as much again as it started with (3.7 times).
#[test]
fn mexican_hat_water_runs_off_the_peak_into_the_valleys() {
    let (ground, s, _) = run_example("surface_mexican_hat", &[1, 900]);
    let (peak_before, peak_after) = held_between(&ground, &s[0], &s[1], 0.9, 1.0);
    let (low_before, low_after) = held_between(&ground, &s[0], &s[1], 0.0, 0.25);
    assert!(peak_after * 2 < peak_before, "the peak kept {peak_after} of {peak_before} particles");
    assert!(2 * low_after > 3 * low_before, "the valleys hold {low_after} particles, from {low_before}");
}

/// `surface_rain.toml` does what its header says: the rain of the first step runs down the
/// slopes and floods the valley. After 1000 steps the lowest quarter of the nodes holds more
/// than half of the water (73%), and the highest quarter less than a tenth of what fell on it
/// (0.06%).
#[test]
fn rain_runs_down_the_slopes_and_floods_the_valley() {
    let (ground, s, _) = run_example("surface_rain", &[1, 1000]);
    let (_, low_after) = held_between(&ground, &s[0], &s[1], 0.0, 0.25);
    let (high_before, high_after) = held_between(&ground, &s[0], &s[1], 0.75, 1.0);
    assert!(2 * low_after > total(&s[1]), "the valley holds {low_after} of {} particles", total(&s[1]));
    assert!(high_after * 10 < high_before, "the hills kept {high_after} of {high_before} particles");
}

/// `surface_rain_evaporation.toml` does what its header says: the rain evaporates from step
/// 2800 on until the terrain is dry again: at the scene's last step (6000) no particle is
/// left of the 12 a node that fell. (With the scene's first rate, a particle a node every 40
/// steps, 70 068 of 196 608 were still pooled in the valley at the end; the rate is now one
/// every 8 steps.)
#[test]
fn evaporation_dries_the_valley_again() {
    let (_, s, _) = run_example("surface_rain_evaporation", &[1, 6000]);
    assert!(total(&s[0]) > 0 && total(&s[1]) == 0, "{} of {} particles are left", total(&s[1]), total(&s[0]));
}

/// `surface_gaussian_push.toml` does what its header says: the push raises a pyramid under the
/// heap of water, which spills down its slopes (at step 3200 the nodes within 12 of the centre,
/// which held 105 552 particles, hold none), then the pull makes the sheet sag and the water
/// gathers there again (more than at the start at the last step, 6000: 170 956); the sheet is
/// closed, so every particle stays.
#[test]
fn gaussian_push_spills_the_water_off_the_pyramid_and_gathers_it_in_the_sag() {
    let (_, s, _) = run_example("surface_gaussian_push", &[1, 3200, 6000]);
    let centre: Vec<u64> = s.iter().map(|c| in_ring(c, 63.5, 0.0, 12.0)).collect();
    assert!(centre[1] * 10 < centre[0], "the pyramid's top kept {} of {} particles", centre[1], centre[0]);
    assert!(centre[2] > centre[0], "the sag gathered {} particles, the heap had {}", centre[2], centre[0]);
    assert!(s.iter().all(|c| total(c) == total(&s[0])));
}

/// `surface_wave.toml` does what its header says: the waves carry the water along x (after
/// 1000 steps its centre has moved 1.4 nodes downstream) and what reaches the open edge runs
/// off (a quarter of it by then).
#[test]
fn waves_carry_the_water_along_and_off_the_open_edge() {
    let (_, s, left) = run_example("surface_wave", &[1, 1000]);
    let centre_x = |c: &[u32]| (0..c.len()).map(|i| (i % 128) as f64 * c[i] as f64).sum::<f64>() / total(c) as f64;
    assert!(centre_x(&s[1]) > centre_x(&s[0]) + 0.5, "the water's centre moved from {} to {}", centre_x(&s[0]), centre_x(&s[1]));
    assert!(left * 5 > total(&s[0]), "{left} particles left of {}", total(&s[0]));
}

/// `surface_hole.toml` does what its header says: the water spread over the sheet flows to the
/// hole's edge while the sheet is pushed down, away from it while pushed up, back under the
/// second push down, and never crosses the edge. No node within the hole (radius 22 about node
/// (64, 64)) ever holds a particle and none is lost; the ring of nodes along the edge (22 to 30
/// from the centre) holds 9% of the water at the start, more than three quarters at the end of
/// the first push (step 1199: 93%), under a tenth at the end of the push up (2900: none) and
/// more than three quarters again at step 4800 (100%).
#[test]
fn hole_water_gathers_at_the_hole_s_edge_and_never_crosses_it() {
    let steps = [1, 1199, 2900, 4800];
    let (_, s, left) = run_example("surface_hole", &steps);
    let within = |c: &[u32], lo: f64, hi: f64| in_ring(c, 64.0, lo, hi);
    assert!(s.iter().all(|c| within(c, 0.0, 22.0) == 0), "water inside the hole: {:?}", s.iter().map(|c| within(c, 0.0, 22.0)).collect::<Vec<_>>());
    assert!(left == 0 && s.iter().all(|c| total(c) == total(&s[0])));
    let share: Vec<f64> = s.iter().map(|c| within(c, 22.0, 30.0) as f64 / total(c) as f64).collect();
    assert!(share[0] < 0.25 && share[1] > 0.75 && share[2] < 0.1 && share[3] > 0.75, "shares of the water on the hole's edge at steps {steps:?}: {share:?}");
}
