//! Implicit shapes: boxes, spheres, capped cylinders and closed triangle meshes, with exact
//! signed distances (negative inside) and triangulated surfaces for previews and caches.

use super::{MeshDistance, TriMesh};
use crate::math::{Real, Vec3};
use std::f64::consts::PI;
use std::sync::Arc;

/// A solid region of space.
#[derive(Clone, Debug)]
pub enum Shape {
    /// Axis-aligned box between two corners.
    Box { min: Vec3, max: Vec3 },
    /// Ball.
    Sphere { center: Vec3, radius: Real },
    /// Cylinder with flat caps, its axis running from `from` to `to`.
    Cylinder { from: Vec3, to: Vec3, radius: Real },
    /// The inside of a closed triangle mesh (already placed in world space).
    Mesh { surface: Arc<TriMesh>, distance: Arc<MeshDistance> },
}

impl Shape {
    /// Builds a mesh shape; the mesh must be closed and outward-oriented.
    pub fn mesh(surface: TriMesh) -> Result<Shape, String> {
        let distance = MeshDistance::new(&surface)?;
        Ok(Shape::Mesh { surface: Arc::new(surface), distance: Arc::new(distance) })
    }

    /// Signed distance from `p` to the boundary: negative inside, positive outside.
    pub fn signed_distance(&self, p: &Vec3) -> Real {
        match self {
            Shape::Box { min, max } => {
                let center = 0.5 * (min + max);
                let half = 0.5 * (max - min);
                let q = (p - center).abs() - half;
                let outside = q.sup(&Vec3::zeros()).norm();
                outside + q.max().min(0.0)
            }
            Shape::Sphere { center, radius } => (p - center).norm() - radius,
            Shape::Cylinder { from, to, radius } => {
                let axis = to - from;
                let length = axis.norm();
                let along = (p - from).dot(&axis) / length;
                let radial = ((p - from) - axis * (along / length)).norm();
                let dr = radial - radius;
                let dz = (along - 0.5 * length).abs() - 0.5 * length;
                if dr <= 0.0 && dz <= 0.0 {
                    dr.max(dz)
                } else {
                    (dr.max(0.0).powi(2) + dz.max(0.0).powi(2)).sqrt()
                }
            }
            Shape::Mesh { distance, .. } => distance.signed_distance(p),
        }
    }

    /// Axis-aligned bounds `(min, max)`.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        match self {
            Shape::Box { min, max } => (*min, *max),
            Shape::Sphere { center, radius } => (center.add_scalar(-radius), center.add_scalar(*radius)),
            Shape::Cylinder { from, to, radius } => {
                let axis = (to - from).normalize();
                // Extent of the cap discs along each world axis: r * sqrt(1 - axis_a^2).
                let e = Vec3::from_fn(|a, _| radius * (1.0 - axis[a] * axis[a]).max(0.0).sqrt());
                (from.inf(to) - e, from.sup(to) + e)
            }
            Shape::Mesh { surface, .. } => surface.bounds().unwrap_or((Vec3::zeros(), Vec3::zeros())),
        }
    }

    /// A triangulated surface of the shape (outward-facing), for previews and caches.
    pub fn surface_mesh(&self) -> TriMesh {
        match self {
            Shape::Box { min, max } => box_mesh(min, max),
            Shape::Sphere { center, radius } => sphere_mesh(center, *radius, 32, 16),
            Shape::Cylinder { from, to, radius } => cylinder_mesh(from, to, *radius, 40),
            Shape::Mesh { surface, .. } => (**surface).clone(),
        }
    }
}

fn box_mesh(min: &Vec3, max: &Vec3) -> TriMesh {
    let vertices = (0..8)
        .map(|c| {
            Vec3::new(
                if c & 1 == 0 { min.x } else { max.x },
                if c & 2 == 0 { min.y } else { max.y },
                if c & 4 == 0 { min.z } else { max.z },
            )
        })
        .collect();
    // Quads (counter-clockwise from outside) for faces -x, +x, -y, +y, -z, +z.
    let quads = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
    let triangles = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
    TriMesh { vertices, triangles }
}

