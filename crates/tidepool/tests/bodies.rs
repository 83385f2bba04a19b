//! Rigid bodies two-way coupled to water: Archimedes, momentum exchange.

mod common;

use std::f64::consts::PI;
use tidepool::grid::Location;
use tidepool::math::{Real, Vec3};
use tidepool::world::World;

/// A tank 0.6 x 0.6 x 0.3 m, 30 cells across (2 cm cells), filled to 0.4 m, with one body
/// `shape` of the given density released at rest; runs `frames` frames at 24 per second and
/// returns the final world and the per-frame records.
fn body_in_tank(density: Real, shape: &str, frames: u32) -> (World, Vec<tidepool::driver::FrameRecord>) {
    let loaded = common::tank(
        &format!("frames = {frames}"),
        [0.6, 0.6, 0.3],
        30,
        0.4,
        &format!(
            r#"
[[body]]
name = "body"
shape.{shape}
density = {density}
"#
        ),
    );
    common::simulate(&loaded, frames)
}

/// A ball of radius 0.06 m (3 cells) with its centre at `y`.
fn ball_in_tank(density: Real, y: Real, frames: u32) -> (World, Vec<tidepool::driver::FrameRecord>) {
    body_in_tank(density, &format!("sphere = {{ center = [0.3, {y}, 0.15], radius = 0.06 }}"), frames)
}

/// Bodies of the water's density released under water stay within one cell (2 cm) of where
/// they were released for 2 s: a ball of radius 3 cells and a tilted capsule, both off the
/// grid's planes. The liquid pushes each face's share of the body, so the pushes add up to
/// the weight of the liquid the body's shape displaces (without the partition of the shape's
/// volume into dual cells being exact, this ball drifted 11 cm in 2 s).
#[test]
fn neutral_bodies_hover() {
    let shapes = [
        ("sphere = { center = [0.287, 0.213, 0.141], radius = 0.06 }", Vec3::new(0.287, 0.213, 0.141)),
        ("capsule = { from = [0.22, 0.19, 0.13], to = [0.37, 0.25, 0.17], radius = 0.045 }", Vec3::new(0.295, 0.22, 0.15)),
    ];
    for (shape, centre) in shapes {
        let (world, _) = body_in_tank(1000.0, shape, 48);
        let drift = (world.solids.rigid[0].position - centre).norm();
        assert!(drift < 0.02, "{shape}: drifted {drift} m");
    }
}

/// A ball three times as dense as water sinks and comes to rest on the floor; while it falls
/// through the water the liquid volume changes by less than 2% (no leaking through the ball).
#[test]
fn heavy_ball_sinks_to_the_floor_without_leaking() {
    let (world, records) = ball_in_tank(3000.0, 0.3, 48);
    let b = &world.solids.rigid[0];
    assert!((b.position.y - 0.06).abs() < 0.005, "ball centre at {} m, expected resting at 0.06 m", b.position.y);
    assert!(b.velocity.norm() < 0.05, "ball still moving at {:?}", b.velocity);
    let v0 = records[0].measures.volume;
    for r in &records {
        let change = r.measures.volume / v0 - 1.0;
        assert!(change.abs() < 0.02, "frame {}: volume changed by {:.2}%", r.frame, 100.0 * change);
    }
}

/// Density ratios from 0.01 to 100 run 1 s (the light ball shoots up through the surface, the
/// heavy one strikes the floor) without a blow-up, and the momentum the liquid and
/// the ball exchange in the coupled solve is equal and opposite every substep (the total
/// impulse on liquid and body is checked inside the solve; here the run must just complete).
#[test]
fn extreme_density_ratios_stay_stable() {
    for density in [10.0, 100_000.0] {
        let (world, _) = ball_in_tank(density, 0.3, 24);
        let b = &world.solids.rigid[0];
        assert!(b.position.iter().all(|v| v.is_finite()) && b.velocity.norm() < 5.0, "density {density}: {:?} {:?}", b.position, b.velocity);
    }
}

