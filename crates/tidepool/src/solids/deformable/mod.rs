//! Deformable bodies simulated in full (Shinar ch. 2–3): particles with lumped masses joined
//! by the elements of a hyperelastic material — tetrahedra of a volume ([`elastic`]), or the
//! triangles and hinges of cloth and thin shells ([`shell`]) — integrated with the
//! semi-implicit Newmark scheme ([`body`]), with rigid bones inside driven by PD-controlled
//! hinges ([`skeleton`]).

pub mod body;
pub mod elastic;
pub mod incompressible;
pub mod self_contact;
pub mod shell;
pub mod skeleton;

pub use body::{DeformableBody, DeformableModel};

use crate::math::{Real, Vec3};
use elastic::{Corotated, Tetrahedra};
use shell::Shell;

/// Elements per parallel task: below this, a loop over elements runs on one thread (spreading
/// a few hundred elements over threads costs more than it saves).
const PARALLEL_CHUNK: usize = 256;

/// What the damping of [`Elements`] needs of the positions ([`Elements::freeze`]).
#[derive(Clone, Debug)]
pub enum Frozen {
    /// Each tetrahedron's deformation gradient.
    Volume(Vec<crate::math::Mat3>),
    /// Each triangle's deformation gradient and each hinge's angle gradient.
    Shell(shell::Frozen),
}

/// The elements joining a body's particles. Whatever they are, the body sees them through
/// these methods: forces and energy at positions, a damping force linear in the velocities,
/// masses and the stable step.
#[derive(Clone, Debug)]
pub enum Elements {
    /// Tetrahedra filling a volume.
    Volume(Tetrahedra),
    /// The triangles and hinges of a sheet (cloth, a thin shell).
    Shell(Shell),
}

impl Elements {
    /// The elastic forces at positions `x`, added to `forces`.
    pub fn elastic_forces(&self, material: &Corotated, x: &[Vec3], forces: &mut [Vec3]) {
        match self {
            Elements::Volume(t) => t.elastic_forces(material, x, forces),
            Elements::Shell(s) => s.elastic_forces(material, x, forces),
        }
    }

    /// The energy stored at positions `x` (J; the same on any number of threads).
    pub fn energy(&self, material: &Corotated, x: &[Vec3]) -> Real {
        match self {
            Elements::Volume(t) => t.energy(material, x),
            Elements::Shell(s) => s.energy(material, x),
        }
    }

    /// What the damping needs of positions `x`, taken once per velocity solve.
    pub fn freeze(&self, x: &[Vec3]) -> Frozen {
        match self {
            Elements::Volume(t) => Frozen::Volume(t.gradients(x)),
            Elements::Shell(s) => Frozen::Shell(s.freeze(x)),
        }
    }

    /// The damping forces of velocities `v` at the positions `frozen` was taken at, added to
    /// `forces`: linear in `v`, symmetric, negative semi-definite, zero for rigid motion.
    pub fn damping_forces(&self, material: &Corotated, frozen: &Frozen, v: &[Vec3], forces: &mut [Vec3]) {
        match (self, frozen) {
            (Elements::Volume(t), Frozen::Volume(gradients)) => t.damping_forces(material, gradients, v, forces),
            (Elements::Shell(s), Frozen::Shell(frozen)) => s.damping_forces(material, frozen, v, forces),
            _ => unreachable!("frozen by the same elements"),
        }
    }

    /// The damping matrix's diagonal scale per particle at the rest positions `rest`.
    pub fn damping_diagonal(&self, material: &Corotated, rest: &[Vec3]) -> Vec<Real> {
        match self {
            Elements::Volume(t) => t.damping_diagonal(material, rest.len()),
            Elements::Shell(s) => s.damping_diagonal(material, rest),
        }
    }

    /// Lumped particle masses of a material of density `density` (kg/m^3).
    pub fn masses(&self, density: Real, particles: usize) -> Vec<Real> {
        match self {
            Elements::Volume(t) => t.masses(density, particles),
            Elements::Shell(s) => s.masses(density, particles),
        }
    }

    /// The material's volume at rest (m^3).
    pub fn volume(&self) -> Real {
        match self {
            Elements::Volume(t) => t.rest_volume.iter().sum(),
            Elements::Shell(s) => s.thickness * s.rest_area.iter().sum::<Real>(),
        }
    }

    /// How far the body reaches beyond its surface mesh (m): half a sheet's thickness (a sheet
    /// has no inside; its distance is that to its triangles less this), 0 for a volume.
    pub fn half_thickness(&self) -> Real {
        match self {
            Elements::Volume(_) => 0.0,
            Elements::Shell(s) => 0.5 * s.thickness,
        }
    }

    /// The number of tetrahedra (0 for a sheet).
    pub fn tetrahedra(&self) -> usize {
        match self {
            Elements::Volume(t) => t.tets.len(),
            Elements::Shell(_) => 0,
        }
    }

    /// The number of triangles (0 for a volume).
    pub fn triangles(&self) -> usize {
        match self {
            Elements::Volume(_) => 0,
            Elements::Shell(s) => s.triangles.len(),
        }
    }

    /// What the elements are, in words: "1200 tetrahedra", "800 triangles (1150 hinges), 1 mm thick".
    pub fn summary(&self) -> String {
        match self {
            Elements::Volume(_) => format!("{} tetrahedra", self.tetrahedra()),
            Elements::Shell(s) => format!("{} triangles ({} hinges), {} mm thick", self.triangles(), s.hinge_count(), s.thickness * 1e3),
        }
    }

    /// The longest stable substep of the explicit elastic forces (s): a fraction `cfl` of the
    /// time a pressure wave takes to cross the thinnest element, and for a sheet also of the
    /// stiffest hinge's bending period (over `pi`).
    pub fn stable_step(&self, material: &Corotated, density: Real, rest: &[Vec3], masses: &[Real], cfl: Real) -> Real {
        let speed = material.wave_speed(density);
        match self {
            Elements::Volume(t) => cfl * t.shortest_altitude(rest) / speed,
            Elements::Shell(s) => (cfl * s.shortest_altitude(rest) / speed).min(2.0 * cfl / s.bending_frequency(rest, masses)),
        }
    }
}
