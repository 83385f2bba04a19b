//! A sheet's contact with itself: repulsions between its vertices and its triangles, and
//! between its edges (Bridson, Fedkiw and Anderson 2002, sec. 7.2, as Shinar's cloth uses
//! them), so that it folds and piles without passing through itself.
//!
//! A vertex and a triangle not holding it are in proximity where the vertex lies within the
//! sheet's thickness `h` of the triangle's plane, over the triangle (its projection inside),
//! now or where the velocities take it over the step. Two edges with no vertex in common are
//! in proximity where their closest points lie inside both (not at an end: a vertex near a
//! triangle is the case above) and within `h` of each other now or over the step — two
//! edges crossing, with no vertex over a triangle, as where a sheet's border slides over
//! another fold's. In both, the side the points are on now is the side they must stay on.
//! An impulse along the direction between them, shared between the particles of each side
//! with the points' barycentric weights `w` (the effective inverse mass `sum w_i^2/m_i` over
//! both sides, as for any point of a body), sets their relative normal velocity to what
//! brings them `h` apart by the end of the step — or, where they are closer than `h` already,
//! to what takes a tenth of the overlap back per step (Bridson's bound, so that a deep
//! overlap is resolved gently). Friction removes tangential relative velocity up to the
//! friction coefficient times the normal velocity change. Sweeps repeat until no pair needs
//! an impulse (at most [`SWEEPS`]). Impulses are equal and opposite, so momentum is kept.

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
    /// Its edges, each once ([`edges_of`]).
    pub edges: &'a [[u32; 2]],
    /// The thickness `h` (m).
    pub thickness: Real,
    /// Coulomb friction between its layers.
    pub friction: Real,
}

/// A point of the sheet: particles and their weights.
type Point<'p> = &'p [(usize, Real)];

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

/// The parameters `(s, t)` of the closest points `a0 + s (a1 - a0)` and `b0 + t (b1 - b0)` of
/// two lines, where both lie strictly inside their segments (`None` for parallel edges and
/// where a closest point would be at or past an end).
fn closest_interior(a: [Vec3; 2], b: [Vec3; 2]) -> Option<(Real, Real)> {
    let (da, db, r) = (a[1] - a[0], b[1] - b[0], a[0] - b[0]);
    let (aa, bb, ab) = (da.norm_squared(), db.norm_squared(), da.dot(&db));
    let denominator = aa * bb - ab * ab;
    if denominator <= 1e-12 * aa * bb {
        return None;
    }
    let (c, f) = (da.dot(&r), db.dot(&r));
    let s = (ab * f - c * bb) / denominator;
    let t = (aa * f - ab * c) / denominator;
    (s > 0.0 && s < 1.0 && t > 0.0 && t < 1.0).then_some((s, t))
}

