//! Solids: the static geometry of a scene (domain walls and obstacles) as the grid sees it,
//! rigid bodies, reduced deformable bodies, their collisions and contact, and mass-spring
//! sheets.

pub mod contact;
pub mod mass_spring;
pub mod reduced;
pub mod rigid;
mod static_solids;

pub use static_solids::StaticSolids;