/// Without gravity and away from walls, everything a ball's momentum changes by in a substep
/// comes from the coupled solve: it equals minus the impulse the solve gave the liquid, to
/// round-off, every substep.
#[test]
fn ball_and_liquid_exchange_equal_and_opposite_impulses_every_substep() {
    let loaded = common::tank(
        "frames = 1\ngravity = [0.0, 0.0, 0.0]",
        [0.6, 0.6, 0.3],
        30,
        0.45,
        r#"
[[body]]
name = "ball"
shape.sphere = { center = [0.2, 0.25, 0.15], radius = 0.06 }
density = 700.0
velocity = [0.8, 0.3, 0.0]
"#,
    );
    let mut world = World::build(&loaded).expect("the scene builds");
    let exchanged = common::exchanged_impulse(&mut world, 40, "level set");
    assert!(exchanged > 0.1 * (world.solids.rigid[0].mass * 0.8), "the ball hardly felt the water");
}

/// Positions advance with the half-step velocity of Newmark's first coupled solve (Lu, Jin,
/// Fedkiw sec. 6): a ball released at rest in still water, whose acceleration `a` (gravity,
/// buoyancy and the added mass of the water it pushes) is constant over the first substep,
/// moves by `a dt^2 / 2 = dt v^1 / 2` in it, as it should; a first-order position update
/// would move it by `dt v^1`, twice as far.
#[test]
fn positions_advance_with_the_half_step_velocity() {
    let loaded = common::tank(
        "frames = 1",
        [0.6, 0.6, 0.3],
        30,
        0.4,
        r#"
[[body]]
name = "ball"
shape.sphere = { center = [0.3, 0.25, 0.15], radius = 0.06 }
density = 2000.0
"#,
    );
    let mut world = World::build(&loaded).expect("the scene builds");
    let (start, dt) = (world.solids.rigid[0].position, 0.01);
    tidepool::pipeline::step(&mut world, dt).unwrap();
    let (moved, v) = (world.solids.rigid[0].position - start, world.solids.rigid[0].velocity);
    assert!(v.y < -0.5 * 9.81 * dt * 0.5, "the ball hardly sank: {v:?}");
    assert!((moved - 0.5 * dt * v).norm() < 0.01 * (0.5 * dt * v).norm(), "moved {moved:?}, expected {:?}", 0.5 * dt * v);
}

/// A kinematic paddle moves exactly as prescribed, whatever the water does, and moves the
/// water: in a closed tank the water it displaces goes the other way (the liquid's centre of
/// mass moves back as the paddle's submerged volume moves forward, so the liquid's momentum is
/// at least about `-rho V_submerged v` once the flow is set up), and no water is lost.
#[test]
fn kinematic_paddle_moves_as_prescribed_and_pushes_the_water() {
    let loaded = common::tank(
        "frames = 24",
        [1.0, 0.5, 0.3],
        40,
        0.25,
        r#"
[[body]]
name = "paddle"
kind = "kinematic"
shape.box = { min = [0.2, 0.05, 0.05], max = [0.25, 0.4, 0.25] }
velocity = [0.3, 0.0, 0.0]
angular_velocity = [0.0, 0.5, 0.0]
"#,
    );
    let start = World::build(&loaded).expect("the scene builds").solids.rigid[0].clone();
    let (world, records) = common::simulate(&loaded, 24);
    let paddle = &world.solids.rigid[0];
    assert!((paddle.position - (start.position + Vec3::new(0.3, 0.0, 0.0))).norm() < 1e-9, "paddle at {:?}", paddle.position);
    assert!((paddle.orientation.angle() - 0.5).abs() < 1e-9, "paddle turned {} rad", paddle.orientation.angle());
    let momentum = records.last().unwrap().measures.momentum;
    let displaced = 1000.0 * 0.05 * 0.2 * 0.2 * 0.3;
    assert!(momentum.x < -0.5 * displaced, "liquid momentum {momentum:?}, displaced water's {displaced}");
    let v0 = records[0].measures.volume;
    assert!(records.iter().all(|r| (r.measures.volume / v0 - 1.0).abs() < 0.02));
}