/// The edges of `triangles`, each once, its vertices in increasing order.
pub fn edges_of(triangles: &[[u32; 3]]) -> Vec<[u32; 2]> {
    let mut edges: Vec<[u32; 2]> = triangles.iter().flat_map(|t| [0, 1, 2].map(|k| [t[k].min(t[(k + 1) % 3]), t[k].max(t[(k + 1) % 3])])).collect();
    edges.sort_unstable();
    edges.dedup();
    edges
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

/// The most bins one element's box or one query may reach; an element reaching more (one
/// moving too fast for its step, or at a non-finite position in a run that is blowing up) is
/// listed in every bin rather than filling memory with bins.
const MAX_BINS_PER_BOX: i128 = 4096;

/// Bins `cell` wide, each listing the elements whose boxes reach it.
struct Bins {
    cell: Real,
    map: HashMap<[i64; 3], Vec<u32>>,
    /// The elements whose boxes reach more than [`MAX_BINS_PER_BOX`] bins.
    everywhere: Vec<u32>,
    /// How many elements there are.
    count: u32,
}

impl Bins {
    /// The lowest and highest bins the box from `lo` to `hi` reaches, or `None` where it reaches
    /// more than [`MAX_BINS_PER_BOX`] or is not finite.
    fn range(&self, lo: &Vec3, hi: &Vec3) -> Option<([i64; 3], [i64; 3])> {
        if !(lo.iter().chain(hi.iter()).all(|c| c.is_finite())) {
            return None;
        }
        let key = |p: &Vec3| -> [i64; 3] { p.map(|c| (c / self.cell).floor() as i64).into() };
        let (lo, hi) = (key(lo), key(hi));
        let reached = (0..3).map(|k| hi[k] as i128 - lo[k] as i128 + 1).try_fold(1i128, |n, side| (n * side <= MAX_BINS_PER_BOX).then_some(n * side));
        reached.map(|_| (lo, hi))
    }

    /// Each element's box, as its lowest and highest corner, put in every bin it reaches.
    fn new(cell: Real, boxes: impl Iterator<Item = (Vec3, Vec3)>) -> Self {
        let mut bins = Bins { cell, map: HashMap::new(), everywhere: Vec::new(), count: 0 };
        for (k, (lo, hi)) in boxes.enumerate() {
            bins.count += 1;
            let Some((lo, hi)) = bins.range(&lo, &hi) else {
                bins.everywhere.push(k as u32);
                continue;
            };
            for i in lo[0]..=hi[0] {
                for j in lo[1]..=hi[1] {
                    for l in lo[2]..=hi[2] {
                        bins.map.entry([i, j, l]).or_default().push(k as u32);
                    }
                }
            }
        }
        bins
    }

    /// The elements in the bins the box from `lo` to `hi` reaches, each once, into `near` (all
    /// of them for a box that reaches more than [`MAX_BINS_PER_BOX`] bins).
    fn near(&self, lo: &Vec3, hi: &Vec3, near: &mut Vec<u32>) {
        near.clear();
        let Some((lo, hi)) = self.range(lo, hi) else {
            near.extend(0..self.count);
            return;
        };
        near.extend(&self.everywhere);
        for i in lo[0]..=hi[0] {
            for j in lo[1]..=hi[1] {
                for l in lo[2]..=hi[2] {
                    near.extend(self.map.get(&[i, j, l]).into_iter().flatten());
                }
            }
        }
        near.sort_unstable();
        near.dedup();
    }
}

/// One sweep over all vertex–triangle and edge–edge pairs in proximity, with bins `cell`
/// wide; returns how many got an impulse.
fn sweep(sheet: &mut Sheet, dt: Real, h: Real, cell: Real) -> usize {
    let (x, edges) = (sheet.positions, sheet.edges);
    let predicted: Vec<Vec3> = x.iter().zip(sheet.velocities.iter()).map(|(x, v)| x + dt * v).collect();
    // An element's box over the step, grown by the thickness.
    let swept = |vertices: &[u32]| {
        let (lo, hi) = crate::geometry::bounds(vertices.iter().flat_map(|&i| [x[i as usize], predicted[i as usize]])).expect("an element has vertices");
        (lo.add_scalar(-h), hi.add_scalar(h))
    };
    let mut impulses = 0;
    let mut near: Vec<u32> = Vec::new();
    let triangles = Bins::new(cell, sheet.triangles.iter().map(|t| swept(t)));
    for p in 0..x.len() {
        triangles.near(&x[p].inf(&predicted[p]), &x[p].sup(&predicted[p]), &mut near);
        for &k in &near {
            let t = sheet.triangles[k as usize];
            if !t.contains(&(p as u32)) && vertex_triangle(sheet, p, t, dt, h) {
                impulses += 1;
            }
        }
    }
    let bins = Bins::new(cell, edges.iter().map(|e| swept(e)));
    for (a, edge) in edges.iter().enumerate() {
        let (lo, hi) = swept(edge);
        bins.near(&lo, &hi, &mut near);
        for &b in near.iter().filter(|&&b| b as usize > a) {
            let other = edges[b as usize];
            if !edge.iter().any(|v| other.contains(v)) && edge_edge(sheet, *edge, other, dt, h) {
                impulses += 1;
            }
        }
    }
    impulses
}

/// The repulsion between vertex `p` and triangle `t`, if they are in proximity over the step;
/// whether an impulse was applied.
fn vertex_triangle(sheet: &mut Sheet, p: usize, t: [u32; 3], dt: Real, h: Real) -> bool {
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
    let triangle = [0, 1, 2].map(|k| (t[k] as usize, weights[k]));
    push_apart(sheet, &[(p, 1.0)], &triangle, signed.signum() * normal, signed.abs(), dt, h)
}

/// The repulsion between edges `a` and `b`, if their closest points are inside both and in
/// proximity over the step; whether an impulse was applied.
fn edge_edge(sheet: &mut Sheet, a: [u32; 2], b: [u32; 2], dt: Real, h: Real) -> bool {
    let x = sheet.positions;
    let (ends_a, ends_b) = (a.map(|i| x[i as usize]), b.map(|i| x[i as usize]));
    let Some((s, t)) = closest_interior(ends_a, ends_b) else { return false };
    let between = ends_a[0].lerp(&ends_a[1], s) - ends_b[0].lerp(&ends_b[1], t);
    let gap = between.norm();
    if gap == 0.0 {
        return false;
    }
    let (a, b) = ([(a[0] as usize, 1.0 - s), (a[1] as usize, s)], [(b[0] as usize, 1.0 - t), (b[1] as usize, t)]);
    push_apart(sheet, &a, &b, between / gap, gap, dt, h)
}

/// The impulse between points `a` and `b` of the sheet, `gap` apart along the unit `n` (from
/// `b` to `a`), that leaves them at least `h` apart after the step (a tenth of an overlap
/// taken back where they are closer than `h`), with friction; none where they do not approach
/// that close. Whether an impulse was applied.
fn push_apart(sheet: &mut Sheet, a: Point, b: Point, n: Vec3, gap: Real, dt: Real, h: Real) -> bool {
    let v = &*sheet.velocities;
    let at = |point: Point| point.iter().map(|&(i, w)| w * v[i]).sum::<Vec3>();
    let relative = at(a) - at(b);
    let approach = relative.dot(&n);
    if gap + dt * approach >= h {
        return false;
    }
    let target = if gap < h { OVERLAP_RECOVERY * (h - gap) / dt } else { (h - gap) / dt };
    if approach >= target {
        return false;
    }
    let inverse_mass = a.iter().chain(b).map(|&(i, w)| w * w * sheet.inverse_masses[i]).sum::<Real>();
    if inverse_mass == 0.0 {
        return false;
    }
    let change = target - approach;
    let tangential = relative - approach * n;
    let slip = tangential.norm();
    let friction = if slip > 0.0 { (sheet.friction * change / slip).min(1.0) * tangential } else { Vec3::zeros() };
    let j = (change * n - friction) / inverse_mass;
    let v = &mut *sheet.velocities;
    for &(i, w) in a {
        v[i] += w * sheet.inverse_masses[i] * j;
    }
    for &(i, w) in b {
        v[i] -= w * sheet.inverse_masses[i] * j;
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
        let mut sheet = Sheet {
            positions: &positions,
            velocities: &mut velocities,
            inverse_masses: &inverse,
            triangles: &[[0, 2, 1]],
            edges: &edges_of(&[[0, 2, 1]]),
            thickness: h,
            friction: 0.0,
        };
        assert!(repel(&mut sheet, dt) > 0);
        let relative = velocities[3] - (0.6 * velocities[0] + 0.2 * velocities[1] + 0.2 * velocities[2]);
        let gap = positions[3].y + dt * relative.y;
        assert!((gap - h).abs() < 1e-12, "the vertex ends the step {gap} m above the triangle, the thickness is {h}");
        assert!((momentum(&velocities) - before).norm() < 1e-12);
        assert!((velocities[3].x - 0.3).abs() < 1e-12, "no friction, no change along the triangle");
        let mut away = vec![Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 1.0, 0.0)];
        let mut sheet =
            Sheet { positions: &positions, velocities: &mut away, inverse_masses: &inverse, triangles: &[[0, 2, 1]], edges: &edges_of(&[[0, 2, 1]]), thickness: h, friction: 0.0 };
        assert_eq!(repel(&mut sheet, dt), 0);
    }

    /// A sheet that is blowing up (a particle at 1e11 m/s, another at a non-finite position)
    /// is swept without filling memory with bins (before, the fast triangle's box was put in
    /// 1e11 bins), and the contact it still has is found: the fast particle's triangle is
    /// listed everywhere.
    #[test]
    fn a_runaway_sheet_is_swept_without_filling_memory() {
        let positions = vec![Vec3::zeros(), Vec3::x(), Vec3::z(), Vec3::new(0.2, 0.01, 0.2), Vec3::new(5.0, 0.0, 0.0), Vec3::new(Real::NAN, 0.0, 0.0)];
        let mut velocities = vec![Vec3::zeros(), Vec3::zeros(), Vec3::new(0.0, 1e11, 0.0), Vec3::new(0.0, -2.0, 0.0), Vec3::zeros(), Vec3::zeros()];
        let inverse = [1.0; 6];
        let triangles = [[0, 2, 1], [1, 4, 5]];
        let mut sheet = Sheet {
            positions: &positions,
            velocities: &mut velocities,
            inverse_masses: &inverse,
            triangles: &triangles,
            edges: &edges_of(&triangles),
            thickness: 0.004,
            friction: 0.0,
        };
        assert!(repel(&mut sheet, 0.01) > 0, "the falling vertex over the runaway triangle was not found");
    }

    /// Two triangles whose edges cross 1 cm apart (one over the other, at right angles), the
    /// upper falling: no vertex lies over the other triangle, so only the edges' proximity
    /// can stop them; it does, at the thickness, with momentum kept.
    #[test]
    fn crossing_edges_stop_at_the_thickness_and_momentum_is_kept() {
        let positions =
            vec![Vec3::new(-0.5, 0.01, 0.0), Vec3::new(0.5, 0.01, 0.0), Vec3::new(0.1, 0.51, 0.0), Vec3::new(0.0, 0.0, -0.5), Vec3::new(0.0, 0.0, 0.5), Vec3::new(0.0, -0.5, 0.1)];
        let mut velocities = vec![Vec3::new(0.0, -2.0, 0.0); 3];
        velocities.extend([Vec3::zeros(); 3]);
        let masses = [1.0, 2.0, 1.5, 0.5, 1.0, 3.0];
        let inverse: Vec<Real> = masses.iter().map(|m| 1.0 / m).collect();
        let momentum = |v: &[Vec3]| v.iter().zip(&masses).map(|(v, m)| *m * v).sum::<Vec3>();
        let before = momentum(&velocities);
        let (dt, h) = (0.01, 0.004);
        let triangles = [[0, 1, 2], [3, 4, 5]];
        let (s, t) = closest_interior([positions[0], positions[1]], [positions[3], positions[4]]).unwrap();
        assert!((s - 0.5).abs() < 1e-12 && (t - 0.5).abs() < 1e-12);
        let mut sheet = Sheet {
            positions: &positions,
            velocities: &mut velocities,
            inverse_masses: &inverse,
            triangles: &triangles,
            edges: &edges_of(&triangles),
            thickness: h,
            friction: 0.0,
        };
        assert!(repel(&mut sheet, dt) > 0, "the crossing edges were not found");
        let point = |x: &[Vec3], i: usize, j: usize| 0.5 * (x[i] + x[j]);
        let end: Vec<Vec3> = positions.iter().zip(&velocities).map(|(x, v)| x + dt * v).collect();
        let gap = point(&end, 0, 1).y - point(&end, 3, 4).y;
        assert!((gap - h).abs() < 1e-12, "the edges end the step {gap} m apart, the thickness is {h}");
        assert!((momentum(&velocities) - before).norm() < 1e-12);
    }
}
