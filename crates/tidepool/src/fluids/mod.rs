//! Fluid models. Each owns its state and its phases; shared grid pieces live in [`crate::grid`].

pub mod eulerian;
pub mod flip;
pub mod lattice;
