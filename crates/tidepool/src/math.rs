//! Scalar and small vector types used throughout the engine.

/// The floating-point type of all simulation state.
pub type Real = f64;

/// A 3-vector (positions, velocities, normals). SI units, y up.
pub type Vec3 = nalgebra::Vector3<Real>;

/// Converts a scene-file triple into a [`Vec3`].
pub fn vec3(a: [Real; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}
