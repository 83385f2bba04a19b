//! Reduced (modal) deformable bodies (Lu, Jin, Fedkiw): a rigid frame plus a few vibration
//! modes of a linear finite-element model ([`fem`], [`modes`]), their dynamics and coupling
//! ([`body`]), and articulation, actuation and skinning ([`articulated`]).

pub mod articulated;
pub mod body;
pub mod cache;
pub mod fem;
pub mod modes;
