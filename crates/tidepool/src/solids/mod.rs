//! Solids: the static geometry of a scene (domain walls and obstacles) as the grid sees it,
//! rigid bodies, and mass-spring sheets.

pub mod mass_spring;
pub mod reduced;
pub mod rigid;
mod static_solids;

pub use static_solids::StaticSolids;
