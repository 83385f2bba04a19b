//! Built-in sea creatures (Lu, Jin, Fedkiw sec. 8): a five-armed starfish, and a jellyfish made
//! of a bell and four arms as separate sub-bodies joined by point joints, each with the points
//! where its balanced actuation forces act.

use super::{Shape, TriMesh};
use crate::math::{Real, Vec3};
use std::f64::consts::PI;

/// A creature: its parts (sub-bodies: name, shape, density relative to the body's), the joints
/// between them (`(p, c, x)`: the world point `x` of part `p` held on part `c`), actuation
/// points with unit force directions per part, and the skin width that blends the parts for
/// the liquid.
#[derive(Clone, Debug)]
pub struct Creature {
    pub parts: Vec<(String, Shape, Real)>,
    pub joints: Vec<(usize, usize, Vec3)>,
    pub actuators: Vec<(usize, Vec3, Vec3)>,
    pub skin: Real,
}

/// The density of a jellyfish's arms relative to its bell's: with the bell lighter than water
/// and the arms heavier, the centre of mass lies below the centre of buoyancy and
/// gravity pulls the jellyfish back upright, as it does a real one.
pub const JELLYFISH_ARM_DENSITY: Real = 1.3;

/// A starfish lying flat (in the xz plane) centred at `center`: five arms reaching `radius`
/// from the centre, `thickness` thick at the centre, thinning towards the tips; flatter below
/// than above. Its actuators push the arm tips up and the centre down (balanced).
pub fn starfish(center: &Vec3, radius: Real, thickness: Real) -> Creature {
    let (rings, around) = (12, 5 * 16);
    let outline = |theta: Real| radius * (0.3 + 0.7 * (0.5 + 0.5 * (5.0 * theta).cos()).powf(1.5));
    let half = |s: Real, theta: Real| 0.5 * thickness * (1.0 - s * s).max(0.0).sqrt() * (1.0 - 0.6 * s * outline(theta) / radius);
    let mut vertices = vec![center + Vec3::new(0.0, half(0.0, 0.0), 0.0)];
    let ring_point = |s: Real, t: usize, top: bool| {
        let theta = 2.0 * PI * t as Real / around as Real;
        let rho = s * outline(theta);
        let h = half(s, theta) * if top { 1.0 } else { -0.6 };
        center + Vec3::new(rho * theta.cos(), h, rho * theta.sin())
    };
    // Top rings (s from the centre out), the rim, bottom rings (from the rim in), bottom pole.
    let top: Vec<Real> = (1..rings).map(|i| i as Real / rings as Real).collect();
    for &s in &top {
        vertices.extend((0..around).map(|t| ring_point(s, t, true)));
    }
    vertices.extend((0..around).map(|t| ring_point(1.0, t, true)));
    for &s in top.iter().rev() {
        vertices.extend((0..around).map(|t| ring_point(s, t, false)));
    }
    vertices.push(center + Vec3::new(0.0, -0.6 * half(0.0, 0.0), 0.0));
    let actuators = (0..5)
        .map(|arm| {
            let theta = 2.0 * PI * arm as Real / 5.0;
            (0, center + 0.7 * radius * Vec3::new(theta.cos(), 0.0, theta.sin()), Vec3::y())
        })
        .chain(std::iter::once((0, *center, -5.0 * Vec3::y())))
        .collect();
    Creature {
        parts: vec![("starfish".into(), Shape::mesh(closed_rings(vertices, 2 * rings - 1, around)).expect("the starfish mesh is closed"), 1.0)],
        joints: Vec::new(),
        actuators,
        skin: 0.0,
    }
}

