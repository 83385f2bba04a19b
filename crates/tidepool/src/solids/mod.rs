//! Solids: the static geometry of a scene (domain walls and obstacles) as the grid sees it,
//! rigid bodies, reduced deformable bodies, deformable bodies simulated in full, their
//! collisions and contact, and mass-spring sheets.
//!
//! Every kind of moving solid implements three interfaces: [`CoupledSolid`] (what the
//! monolithic solve with a fluid needs), [`contact::ContactBody`] (what collisions and contact
//! need, per contact part) and [`Solid`] (its own time integration, checks, outputs and
//! checkpoint state). The world keeps one typed [`SolidSet`] per kind in [`Solids`]; the
//! pipeline loops over `Solids::iter_mut` and never names a kind.

pub mod contact;
mod coupled;
pub mod deformable;
pub mod mass_spring;
pub mod reduced;
pub mod rigid;
mod static_solids;

pub use coupled::{diagonal_by_responses, Constrained, CoupledSolid, Site};
pub use static_solids::{Boundary, StaticSolids};

use crate::geometry::TriMesh;
use crate::math::{Quat, Real, Vec3};
use contact::{ContactBody, StaticGeometry};
use deformable::DeformableBody;
use reduced::articulated::Articulated;
use rigid::RigidBody;
use std::marker::PhantomData;

/// The state of one part of a solid as outputs report it (a rigid body has one part, an
/// articulated reduced body one per sub-body).
#[derive(Clone, Debug, PartialEq)]
pub struct PartState {
    /// The part's name.
    pub name: String,
    /// Centre of mass (m), orientation, velocity of the centre of mass (m/s), angular
    /// velocity (rad/s).
    pub position: Vec3,
    pub orientation: Quat,
    pub velocity: Vec3,
    pub angular_velocity: Vec3,
    /// Linear momentum (kg m/s; zero for static and kinematic bodies, whose motion is
    /// prescribed).
    pub momentum: Vec3,
    /// Energy in the part's vibration modes (J), for reduced deformable parts.
    pub modal_energy: Option<Real>,
    /// Energy stored in the part's elements (J), for deformable bodies simulated in full.
    pub elastic_energy: Option<Real>,
    /// The bones inside a deformable body simulated in full.
    pub bones: Vec<BonePose>,
}

/// Where a bone is: its name, its centre of mass (m), its orientation from where the body
/// started, and a hinge's angle (rad).
#[derive(Clone, Debug, PartialEq)]
pub struct BonePose {
    pub name: String,
    pub position: Vec3,
    pub orientation: Quat,
    pub angle: Option<Real>,
}

/// What the pipeline, the outputs and checkpoints need from a kind of solid, beside
/// [`CoupledSolid`]. The substep follows the Newmark scheme of Lu, Jin, Fedkiw sec. 6: the
/// pipeline saves the velocities, predicts half a step, solves, moves the positions, restores
/// the velocities and predicts the whole step for the second solve.
pub trait Solid: CoupledSolid {
    /// The solid's name in the scene.
    fn name(&self) -> &str;
    /// Whether forces and impulses move the solid (static and kinematic bodies' motion is
    /// prescribed).
    fn is_dynamic(&self) -> bool {
        true
    }
    /// Takes the velocity its scene prescribes over the step `[time, time + dt]` (kinematic
    /// bodies following a path); a no-op for solids whose motion is simulated.
    fn prescribe(&mut self, _time: Real, _dt: Real) {}
    /// The velocities after `h` seconds of gravity and the solid's own forces (elasticity,
    /// actuation), before any impulse from outside (Newmark's explicit prediction).
    fn predict_velocities(&mut self, h: Real, gravity: &Vec3, time: Real);
    /// Moves the positions over `dt` with the current velocities.
    fn advance_positions(&mut self, dt: Real);
    /// The velocity state (to be restored with [`Solid::set_velocity_state`]).
    fn velocity_state(&self) -> Vec<Real>;
    /// Restores a velocity state taken with [`Solid::velocity_state`].
    fn set_velocity_state(&mut self, state: &[Real]);
    /// Restores internal constraints (joints) after impulses from contact.
    fn after_contact(&mut self) {}
    /// Collisions of the solid with itself over a step of `dt` (a sheet's layers folding onto
    /// each other); a no-op for solids that cannot meet themselves.
    fn collide_with_itself(&mut self, _dt: Real) {}
    /// A bound on the speed of the solid's points (m/s), for the CFL condition.
    fn max_point_speed(&self) -> Real;
    /// The longest substep the solid's own forces allow (s; explicit elastic forces need one).
    fn max_time_step(&self) -> Real {
        Real::INFINITY
    }
    /// A non-finite value or a speed above `max_speed` is a blow-up.
    fn check(&self, max_speed: Real) -> Result<(), String>;
    /// The surface in world space with the material's velocity at each vertex.
    fn surface(&self) -> (TriMesh, Vec<Vec3>);
    /// Each part's state, with the part as a coupled solid (for its submerged volume).
    fn parts(&self) -> Vec<(PartState, &dyn CoupledSolid)>;
    /// The parts that collide, as contact bodies (one collision group: they do not collide
    /// with each other).
    fn contact_parts(&mut self) -> Vec<&mut dyn ContactBody>;
    /// The solid's dynamic state for a checkpoint.
    fn save_state(&self) -> Vec<u8>;
    /// Restores a state written by [`Solid::save_state`] for the same scene.
    fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String>;
}