/// A thin-walled boat (an open box with 5 cm walls, two cells) floats at the draft Archimedes
/// gives for its weight, `m / (rho L W)`, and its hollow stays dry.
#[test]
fn thin_walled_boat_floats_dry_at_its_archimedes_draft() {
    let loaded = common::tank(
        "frames = 36",
        [1.2, 0.6, 0.6],
        48,
        0.25,
        r#"
[[body]]
name = "boat"
shape.open-box = { min = [0.4, 0.225, 0.15], max = [0.8, 0.375, 0.45], wall = 0.05 }
density = 300.0
"#,
    );
    let boat = World::build(&loaded).expect("the scene builds").solids.rigid[0].clone();
    let expected = boat.mass / (1000.0 * 0.4 * 0.3);
    // Points of the hull in the body's frame: the middle of its bottom, and of its hollow.
    let (bottom, hollow) = (Vec3::new(0.6, 0.225, 0.3) - boat.position, Vec3::new(0.6, 0.33, 0.3) - boat.position);
    let mut drafts = Vec::new();
    common::each_frame(&loaded, 36, |world, record| {
        if record.frame == 0 {
            return;
        }
        let pose = world.solids.rigid[0].pose();
        drafts.push(common::surface_height(world, 0.05, 0.05) - pose.to_world(&bottom).y);
        let inside = pose.to_world(&hollow);
        let phi = world.level_set().unwrap().grid.interpolate(&world.level_set().unwrap().liquid.phi, Location::Cell, &inside);
        assert!(phi > 0.0, "water in the boat at {inside:?}");
    });
    let tail = &drafts[12..];
    let mean = tail.iter().sum::<Real>() / tail.len() as Real;
    assert!((mean - expected).abs() < 0.03 * expected, "draft {mean} m, expected {expected} m: {drafts:?}");
}

