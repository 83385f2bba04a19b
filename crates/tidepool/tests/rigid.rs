//! Rigid bodies without water: friction on an incline, a resting stack, bouncing.

use tidepool::geometry::Shape;
use tidepool::math::{Real, Vec3};
use tidepool::solids::contact::StaticGeometry;
use tidepool::solids::rigid::{step, BodyKind, Material, RigidBody};

const G: Real = 9.81;

/// A floor at y = 0 (the only closed side of a large domain) with the given material.
fn floor(material: Material) -> StaticGeometry {
    StaticGeometry { min: Vec3::new(-10.0, 0.0, -10.0), max: Vec3::new(10.0, 10.0, 10.0), walls: [[false, false], [true, false], [false, false]], obstacles: Vec::new(), material }
}

/// A cube of side `size` and density 500 kg/m^3 whose lowest corner is `corner`.
fn cube(name: &str, corner: Vec3, size: Real, material: Material) -> RigidBody {
    let shape = Shape::Box { min: corner, max: corner + Vec3::repeat(size) };
    RigidBody::new(name, BodyKind::Dynamic, &shape, 500.0, material, size / 4.0)
}

/// A box on a plane inclined by `angle` (gravity tilted instead of the plane) with friction
/// coefficient `mu`: returns its speed along the slope at 0.25 s and at 1.25 s.
fn slide(angle_degrees: Real, mu: Real) -> (Real, Real) {
    let material = Material { restitution: 0.0, friction: mu };
    let statics = floor(material);
    let mut bodies = vec![cube("box", Vec3::new(-0.1, 0.0, -0.1), 0.2, material)];
    let a = angle_degrees.to_radians();
    let gravity = G * Vec3::new(a.sin(), -a.cos(), 0.0);
    let dt = 1.0 / 240.0;
    let mut speeds = Vec::new();
    for n in 1..=300 {
        step(&mut bodies, &statics, &gravity, dt);
        if n == 60 || n == 300 {
            speeds.push(bodies[0].velocity.x);
        }
    }
    (speeds[0], speeds[1])
}

#[test]
fn box_slides_down_an_incline_with_coulomb_friction() {
    let (angle, mu): (Real, Real) = (30.0, 0.3);
    let (early, late) = slide(angle, mu);
    let measured = (late - early) / 1.0;
    let expected = G * (angle.to_radians().sin() - mu * angle.to_radians().cos());
    assert!((measured - expected).abs() < 0.02 * expected, "acceleration {measured} m/s^2, expected {expected}");
}

#[test]
fn box_sticks_on_an_incline_below_the_friction_angle() {
    let (angle, mu): (Real, Real) = (15.0, 0.3);
    assert!(angle.to_radians().tan() < mu);
    let (_, late) = slide(angle, mu);
    assert!(late.abs() < 1e-3, "slides at {late} m/s");
}

#[test]
fn stack_of_five_boxes_stands_for_five_seconds() {
    let material = Material { restitution: 0.0, friction: 0.5 };
    let statics = floor(material);
    let size = 0.2;
    let mut bodies: Vec<RigidBody> = (0..5).map(|i| cube(&format!("box{i}"), Vec3::new(-0.1, i as Real * size, -0.1), size, material)).collect();
    let start: Vec<Vec3> = bodies.iter().map(|b| b.position).collect();
    let dt = 1.0 / 240.0;
    for _ in 0..1200 {
        step(&mut bodies, &statics, &Vec3::new(0.0, -G, 0.0), dt);
    }
    for (b, x0) in bodies.iter().zip(&start) {
        let drift = (b.position - x0).norm();
        assert!(drift < 0.01 * size, "{} drifted {drift} m", b.name);
        assert!(b.orientation.angle() < 0.01, "{} turned {} rad", b.name, b.orientation.angle());
    }
}

fn ball(name: &str, center: Vec3, radius: Real, material: Material) -> RigidBody {
    let shape = Shape::Sphere { center, radius };
    RigidBody::new(name, BodyKind::Dynamic, &shape, 500.0, material, radius / 4.0)
}

/// A ball dropped on the floor rises to `e^2` times its drop height after the bounce.
#[test]
fn dropped_ball_bounces_to_restitution_squared_of_its_height() {
    let e = 0.6;
    let (radius, drop) = (0.1, 0.5);
    let material = Material { restitution: e, friction: 0.2 };
    let statics = floor(material);
    let mut bodies = vec![ball("ball", Vec3::new(0.0, radius + drop, 0.0), radius, material)];
    let dt = 1.0 / 1000.0;
    let mut bounced = false;
    let mut highest: Real = 0.0;
    for _ in 0..1200 {
        step(&mut bodies, &statics, &Vec3::new(0.0, -G, 0.0), dt);
        let b = &bodies[0];
        bounced |= b.velocity.y > 0.0;
        if bounced {
            highest = highest.max(b.position.y - radius);
        }
        assert!(b.position.y > radius - 0.01, "ball sank into the floor: {}", b.position.y);
    }
    let expected = e * e * drop;
    assert!((highest - expected).abs() < 0.03 * expected, "rose to {highest} m, expected {expected} m");
}

/// Two equal balls meeting head-on, off-centre, exchange momentum through equal and opposite
/// impulses: total linear and angular momentum stay what they were, and with restitution 1
/// and no friction the kinetic energy too.
#[test]
fn colliding_balls_conserve_momentum() {
    let elastic = Material { restitution: 1.0, friction: 0.0 };
    let statics = StaticGeometry { walls: [[false; 2]; 3], ..floor(elastic) };
    let mut bodies = vec![ball("a", Vec3::new(-0.5, 1.0, 0.0), 0.1, elastic), ball("b", Vec3::new(0.5, 1.05, 0.0), 0.1, elastic)];
    bodies[0].velocity = Vec3::new(2.0, 0.0, 0.0);
    bodies[1].velocity = Vec3::new(-1.0, 0.0, 0.0);
    let momentum = |bodies: &[RigidBody]| bodies.iter().map(|b| b.mass * b.velocity).sum::<Vec3>();
    let angular = |bodies: &[RigidBody]| bodies.iter().map(|b| b.position.cross(&(b.mass * b.velocity)) + b.angular_momentum).sum::<Vec3>();
    let energy = |bodies: &[RigidBody]| bodies.iter().map(|b| b.kinetic_energy()).sum::<Real>();
    let (p0, l0, e0) = (momentum(&bodies), angular(&bodies), energy(&bodies));
    for _ in 0..240 {
        step(&mut bodies, &statics, &Vec3::zeros(), 1.0 / 240.0);
    }
    assert!(bodies[0].velocity.x < 0.5, "no collision happened: {:?}", bodies[0].velocity);
    assert!((momentum(&bodies) - p0).norm() < 1e-12 * p0.norm());
    assert!((angular(&bodies) - l0).norm() < 1e-12 * l0.norm().max(p0.norm()));
    assert!((energy(&bodies) - e0).abs() < 0.02 * e0, "energy {} -> {}", e0, energy(&bodies));
}
