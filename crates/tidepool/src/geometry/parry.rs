//! The one adapter to `parry3d-f64` (whose math types are glam's): signed distance to a closed
//! triangle mesh, unsigned distance to any.

use super::{barycentric, clip_to_box, TriMesh};
use crate::math::{Real, Vec3};
use parry3d_f64::bounding_volume::Aabb;
use parry3d_f64::math::Vector as PVec;
use parry3d_f64::query::{PointQuery, PointQueryWithLocation, Ray, RayCast};
use parry3d_f64::shape::{TriMesh as ParryTriMesh, TriMeshFlags};

fn to_parry(v: &Vec3) -> PVec {
    PVec::new(v.x, v.y, v.z)
}

fn from_parry(v: PVec) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

/// Exact signed distance to a closed, outward-oriented triangle mesh (negative inside), using a
/// bounding-volume hierarchy and angle-weighted pseudo-normals for the inside test.
pub struct MeshDistance {
    mesh: ParryTriMesh,
    /// Whether the mesh is closed and oriented, so that points have an inside.
    signed: bool,
}

impl std::fmt::Debug for MeshDistance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshDistance").field("triangles", &self.mesh.num_triangles()).finish()
    }
}

impl MeshDistance {
    /// Builds the query structure. The mesh must be closed and have at least one triangle.
    pub fn new(mesh: &TriMesh) -> Result<Self, String> {
        let vertices = mesh.vertices.iter().map(to_parry).collect();
        ParryTriMesh::with_flags(vertices, mesh.triangles.clone(), TriMeshFlags::ORIENTED).map(|mesh| MeshDistance { mesh, signed: true }).map_err(|e| e.to_string())
    }

    /// Builds the query structure for unsigned distances to any triangle mesh, open or closed.
    pub fn unsigned(mesh: &TriMesh) -> Result<Self, String> {
        let vertices = mesh.vertices.iter().map(to_parry).collect();
        ParryTriMesh::new(vertices, mesh.triangles.clone()).map(|mesh| MeshDistance { mesh, signed: false }).map_err(|e| e.to_string())
    }

    /// Signed distance from `p` to the surface (for a mesh built with [`MeshDistance::unsigned`],
    /// the distance).
    pub fn signed_distance(&self, p: &Vec3) -> Real {
        let projection = self.mesh.project_local_point(to_parry(p), false);
        let d = (from_parry(projection.point) - p).norm();
        if self.signed && projection.is_inside {
            -d
        } else {
            d
        }
    }

    /// The distance from `p` to a mesh built with [`MeshDistance::unsigned`] where it is below
    /// `within`, else `within`: a query that stops looking once nothing nearer can be found
    /// (far cheaper than the exact distance for points away from the surface).
    pub fn unsigned_distance_within(&self, p: &Vec3, within: Real) -> Real {
        debug_assert!(!self.signed, "only an unsigned distance can be capped");
        self.mesh.project_local_point_with_max_dist(to_parry(p), false, within).map_or(within, |projection| (from_parry(projection.point) - p).norm().min(within))
    }

    /// Whether the segment from `a` to `b` meets a triangle of the mesh.
    pub fn crosses(&self, a: &Vec3, b: &Vec3) -> bool {
        self.mesh.cast_local_ray(&Ray::new(to_parry(a), to_parry(&(b - a))), 1.0, false).is_some()
    }

    /// The signed distance from `p` ([`MeshDistance::signed_distance`]), the nearest
    /// triangle and the barycentric coordinates of the nearest point on it.
    pub fn nearest(&self, p: &Vec3) -> (Real, usize, [Real; 3]) {
        let (projection, (triangle, location)) = self.mesh.project_local_point_and_get_location(to_parry(p), false);
        let d = (from_parry(projection.point) - p).norm();
        let weights = location.barycentric_coordinates().unwrap_or([1.0 / 3.0; 3]);
        (if self.signed && projection.is_inside { -d } else { d }, triangle as usize, weights)
    }

    /// The mesh inside the box `lo..hi`, triangle by triangle: each one's index, the area of
    /// its part in the box and the barycentric coordinates of that part's centroid.
    pub fn parts_in_box(&self, lo: &Vec3, hi: &Vec3) -> Vec<(usize, Real, [Real; 3])> {
        let aabb = Aabb::new(to_parry(lo), to_parry(hi));
        self.mesh
            .bvh()
            .intersect_aabb(&aabb)
            .filter_map(|t| {
                let triangle = self.mesh.triangle(t);
                let corners = [from_parry(triangle.a), from_parry(triangle.b), from_parry(triangle.c)];
                let (area, centroid) = clip_to_box(corners, lo, hi)?;
                Some((t as usize, area, barycentric(corners, &centroid)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment crosses a square sheet where it passes through it, and not where it passes
    /// beside it or stops short of it.
    #[test]
    fn segments_cross_a_sheet_only_through_it() {
        let square = TriMesh {
            vertices: vec![Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(1.0, 1.0, 0.0), Vec3::new(0.0, 1.0, 0.0)],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        };
        let sheet = MeshDistance::unsigned(&square).unwrap();
        assert!(sheet.crosses(&Vec3::new(0.3, 0.6, -0.1), &Vec3::new(0.4, 0.5, 0.2)));
        assert!(sheet.crosses(&Vec3::new(0.3, 0.6, 0.1), &Vec3::new(0.4, 0.5, -0.2)));
        assert!(!sheet.crosses(&Vec3::new(1.3, 0.6, -0.1), &Vec3::new(1.4, 0.5, 0.2)));
        assert!(!sheet.crosses(&Vec3::new(0.3, 0.6, -0.1), &Vec3::new(0.4, 0.5, -0.01)));
    }
}
