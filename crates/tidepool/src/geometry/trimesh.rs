//! Indexed triangle meshes.

use super::shapes::MassProperties;
use crate::math::{Mat3, Real, Vec3};
use std::collections::HashMap;

/// An indexed triangle mesh; triangles are counter-clockwise seen from outside.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriMesh {
    /// Vertex positions (m).
    pub vertices: Vec<Vec3>,
    /// Vertex indices of each triangle.
    pub triangles: Vec<[u32; 3]>,
}

impl TriMesh {
    /// Volume enclosed by a closed mesh (positive when triangles face outwards).
    pub fn signed_volume(&self) -> Real {
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.vertices[i as usize]);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum()
    }

    /// Volume, centroid and inertia about the centroid of the solid a closed, outward-oriented
    /// mesh bounds, at unit density: exact for the polyhedron, summing the signed tetrahedra
    /// that join each triangle to the origin (a tetrahedron with vertices `0, a, b, c` and
    /// volume `v` has second moment `v/20 (a aT + b bT + c cT + s sT)`, `s = a + b + c`).
    pub fn mass_properties(&self) -> MassProperties {
        let (mut volume, mut first, mut second) = (0.0, Vec3::zeros(), Mat3::zeros());
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| self.vertices[i as usize]);
            let v = a.dot(&b.cross(&c)) / 6.0;
            let sum = a + b + c;
            volume += v;
            first += v * sum / 4.0;
            second += (a * a.transpose() + b * b.transpose() + c * c.transpose() + sum * sum.transpose()) * (v / 20.0);
        }
        let centroid = first / volume;
        // Second moment about the centroid, then the inertia tensor tr(C) I - C.
        let central = second - centroid * centroid.transpose() * volume;
        MassProperties { volume, centroid, inertia: Mat3::identity() * central.trace() - central }
    }

    /// Area-weighted vertex normals (unit length; zero for unused vertices).
    pub fn vertex_normals(&self) -> Vec<Vec3> {
        let mut normals = vec![Vec3::zeros(); self.vertices.len()];
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| self.vertices[i as usize]);
            let n = (b - a).cross(&(c - a));
            for &i in t {
                normals[i as usize] += n;
            }
        }
        for n in &mut normals {
            let len = n.norm();
            if len > 0.0 {
                *n /= len;
            }
        }
        normals
    }

    /// Axis-aligned bounds `(min, max)`; `None` for a mesh without vertices.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        super::bounds(self.vertices.iter().copied())
    }

    /// Appends `other`'s triangles and vertices.
    pub fn append(&mut self, other: &TriMesh) {
        let base = self.vertices.len() as u32;
        self.vertices.extend_from_slice(&other.vertices);
        self.triangles.extend(other.triangles.iter().map(|t| t.map(|i| i + base)));
    }

    /// Reverses the orientation of every triangle.
    pub fn flip(&mut self) {
        for t in &mut self.triangles {
            t.swap(1, 2);
        }
    }

    /// Checks that the mesh is closed and consistently oriented: every directed edge `(a, b)`
    /// is matched by exactly one `(b, a)`. Returns a description of the first defect.
    pub fn check_closed(&self) -> Result<(), String> {
        match self.boundary_edges()?.first() {
            Some((a, b)) => Err(format!("edge between vertices {a} and {b} belongs to only one triangle (the mesh has a hole)")),
            None => Ok(()),
        }
    }

    /// Two triangles that cross (an edge of one passes through the other), not counting
    /// triangles that share a vertex; `None` when the mesh does not intersect itself. Only
    /// triangles binned into a common cell of a uniform grid (cells the size of the mean
    /// triangle's bounding box) are tested against each other. Triangles that only touch, or
    /// overlap in a common plane, are not reported.
    pub fn find_self_intersection(&self) -> Option<(usize, usize)> {
        let corners = |t: &[u32; 3]| t.map(|i| self.vertices[i as usize]);
        let boxes: Vec<(Vec3, Vec3)> = self
            .triangles
            .iter()
            .map(|t| {
                let [a, b, c] = corners(t);
                (a.inf(&b).inf(&c), a.sup(&b).sup(&c))
            })
            .collect();
        let mean = boxes.iter().map(|(lo, hi)| (hi - lo).norm()).sum::<Real>() / boxes.len().max(1) as Real;
        if mean <= 0.0 {
            return None;
        }
        let cell = |x: &Vec3| x.map(|v| (v / mean).floor() as i64);
        let mut bins: HashMap<[i64; 3], Vec<usize>> = HashMap::new();
        for (t, (lo, hi)) in boxes.iter().enumerate() {
            let (a, b) = (cell(lo), cell(hi));
            for i in a.x..=b.x {
                for j in a.y..=b.y {
                    for k in a.z..=b.z {
                        bins.entry([i, j, k]).or_default().push(t);
                    }
                }
            }
        }
        let crosses = |t: usize, u: usize| {
            let (p, q) = (corners(&self.triangles[t]), corners(&self.triangles[u]));
            (0..3).any(|e| segment_crosses_triangle(&p[e], &p[(e + 1) % 3], &q)) || (0..3).any(|e| segment_crosses_triangle(&q[e], &q[(e + 1) % 3], &p))
        };
        let mut pairs: Vec<(usize, usize)> = bins
            .values()
            .flat_map(|members| members.iter().enumerate().flat_map(move |(n, &t)| members[n + 1..].iter().map(move |&u| (t.min(u), t.max(u)))))
            .filter(|&(t, u)| !self.triangles[t].iter().any(|v| self.triangles[u].contains(v)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        pairs.into_iter().find(|&(t, u)| crosses(t, u))
    }

    /// A flat rectangle `width` along x by `depth` along z, centred on the origin, facing +y,
    /// cut into near-equilateral triangles of side about `spacing`: rows of vertices
    /// `spacing sqrt(3) / 2` apart, every other row shifted by half a spacing (and closed at
    /// both ends by a vertex on the rectangle's edge).
    pub fn sheet(width: Real, depth: Real, spacing: Real) -> TriMesh {
        let columns = (width / spacing).round().max(1.0) as usize;
        let rows = (depth / (spacing * 0.75f64.sqrt())).round().max(1.0) as usize;
        let (dx, dz) = (width / columns as Real, depth / rows as Real);
        let mut vertices = Vec::new();
        let mut starts = Vec::new();
        for j in 0..=rows {
            starts.push(vertices.len() as u32);
            let z = j as Real * dz - 0.5 * depth;
            let xs: Vec<Real> = if j % 2 == 0 {
                (0..=columns).map(|i| i as Real * dx).collect()
            } else {
                std::iter::once(0.0).chain((0..columns).map(|i| (i as Real + 0.5) * dx)).chain(std::iter::once(width)).collect()
            };
            vertices.extend(xs.into_iter().map(|x| Vec3::new(x - 0.5 * width, 0.0, z)));
        }
        starts.push(vertices.len() as u32);
        let mut triangles = Vec::new();
        for j in 0..rows {
            // Zip the two rows together, always advancing along the one whose next vertex is
            // nearer the start.
            let (mut a, mut b) = (starts[j], starts[j + 1]);
            let (a_end, b_end) = (starts[j + 1] - 1, starts[j + 2] - 1);
            while a < a_end || b < b_end {
                let advance_a = b == b_end || (a < a_end && vertices[a as usize + 1].x <= vertices[b as usize + 1].x);
                if advance_a {
                    triangles.push([a, b, a + 1]);
                    a += 1;
                } else {
                    triangles.push([a, b, b + 1]);
                    b += 1;
                }
            }
        }
        // Face +y: the rows run along +x and follow each other along +z.
        for t in &mut triangles {
            let [p, q, r] = t.map(|i| vertices[i as usize]);
            if (q - p).cross(&(r - p)).y < 0.0 {
                t.swap(1, 2);
            }
        }
        TriMesh { vertices, triangles }
    }

    /// The edges of the mesh's holes, `(a, b)` as their one triangle runs them, sorted; an
    /// error if an edge is used twice in the same direction (non-manifold or inconsistently
    /// oriented triangles).
    pub fn boundary_edges(&self) -> Result<Vec<(u32, u32)>, String> {
        let mut directed: HashMap<(u32, u32), u32> = HashMap::new();
        for t in &self.triangles {
            for e in 0..3 {
                *directed.entry((t[e], t[(e + 1) % 3])).or_default() += 1;
            }
        }
        if let Some((&(a, b), count)) = directed.iter().find(|(_, &count)| count > 1) {
            return Err(format!(
                "edge between vertices {a} and {b} is used {count} times in the same direction \
                 (non-manifold or inconsistently oriented triangles)"
            ));
        }
        let mut open: Vec<(u32, u32)> = directed.keys().filter(|&&(a, b)| !directed.contains_key(&(b, a))).copied().collect();
        open.sort_unstable();
        Ok(open)
    }
}

/// Whether the segment from `a` to `b` passes through the inside of triangle `t` (end points
/// and the triangle's edges excluded, up to a relative tolerance).
fn segment_crosses_triangle(a: &Vec3, b: &Vec3, t: &[Vec3; 3]) -> bool {
    const EPS: Real = 1e-9;
    let (e1, e2, d) = (t[1] - t[0], t[2] - t[0], b - a);
    let p = d.cross(&e2);
    let det = e1.dot(&p);
    if det.abs() <= EPS * e1.norm() * e2.norm() * d.norm() {
        return false;
    }
    let s = a - t[0];
    let u = s.dot(&p) / det;
    let q = s.cross(&e1);
    let v = d.dot(&q) / det;
    let along = e2.dot(&q) / det;
    u > EPS && v > EPS && u + v < 1.0 - EPS && along > EPS && along < 1.0 - EPS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Shape;

    /// The closed surfaces of a ball and a torus do not intersect themselves; a
    /// triangle pierced by another does, and sharing an edge or a vertex is not crossing.
    #[test]
    fn self_intersections_are_found() {
        let ball = Shape::Sphere { center: Vec3::zeros(), radius: 1.0 }.surface_mesh();
        let torus = Shape::Torus { center: Vec3::zeros(), axis: Vec3::y(), major: 1.0, minor: 0.3 }.surface_mesh();
        for mesh in [ball, torus] {
            assert_eq!(mesh.find_self_intersection(), None);
        }
        let pierced = TriMesh {
            vertices: vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, -1.0), Vec3::new(0.2, 0.2, 1.0), Vec3::new(0.3, 0.3, 1.0)],
            triangles: vec![[0, 1, 2], [3, 4, 5]],
        };
        assert_eq!(pierced.find_self_intersection(), Some((0, 1)));
        let fan = TriMesh { vertices: vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()], triangles: vec![[0, 1, 2], [0, 2, 3], [0, 3, 1]] };
        assert_eq!(fan.find_self_intersection(), None);
    }
}