/// A jellyfish swimming up (+y): a dome-shaped bell of outer radius `radius` centred at
/// `center`, reaching a little below its centre, and four arms hanging from the roof of its
/// cavity, spreading a little outwards, each held to the bell by three point joints (a
/// triangle across the arm's top, inside both the arm and the bell's wall), which weld it to
/// the bell as in the paper. The arms are [`JELLYFISH_ARM_DENSITY`] times as dense as the
/// bell, so that the jellyfish hangs upright like a pendulum: on single joints the arms would
/// hang plumb whatever the bell did, and the buoyant bell, held down at joints above its
/// centre of buoyancy, would tip over them. The arms keep about a cell of water from the
/// bell's wall on the scenes' grids: where an arm ran closer, the liquid's push on its outer
/// side went to the bell (each coupled face pushes one part) and threw the arms outwards.
/// Actuators on eight points near the bell's rim pull it inwards (balanced).
pub fn jellyfish(center: &Vec3, radius: Real) -> Creature {
    let wall = 0.25 * radius;
    let rim = 0.45 * PI;
    let steps = 16;
    // The bell's profile (distance from the axis, height) from the top of the outer surface
    // down to the rim and back up the inner surface, revolved about the axis.
    let mut profile: Vec<(Real, Real)> = (0..=steps)
        .map(|i| {
            let phi = rim * i as Real / steps as Real;
            (radius * phi.sin(), radius * phi.cos())
        })
        .collect();
    profile.extend((0..=steps).rev().map(|i| {
        let phi = rim * i as Real / steps as Real;
        ((radius - wall) * phi.sin(), (radius - wall) * phi.cos())
    }));
    let bell = revolve(center, &profile, 32);
    let arm_radius = 0.15 * radius;
    let ceiling = radius - wall;
    let mut parts = vec![("bell".to_string(), Shape::mesh(bell).expect("the bell mesh is closed"), 1.0)];
    let mut joints = Vec::new();
    for arm in 0..4 {
        let theta = PI / 4.0 + arm as Real * PI / 2.0;
        let dir = Vec3::new(theta.cos(), 0.0, theta.sin());
        let rho = 0.4 * radius;
        let roof = (ceiling * ceiling - rho * rho).sqrt();
        let from = center + rho * dir + Vec3::new(0.0, roof + 0.5 * wall - arm_radius, 0.0);
        let to = center + 0.6 * radius * dir + Vec3::new(0.0, -1.2 * radius, 0.0);
        parts.push((format!("arm{}", arm + 1), Shape::Capsule { from, to, radius: arm_radius }, JELLYFISH_ARM_DENSITY));
        // Three point joints across the arm's top, a quarter of the wall deep into the bell's
        // wall (along its normal) and half the arm's radius from its axis.
        let radial = (rho * dir + Vec3::new(0.0, roof, 0.0)) / ceiling;
        let across = dir.cross(&Vec3::y());
        let along = radial.cross(&across);
        for k in 0..3 {
            let angle = 2.0 * PI * k as Real / 3.0;
            joints.push((0, arm + 1, center + (ceiling + 0.25 * wall) * radial + 0.5 * arm_radius * (angle.cos() * across + angle.sin() * along)));
        }
    }
    let actuators = (0..8)
        .map(|k| {
            let theta = 2.0 * PI * k as Real / 8.0;
            let dir = Vec3::new(theta.cos(), 0.0, theta.sin());
            let phi = rim - 0.15;
            let rho = (radius - 0.5 * wall) * phi.sin();
            (0, center + rho * dir + Vec3::new(0.0, (radius - 0.5 * wall) * phi.cos(), 0.0), -dir)
        })
        .collect();
    Creature { parts, joints, actuators, skin: 0.5 * arm_radius }
}

/// The closed surface of revolution about the vertical axis through `center` of `profile`
/// (distance from the axis, height), which starts and ends on the axis.
fn revolve(center: &Vec3, profile: &[(Real, Real)], around: usize) -> TriMesh {
    let (first, last) = (profile[0], profile[profile.len() - 1]);
    let mut vertices = vec![center + Vec3::new(0.0, first.1, 0.0)];
    for &(rho, y) in &profile[1..profile.len() - 1] {
        vertices.extend((0..around).map(|t| {
            let theta = 2.0 * PI * t as Real / around as Real;
            center + Vec3::new(rho * theta.cos(), y, rho * theta.sin())
        }));
    }
    vertices.push(center + Vec3::new(0.0, last.1, 0.0));
    closed_rings(vertices, profile.len() - 2, around)
}

/// Triangles for a closed surface made of a pole vertex, `rings` rings of `around` vertices
/// each, and a second pole (in that order in `vertices`), facing outwards.
fn closed_rings(vertices: Vec<Vec3>, rings: usize, around: usize) -> TriMesh {
    let ring = |r: usize, t: usize| (1 + r * around + t % around) as u32;
    let last = vertices.len() as u32 - 1;
    let mut triangles = Vec::new();
    for t in 0..around {
        triangles.push([0, ring(0, t + 1), ring(0, t)]);
        triangles.push([last, ring(rings - 1, t), ring(rings - 1, t + 1)]);
        for r in 0..rings - 1 {
            triangles.push([ring(r, t), ring(r, t + 1), ring(r + 1, t + 1)]);
            triangles.push([ring(r, t), ring(r + 1, t + 1), ring(r + 1, t)]);
        }
    }
    let mut mesh = TriMesh { vertices, triangles };
    if mesh.signed_volume() < 0.0 {
        mesh.flip();
    }
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The creatures' meshes are closed, outward and free of self-intersections; the
    /// actuation forces of each part add up to zero; every joint point lies inside both parts
    /// it joins.
    #[test]
    fn creatures_are_closed_balanced_and_jointed_inside_both_parts() {
        let c = Vec3::new(0.5, 0.5, 0.5);
        for creature in [starfish(&c, 0.15, 0.04), jellyfish(&c, 0.15)] {
            for (name, shape, _) in &creature.parts {
                if let Shape::Mesh { surface, .. } = shape {
                    surface.check_closed().unwrap();
                    assert!(surface.find_self_intersection().is_none(), "{name} intersects itself");
                    assert!(surface.signed_volume() > 0.0);
                }
            }
            for part in 0..creature.parts.len() {
                let total: Vec3 = creature.actuators.iter().filter(|a| a.0 == part).map(|a| a.2).sum();
                assert!(total.norm() < 1e-12, "part {part} actuation is not balanced: {total:?}");
            }
            for &(p, q, x) in &creature.joints {
                assert!(creature.parts[p].1.signed_distance(&x) < 0.0 && creature.parts[q].1.signed_distance(&x) < 0.0, "joint at {x:?} is not inside both parts");
            }
        }
    }
}
