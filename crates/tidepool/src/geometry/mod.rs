//! Triangle meshes, mesh files, implicit shapes and their signed distances.

pub mod creatures;
pub mod embedding;
pub mod mesh_io;
mod parry;
pub mod sampled;
pub mod shapes;
pub mod tetmesh;
pub mod trimesh;

pub use parry::MeshDistance;
pub use shapes::Shape;
pub use tetmesh::TetMesh;
pub use trimesh::TriMesh;

use crate::math::{Real, Vec3};

/// Axis-aligned bounds `(min, max)` of `points`; `None` for no points.
pub fn bounds(points: impl IntoIterator<Item = Vec3>) -> Option<(Vec3, Vec3)> {
    let mut points = points.into_iter();
    let first = points.next()?;
    Some(points.fold((first, first), |(lo, hi), v| (lo.inf(&v), hi.sup(&v))))
}

/// Unit gradient of a signed distance `f` at `x` by central differences of step `step` (its
/// outward normal near the surface); none where the differences vanish.
pub fn unit_gradient(f: impl Fn(&Vec3) -> Real, x: &Vec3, step: Real) -> Option<Vec3> {
    Vec3::from_fn(|a, _| {
        let e = Vec3::ith(a, step);
        (f(&(x + e)) - f(&(x - e))) / (2.0 * step)
    })
    .try_normalize(1e-12)
}

/// The part of triangle `triangle` inside the box `lo..hi`: its area and its centroid, none if
/// nothing of it is inside (Sutherland–Hodgman clipping against the box's six planes; the part
/// is convex, fanned from its first corner).
pub fn clip_to_box(triangle: [Vec3; 3], lo: &Vec3, hi: &Vec3) -> Option<(Real, Vec3)> {
    let mut polygon = triangle.to_vec();
    for a in 0..3 {
        for (bound, sign) in [(lo[a], 1.0), (hi[a], -1.0)] {
            let inside = |p: &Vec3| sign * (p[a] - bound);
            let mut kept = Vec::with_capacity(polygon.len() + 1);
            for (i, p) in polygon.iter().enumerate() {
                let q = &polygon[(i + 1) % polygon.len()];
                let (dp, dq) = (inside(p), inside(q));
                if dp >= 0.0 {
                    kept.push(*p);
                }
                if (dp >= 0.0) != (dq >= 0.0) {
                    kept.push(p + (q - p) * (dp / (dp - dq)));
                }
            }
            polygon = kept;
            if polygon.len() < 3 {
                return None;
            }
        }
    }
    let (mut area, mut moment) = (0.0, Vec3::zeros());
    for pair in polygon[1..].windows(2) {
        let a = 0.5 * (pair[0] - polygon[0]).cross(&(pair[1] - polygon[0])).norm();
        area += a;
        moment += a * (polygon[0] + pair[0] + pair[1]) / 3.0;
    }
    (area > 0.0).then(|| (area, moment / area))
}

/// The barycentric coordinates of `p` (in the triangle's plane) in triangle `triangle`; the
/// centroid's for a triangle with no area.
pub fn barycentric(triangle: [Vec3; 3], p: &Vec3) -> [Real; 3] {
    let [a, b, c] = triangle;
    let (e1, e2, d) = (b - a, c - a, p - a);
    let (d11, d12, d22) = (e1.dot(&e1), e1.dot(&e2), e2.dot(&e2));
    let (d1, d2) = (d.dot(&e1), d.dot(&e2));
    let det = d11 * d22 - d12 * d12;
    if det <= 0.0 {
        return [1.0 / 3.0; 3];
    }
    let v = (d22 * d1 - d12 * d2) / det;
    let w = (d11 * d2 - d12 * d1) / det;
    [1.0 - v - w, v, w]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Boxes that tile space split a triangle into parts whose areas add up to its own and
    /// whose area-weighted centroids average to its centroid; a box around it keeps it whole,
    /// one beside it nothing.
    #[test]
    fn boxes_tiling_space_partition_a_triangle() {
        let triangle = [Vec3::new(0.13, 0.21, 0.05), Vec3::new(0.91, 0.37, 0.44), Vec3::new(0.42, 0.88, 0.71)];
        let whole = 0.5 * (triangle[1] - triangle[0]).cross(&(triangle[2] - triangle[0])).norm();
        let centroid = triangle.iter().sum::<Vec3>() / 3.0;
        let (area, mid) = clip_to_box(triangle, &Vec3::zeros(), &Vec3::repeat(1.0)).expect("inside");
        assert!((area - whole).abs() < 1e-12 && (mid - centroid).norm() < 1e-12);
        assert!(clip_to_box(triangle, &Vec3::repeat(1.0), &Vec3::repeat(2.0)).is_none());
        let h = 0.1;
        let (mut total, mut moment, mut parts) = (0.0, Vec3::zeros(), 0);
        for i in 0..10 {
            for j in 0..10 {
                for k in 0..10 {
                    let lo = Vec3::new(i as Real, j as Real, k as Real) * h;
                    if let Some((a, c)) = clip_to_box(triangle, &lo, &(lo + Vec3::repeat(h))) {
                        assert!((0..3).all(|n| c[n] >= lo[n] - 1e-12 && c[n] <= lo[n] + h + 1e-12), "a part's centroid lies in its box");
                        total += a;
                        moment += a * c;
                        parts += 1;
                    }
                }
            }
        }
        assert!(parts > 20, "{parts} parts");
        assert!((total - whole).abs() < 1e-12 * whole, "parts {total}, triangle {whole}");
        assert!((moment / total - centroid).norm() < 1e-12);
        let w = barycentric(triangle, &centroid);
        assert!(w.iter().all(|x| (x - 1.0 / 3.0).abs() < 1e-12));
    }
}
