//! The example scenes in `scenes/` do what their headers promise (issue 23): each test loads
//! the scene file itself, shortened or on a coarser grid where the outcome shows there too, and
//! asserts that outcome. (Surface-flow scenes: tests/surface_flow.rs.)

mod common;

use std::f64::consts::PI;
use tidepool::math::Real;
use tidepool::scene::{self, LoadedScene};

/// `scenes/<name>.toml` with each `(from, to)` of `edits` replaced in its text (each must occur).
fn example(name: &str, edits: &[(&str, &str)]) -> LoadedScene {
    let mut text = std::fs::read_to_string(common::scenes_dir().join(format!("{name}.toml"))).expect("the example scene");
    for (from, to) in edits {
        assert!(text.contains(from), "{name}.toml has no `{from}`");
        text = text.replace(from, to);
    }
    scene::parse(&text, &format!("{name}.toml"), name, None, &common::scenes_dir()).unwrap_or_else(|e| panic!("{e}"))
}

/// The share of a ball of radius `r` below a level surface `draft` above its lowest point.
fn ball_fraction_under(draft: Real, r: Real) -> Real {
    common::submerged_cap(draft, r) / (4.0 / 3.0 * PI * r.powi(3))
}

fn mean(values: &[Real]) -> Real {
    values.iter().sum::<Real>() / values.len() as Real
}

/// `buoyancy.toml`, its first 3 s on a coarser grid (48 cells across, 3.3 cm: the balls 2.4
/// cells in radius): over the last second the cork (250 kg/m^3) floats with less than half of
/// it under water and the pine (750) with more than half, both with part of them above and
/// part below (Archimedes to 2% is tests/bodies.rs's); the ball of water's density never leaves
/// its depth by two cells, while the cork rises by seven; the brick and the steel ball end on
/// the floor, their centres within half a cell of their radius above it.
#[test]
fn buoyancy_floats_the_light_balls_holds_the_neutral_one_and_sinks_the_heavy_ones() {
    let loaded = example("buoyancy", &[("frames = 96", "frames = 72"), ("resolution = 64", "resolution = 48")]);
    let (r, dx, start) = (0.08, 1.6 / 48.0, 0.2);
    let (mut cork, mut pine, mut neutral): (Vec<Real>, Vec<Real>, Real) = (Vec::new(), Vec::new(), 0.0);
    let world = common::each_frame(&loaded, 72, |world, record| {
        let balls = &world.solids.rigid;
        let level = common::surface_height(world, 0.65, 0.02);
        if record.frame >= 48 {
            cork.push(ball_fraction_under(level - (balls[0].position.y - r), r));
            pine.push(ball_fraction_under(level - (balls[1].position.y - r), r));
        }
        neutral = neutral.max((balls[2].position.y - start).abs());
    });
    let (cork, pine) = (mean(&cork), mean(&pine));
    assert!(cork > 0.0 && cork < 0.5, "the cork floats {cork} under");
    assert!(pine > 0.5 && pine < 1.0, "the pine floats {pine} under");
    assert!(neutral < 2.0 * dx, "the neutral ball left its depth by {neutral} m");
    for heavy in world.solids.rigid.iter().skip(3) {
        let height = heavy.position.y - r;
        assert!(height.abs() < 0.5 * dx, "`{}` ends {height} m above the floor", heavy.name);
    }
}

/// The highest particle of the fountains `name` over their first 1.5 s (while the nozzles run)
/// on a coarser grid (32 cells up, 5 cm).
fn fountain_top(name: &str) -> Real {
    let loaded = example(name, &[("resolution = 48", "resolution = 32")]);
    let mut top: Real = 0.0;
    common::each_frame(&loaded, 36, |world, _| {
        let tidepool::fluids::Fluid::Flip(flip) = &world.fluid else { panic!("{name}: not FLIP") };
        top = flip.positions.iter().map(|x| x.y).fold(top, Real::max);
    });
    top
}

/// `fountains.toml` against `fountains_bilateral.toml`: where the bilateral solve holds the
/// jets together in ropes, the unilateral one lets them spray, so its spray reaches higher —
/// by more than a cell (measured: 1.22 m against 1.13 m).
#[test]
fn fountains_the_unilateral_jets_spray_higher_than_the_bilateral() {
    let (unilateral, bilateral) = (fountain_top("fountains"), fountain_top("fountains_bilateral"));
    assert!(unilateral > bilateral + 0.05, "unilateral spray reaches {unilateral} m, bilateral {bilateral} m");
}
