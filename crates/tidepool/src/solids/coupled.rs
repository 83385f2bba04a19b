//! What the monolithic solid–fluid solve ([`crate::coupling`]) needs from a solid: its shape,
//! the velocity of its material, and its impulse response `J K J^T` (Lu, Jin, Fedkiw eq. 43).

use crate::math::{Real, Vec3};

/// What the coupled solve needs from a solid.
pub trait CoupledSolid: Sync {
    /// Signed distance from `x` to the solid's surface (negative inside).
    fn signed_distance(&self, x: &Vec3) -> Real;
    /// A ball (centre, radius) containing the solid.
    fn bounding_sphere(&self) -> (Vec3, Real);
    /// The solid's volume (m^3).
    fn volume(&self) -> Real;
    /// Velocity of the solid's material at `x`.
    fn velocity_at(&self, x: &Vec3) -> Vec3;
    /// The velocity changes at `points` that the impulses `impulses` applied at those points
    /// would cause (`J K J^T`), written to `changes`.
    fn impulse_response(&self, points: &[Vec3], impulses: &[Vec3], changes: &mut [Vec3]);
    /// Applies the impulses `impulses` at `points`.
    fn apply_impulses(&mut self, points: &[Vec3], impulses: &[Vec3]);
}

/// A solid whose velocity is prescribed for one solve: it pushes the liquid and takes no
/// impulse back.
pub struct Held<'a>(pub &'a dyn CoupledSolid);

impl CoupledSolid for Held<'_> {
    fn signed_distance(&self, x: &Vec3) -> Real {
        self.0.signed_distance(x)
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        self.0.bounding_sphere()
    }

    fn volume(&self) -> Real {
        self.0.volume()
    }

    fn velocity_at(&self, x: &Vec3) -> Vec3 {
        self.0.velocity_at(x)
    }

    fn impulse_response(&self, _: &[Vec3], _: &[Vec3], changes: &mut [Vec3]) {
        changes.fill(Vec3::zeros());
    }

    fn apply_impulses(&mut self, _: &[Vec3], _: &[Vec3]) {}
}