/// A bowl made of a mesh with thickness (`shape.shell`: the open lower half of a sphere of
/// radius 0.15 m, a wall 5 cm = 2 cells thick) floats at the draft Archimedes gives: the
/// submerged cap of its outer sphere (radius 0.175 m) holds its weight of water, and its
/// hollow stays dry.
#[test]
fn shell_bowl_floats_dry_at_its_archimedes_draft() {
    let (r, t) = (0.15, 0.05);
    let path = std::env::temp_dir().join(format!("tidepool-bowl-{}.obj", std::process::id()));
    std::fs::write(&path, bowl_obj(r, 48, 16)).unwrap();
    let rim = Vec3::new(0.6, 0.37, 0.3);
    let loaded = common::tank(
        "frames = 36",
        [1.2, 0.6, 0.6],
        48,
        0.25,
        &format!(
            r#"
[[body]]
name = "bowl"
shape.shell = {{ path = "{}", thickness = {t}, translate = [{}, {}, {}] }}
density = 250.0
"#,
            path.display(),
            rim.x,
            rim.y,
            rim.z
        ),
    );
    std::fs::remove_file(&path).unwrap();
    let bowl = World::build(&loaded).expect("the scene builds").solids.rigid[0].clone();
    let outer = r + 0.5 * t;
    let cap = |h: Real| PI * h * h * (3.0 * outer - h) / 3.0;
    let (mut lo, mut hi) = (0.0, outer);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if cap(mid) * 1000.0 < bowl.mass {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let expected = lo;
    let (bottom, hollow) = (rim - Vec3::new(0.0, outer, 0.0) - bowl.position, rim - Vec3::new(0.0, r - 0.5 * t - 0.01, 0.0) - bowl.position);
    let mut drafts = Vec::new();
    common::each_frame(&loaded, 36, |world, record| {
        if record.frame == 0 {
            return;
        }
        let pose = world.solids.rigid[0].pose();
        drafts.push(common::surface_height(world, 0.05, 0.05) - pose.to_world(&bottom).y);
        let inside = pose.to_world(&hollow);
        let phi = world.level_set().unwrap().grid.interpolate(&world.level_set().unwrap().liquid.phi, Location::Cell, &inside);
        assert!(phi > 0.0, "water in the bowl at {inside:?}");
    });
    let tail = &drafts[12..];
    let mean = tail.iter().sum::<Real>() / tail.len() as Real;
    assert!((mean - expected).abs() < 0.03 * expected, "draft {mean} m, expected {expected} m: {drafts:?}");
}

/// An OBJ file of the open lower half of a sphere of radius `r` centred at the origin.
fn bowl_obj(r: Real, segments: usize, rings: usize) -> String {
    let mut obj = format!("v 0 {} 0\n", -r);
    for ring in 1..=rings {
        let theta = 0.5 * PI * ring as Real / rings as Real;
        for s in 0..segments {
            let phi = 2.0 * PI * s as Real / segments as Real;
            obj += &format!("v {} {} {}\n", r * theta.sin() * phi.cos(), -r * theta.cos(), r * theta.sin() * phi.sin());
        }
    }
    let at = |ring: usize, s: usize| 2 + (ring - 1) * segments + s % segments;
    for s in 0..segments {
        obj += &format!("f 1 {} {}\n", at(1, s), at(1, s + 1));
        for ring in 1..rings {
            obj += &format!("f {} {} {}\nf {} {} {}\n", at(ring, s), at(ring + 1, s), at(ring + 1, s + 1), at(ring, s), at(ring + 1, s + 1), at(ring, s + 1));
        }
    }
    obj
}

/// A kinematic body on a path is where its keyframes put it, interpolated linearly, at every
/// frame, whatever the water does.
#[test]
fn kinematic_body_follows_its_path() {
    let loaded = common::tank(
        "frames = 24",
        [1.0, 0.5, 0.4],
        30,
        0.2,
        r#"
[[body]]
name = "plunger"
kind = "kinematic"
shape.box = { min = [0.2, 0.25, 0.1], max = [0.3, 0.35, 0.3] }
path = [[0.25, 0.0, 0.0, 0.0], [0.5, 0.0, -0.15, 0.0], [1.0, 0.3, -0.15, 0.0]]
"#,
    );
    let start = World::build(&loaded).expect("the scene builds").solids.rigid[0].position;
    common::each_frame(&loaded, 24, |world, record| {
        let t = record.time;
        let offset = if t <= 0.25 {
            Vec3::zeros()
        } else if t <= 0.5 {
            Vec3::new(0.0, -0.15 * (t - 0.25) / 0.25, 0.0)
        } else {
            Vec3::new(0.3 * (t - 0.5) / 0.5, -0.15, 0.0)
        };
        let at = world.solids.rigid[0].position;
        assert!((at - (start + offset)).norm() < 1e-9, "t = {t}: at {at:?}, expected {:?}", start + offset);
    });
}

/// An OBJ file of the box `[-h_x, h_x] x [-h_y, h_y] x [-h_z, h_z]` (outward triangles), `half`
/// its half extents.
fn box_obj(half: [Real; 3]) -> String {
    let mut obj = String::new();
    for c in 0..8 {
        let corner: [Real; 3] = std::array::from_fn(|a| if c & (1 << a) == 0 { -half[a] } else { half[a] });
        obj += &format!("v {} {} {}\n", corner[0], corner[1], corner[2]);
    }
    // Each face as two triangles, vertices numbered from 1, counter-clockwise seen from outside.
    for [p, q, r, s] in [[1, 5, 7, 3], [2, 4, 8, 6], [1, 2, 6, 5], [3, 7, 8, 4], [1, 3, 4, 2], [5, 6, 8, 7]] {
        obj += &format!("f {p} {q} {r}\nf {p} {r} {s}\n");
    }
    obj
}

/// Bodies held still in still water (static, so the water keeps its level): the submerged
/// volume each reports is the exact volume of its shape below the water level measured far
/// from it, within 1%, for the level-set liquid and for FLIP, when the run starts and after
/// the liquid has moved around them for a few frames: a ball (4 cells in radius), a box off
/// the grid's lines and a mesh cube turned 30 degrees about the vertical, each cut by the
/// surface at a different height.
#[test]
fn held_bodies_report_the_volume_below_the_water_level() {
    let path = std::env::temp_dir().join(format!("tidepool-cube-{}.obj", std::process::id()));
    std::fs::write(&path, box_obj([0.07; 3])).unwrap();
    let (r, ball_y) = (0.08, 0.323);
    let (box_lo, box_hi) = ([0.307, 0.251, 0.113], [0.463, 0.373, 0.287]);
    let cube_y = 0.281;
    for method in ["level-set", "flip"] {
        let loaded = common::tank(
            &format!("frames = 4\n[liquid]\nmethod = \"{method}\""),
            [0.8, 0.5, 0.6],
            40,
            0.3,
            &format!(
                r#"
[[body]]
name = "ball"
kind = "static"
shape.sphere = {{ center = [0.15, {ball_y}, 0.2], radius = {r} }}
[[body]]
name = "box"
kind = "static"
shape.box = {{ min = {box_lo:?}, max = {box_hi:?} }}
[[body]]
name = "cube"
kind = "static"
shape.mesh = {{ path = "{}", rotate = [0.0, 30.0, 0.0], translate = [0.62, {cube_y}, 0.4] }}
"#,
                path.display()
            ),
        );
        common::each_frame(&loaded, 4, |world, record| {
            if record.frame % 4 != 0 {
                return;
            }
            let level = common::surface_height(world, 0.75, 0.55);
            let exact = [
                common::submerged_cap(level - (ball_y - r), r),
                (box_hi[0] - box_lo[0]) * (box_hi[2] - box_lo[2]) * (level - box_lo[1]).clamp(0.0, box_hi[1] - box_lo[1]),
                0.14 * 0.14 * (level - (cube_y - 0.07)).clamp(0.0, 0.14),
            ];
            let reported = world.submerged_volumes();
            for (name, (got, want)) in ["ball", "box", "cube"].iter().zip(reported.iter().zip(exact)) {
                assert!((got - want).abs() < 0.01 * want, "{method}, frame {}, {name}: submerged {got} m^3, exact {want} m^3 below the level {level} m", record.frame);
            }
        });
    }
    std::fs::remove_file(&path).ok();
}

/// A ball of radius 7.5 cm (3 cells) and half the water's density in a 0.6 m tank, released
/// `lift` above its Archimedes depth with `damping`; runs 2 s and returns, over the last second,
/// the mean submerged volume over the displaced volume Archimedes gives, and the largest speed.
fn damped_ball(lift: Real, damping: Real) -> (Real, Real) {
    let r: Real = 0.075;
    let loaded = common::tank(
        "frames = 48",
        [0.6, 0.5, 0.6],
        24,
        0.3,
        &format!("[[body]]\nname = \"ball\"\nshape.sphere = {{ center = [0.3, {}, 0.3], radius = {r} }}\ndensity = 500.0\ndamping = {damping}\n", 0.3 + lift),
    );
    let displaced = 0.5 * 4.0 / 3.0 * PI * r.powi(3);
    let (mut ratios, mut fastest) = (Vec::new(), 0.0 as Real);
    common::each_frame(&loaded, 48, |world, record| {
        if record.frame > 24 {
            ratios.push(world.submerged_volumes()[0] / displaced);
            fastest = fastest.max(world.solids.rigid[0].velocity.norm());
        }
    });
    (ratios.iter().sum::<Real>() / ratios.len() as Real, fastest)
}

/// `damping` takes a body's motion out without moving where it floats: released at its
/// Archimedes depth, a ball with `damping = 10` floats as deep as one without (the decay acts on
/// the velocity before gravity is added, so a body at rest feels its whole weight); dropped from
/// 3 cm above, it moves less than half as fast as the undamped one a second later.
#[test]
fn damping_settles_a_body_where_it_floats_undamped() {
    let (undamped, _) = damped_ball(0.0, 0.0);
    let (damped, _) = damped_ball(0.0, 10.0);
    assert!((damped - undamped).abs() < 0.005 * undamped, "submerged over displaced: {damped} damped, {undamped} undamped");
    let (_, swinging) = damped_ball(0.03, 0.0);
    let (_, settling) = damped_ball(0.03, 10.0);
    assert!(settling < 0.5 * swinging, "largest speed in the last second: {settling} m/s damped, {swinging} m/s undamped");
}

/// The vertical acceleration (m/s^2) of a ball of radius 7.5 cm and density `ratio` times the
/// water's, placed at rest at its Archimedes height in still water 0.3 m deep (tank 0.6 x 0.5 x
/// 0.6 m, `resolution` cells across), over one substep of 1 ms: zero if the coupled solve lifts
/// it by exactly the weight of the water it displaces.
fn residual_lift(ratio: Real, resolution: u32) -> Real {
    let r: Real = 0.075;
    // The submerged cap's height `h`: pi h^2 (3r - h) / 3 = ratio (4/3) pi r^3, by bisection.
    let (mut lo, mut hi) = (0.0, 2.0 * r);
    for _ in 0..60 {
        let h = 0.5 * (lo + hi);
        if h * h * (3.0 * r - h) < 4.0 * ratio * r.powi(3) {
            lo = h;
        } else {
            hi = h;
        }
    }
    let y = 0.3 - lo + r;
    let mut world = World::build(&floaters("level-set", 0.6, resolution, &[("ball", ratio, 0.3, y)], "dynamic", 0.0)).unwrap();
    let dt = 1e-3;
    tidepool::pipeline::step(&mut world, dt).unwrap();
    world.solids.rigid[0].velocity.y / dt
}

/// Placed at rest at its Archimedes height, a floating ball feels almost no net force: its
/// acceleration is below 1% of gravity at 3 and at 6 cells in radius, for densities from a
/// tenth to nine tenths of the water's (measured: at most 0.06 m/s^2; before the liquid beside a
/// body at the waterline was carried by it, up to 0.33 m/s^2, the ball floating up to a quarter
/// of a cell high; docs/methods/monolithic-coupling.md).
#[test]
fn floating_balls_balance_at_their_archimedes_height() {
    for resolution in [24, 48] {
        for ratio in [0.1, 0.3, 0.5, 0.7, 0.9] {
            let lift = residual_lift(ratio, resolution);
            assert!(lift.abs() < 0.01 * 9.81, "density ratio {ratio}, {resolution} cells across: {lift} m/s^2");
        }
    }
}

/// A floating body's shape, placed with its centre at (`x`, `y`, 0.3): a ball of radius
/// 7.5 cm (3 cells at 24 across 0.6 m), a flat box 0.2 x 0.08 x 0.2 m, or the same box as a
/// mesh ([`slab_obj`]) turned 30 degrees about the vertical, off the grid's lines.
fn floater(shape: &str, x: Real, y: Real) -> String {
    match shape {
        "ball" => format!("shape.sphere = {{ center = [{x}, {y}, 0.3], radius = 0.075 }}"),
        "box" => format!("shape.box = {{ min = [{}, {}, 0.2], max = [{}, {}, 0.4] }}", x - 0.1, y - 0.04, x + 0.1, y + 0.04),
        _ => format!("shape.mesh = {{ path = \"{}\", rotate = [0.0, 30.0, 0.0], translate = [{x}, {y}, 0.3] }}", slab_obj().display()),
    }
}

/// An OBJ file of the flat box `[-0.1, 0.1] x [-0.04, 0.04] x [-0.1, 0.1]`, written once per
/// test process.
fn slab_obj() -> &'static std::path::Path {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("tidepool-slab-{}.obj", std::process::id()));
        std::fs::write(&path, box_obj([0.1, 0.04, 0.1])).unwrap();
        path
    })
}

