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
        let first = *self.vertices.first()?;
        Some(self.vertices.iter().fold((first, first), |(lo, hi), v| (lo.inf(v), hi.sup(v))))
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
        let mut directed: HashMap<(u32, u32), u32> = HashMap::new();
        for t in &self.triangles {
            for e in 0..3 {
                *directed.entry((t[e], t[(e + 1) % 3])).or_default() += 1;
            }
        }
        for (&(a, b), &count) in &directed {
            if count > 1 {
                return Err(format!(
                    "edge between vertices {a} and {b} is used {count} times in the same direction \
                     (non-manifold or inconsistently oriented triangles)"
                ));
            }
            if !directed.contains_key(&(b, a)) {
                return Err(format!(
                    "edge between vertices {a} and {b} belongs to only one triangle (the mesh has a hole)"
                ));
            }
        }
        Ok(())
    }
}