fn sphere_mesh(center: &Vec3, radius: Real, segments: u32, rings: u32) -> TriMesh {
    let mut mesh = TriMesh::default();
    mesh.vertices.push(center + Vec3::new(0.0, radius, 0.0));
    for r in 1..rings {
        let theta = PI * r as Real / rings as Real;
        for s in 0..segments {
            let phi = 2.0 * PI * s as Real / segments as Real;
            let dir = Vec3::new(theta.sin() * phi.cos(), theta.cos(), -theta.sin() * phi.sin());
            mesh.vertices.push(center + radius * dir);
        }
    }
    mesh.vertices.push(center - Vec3::new(0.0, radius, 0.0));
    let bottom = mesh.vertices.len() as u32 - 1;
    let at = |r: u32, s: u32| 1 + (r - 1) * segments + s % segments;
    for s in 0..segments {
        mesh.triangles.push([0, at(1, s), at(1, s + 1)]);
        mesh.triangles.push([bottom, at(rings - 1, s + 1), at(rings - 1, s)]);
        for r in 1..rings - 1 {
            let (a, b, c, d) = (at(r, s), at(r + 1, s), at(r + 1, s + 1), at(r, s + 1));
            mesh.triangles.push([a, b, c]);
            mesh.triangles.push([a, c, d]);
        }
    }
    mesh
}

fn cylinder_mesh(from: &Vec3, to: &Vec3, radius: Real, segments: u32) -> TriMesh {
    let axis = (to - from).normalize();
    let helper = if axis.x.abs() < 0.9 { Vec3::x() } else { Vec3::y() };
    let e1 = axis.cross(&helper).normalize();
    let e2 = axis.cross(&e1);
    let mut mesh = TriMesh { vertices: vec![*from, *to], triangles: vec![] };
    for s in 0..segments {
        let a = 2.0 * PI * s as Real / segments as Real;
        let offset = radius * (a.cos() * e1 + a.sin() * e2);
        mesh.vertices.push(from + offset);
        mesh.vertices.push(to + offset);
    }
    let bottom = |s: u32| 2 + 2 * (s % segments);
    let top = |s: u32| 3 + 2 * (s % segments);
    for s in 0..segments {
        mesh.triangles.push([0, bottom(s + 1), bottom(s)]);
        mesh.triangles.push([1, top(s), top(s + 1)]);
        mesh.triangles.push([bottom(s), bottom(s + 1), top(s + 1)]);
        mesh.triangles.push([bottom(s), top(s + 1), top(s)]);
    }
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_match_closed_forms() {
        let b = Shape::Box { min: Vec3::zeros(), max: Vec3::new(2.0, 1.0, 1.0) };
        assert!((b.signed_distance(&Vec3::new(1.0, 0.5, 0.5)) + 0.5).abs() < 1e-15);
        assert!((b.signed_distance(&Vec3::new(3.0, 2.0, 0.5)) - 2f64.sqrt()).abs() < 1e-15);
        let c = Shape::Cylinder { from: Vec3::zeros(), to: Vec3::new(0.0, 2.0, 0.0), radius: 0.5 };
        assert!((c.signed_distance(&Vec3::new(0.0, 1.0, 0.0)) + 0.5).abs() < 1e-15);
        assert!((c.signed_distance(&Vec3::new(0.0, 1.9, 0.0)) + 0.1).abs() < 1e-12);
        assert!((c.signed_distance(&Vec3::new(1.5, 3.0, 0.0)) - 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn surface_meshes_are_closed_and_match_volumes() {
        let shapes = [
            (Shape::Box { min: Vec3::zeros(), max: Vec3::new(2.0, 1.0, 0.5) }, 1.0, 1e-12),
            (Shape::Sphere { center: Vec3::new(1.0, 2.0, 3.0), radius: 0.5 }, PI / 6.0, 0.03),
            (Shape::Cylinder { from: Vec3::zeros(), to: Vec3::new(1.0, 1.0, 0.0), radius: 0.3 }, PI * 0.09 * 2f64.sqrt(), 0.01),
        ];
        for (shape, volume, tolerance) in shapes {
            let mesh = shape.surface_mesh();
            mesh.check_closed().unwrap();
            assert!((mesh.signed_volume() - volume).abs() / volume < tolerance, "{shape:?}");
            // The mesh distance agrees with the analytic one for the box.
            if let Shape::Box { .. } = shape {
                let m = Shape::mesh(mesh).unwrap();
                for p in [Vec3::new(0.3, 0.2, 0.1), Vec3::new(-1.0, 0.5, 0.2), Vec3::new(1.0, 0.5, 0.25)] {
                    assert!((m.signed_distance(&p) - shape.signed_distance(&p)).abs() < 1e-12);
                }
            }
        }
    }
}
