//! Hyperelastic tetrahedra: the fixed corotated model (Stomakhin et al. 2012, the robust
//! corotated model Shinar's solids use, stated on the diagonalised deformation gradient) and
//! a corotated damping, with their nodal forces.
//!
//! A tetrahedron with rest edge matrix `D_m` (columns `X_i - X_0`) and deformed `D_s` has the
//! deformation gradient `F = D_s D_m^-1`. With `F = U Sigma V^T` its singular value
//! decomposition, signs fixed so that `U` and `V` are rotations (an inverted element has one
//! negative singular value), `R = U V^T` is the rotation of `F` and the energy density
//!
//! `Psi = mu sum_i (sigma_i - 1)^2 + lambda / 2 (J - 1)^2 = mu |F - R|^2 + lambda / 2 (J - 1)^2`
//!
//! (`J = det F`) has the first Piola–Kirchhoff stress `P = 2 mu (F - R) + lambda (J - 1) cof F`,
//! `cof F = J F^-T` (computed from cross products of `F`'s columns: defined for flat and
//! inverted elements alike). It is zero for any rotation, grows with stretch and with volume
//! change, and pushes an inverted element back out. The nodal forces of a stress `P` are the
//! columns of `-V_0 P D_m^-T` on vertices 1 to 3 and minus their sum on vertex 0: they sum to
//! zero, and their torque is zero because `P F^T` is symmetric, so internal forces keep linear
//! and angular momentum.
//!
//! Damping resists the rate of Green's strain, `E' = sym(F^T F')`, with the linear elastic law
//! scaled by `beta` (s): the second Piola–Kirchhoff stress `S_d = beta (2 mu E' + lambda tr(E')
//! I)`, `P_d = F S_d`. It is linear in the velocities for a fixed `F`, symmetric and negative
//! semi-definite (the power `-beta V_0 (2 mu E':E' + lambda tr(E')^2)`), zero for any rigid
//! motion (`F^T F` does not change as a deformed element turns), and `P_d F^T` is symmetric:
//! stiffness-proportional (Rayleigh) damping that keeps angular momentum.

use super::PARALLEL_CHUNK;
use crate::geometry::TetMesh;
use crate::math::{Mat3, Real, Vec3};
use rayon::prelude::*;

/// The rest shape of a tetrahedral mesh's elements.
#[derive(Clone, Debug)]
pub struct Tetrahedra {
    /// Vertex indices of each tetrahedron.
    pub tets: Vec<[u32; 4]>,
    /// `D_m^-1` of each tetrahedron.
    rest_inverse: Vec<Mat3>,
    /// Rest volume of each tetrahedron (m^3).
    pub rest_volume: Vec<Real>,
}

/// The fixed corotated material with its damping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Corotated {
    /// Lamé's first parameter (Pa).
    pub lambda: Real,
    /// Shear modulus (Pa).
    pub mu: Real,
    /// Stiffness-proportional damping `beta` (s).
    pub beta: Real,
}

/// The edge matrix of tetrahedron `tet` at positions `x`: columns `x_i - x_0`.
fn edges(x: &[Vec3], tet: &[u32; 4]) -> Mat3 {
    let p = tet.map(|v| x[v as usize]);
    Mat3::from_columns(&[p[1] - p[0], p[2] - p[0], p[3] - p[0]])
}

/// The rotation of `f`'s polar decomposition, from its singular value decomposition with the
/// smallest singular value's sign flipped where `U V^T` would be a reflection (an inverted
/// element).
pub fn rotation(f: &Mat3) -> Mat3 {
    let svd = f.svd(true, true);
    let (mut u, v_t) = (svd.u.expect("U is computed"), svd.v_t.expect("V is computed"));
    if (u * v_t).determinant() < 0.0 {
        let smallest = svd.singular_values.imin();
        u.column_mut(smallest).neg_mut();
    }
    u * v_t
}

/// `cof F = det(F) F^-T`: its columns are the cross products of `F`'s.
fn cofactor(f: &Mat3) -> Mat3 {
    let (a, b, c) = (f.column(0), f.column(1), f.column(2));
    Mat3::from_columns(&[b.cross(&c), c.cross(&a), a.cross(&b)])
}

