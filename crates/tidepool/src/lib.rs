//! tidepool: two-way coupled fluid-solid simulation for animation.
//!
//! A scene file ([`scene`]) becomes a [`world::World`]; [`pipeline::step`] advances it by one
//! substep; a [`driver::Driver`] runs frames of substeps and hands each frame to
//! [`driver::FrameSink`]s ([`output`]).

pub mod bench;
pub mod coupling;
pub mod driver;
pub mod error;
pub mod fluids;
pub mod geometry;
pub mod grid;
pub mod input;
pub mod math;
pub mod output;
pub mod pipeline;
pub mod scene;
pub mod session;
pub mod settings;
pub mod solids;
pub mod world;

pub use error::{Error, Result, SceneError};