/// Still water 0.3 m deep in a tank `width` x 0.5 x 0.6 m, `cells` across its width, the liquid
/// simulated by `method`, with the bodies `(shape, density ratio, x, y)`: dynamic with
/// `damping`, or held still (`kind = "kinematic"`).
fn floaters(method: &str, width: Real, cells: u32, bodies: &[(&str, Real, Real, Real)], kind: &str, damping: Real) -> tidepool::scene::LoadedScene {
    let rest: String = bodies
        .iter()
        .enumerate()
        .map(|(i, &(shape, ratio, x, y))| match kind {
            "kinematic" => format!("[[body]]\nname = \"b{i}\"\nkind = \"kinematic\"\n{}\n", floater(shape, x, y)),
            _ => format!("[[body]]\nname = \"b{i}\"\n{}\ndensity = {}\ndamping = {damping}\n", floater(shape, x, y), ratio * 1000.0),
        })
        .collect();
    common::tank(&format!("frames = 48\n[liquid]\nmethod = \"{method}\""), [width, 0.5, 0.6], cells, 0.3, &rest)
}

/// The height of a body's centre at which it displaces its own weight of water 0.3 m deep
/// (its submerged volume at rest, checked against exact volumes above, equals its mass over the
/// water's density), by bisection.
fn archimedes_height(cells: u32, shape: &str, ratio: Real) -> Real {
    let (mut lo, mut hi) = (0.2, 0.4);
    for _ in 0..16 {
        let y = 0.5 * (lo + hi);
        let world = World::build(&floaters("level-set", 0.6, cells, &[(shape, ratio, 0.3, y)], "dynamic", 0.0)).unwrap();
        if world.submerged_volumes()[0] * 1000.0 > world.solids.rigid[0].mass {
            lo = y;
        } else {
            hi = y;
        }
    }
    0.5 * (lo + hi)
}

