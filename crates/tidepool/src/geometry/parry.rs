//! The one adapter to `parry3d-f64` (whose math types are glam's): signed distance to a closed
//! triangle mesh, unsigned distance to any.

use super::TriMesh;
use crate::math::{Real, Vec3};
use parry3d_f64::math::Vector as PVec;
use parry3d_f64::query::{PointQuery, PointQueryWithLocation};
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

    /// The signed distance from `p` ([`MeshDistance::signed_distance`]), the nearest
    /// triangle and the barycentric coordinates of the nearest point on it.
    pub fn nearest(&self, p: &Vec3) -> (Real, usize, [Real; 3]) {
        let (projection, (triangle, location)) = self.mesh.project_local_point_and_get_location(to_parry(p), false);
        let d = (from_parry(projection.point) - p).norm();
        let weights = location.barycentric_coordinates().unwrap_or([1.0 / 3.0; 3]);
        (if self.signed && projection.is_inside { -d } else { d }, triangle as usize, weights)
    }
}
