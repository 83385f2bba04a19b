//! The example scenes in `scenes/` do what their headers promise (issue 23): each test loads
//! the scene file itself, shortened or on a coarser grid where the outcome shows there too, and
//! asserts that outcome. (Surface-flow scenes: tests/surface_flow.rs.)

mod common;

use std::f64::consts::PI;
use tidepool::math::Real;
use tidepool::scene::{self, LoadedScene};

/// `scenes/<name>.toml` with each `(from, to)` of `edits` replaced in its text (each must occur).
fn example(name: &str, edits: &[(&str, &str)]) -> LoadedScene {
    let mut text = common::example_text(&common::scenes_dir().join(format!("{name}.toml")));
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

/// `reduced_spheres_buoyancy.toml` on a coarser grid (48 cells along x, 4.2 cm: the spheres
/// 2.2 cells in radius): over its last second the soft spheres of 200, 500 and 800 kg/m^3 float
/// with that share of them under water to within 0.05 (measured 0.21, 0.48, 0.77), and the one
/// of 1500 ends on the floor, its centre within half a cell of its radius above it.
#[test]
fn reduced_spheres_float_by_their_density_and_the_heaviest_sinks() {
    let loaded = example("reduced_spheres_buoyancy", &[("resolution = 80", "resolution = 48")]);
    let (r, dx) = (0.09, 2.0 / 48.0);
    let mut under: Vec<Vec<Real>> = vec![Vec::new(); 3];
    let world = common::each_frame(&loaded, 72, |world, record| {
        let level = common::surface_height(world, 0.02, 0.02);
        if record.frame >= 48 {
            for (s, fractions) in under.iter_mut().enumerate() {
                fractions.push(ball_fraction_under(level - (world.solids.reduced[s].bodies[0].position.y - r), r));
            }
        }
    });
    let under: Vec<Real> = under.iter().map(|f| mean(f)).collect();
    for (fraction, density) in under.iter().zip([200.0, 500.0, 800.0]) {
        assert!((fraction - density / 1000.0).abs() < 0.05, "the sphere of {density} kg/m^3 floats {fraction} under");
    }
    let height = world.solids.reduced[4].bodies[0].position.y - r;
    assert!(height.abs() < 0.5 * dx, "the sphere of 1500 kg/m^3 ends {height} m above the floor");
}

/// `torus_tub.toml` on a coarser grid (32 cells across, 3.1 cm: the tube 2.2 cells in radius):
/// the soft torus (600 kg/m^3) squashes as it hits the water — its modes take up more than
/// 0.01 J (measured 0.066 J) — and settles floating: over its last second, still bobbing by a
/// few centimetres, its centre is on average within a third of the tube's radius of where a
/// level torus floats, 0.16 of the tube's radius under the water (the depth at which a
/// circle of the tube's section is 60% under; measured 0.21).
#[test]
fn torus_tub_the_soft_torus_squashes_and_settles_floating() {
    let loaded = example("torus_tub", &[("resolution = 40", "resolution = 32")]);
    let minor = 0.07;
    let (mut depth, mut rang): (Vec<Real>, Real) = (Vec::new(), 0.0);
    common::each_frame(&loaded, 72, |world, record| {
        let torus = &world.solids.reduced[0].bodies[0];
        rang = rang.max(torus.modal_energy());
        if record.frame >= 48 {
            depth.push(common::surface_height(world, 0.02, 0.02) - torus.position.y);
        }
    });
    assert!(rang > 0.01, "the torus's modes took up only {rang} J");
    let depth = mean(&depth);
    assert!((depth - 0.16 * minor).abs() < minor / 3.0, "the torus floats with its centre {depth} m under the water");
}

/// `paddle.toml` on a coarser grid (48 cells along x, 3.3 cm), its first second, before the
/// paddle (sweeping at 0.3 m/s) reaches the first ball: the wave it pushes ahead carries all
/// three floating balls along +x, each by more than a cell (measured 5.3, 4.7 and 4.3 cm, the
/// farther later), and none ever drifts back against it by a tenth of a cell.
#[test]
fn paddle_the_wave_carries_the_balls_along() {
    let loaded = example("paddle", &[("resolution = 64", "resolution = 48")]);
    let dx = 1.6 / 48.0;
    let (mut start, mut back): (Vec<Real>, Real) = (Vec::new(), 0.0);
    let world = common::each_frame(&loaded, 24, |world, record| {
        if record.frame == 0 {
            start = world.solids.rigid.iter().map(|b| b.position.x).collect();
        }
        back = world.solids.rigid.iter().zip(&start).skip(1).map(|(b, x)| x - b.position.x).fold(back, Real::max);
    });
    for (ball, x) in world.solids.rigid.iter().zip(&start).skip(1) {
        assert!(ball.position.x - x > dx, "`{}` moved {} m along x", ball.name, ball.position.x - x);
    }
    assert!(back < 0.1 * dx, "a ball drifted {back} m back");
}

/// `default.toml` (the built-in scene) on a coarser grid (48 cells along x, 4.2 cm), its first
/// half second: the collapsing column's surge lifts the floating crate off the shallow water's
/// floor and sweeps it along x towards the block, by more than three cells (measured 17.5 cm)
/// and up by more than half a cell (measured 5.2 cm).
#[test]
fn default_scene_the_surge_sweeps_the_crate_along() {
    let loaded = example("default", &[("resolution = 64", "resolution = 48")]);
    let dx = 2.0 / 48.0;
    let mut start = None;
    let world = common::each_frame(&loaded, 12, |world, _| {
        start.get_or_insert(world.solids.rigid[0].position);
    });
    let moved = world.solids.rigid[0].position - start.expect("frame 0 was visited");
    assert!(moved.x > 3.0 * dx && moved.y > 0.5 * dx, "the crate moved {moved:?}");
}
