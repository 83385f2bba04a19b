//! Linear finite elements on tetrahedral meshes (Lu, Jin, Fedkiw sec. 3, eq. 9): constant-strain
//! tetrahedra with an isotropic material, assembled into a stiffness matrix `K` over the
//! vertices' displacements (`3 v + axis`), with lumped or consistent mass and Rayleigh damping
//! `C = alpha M + beta K`.

use crate::geometry::TetMesh;
use crate::math::{Mat3, Real, Vec3};
use tidepool_linalg::CsrMatrix;

/// An isotropic linear elastic material.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElasticMaterial {
    /// Young's modulus `E` (Pa).
    pub young: Real,
    /// Poisson's ratio `nu`, in `[0, 0.5)`.
    pub poisson: Real,
    /// Density (kg/m^3).
    pub density: Real,
}

impl ElasticMaterial {
    /// Lamé's parameters `(lambda, mu)`.
    pub fn lame(&self) -> (Real, Real) {
        let (e, nu) = (self.young, self.poisson);
        (e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)), e / (2.0 * (1.0 + nu)))
    }
}

/// Gradients of the four linear shape functions of tetrahedron `t` (constant over it).
fn shape_gradients(mesh: &TetMesh, t: usize) -> [Vec3; 4] {
    let [x0, x1, x2, x3] = mesh.tets[t].map(|v| mesh.vertices[v as usize]);
    let dm = Mat3::from_columns(&[x1 - x0, x2 - x0, x3 - x0]);
    let inverse = dm.try_inverse().expect("a checked mesh has no degenerate tetrahedra");
    let g = [1, 2, 3].map(|i| inverse.row(i - 1).transpose());
    [-(g[0] + g[1] + g[2]), g[0], g[1], g[2]]
}

/// The stiffness matrix: per tetrahedron of volume `V`, the 3x3 block coupling vertices `a`
/// and `b` is `V (lambda g_a g_b^T + mu g_b g_a^T + mu (g_a . g_b) I)` with `g` the shape
/// function gradients (the bilinear form `lambda div u div v + 2 mu eps(u) : eps(v)`).
pub fn stiffness(mesh: &TetMesh, material: &ElasticMaterial) -> CsrMatrix {
    let (lambda, mu) = material.lame();
    let mut triplets = Vec::with_capacity(mesh.tets.len() * 144);
    for (t, tet) in mesh.tets.iter().enumerate() {
        let volume = mesh.tet_volume(t);
        let g = shape_gradients(mesh, t);
        for a in 0..4 {
            for b in 0..4 {
                let block = volume * (lambda * g[a] * g[b].transpose() + mu * g[b] * g[a].transpose() + mu * g[a].dot(&g[b]) * Mat3::identity());
                for i in 0..3 {
                    for j in 0..3 {
                        triplets.push((3 * tet[a] + i as u32, 3 * tet[b] + j as u32, block[(i, j)]));
                    }
                }
            }
        }
    }
    CsrMatrix::from_triplets(3 * mesh.vertices.len(), triplets)
}

/// Lumped mass per vertex (kg): a quarter of each adjacent tetrahedron's mass.
pub fn lumped_mass(mesh: &TetMesh, material: &ElasticMaterial) -> Vec<Real> {
    let mut mass = vec![0.0; mesh.vertices.len()];
    for (t, tet) in mesh.tets.iter().enumerate() {
        let quarter = 0.25 * material.density * mesh.tet_volume(t);
        for &v in tet {
            mass[v as usize] += quarter;
        }
    }
    mass
}

/// The consistent mass matrix: per tetrahedron of mass `m`, `m (1 + delta_ab) / 20` times the
/// identity between vertices `a` and `b`.
pub fn consistent_mass(mesh: &TetMesh, material: &ElasticMaterial) -> CsrMatrix {
    let mut triplets = Vec::with_capacity(mesh.tets.len() * 48);
    for (t, tet) in mesh.tets.iter().enumerate() {
        let m = material.density * mesh.tet_volume(t);
        for a in 0..4 {
            for b in 0..4 {
                let value = m * if a == b { 2.0 } else { 1.0 } / 20.0;
                for i in 0..3 {
                    triplets.push((3 * tet[a] + i, 3 * tet[b] + i, value));
                }
            }
        }
    }
    CsrMatrix::from_triplets(3 * mesh.vertices.len(), triplets)
}