/// The volume of body `i` below the water level far from it (m^3): its exact shape where it
/// is, cut by the level plane, whatever the water does next to it. The level is read 12 cm
/// from the tank's corner walls, where FLIP's particles read it as the open water does (in the
/// corner column they read it a few thousandths of a cell low, which is 2% of the draft of a
/// flat box of a twentieth of the water's density).
fn below_level(world: &World, i: usize) -> Real {
    let level = common::surface_height(world, 0.12, 0.12);
    let grid = world.fluid.grid().unwrap();
    let flat = grid.sample_fn(Location::Cell, |x| x.y - level);
    tidepool::fluids::submerged_volume(grid, &flat, world.solids.coupled()[i], &Vec3::y())
}

/// The bodies `(shape, density ratio, x)` at their Archimedes heights, as [`floaters`] takes them.
fn at_archimedes_heights<'a>(bodies: &[(&'a str, Real, Real)]) -> Vec<(&'a str, Real, Real, Real)> {
    bodies.iter().map(|&(shape, ratio, x)| (shape, ratio, x, archimedes_height(24, shape, ratio))).collect()
}

/// Runs `placed` bodies, released at rest, in the liquid of `method` for 2 s with
/// `damping = 2` and returns, per body, the mean over the last second of its volume below the
/// water level far from it over its mass's worth of water.
fn settled_displacement(method: &str, width: Real, placed: &[(&str, Real, Real, Real)]) -> Vec<Real> {
    let loaded = floaters(method, width, (24.0 * width / 0.6) as u32, placed, "dynamic", 2.0);
    let mut sums = vec![0.0; placed.len()];
    let mut frames = 0;
    common::each_frame(&loaded, 48, |world, record| {
        if record.frame > 24 {
            for (i, sum) in sums.iter_mut().enumerate() {
                *sum += below_level(world, i) * 1000.0 / world.solids.rigid[i].mass;
            }
            frames += 1;
        }
    });
    sums.iter().map(|s| s / frames as Real).collect()
}