impl Tetrahedra {
    /// The elements of `mesh` at its rest positions (the mesh is checked: no inverted or
    /// degenerate tetrahedra).
    pub fn new(mesh: &TetMesh) -> Self {
        let rest_inverse = mesh.tets.iter().map(|t| edges(&mesh.vertices, t).try_inverse().expect("a checked mesh has no degenerate tetrahedra")).collect();
        let rest_volume = (0..mesh.tets.len()).map(|t| mesh.tet_volume(t)).collect();
        Tetrahedra { tets: mesh.tets.clone(), rest_inverse, rest_volume }
    }

    /// The deformation gradient of tetrahedron `t` at positions `x`.
    pub fn deformation_gradient(&self, t: usize, x: &[Vec3]) -> Mat3 {
        edges(x, &self.tets[t]) * self.rest_inverse[t]
    }

    /// The nodal forces of each tetrahedron's stress (`stress(t)`), summed per vertex into
    /// `forces`: `-V_0 P D_m^-T` on vertices 1 to 3, minus their sum on vertex 0.
    fn add_forces(&self, stress: impl Fn(usize) -> Mat3 + Sync, forces: &mut [Vec3]) {
        let per_tet: Vec<Mat3> =
            (0..self.tets.len()).into_par_iter().with_min_len(PARALLEL_CHUNK).map(|t| -self.rest_volume[t] * stress(t) * self.rest_inverse[t].transpose()).collect();
        for (tet, h) in self.tets.iter().zip(&per_tet) {
            let (f1, f2, f3) = (h.column(0).into_owned(), h.column(1).into_owned(), h.column(2).into_owned());
            forces[tet[0] as usize] -= f1 + f2 + f3;
            forces[tet[1] as usize] += f1;
            forces[tet[2] as usize] += f2;
            forces[tet[3] as usize] += f3;
        }
    }

    /// The elastic forces at positions `x`, added to `forces`.
    pub fn elastic_forces(&self, material: &Corotated, x: &[Vec3], forces: &mut [Vec3]) {
        let stress = |t: usize| {
            let f = self.deformation_gradient(t, x);
            2.0 * material.mu * (f - rotation(&f)) + material.lambda * (f.determinant() - 1.0) * cofactor(&f)
        };
        self.add_forces(stress, forces);
    }

    /// The energy stored at positions `x` (J), summed in fixed chunks: the same on any number
    /// of threads, so runs and resumes agree.
    pub fn energy(&self, material: &Corotated, x: &[Vec3]) -> Real {
        tidepool_linalg::reduce::sum_by(self.tets.len(), |t| {
            let f = self.deformation_gradient(t, x);
            self.rest_volume[t] * material.energy_density(&f, &rotation(&f))
        })
    }

    /// Each tetrahedron's deformation gradient at positions `x` (what the damping needs of
    /// them).
    pub fn gradients(&self, x: &[Vec3]) -> Vec<Mat3> {
        (0..self.tets.len()).into_par_iter().with_min_len(PARALLEL_CHUNK).map(|t| self.deformation_gradient(t, x)).collect()
    }

    /// The damping forces of velocities `v` with the elements' deformation gradients
    /// `gradients` (added to `forces`): linear in `v`, symmetric and negative semi-definite.
    pub fn damping_forces(&self, material: &Corotated, gradients: &[Mat3], v: &[Vec3], forces: &mut [Vec3]) {
        if material.beta == 0.0 {
            return;
        }
        let stress = |t: usize| {
            let f = gradients[t];
            let rate = f.transpose() * edges(v, &self.tets[t]) * self.rest_inverse[t];
            let strain_rate = 0.5 * (rate + rate.transpose());
            material.beta * f * (2.0 * material.mu * strain_rate + material.lambda * strain_rate.trace() * Mat3::identity())
        };
        self.add_forces(stress, forces);
    }

