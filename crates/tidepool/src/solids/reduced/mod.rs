//! Reduced (modal) deformable bodies (Lu, Jin, Fedkiw): a rigid frame plus a few vibration
//! modes of a linear finite-element model. So far: the finite elements ([`fem`]) and the
//! modal basis ([`modes`]); the reduced dynamics, the coupling, articulation and skinning
//! are not built yet.

pub mod body;
pub mod fem;
pub mod modes;