/// Archimedes at every density, at 3 cells per radius, settled (damped), in the level-set
/// liquid and in FLIP: alone in a tank, a ball of a twentieth of the water's density (in both
/// liquids), a flat box of nineteen twentieths and a mesh of that box
/// turned off the grid's lines of a twentieth; together in one tank, a ball and the mesh of half
/// and the box of a twentieth (in both liquids). Each displaces its own weight of water within
/// 2% (measured within 1.1%; before the liquid under a body's bottom at a waterline was counted
/// as the water there rather than spread through the dual cell, a level-set ball of a twentieth
/// floated 3.6% high and the mesh of a rock of a tenth 15% deep; before the level was continued
/// into the cells next to a body, FLIP bodies of a twentieth floated 10-16% deep). The bodies
/// alone here, together in the next test (two tests, so that they run side by side).
#[test]
fn floating_bodies_displace_their_weight_at_every_density() {
    let alone = [("ball", 0.05, "level-set"), ("ball", 0.05, "flip"), ("box", 0.95, "level-set"), ("mesh", 0.05, "level-set")];
    for (shape, ratio, method) in alone {
        let displaced = settled_displacement(method, 0.6, &at_archimedes_heights(&[(shape, ratio, 0.3)]))[0];
        assert!((displaced - 1.0).abs() < 0.02, "{method}: {shape} of density ratio {ratio} displaces {displaced} of its weight");
    }
}

