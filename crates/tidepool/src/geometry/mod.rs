//! Triangle meshes, mesh files, implicit shapes and their signed distances.

pub mod creatures;
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

/// Unit gradient of a signed distance `f` at `x` by central differences of step `step` (its
/// outward normal near the surface); none where the differences vanish.
pub fn unit_gradient(f: impl Fn(&Vec3) -> Real, x: &Vec3, step: Real) -> Option<Vec3> {
    Vec3::from_fn(|a, _| {
        let e = Vec3::ith(a, step);
        (f(&(x + e)) - f(&(x - e))) / (2.0 * step)
    })
    .try_normalize(1e-12)
}