/// A lumped mass as a diagonal matrix over the displacements.
pub fn diagonal_mass(mass: &[Real]) -> CsrMatrix {
    CsrMatrix::from_triplets(3 * mass.len(), (0..3 * mass.len()).map(|i| (i as u32, i as u32, mass[i / 3])).collect())
}

/// Rayleigh damping `C = alpha M + beta K`.
pub fn rayleigh_damping(mass: &CsrMatrix, stiffness: &CsrMatrix, alpha: Real, beta: Real) -> CsrMatrix {
    CsrMatrix::combine(alpha, mass, beta, stiffness)
}

/// The six rigid motions of the mesh's vertices as displacement vectors: translations along
/// x, y, z and rotations about axes through `centre`.
pub fn rigid_motions(mesh: &TetMesh, centre: &Vec3) -> [Vec<Real>; 6] {
    std::array::from_fn(|m| {
        mesh.vertices
            .iter()
            .flat_map(|x| {
                let d = if m < 3 { Vec3::ith(m, 1.0) } else { Vec3::ith(m - 3, 1.0).cross(&(x - centre)) };
                [d.x, d.y, d.z]
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidepool_linalg::LinearOperator;

    fn cube() -> TetMesh {
        TetMesh::bcc(|x| (x - Vec3::repeat(0.5)).abs().max() - 0.5, &Vec3::zeros(), &Vec3::repeat(1.0), 0.25, crate::geometry::tetmesh::BCC_KEEP)
    }

    /// `K` is symmetric, gives no force for the six rigid motions (to round-off), and is
    /// positive on deformations: a uniform stretch stores `V (lambda + 2 mu) e^2 / 2`.
    #[test]
    fn stiffness_is_symmetric_with_the_rigid_motions_as_nullspace() {
        let mesh = cube();
        let material = ElasticMaterial { young: 1e5, poisson: 0.3, density: 1000.0 };
        let k = stiffness(&mesh, &material);
        let scale = k.diagonal().iter().fold(0.0, |m: Real, v| m.max(*v));
        assert!(k.asymmetry() < 1e-12 * scale);
        let mut force = vec![0.0; k.n];
        for motion in rigid_motions(&mesh, &Vec3::repeat(0.5)) {
            k.apply(&motion, &mut force);
            assert!(force.iter().all(|f| f.abs() < 1e-9 * scale), "a rigid motion is resisted");
        }
        let e = 1e-3;
        let stretch: Vec<Real> = mesh.vertices.iter().flat_map(|x| [e * x.x, 0.0, 0.0]).collect();
        k.apply(&stretch, &mut force);
        let energy = 0.5 * stretch.iter().zip(&force).map(|(u, f)| u * f).sum::<Real>();
        let (lambda, mu) = material.lame();
        let expected = 0.5 * mesh.volume() * (lambda + 2.0 * mu) * e * e;
        assert!((energy / expected - 1.0).abs() < 1e-10, "{energy} vs {expected}");
    }

    /// Lumped and consistent mass both total the body's mass and give it the same momentum
    /// for a rigid translation.
    #[test]
    fn masses_total_the_body_mass() {
        let mesh = cube();
        let material = ElasticMaterial { young: 1e5, poisson: 0.3, density: 800.0 };
        let total = material.density * mesh.volume();
        let lumped = lumped_mass(&mesh, &material);
        assert!((lumped.iter().sum::<Real>() / total - 1.0).abs() < 1e-12);
        let consistent = consistent_mass(&mesh, &material);
        let translation = &rigid_motions(&mesh, &Vec3::zeros())[1];
        let mut momentum = vec![0.0; consistent.n];
        consistent.apply(translation, &mut momentum);
        let py: Real = momentum.iter().skip(1).step_by(3).sum();
        assert!((py / total - 1.0).abs() < 1e-12, "{py} vs {total}");
    }
}