/// The bodies of the test above together in one tank: each displaces its own weight within 2%.
#[test]
fn floating_bodies_together_displace_their_weight() {
    let together = at_archimedes_heights(&[("ball", 0.5, 0.2), ("box", 0.05, 0.6), ("mesh", 0.5, 1.0)]);
    for method in ["level-set", "flip"] {
        for ((shape, ratio, ..), displaced) in together.iter().zip(settled_displacement(method, 1.2, &together)) {
            assert!((displaced - 1.0).abs() < 0.02, "{method}: {shape} of density ratio {ratio} with two others in the tank displaces {displaced} of its weight");
        }
    }
}

/// Refined to 6 cells per radius, bodies held at their Archimedes heights in still water are
/// lifted by the weight of the water their shape displaces below the level within 1%: the
/// coupled solve's impulses on a ball and the box mesh of a twentieth and a box of nineteen
/// twentieths of the water's density, averaged over the last 15 of 30 substeps of 2 ms.
#[test]
fn refined_held_bodies_are_lifted_by_the_water_they_displace() {
    for (shape, ratio) in [("ball", 0.05), ("box", 0.95), ("mesh", 0.05)] {
        // Placed where the coarser grid floats it: the lift is compared with the water
        // displaced where it is.
        let y = archimedes_height(24, shape, ratio);
        let mut world = World::build(&floaters("level-set", 0.6, 48, &[(shape, ratio, 0.3, y)], "kinematic", 0.0)).unwrap();
        let (mut lift, mut weight) = (0.0, 0.0);
        for step in 0..30 {
            let report = tidepool::pipeline::step(&mut world, 2e-3).unwrap();
            if step >= 15 {
                lift -= report.impulse_on_liquid.y / 2e-3;
                weight += 1000.0 * 9.81 * below_level(&world, 0);
            }
        }
        assert!((lift / weight - 1.0).abs() < 0.01, "{shape} of density ratio {ratio} held at its Archimedes height: lifted by {} of the water it displaces", lift / weight);
    }
}

/// A ball of half the water's density floats above a stone (4000 kg/m^3) resting on the floor
/// under it, as it floats alone (half under). Each substep the free solve lets the stone sink
/// into the floor and the water above run after it; contact stops the stone, and the liquid is
/// projected again with the stone held along its contacts with the floor. Held whole too, the
/// ball kept the pull of that water every substep and sank onto the stone within a quarter
/// second (its submerged fraction 1.0); free, it takes the pull back. Over the second second
/// its mean submerged fraction is within 0.15 of a half (measured 0.58: it settles slowly
/// deeper over the two seconds, docs/methods/monolithic-coupling.md, known limits) and its
/// centre never goes 3 cm under its start.
#[test]
fn a_ball_floats_above_a_stone_resting_on_the_floor() {
    let loaded = common::tank(
        "frames = 48",
        [0.6, 0.5, 0.4],
        24,
        0.3,
        r#"
[[body]]
name = "stone"
shape.box = { min = [0.15, 0.0, 0.1], max = [0.45, 0.1, 0.3] }
density = 4000.0

[[body]]
name = "float"
shape.sphere = { center = [0.3, 0.3, 0.2], radius = 0.06 }
density = 500.0
"#,
    );
    let volume = 4.0 / 3.0 * PI * 0.06f64.powi(3);
    let (mut fractions, mut lowest) = (Vec::new(), Real::INFINITY);
    let world = common::each_frame(&loaded, 48, |world, record| {
        lowest = lowest.min(world.solids.rigid[1].position.y);
        if record.frame > 24 {
            fractions.push(world.submerged_volumes()[1] / volume);
        }
    });
    let stone = &world.solids.rigid[0];
    assert!((stone.position.y - 0.05).abs() < 0.005, "the stone's centre ends at {} m, resting at 0.05 m", stone.position.y);
    assert!(lowest > 0.27, "the ball's centre went down to {lowest} m from 0.3 m");
    let mean = fractions.iter().sum::<Real>() / fractions.len() as Real;
    assert!((mean - 0.5).abs() < 0.15, "the ball floats {mean} under, half expected");
}
