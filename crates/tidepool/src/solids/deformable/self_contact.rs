//! A sheet's contact with itself: repulsions between its vertices and its triangles (Bridson,
//! Fedkiw and Anderson 2002, sec. 7.2, as Shinar's cloth uses them), so that it folds and
//! piles without passing through itself.
//!
//! A vertex and a triangle not holding it are in proximity where the vertex lies within the
//! sheet's thickness `h` of the triangle's plane, over the triangle (its projection inside),
//! now or where the velocities take it over the step. The side it is on now is the side it
//! must stay on. An impulse along the triangle's normal, shared between the vertex and the
//! triangle's three vertices with the projection's barycentric weights `w` (the effective
//! inverse mass `1/m_p + sum w_i^2/m_i`, as for any point of a body), sets their relative normal
//! velocity to what brings the vertex to `h` from the plane by the end of the step — or, where
//! it is closer than `h` already, to what takes a tenth of the overlap back per step (Bridson's
//! bound, so that a deep overlap is resolved gently). Friction removes tangential relative
//! velocity up to the friction coefficient times the normal velocity change. Sweeps repeat
//! until no pair needs an impulse (at most [`SWEEPS`]). Impulses are equal and opposite, so
//! momentum is kept.

use crate::math::{Real, Vec3};
use std::collections::HashMap;

/// The most sweeps over the proximities in one call.
const SWEEPS: usize = 8;
/// Of an overlap deeper than the thickness, the fraction the repulsion takes back per step.
const OVERLAP_RECOVERY: Real = 0.1;

/// A sheet's particles as self-contact sees them.
pub struct Sheet<'a> {
    pub positions: &'a [Vec3],
    pub velocities: &'a mut [Vec3],
    /// `1/m` per particle (0 for pinned ones).
    pub inverse_masses: &'a [Real],
    pub triangles: &'a [[u32; 3]],
    /// The thickness `h` (m).
    pub thickness: Real,
    /// Coulomb friction between its layers.
    pub friction: Real,
}

/// The barycentric weights of `p`'s projection on the plane of triangle `t`, and the unit
/// normal (`None` for a degenerate triangle).
fn projection(p: &Vec3, t: &[Vec3; 3]) -> Option<([Real; 3], Vec3)> {
    let (e1, e2, d) = (t[1] - t[0], t[2] - t[0], p - t[0]);
    let normal = e1.cross(&e2);
    let area2 = normal.norm_squared();
    if area2 == 0.0 {
        return None;
    }
    let b1 = d.cross(&e2).dot(&normal) / area2;
    let b2 = e1.cross(&d).dot(&normal) / area2;
    Some(([1.0 - b1 - b2, b1, b2], normal / area2.sqrt()))
}

/// Applies the repulsions for a step of `dt`; returns the number of impulses applied.
pub fn repel(sheet: &mut Sheet, dt: Real) -> usize {
    let h = sheet.thickness;
    // Bins about a triangle's edge wide (the positions do not change during the sweeps).
    let x = sheet.positions;
    let edge = sheet.triangles.iter().map(|t| (x[t[1] as usize] - x[t[0] as usize]).norm()).sum::<Real>() / sheet.triangles.len().max(1) as Real;
    let cell = edge.max(h).max(Real::MIN_POSITIVE);
    let mut applied = 0;
    for _ in 0..SWEEPS {
        let found = sweep(sheet, dt, h, cell);
        applied += found;
        if found == 0 {
            break;
        }
    }
    applied
}

/// One sweep over all vertex–triangle pairs in proximity, with bins `cell` wide; returns how
/// many got an impulse.
fn sweep(sheet: &mut Sheet, dt: Real, h: Real, cell: Real) -> usize {
    let x = sheet.positions;
    let predicted: Vec<Vec3> = x.iter().zip(sheet.velocities.iter()).map(|(x, v)| x + dt * v).collect();
    // Bins of the triangles' boxes over the step, grown by the thickness.
    let key = |p: &Vec3| p.map(|c| (c / cell).floor() as i64);
    let mut bins: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
    for (k, t) in sheet.triangles.iter().enumerate() {
        let corners = t.iter().flat_map(|&i| [x[i as usize], predicted[i as usize]]);
        let (lo, hi) = crate::geometry::bounds(corners).expect("a triangle has corners");
        let (lo, hi) = (key(&lo.add_scalar(-h)), key(&hi.add_scalar(h)));
        for i in lo.x..=hi.x {
            for j in lo.y..=hi.y {
                for l in lo.z..=hi.z {
                    bins.entry([i, j, l]).or_default().push(k as u32);
                }
            }
        }
    }
    let mut impulses = 0;
    let mut near: Vec<u32> = Vec::new();
    for p in 0..x.len() {
        let start = key(&x[p].inf(&predicted[p]));
        let end = key(&x[p].sup(&predicted[p]));
        near.clear();
        for i in start.x..=end.x {
            for j in start.y..=end.y {
                for l in start.z..=end.z {
                    near.extend(bins.get(&[i, j, l]).into_iter().flatten());
                }
            }
        }
        near.sort_unstable();
        near.dedup();
        for &k in &near {
            let t = sheet.triangles[k as usize];
            if t.contains(&(p as u32)) {
                continue;
            }
            if respond(sheet, p, t, dt, h) {
                impulses += 1;
            }
        }
    }
    impulses
}

