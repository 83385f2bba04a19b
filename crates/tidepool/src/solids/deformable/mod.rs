//! Deformable bodies simulated in full (Shinar ch. 2–3): tetrahedral finite elements of a
//! hyperelastic material ([`elastic`]) on particles with lumped masses, integrated with the
//! semi-implicit Newmark scheme ([`body`]).

pub mod body;
pub mod elastic;

pub use body::{DeformableBody, DeformableModel};