    /// Lumped masses of a material of density `density`: a quarter of each adjacent
    /// tetrahedron's.
    pub fn masses(&self, density: Real, vertices: usize) -> Vec<Real> {
        let mut masses = vec![0.0; vertices];
        for (tet, volume) in self.tets.iter().zip(&self.rest_volume) {
            for v in tet {
                masses[*v as usize] += 0.25 * density * volume;
            }
        }
        masses
    }

    /// The diagonal of the damping's matrix at rest (`beta V_0 (lambda + 2 mu) |g_a|^2` per
    /// vertex, `g_a` the shape function gradients): the scale of each vertex's row, for a
    /// Jacobi preconditioner.
    pub fn damping_diagonal(&self, material: &Corotated, vertices: usize) -> Vec<Real> {
        let mut diagonal = vec![0.0; vertices];
        for (t, tet) in self.tets.iter().enumerate() {
            let g = self.rest_inverse[t].transpose();
            let columns = [-(g.column(0) + g.column(1) + g.column(2)), g.column(0).into_owned(), g.column(1).into_owned(), g.column(2).into_owned()];
            for (v, c) in tet.iter().zip(columns) {
                diagonal[*v as usize] += material.beta * self.rest_volume[t] * (material.lambda + 2.0 * material.mu) * c.norm_squared();
            }
        }
        diagonal
    }

    /// The shortest altitude of any tetrahedron at rest (m): the length over which the
    /// fastest elastic wave crosses an element.
    pub fn shortest_altitude(&self, x: &[Vec3]) -> Real {
        self.tets
            .iter()
            .map(|tet| {
                let p = tet.map(|v| x[v as usize]);
                let volume = (p[1] - p[0]).cross(&(p[2] - p[0])).dot(&(p[3] - p[0])).abs() / 6.0;
                let faces = [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]];
                let largest = faces.iter().map(|[a, b, c]| 0.5 * (p[*b] - p[*a]).cross(&(p[*c] - p[*a])).norm()).fold(0.0, Real::max);
                3.0 * volume / largest
            })
            .fold(Real::INFINITY, Real::min)
    }
}

