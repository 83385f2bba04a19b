//! Rigid bodies two-way coupled to water: Archimedes, momentum exchange.

mod common;

use common::load;
use std::f64::consts::PI;
use tidepool::driver::Driver;
use tidepool::grid::Location;
use tidepool::math::{Real, Vec3};
use tidepool::world::World;

/// Height of the free surface at horizontal position (x, z): the zero of the level set in that
/// column, linearly interpolated.
fn surface_height(world: &World, x: Real, z: Real) -> Real {
    let grid = &world.grid;
    let [i, _, k] = grid.cell_of(&Vec3::new(x, 0.0, z));
    let phi = &world.liquid.phi;
    for j in 0..grid.dims[1] - 1 {
        let (a, b) = (phi.get(i, j, k), phi.get(i, j + 1, k));
        if a < 0.0 && b >= 0.0 {
            let y = grid.position(Location::Cell, i, j, k).y;
            return y + grid.dx * a / (a - b);
        }
    }
    panic!("no surface in the column at ({x}, {z})");
}

/// A tank 1 x 0.5 x 0.6 m, 50 cells across (2 cm cells), filled to 0.3 m, with one body of
/// density 500 kg/m^3 given by `shape`. Runs 3 s and returns the body's submerged volume
/// fraction every frame, from the height of the water far from it and `fraction(draft)`.
fn floating(shape: &str, bottom_offset: Real, fraction: impl Fn(Real) -> Real) -> Vec<Real> {
    let loaded = load(&format!(
        r#"
[simulation]
frames = 72
[domain]
min = [0.0, 0.0, 0.0]
max = [1.0, 0.5, 0.6]
resolution = 50
[[liquid.region]]
shape.box = {{ min = [-1.0, -1.0, -1.0], max = [2.0, 0.3, 2.0] }}
[[body]]
name = "floater"
shape.{shape}
density = 500.0
"#
    ));
    let mut driver = Driver::new(World::build(&loaded), Vec::new());
    (0..72)
        .map(|_| {
            driver.advance_frame(72, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
            let world = &driver.world;
            let bottom = world.bodies[0].position.y - bottom_offset;
            fraction(surface_height(world, 0.05, 0.05) - bottom)
        })
        .collect()
}

/// The mean of the last two seconds (48 frames): the body heaves about its equilibrium, the
/// waves it makes reflecting from the tank's walls.
fn settled(fractions: &[Real]) -> Real {
    let tail = &fractions[fractions.len() - 48..];
    tail.iter().sum::<Real>() / tail.len() as Real
}

/// Archimedes for a flat box (0.32 x 0.12 x 0.32 m, 6 cells tall) of half the water's density,
/// released a centimetre above its floating depth: half its volume under water.
#[test]
fn floating_box_displaces_its_weight_of_water() {
    let height = 0.12;
    let fractions = floating("box = { min = [0.34, 0.25, 0.14], max = [0.66, 0.37, 0.46] }", 0.5 * height, |draft| draft / height);
    let mean = settled(&fractions);
    assert!((mean - 0.5).abs() < 0.03 * 0.5, "submerged fraction {mean}, frames {fractions:?}");
}

/// Archimedes for a ball of radius 0.1 m (10 cells across) of half the water's density:
/// half its volume under water, from the submerged cap `pi h^2 (3r - h) / 3`.
#[test]
fn floating_ball_displaces_its_weight_of_water() {
    let r: Real = 0.1;
    let cap = |h: Real| {
        let h = h.clamp(0.0, 2.0 * r);
        PI * h * h * (3.0 * r - h) / 3.0 / (4.0 / 3.0 * PI * r.powi(3))
    };
    let fractions = floating("sphere = { center = [0.5, 0.31, 0.3], radius = 0.1 }", r, cap);
    let mean = settled(&fractions);
    assert!((mean - 0.5).abs() < 0.03 * 0.5, "submerged fraction {mean}, frames {fractions:?}");
}
