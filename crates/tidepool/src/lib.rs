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

/// Runs `job` on one of the thread pool's threads and returns its result. There each parallel
/// loop starts on the calling thread at once; from any other thread a loop hands its work to
/// the pool and sleeps until woken when it is done (tens of microseconds per loop, which a
/// cloth's solve of a few hundred particles felt fourfold). The command line runs its commands
/// this way, and the tests their simulations.
pub fn on_pool<T: Send>(job: impl FnOnce() -> T + Send) -> T {
    let mut result = None;
    rayon::scope(|_| result = Some(job()));
    result.expect("the scope ran the job")
}