/// A stable handle to a solid of kind `T` in its [`SolidSet`].
pub struct Handle<T> {
    index: usize,
    kind: PhantomData<fn() -> T>,
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handle<T> {}

impl<T> std::fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handle({})", self.index)
    }
}

impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}

/// The solids of one kind, in the order they were inserted. Solids are never removed, so a
/// handle stays valid for the life of the world; the set also reads as a slice, indexed in
/// insertion order (the order of the scene's bodies).
#[derive(Clone, Debug)]
pub struct SolidSet<T> {
    items: Vec<T>,
}

impl<T> Default for SolidSet<T> {
    fn default() -> Self {
        SolidSet { items: Vec::new() }
    }
}

impl<T> SolidSet<T> {
    /// Adds a solid; returns its handle.
    pub fn insert(&mut self, solid: T) -> Handle<T> {
        self.items.push(solid);
        Handle { index: self.items.len() - 1, kind: PhantomData }
    }
}

impl<T> FromIterator<T> for SolidSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        SolidSet { items: iter.into_iter().collect() }
    }
}

impl<T> std::ops::Deref for SolidSet<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> std::ops::DerefMut for SolidSet<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items
    }
}

impl<T> std::ops::Index<usize> for SolidSet<T> {
    type Output = T;
    fn index(&self, index: usize) -> &T {
        &self.items[index]
    }
}

impl<T> std::ops::IndexMut<usize> for SolidSet<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.items[index]
    }
}

impl<T> std::ops::Index<Handle<T>> for SolidSet<T> {
    type Output = T;
    fn index(&self, handle: Handle<T>) -> &T {
        &self.items[handle.index]
    }
}

impl<T> std::ops::IndexMut<Handle<T>> for SolidSet<T> {
    fn index_mut(&mut self, handle: Handle<T>) -> &mut T {
        &mut self.items[handle.index]
    }
}

/// All moving solids of a world, one set per kind, and the static geometry they collide with.
/// A new kind of solid is one more set here and its entry in [`Solids::iter`] and
/// [`all_mut`].
#[derive(Clone, Debug)]
pub struct Solids {
    /// Rigid bodies: dynamic, kinematic and static.
    pub rigid: SolidSet<RigidBody>,
    /// Reduced deformable bodies, each on its own or articulated with others.
    pub reduced: SolidSet<Articulated>,
    /// Deformable bodies simulated in full.
    pub deformable: SolidSet<DeformableBody>,
    /// The static world the solids collide with: closed domain sides and obstacles.
    pub statics: StaticGeometry,
}

impl Solids {
    /// No moving solids, colliding with `statics`.
    pub fn new(statics: StaticGeometry) -> Self {
        Solids { rigid: SolidSet::default(), reduced: SolidSet::default(), deformable: SolidSet::default(), statics }
    }

