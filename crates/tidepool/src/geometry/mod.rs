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
