//! tidepool: two-way coupled fluid-solid simulation for animation.

pub mod geometry;
pub mod grid;
pub mod math;