    /// Every solid: rigid bodies, reduced bodies, then deformable ones.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Solid> {
        let reduced = self.reduced.iter().map(|b| b as &dyn Solid);
        self.rigid.iter().map(|b| b as &dyn Solid).chain(reduced).chain(self.deformable.iter().map(|b| b as &dyn Solid))
    }

    /// Every solid, mutably, in the order of [`Solids::iter`].
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut dyn Solid> {
        all_mut(&mut self.rigid, &mut self.reduced, &mut self.deformable)
    }

    /// Whether there is no moving solid.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Every solid as a coupled solid.
    pub fn coupled(&self) -> Vec<&dyn CoupledSolid> {
        self.iter().map(|s| s as &dyn CoupledSolid).collect()
    }

    /// Every solid as a coupled solid the solve may push.
    pub fn coupled_mut(&mut self) -> Vec<&mut dyn CoupledSolid> {
        self.iter_mut().map(|s| s as &mut dyn CoupledSolid).collect()
    }

    /// Every colliding part with its collision group (the index of its solid), and the
    /// static geometry.
    pub fn contact_parts(&mut self) -> (Vec<&mut dyn ContactBody>, Vec<usize>, &StaticGeometry) {
        let mut parts = Vec::new();
        let mut groups = Vec::new();
        let Solids { rigid, reduced, deformable, statics } = self;
        for (group, solid) in all_mut(rigid, reduced, deformable).enumerate() {
            for part in solid.contact_parts() {
                parts.push(part);
                groups.push(group);
            }
        }
        (parts, groups, statics)
    }

    /// The longest substep every solid's own forces allow (s).
    pub fn max_time_step(&self) -> Real {
        self.iter().map(|s| s.max_time_step()).fold(Real::INFINITY, Real::min)
    }

    /// The fastest point of any solid (m/s).
    pub fn max_point_speed(&self) -> Real {
        self.iter().map(|s| s.max_point_speed()).fold(0.0, Real::max)
    }

    /// Total linear momentum of the solids (kg m/s).
    pub fn momentum(&self) -> Vec3 {
        self.iter().flat_map(|s| s.parts().into_iter().map(|(p, _)| p.momentum)).sum()
    }

    /// Every solid's surface in world space, with the material's velocity at each vertex, in
    /// one mesh.
    pub fn surface(&self) -> (TriMesh, Vec<Vec3>) {
        let mut mesh = TriMesh::default();
        let mut velocities = Vec::new();
        for solid in self.iter() {
            let (surface, v) = solid.surface();
            mesh.append(&surface);
            velocities.extend(v);
        }
        (mesh, velocities)
    }
}

/// The solids of a solve, to be read only.
pub fn shared<'a>(solids: &'a [&mut dyn CoupledSolid]) -> Vec<&'a dyn CoupledSolid> {
    solids.iter().map(|s| &**s as &dyn CoupledSolid).collect()
}

/// The first of `bodies` whose inside holds `x`, with its signed distance there (negative):
/// each body is asked only where `x` lies in its bounding sphere (`spheres[i]`, as
/// [`CoupledSolid::bounding_sphere`] gives them).
pub fn body_holding(bodies: &[&dyn CoupledSolid], spheres: &[(Vec3, Real)], x: &Vec3) -> Option<(usize, Real)> {
    bodies
        .iter()
        .zip(spheres)
        .enumerate()
        .filter(|(_, (_, (centre, radius)))| (x - centre).norm() <= *radius)
        .map(|(i, (body, _))| (i, body.signed_distance(x)))
        .find(|(_, d)| *d < 0.0)
}

/// Every solid of the sets, mutably, in the order of [`Solids::iter`] (apart from [`Solids`]
/// so that the static geometry can be borrowed beside it).
fn all_mut<'a>(
    rigid: &'a mut SolidSet<RigidBody>,
    reduced: &'a mut SolidSet<Articulated>,
    deformable: &'a mut SolidSet<DeformableBody>,
) -> impl Iterator<Item = &'a mut dyn Solid> {
    let reduced = reduced.iter_mut().map(|b| b as &mut dyn Solid);
    rigid.iter_mut().map(|b| b as &mut dyn Solid).chain(reduced).chain(deformable.iter_mut().map(|b| b as &mut dyn Solid))
}

/// Encodes a solid's checkpoint state (postcard: compact, exact for floats).
pub fn encode_state<T: serde::Serialize>(state: &T) -> Vec<u8> {
    postcard::to_allocvec(state).expect("solid state serialises")
}

/// Decodes a solid's checkpoint state.
pub fn decode_state<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("a solid's state does not decode: {e}"))
}
