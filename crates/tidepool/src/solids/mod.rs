//! Solids: the static geometry of a scene (domain walls and obstacles) as the grid sees it, and
//! rigid bodies.

pub mod rigid;
mod static_solids;

pub use static_solids::StaticSolids;