/// The repulsion between vertex `p` and triangle `t`, if they are in proximity over the step;
/// whether an impulse was applied.
fn respond(sheet: &mut Sheet, p: usize, t: [u32; 3], dt: Real, h: Real) -> bool {
    let x = sheet.positions;
    let corners = t.map(|i| x[i as usize]);
    let Some((weights, normal)) = projection(&x[p], &corners) else { return false };
    // Over the triangle, with a margin of the thickness relative to its size.
    let size = (corners[1] - corners[0]).norm().max((corners[2] - corners[0]).norm());
    let margin = -h / size.max(h);
    if weights.iter().any(|&w| w < margin) {
        return false;
    }
    let signed = (x[p] - corners[0]).dot(&normal);
    let (side, gap) = (signed.signum(), signed.abs());
    let n = side * normal;
    let v = &*sheet.velocities;
    let relative = v[p] - t.iter().zip(weights).map(|(&i, w)| w * v[i as usize]).sum::<Vec3>();
    let approach = relative.dot(&n);
    if gap + dt * approach >= h {
        return false;
    }
    let target = if gap < h { OVERLAP_RECOVERY * (h - gap) / dt } else { (h - gap) / dt };
    if approach >= target {
        return false;
    }
    let inverse_mass = sheet.inverse_masses[p] + t.iter().zip(weights).map(|(&i, w)| w * w * sheet.inverse_masses[i as usize]).sum::<Real>();
    if inverse_mass == 0.0 {
        return false;
    }
    let change = target - approach;
    let tangential = relative - approach * n;
    let slip = tangential.norm();
    let friction = if slip > 0.0 { (sheet.friction * change / slip).min(1.0) * tangential } else { Vec3::zeros() };
    let j = (change * n - friction) / inverse_mass;
    let v = &mut *sheet.velocities;
    v[p] += sheet.inverse_masses[p] * j;
    for (&i, w) in t.iter().zip(weights) {
        v[i as usize] -= w * sheet.inverse_masses[i as usize] * j;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vertex falling onto a triangle below it is stopped at the thickness with the impulse
    /// shared so that momentum is kept; one moving away is left alone.
    #[test]
    fn a_falling_vertex_stops_at_the_thickness_and_momentum_is_kept() {
        let positions = vec![Vec3::zeros(), Vec3::x(), Vec3::z(), Vec3::new(0.2, 0.01, 0.2)];
        let mut velocities = vec![Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.3, -2.0, 0.0)];
        let masses = [1.0, 2.0, 1.5, 0.5];
        let inverse: Vec<Real> = masses.iter().map(|m| 1.0 / m).collect();
        let momentum = |v: &[Vec3]| v.iter().zip(&masses).map(|(v, m)| *m * v).sum::<Vec3>();
        let before = momentum(&velocities);
        let (dt, h) = (0.01, 0.004);
        let mut sheet = Sheet { positions: &positions, velocities: &mut velocities, inverse_masses: &inverse, triangles: &[[0, 2, 1]], thickness: h, friction: 0.0 };
        assert!(repel(&mut sheet, dt) > 0);
        let relative = velocities[3] - (0.6 * velocities[0] + 0.2 * velocities[1] + 0.2 * velocities[2]);
        let gap = positions[3].y + dt * relative.y;
        assert!((gap - h).abs() < 1e-12, "the vertex ends the step {gap} m above the triangle, the thickness is {h}");
        assert!((momentum(&velocities) - before).norm() < 1e-12);
        assert!((velocities[3].x - 0.3).abs() < 1e-12, "no friction, no change along the triangle");
        let mut away = vec![Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 1.0, 0.0)];
        let mut sheet = Sheet { positions: &positions, velocities: &mut away, inverse_masses: &inverse, triangles: &[[0, 2, 1]], thickness: h, friction: 0.0 };
        assert_eq!(repel(&mut sheet, dt), 0);
    }
}
