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
