//! Solids. So far: the static geometry of a scene (domain walls and obstacles) as the grid sees it.

mod static_solids;

pub use static_solids::StaticSolids;