impl Corotated {
    /// The material of Young's modulus `young` (Pa), Poisson's ratio `poisson` and damping
    /// `beta` (s).
    pub fn new(young: Real, poisson: Real, beta: Real) -> Self {
        let lambda = young * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson));
        Corotated { lambda, mu: young / (2.0 * (1.0 + poisson)), beta }
    }

    /// The same material in plane stress (a thin sheet, free to thin as it stretches): `lambda`
    /// replaced by `lambda* = 2 mu lambda / (lambda + 2 mu) = E nu / (1 - nu^2)`.
    pub fn plane_stress(young: Real, poisson: Real, beta: Real) -> Self {
        Corotated { lambda: young * poisson / (1.0 - poisson * poisson), ..Corotated::new(young, poisson, beta) }
    }

    /// `Psi(F)` with `F`'s rotation `r` (J/m^3).
    pub fn energy_density(&self, f: &Mat3, r: &Mat3) -> Real {
        let j = f.determinant();
        self.mu * (f - r).norm_squared() + 0.5 * self.lambda * (j - 1.0) * (j - 1.0)
    }

    /// The speed of pressure waves in the material of density `density` (m/s):
    /// `sqrt((lambda + 2 mu) / rho)`.
    pub fn wave_speed(&self, density: Real) -> Real {
        ((self.lambda + 2.0 * self.mu) / density).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tet() -> TetMesh {
        TetMesh { vertices: vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()], tets: vec![[0, 1, 2, 3]] }
    }

    /// The forces are minus the energy's gradient (central differences agree to 1e-6 of their
    /// size), for a stretched and sheared element and for an inverted one.
    #[test]
    fn forces_are_minus_the_energy_gradient_also_for_an_inverted_element() {
        let mesh = tet();
        let elements = Tetrahedra::new(&mesh);
        let material = Corotated::new(1e4, 0.3, 0.0);
        for x in [
            vec![Vec3::new(0.01, -0.02, 0.0), Vec3::new(1.2, 0.1, 0.05), Vec3::new(-0.1, 0.9, 0.2), Vec3::new(0.1, 0.0, 1.1)],
            vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.1, 0.2, -0.3)],
        ] {
            let mut forces = vec![Vec3::zeros(); 4];
            elements.elastic_forces(&material, &x, &mut forces);
            let energy = |x: &[Vec3]| elements.energy(&material, x);
            let scale = forces.iter().map(|f| f.norm()).fold(0.0, Real::max);
            assert!(scale > 1.0, "the element is deformed");
            for v in 0..4 {
                for a in 0..3 {
                    let h = 1e-6;
                    let (mut plus, mut minus) = (x.clone(), x.clone());
                    plus[v][a] += h;
                    minus[v][a] -= h;
                    let gradient = (energy(&plus) - energy(&minus)) / (2.0 * h);
                    assert!((forces[v][a] + gradient).abs() < 1e-6 * scale, "vertex {v} axis {a}: force {} against -dE/dx {}", forces[v][a], -gradient);
                }
            }
        }
    }

    /// A rotated element stores no energy and feels no force; an inverted one is pushed back
    /// towards positive volume.
    #[test]
    fn rotations_cost_nothing_and_inversion_is_pushed_back() {
        let mesh = tet();
        let elements = Tetrahedra::new(&mesh);
        let material = Corotated::new(1e4, 0.3, 0.0);
        let turn = nalgebra::Rotation3::from_euler_angles(0.3, -1.1, 2.0);
        let turned: Vec<Vec3> = mesh.vertices.iter().map(|x| turn * x + Vec3::new(1.0, 2.0, 3.0)).collect();
        let mut forces = vec![Vec3::zeros(); 4];
        elements.elastic_forces(&material, &turned, &mut forces);
        let energy = elements.energy(&material, &turned);
        assert!(energy < 1e-20 && forces.iter().all(|f| f.norm() < 1e-10), "energy {energy}, forces {forces:?}");
        let inverted = vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.0, 0.0, -0.2)];
        let mut forces = vec![Vec3::zeros(); 4];
        elements.elastic_forces(&material, &inverted, &mut forces);
        assert!(forces[3].z > 0.0, "the tip below the base is pushed up: {:?}", forces[3]);
    }

    /// Damping is symmetric (`v . D w = w . D v`), dissipates (`v . D v <= 0`) and leaves a
    /// deformed element spinning as a rigid body alone.
    #[test]
    fn damping_is_symmetric_dissipative_and_spares_rigid_motion() {
        let mesh = tet();
        let elements = Tetrahedra::new(&mesh);
        let material = Corotated::new(1e4, 0.3, 0.05);
        let x = vec![Vec3::new(0.01, -0.02, 0.0), Vec3::new(1.2, 0.1, 0.05), Vec3::new(-0.1, 0.9, 0.2), Vec3::new(0.1, 0.0, 1.1)];
        let apply = |v: &[Vec3]| {
            let mut f = vec![Vec3::zeros(); 4];
            elements.damping_forces(&material, &elements.gradients(&x), v, &mut f);
            f
        };
        let dot = |a: &[Vec3], b: &[Vec3]| a.iter().zip(b).map(|(p, q)| p.dot(q)).sum::<Real>();
        let v = vec![Vec3::new(0.3, -0.1, 0.2), Vec3::new(-0.5, 0.4, 0.1), Vec3::new(0.2, 0.2, -0.7), Vec3::new(0.0, 0.6, 0.3)];
        let w = vec![Vec3::new(-0.2, 0.1, 0.9), Vec3::new(0.5, 0.1, -0.3), Vec3::new(0.4, -0.6, 0.1), Vec3::new(0.3, 0.3, 0.3)];
        let (vw, wv) = (dot(&v, &apply(&w)), dot(&w, &apply(&v)));
        assert!((vw - wv).abs() < 1e-12 * vw.abs().max(1.0), "v.Dw {vw} against w.Dv {wv}");
        assert!(dot(&v, &apply(&v)) < 0.0);
        let omega = Vec3::new(0.2, -1.0, 0.5);
        let spin: Vec<Vec3> = x.iter().map(|x| omega.cross(x)).collect();
        assert!(apply(&spin).iter().all(|f| f.norm() < 1e-12));
    }
}
