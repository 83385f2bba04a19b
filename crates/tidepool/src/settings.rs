//! The run's settings from `[simulation]` and the clock: plain values every part of a step
//! reads.

use crate::math::{Real, Vec3};
use serde::{Deserialize, Serialize};

/// Global settings from `[simulation]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Frames to simulate after frame 0.
    pub frames: u32,
    /// Frames per second.
    pub fps: Real,
    /// CFL number of the substeps.
    pub cfl: Real,
    /// Gravitational acceleration (m/s^2).
    pub gravity: Vec3,
    /// Liquid speed treated as a blow-up (m/s).
    pub max_speed: Real,
}

impl Settings {
    /// The unit vector against gravity (`+y` without gravity).
    pub fn up(&self) -> Vec3 {
        (-self.gravity).try_normalize(1e-12).unwrap_or_else(Vec3::y)
    }
}

/// Where the simulation is in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// Last completed frame.
    pub frame: u32,
    /// Simulated time (s).
    pub time: Real,
    /// Substeps taken since the start.
    pub step: u64,
}
