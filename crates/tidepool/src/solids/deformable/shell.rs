//! Cloth and thin shells: a triangle mesh of a sheet `thickness` thick, with the membrane
//! energy of each triangle (stretch and shear) and the bending energy of each interior edge
//! (Shinar sec. 2.1 and 3.1 simulate cloth with these, after Bridson, Marino and Fedkiw 2003).
//!
//! **Membrane.** A triangle with rest edges in its own plane `D_m` (2x2: the edges `X_1 - X_0`,
//! `X_2 - X_0` in an orthonormal frame of the triangle) and deformed edges `D_s` (3x2) has the
//! deformation gradient `F = D_s D_m^-1` (3x2), singular values `sigma_1, sigma_2` and area
//! ratio `J = sigma_1 sigma_2 = |f_1 x f_2|` (`f_i` its columns). The energy per unit volume is
//! the fixed corotated one of [`super::elastic`] in plane stress,
//!
//! `Psi = mu sum_i (sigma_i - 1)^2 + lambda* / 2 (J - 1)^2`, `lambda* = 2 mu lambda / (lambda + 2 mu)`,
//!
//! (the sheet is free to thin), integrated over the triangle's rest area `A` times the thickness
//! `t`. Its stress is `P = 2 mu (F - R) + lambda* (J - 1) dJ/dF` with `R = U V^T` from the thin
//! singular value decomposition and `dJ/dF = [f_2 x n, n x f_1]` (`n` the unit normal), and the
//! nodal forces are the columns of `-t A P D_m^-T` on vertices 1 and 2 and minus their sum on
//! vertex 0, as for a tetrahedron.
//!
//! **Bending.** Each edge shared by two triangles is a hinge with dihedral angle `theta` (0
//! where the two triangles are flat, signed) and energy
//!
//! `E = k (theta - theta_0)^2`, `k = D |e|^2 / (2 (A_1 + A_2))`, `D = E t^3 / (12 (1 - nu^2))`,
//!
//! the discrete shells energy (Grinspun et al. 2003; `|e|^2 / (A_1 + A_2)` is a third of
//! their `|e| / h_e`) scaled so that a sheet of equilateral triangles rolled to curvature
//! `kappa` stores the plate's `D / 2 kappa^2` per unit area: rolled along its rows, the strips
//! between rows stay flat and each row edge bends by `kappa` times the row spacing; rolled
//! across them, the three edge directions share the same total (so sheets are meshed with
//! near-equilateral triangles, [`TriMesh::sheet`]; the tests check both ways). The gradient of `theta` is Bridson et
//! al.'s bending modes: `|e| n_1 / |n_1|^2` and `|e| n_2 / |n_2|^2` on the two opposite
//! vertices (`n_i` the triangles' unnormalised normals) and the edge's vertices' shares that
//! keep it free of net force and torque.
//!
//! **Damping** is Rayleigh damping proportional to the stiffness, as for tetrahedra: the
//! membrane resists the rate of Green's strain (`beta` times the plane-stress law on
//! `sym(F^T F')`), each hinge the rate of its angle (`-2 beta k (g . v) g`, `g` the gradient
//! of `theta`). Both are linear in the velocities, symmetric, negative semi-definite and zero
//! for rigid motion.

use super::elastic::Corotated;
use super::PARALLEL_CHUNK;
use crate::geometry::TriMesh;
use crate::math::{Real, Vec3};
use nalgebra::{Matrix2, Matrix3x2, Vector2};
use rayon::prelude::*;
use std::collections::HashMap;

/// A hinge: two triangles sharing an edge.
#[derive(Clone, Copy, Debug)]
struct Hinge {
    /// The edge's two vertices, then the vertex opposite it in each triangle.
    vertices: [u32; 4],
    /// Dihedral angle at rest (rad).
    rest_angle: Real,
    /// `k`: the hinge's stiffness (J / rad^2).
    stiffness: Real,
}

/// The rest shape of a sheet's triangles and hinges.
#[derive(Clone, Debug)]
pub struct Shell {
    /// Vertex indices of each triangle.
    pub triangles: Vec<[u32; 3]>,
    /// `D_m^-1` of each triangle.
    rest_inverse: Vec<Matrix2<Real>>,
    /// Rest area of each triangle (m^2).
    pub rest_area: Vec<Real>,
    /// The sheet's thickness (m).
    pub thickness: Real,
    hinges: Vec<Hinge>,
    /// Each edge once (for self-contact).
    pub edges: Vec<[u32; 2]>,
}

/// The edge matrix of triangle `tri` at positions `x`: columns `x_1 - x_0`, `x_2 - x_0`.
fn edges(x: &[Vec3], tri: &[u32; 3]) -> Matrix3x2<Real> {
    let p = tri.map(|v| x[v as usize]);
    Matrix3x2::from_columns(&[p[1] - p[0], p[2] - p[0]])
}

/// The rotation (3x2, orthonormal columns) of a triangle's deformation gradient.
fn rotation(f: &Matrix3x2<Real>) -> Matrix3x2<Real> {
    let svd = f.svd(true, true);
    svd.u.expect("U is computed") * svd.v_t.expect("V is computed")
}

/// The area ratio `J = |f_1 x f_2|` and its derivative `[f_2 x n, n x f_1]` (zero for a
/// collapsed triangle, whose normal is undefined).
fn area_ratio(f: &Matrix3x2<Real>) -> (Real, Matrix3x2<Real>) {
    let (a, b) = (f.column(0).into_owned(), f.column(1).into_owned());
    let c = a.cross(&b);
    let j = c.norm();
    if j == 0.0 {
        return (0.0, Matrix3x2::zeros());
    }
    let n = c / j;
    (j, Matrix3x2::from_columns(&[b.cross(&n), n.cross(&a)]))
}

/// The two triangles' unnormalised normals of hinge `h` at positions `x` (`None` where the
/// hinge is collapsed).
fn hinge_normals(x: &[Vec3], h: &[u32; 4]) -> Option<([Vec3; 4], Vec3, Vec3)> {
    let p = h.map(|v| x[v as usize]);
    let n1 = (p[2] - p[0]).cross(&(p[2] - p[1]));
    let n2 = (p[3] - p[1]).cross(&(p[3] - p[0]));
    (p[1] != p[0] && n1.norm_squared() > 0.0 && n2.norm_squared() > 0.0).then_some((p, n1, n2))
}

/// The gradient of hinge `h`'s dihedral angle at positions `x` with respect to its four
/// vertices (zero for a collapsed hinge).
fn hinge_gradient(x: &[Vec3], h: &[u32; 4]) -> [Vec3; 4] {
    let Some(([x0, x1, x2, x3], n1, n2)) = hinge_normals(x, h) else { return [Vec3::zeros(); 4] };
    let e = x1 - x0;
    let length = e.norm();
    let axis = e / length;
    let (u1, u2) = (n1 / n1.norm_squared(), n2 / n2.norm_squared());
    [(x2 - x1).dot(&axis) * u1 + (x3 - x1).dot(&axis) * u2, -(x2 - x0).dot(&axis) * u1 - (x3 - x0).dot(&axis) * u2, length * u1, length * u2]
}

/// The dihedral angle of hinge `h` at positions `x` (0 for a collapsed hinge).
fn dihedral(x: &[Vec3], h: &[u32; 4]) -> Real {
    let Some(([x0, x1, ..], n1, n2)) = hinge_normals(x, h) else { return 0.0 };
    let axis = (x1 - x0).normalize();
    let (m1, m2) = (n1.normalize(), n2.normalize());
    m2.cross(&m1).dot(&axis).atan2(m1.dot(&m2))
}

/// What a sheet's damping needs of the positions, taken once per velocity solve: each
/// triangle's deformation gradient and each hinge's angle gradient.
#[derive(Clone, Debug)]
pub struct Frozen {
    gradients: Vec<Matrix3x2<Real>>,
    hinges: Vec<[Vec3; 4]>,
}

/// `a - b` wrapped into `(-pi, pi]`.
fn angle_difference(a: Real, b: Real) -> Real {
    let d = a - b;
    d - std::f64::consts::TAU * (d / std::f64::consts::TAU).round()
}

impl Shell {
    /// The sheet `mesh` (its rest shape), `thickness` thick, bending with the plate stiffness
    /// of Young's modulus `young` and Poisson's ratio `poisson`. The mesh must be a manifold
    /// with consistently oriented, non-degenerate triangles.
    pub fn new(mesh: &TriMesh, thickness: Real, young: Real, poisson: Real) -> Result<Self, String> {
        mesh.boundary_edges()?;
        let mut rest_inverse = Vec::with_capacity(mesh.triangles.len());
        let mut rest_area = Vec::with_capacity(mesh.triangles.len());
        for (t, tri) in mesh.triangles.iter().enumerate() {
            let d = edges(&mesh.vertices, tri);
            let (e1, e2) = (d.column(0).into_owned(), d.column(1).into_owned());
            let normal = e1.cross(&e2);
            let area = 0.5 * normal.norm();
            let longest = [e1.norm(), e2.norm(), (e2 - e1).norm()].into_iter().fold(0.0, Real::max);
            if area <= 1e-9 * longest * longest {
                return Err(format!("triangle {t} (counting from 0) is degenerate: its vertices are (nearly) on a line"));
            }
            let u = e1 / e1.norm();
            let w = normal.normalize().cross(&u);
            let rest = Matrix2::new(e1.dot(&u), e2.dot(&u), 0.0, e2.dot(&w));
            rest_inverse.push(rest.try_inverse().expect("a triangle with area has an invertible edge matrix"));
            rest_area.push(area);
        }
        let bending = young * thickness.powi(3) / (12.0 * (1.0 - poisson * poisson));
        let mut opposite: HashMap<(u32, u32), (u32, usize)> = HashMap::new();
        for (t, tri) in mesh.triangles.iter().enumerate() {
            for k in 0..3 {
                opposite.insert((tri[k], tri[(k + 1) % 3]), (tri[(k + 2) % 3], t));
            }
        }
        let mut hinges: Vec<Hinge> = opposite
            .iter()
            .filter(|((a, b), _)| a < b)
            .filter_map(|(&(a, b), &(c, t1))| {
                let &(d, t2) = opposite.get(&(b, a))?;
                let vertices = [a, b, c, d];
                let rest_angle = dihedral(&mesh.vertices, &vertices);
                let length = (mesh.vertices[b as usize] - mesh.vertices[a as usize]).norm_squared();
                Some(Hinge { vertices, rest_angle, stiffness: 0.5 * bending * length / (rest_area[t1] + rest_area[t2]) })
            })
            .collect();
        hinges.sort_by_key(|h| h.vertices);
        let edges = super::self_contact::edges_of(&mesh.triangles);
        Ok(Shell { triangles: mesh.triangles.clone(), rest_inverse, rest_area, thickness, hinges, edges })
    }

    /// The number of hinges (interior edges).
    pub fn hinge_count(&self) -> usize {
        self.hinges.len()
    }

    /// The deformation gradient of triangle `t` at positions `x`.
    fn deformation_gradient(&self, t: usize, x: &[Vec3]) -> Matrix3x2<Real> {
        edges(x, &self.triangles[t]) * self.rest_inverse[t]
    }

    /// The nodal forces of each triangle's stress (`stress(t)`, per unit volume), summed per
    /// vertex into `forces`.
    fn add_membrane_forces(&self, stress: impl Fn(usize) -> Matrix3x2<Real> + Sync, forces: &mut [Vec3]) {
        let per_triangle: Vec<Matrix3x2<Real>> = (0..self.triangles.len())
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|t| -self.thickness * self.rest_area[t] * stress(t) * self.rest_inverse[t].transpose())
            .collect();
        for (tri, h) in self.triangles.iter().zip(&per_triangle) {
            let (f1, f2) = (h.column(0).into_owned(), h.column(1).into_owned());
            forces[tri[0] as usize] -= f1 + f2;
            forces[tri[1] as usize] += f1;
            forces[tri[2] as usize] += f2;
        }
    }

    /// The force `c g` of each hinge on its vertices, with `(c, g) = force(k)` for hinge `k`.
    fn add_hinge_forces(&self, force: impl Fn(usize) -> (Real, [Vec3; 4]) + Sync, forces: &mut [Vec3]) {
        let per_hinge: Vec<[Vec3; 4]> = (0..self.hinges.len())
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|k| {
                let (c, g) = force(k);
                g.map(|g| c * g)
            })
            .collect();
        for (h, f) in self.hinges.iter().zip(&per_hinge) {
            for (v, f) in h.vertices.iter().zip(f) {
                forces[*v as usize] += f;
            }
        }
    }

    /// The elastic forces at positions `x`, added to `forces`.
    pub fn elastic_forces(&self, material: &Corotated, x: &[Vec3], forces: &mut [Vec3]) {
        let stress = |t: usize| {
            let f = self.deformation_gradient(t, x);
            let (j, dj) = area_ratio(&f);
            2.0 * material.mu * (f - rotation(&f)) + material.lambda * (j - 1.0) * dj
        };
        self.add_membrane_forces(stress, forces);
        self.add_hinge_forces(
            |k| {
                let h = &self.hinges[k];
                (-2.0 * h.stiffness * angle_difference(dihedral(x, &h.vertices), h.rest_angle), hinge_gradient(x, &h.vertices))
            },
            forces,
        );
    }

    /// The energy stored at positions `x` (J), summed in fixed chunks (the same on any number
    /// of threads).
    pub fn energy(&self, material: &Corotated, x: &[Vec3]) -> Real {
        let membrane = tidepool_linalg::reduce::sum_by(self.triangles.len(), |t| {
            let f = self.deformation_gradient(t, x);
            let (j, _) = area_ratio(&f);
            self.thickness * self.rest_area[t] * (material.mu * (f - rotation(&f)).norm_squared() + 0.5 * material.lambda * (j - 1.0) * (j - 1.0))
        });
        let bending = tidepool_linalg::reduce::sum_by(self.hinges.len(), |k| {
            let h = &self.hinges[k];
            h.stiffness * angle_difference(dihedral(x, &h.vertices), h.rest_angle).powi(2)
        });
        membrane + bending
    }

    /// What the damping needs of positions `x`.
    pub fn freeze(&self, x: &[Vec3]) -> Frozen {
        Frozen {
            gradients: (0..self.triangles.len()).into_par_iter().with_min_len(PARALLEL_CHUNK).map(|t| self.deformation_gradient(t, x)).collect(),
            hinges: self.hinges.par_iter().with_min_len(PARALLEL_CHUNK).map(|h| hinge_gradient(x, &h.vertices)).collect(),
        }
    }

    /// The damping forces of velocities `v` at the positions `frozen` was taken at, added to
    /// `forces`.
    pub fn damping_forces(&self, material: &Corotated, frozen: &Frozen, v: &[Vec3], forces: &mut [Vec3]) {
        if material.beta == 0.0 {
            return;
        }
        let stress = |t: usize| {
            let f = frozen.gradients[t];
            let rate = f.transpose() * edges(v, &self.triangles[t]) * self.rest_inverse[t];
            let strain_rate = 0.5 * (rate + rate.transpose());
            material.beta * f * (2.0 * material.mu * strain_rate + material.lambda * strain_rate.trace() * Matrix2::identity())
        };
        self.add_membrane_forces(stress, forces);
        self.add_hinge_forces(
            |k| {
                let (h, g) = (&self.hinges[k], frozen.hinges[k]);
                let rate = h.vertices.iter().zip(&g).map(|(i, g)| g.dot(&v[*i as usize])).sum::<Real>();
                (-2.0 * material.beta * h.stiffness * rate, g)
            },
            forces,
        );
    }

    /// The diagonal of the damping's matrix at rest, per vertex (a Jacobi preconditioner's).
    pub fn damping_diagonal(&self, material: &Corotated, rest: &[Vec3]) -> Vec<Real> {
        let mut diagonal = vec![0.0; rest.len()];
        for (t, tri) in self.triangles.iter().enumerate() {
            let g = self.rest_inverse[t].transpose();
            let columns: [Vector2<Real>; 3] = [-(g.column(0) + g.column(1)), g.column(0).into_owned(), g.column(1).into_owned()];
            for (v, c) in tri.iter().zip(columns) {
                diagonal[*v as usize] += material.beta * self.thickness * self.rest_area[t] * (material.lambda + 2.0 * material.mu) * c.norm_squared();
            }
        }
        for h in &self.hinges {
            for (v, g) in h.vertices.iter().zip(hinge_gradient(rest, &h.vertices)) {
                diagonal[*v as usize] += 2.0 * material.beta * h.stiffness * g.norm_squared();
            }
        }
        diagonal
    }

    /// Lumped masses of a sheet of density `density`: a third of each adjacent triangle's.
    pub fn masses(&self, density: Real, vertices: usize) -> Vec<Real> {
        let mut masses = vec![0.0; vertices];
        for (tri, area) in self.triangles.iter().zip(&self.rest_area) {
            for v in tri {
                masses[*v as usize] += density * self.thickness * area / 3.0;
            }
        }
        masses
    }

    /// The shortest altitude of any triangle at rest (m).
    pub fn shortest_altitude(&self, rest: &[Vec3]) -> Real {
        self.triangles
            .iter()
            .zip(&self.rest_area)
            .map(|(tri, area)| {
                let p = tri.map(|v| rest[v as usize]);
                let longest = [(p[1] - p[0]).norm(), (p[2] - p[1]).norm(), (p[0] - p[2]).norm()].into_iter().fold(0.0, Real::max);
                2.0 * area / longest
            })
            .fold(Real::INFINITY, Real::min)
    }

    /// The highest angular frequency of a hinge bending alone at rest (rad/s): the square root
    /// of its stiffness matrix's eigenvalue `2 k sum_i |g_i|^2 / m_i` against the vertices'
    /// masses.
    pub fn bending_frequency(&self, rest: &[Vec3], masses: &[Real]) -> Real {
        self.hinges
            .iter()
            .map(|h| {
                let g = hinge_gradient(rest, &h.vertices);
                (2.0 * h.stiffness * h.vertices.iter().zip(g).map(|(v, g)| g.norm_squared() / masses[*v as usize]).sum::<Real>()).sqrt()
            })
            .fold(0.0, Real::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two triangles folded along their shared edge, and a third beside them.
    fn strip() -> TriMesh {
        TriMesh {
            vertices: vec![Vec3::zeros(), Vec3::x(), Vec3::new(0.4, 0.9, 0.0), Vec3::new(0.6, -0.8, 0.0), Vec3::new(1.5, -0.7, 0.0)],
            triangles: vec![[0, 1, 2], [1, 0, 3], [3, 4, 1]],
        }
    }

    fn deformed() -> Vec<Vec3> {
        vec![Vec3::new(0.01, -0.02, 0.03), Vec3::new(1.1, 0.1, 0.05), Vec3::new(0.3, 0.8, 0.4), Vec3::new(0.7, -0.9, -0.3), Vec3::new(1.4, -0.5, 0.2)]
    }

    /// The forces are minus the energy's gradient (central differences agree to 1e-6 of their
    /// size), with the membrane stretched and sheared and the hinges bent both ways.
    #[test]
    fn forces_are_minus_the_energy_gradient() {
        let mesh = strip();
        let shell = Shell::new(&mesh, 0.05, 1e4, 0.3).unwrap();
        let material = Corotated::plane_stress(1e4, 0.3, 0.0);
        let x = deformed();
        let mut forces = vec![Vec3::zeros(); x.len()];
        shell.elastic_forces(&material, &x, &mut forces);
        let scale = forces.iter().map(|f| f.norm()).fold(0.0, Real::max);
        assert!(scale > 1.0, "the sheet is deformed");
        for v in 0..x.len() {
            for a in 0..3 {
                let h = 1e-6;
                let (mut plus, mut minus) = (x.clone(), x.clone());
                plus[v][a] += h;
                minus[v][a] -= h;
                let gradient = (shell.energy(&material, &plus) - shell.energy(&material, &minus)) / (2.0 * h);
                assert!((forces[v][a] + gradient).abs() < 1e-6 * scale, "vertex {v} axis {a}: force {} against -dE/dx {}", forces[v][a], -gradient);
            }
        }
    }

    /// Rotated and moved, the sheet stores no energy and feels no force.
    #[test]
    fn rigid_motions_cost_nothing() {
        let mesh = strip();
        let shell = Shell::new(&mesh, 0.05, 1e4, 0.3).unwrap();
        let material = Corotated::plane_stress(1e4, 0.3, 0.0);
        let turn = nalgebra::Rotation3::from_euler_angles(0.3, -1.1, 2.0);
        let turned: Vec<Vec3> = mesh.vertices.iter().map(|x| turn * x + Vec3::new(1.0, 2.0, 3.0)).collect();
        let mut forces = vec![Vec3::zeros(); turned.len()];
        shell.elastic_forces(&material, &turned, &mut forces);
        let energy = shell.energy(&material, &turned);
        assert!(energy < 1e-20 && forces.iter().all(|f| f.norm() < 1e-10), "energy {energy}, forces {forces:?}");
    }

    /// A flat square sheet rolled into a cylinder of radius `r` stores the plate's bending
    /// energy `D / 2 / r^2` per unit area (within 5% at 32 triangles across), rolled about either
    /// axis, and its membrane nothing.
    #[test]
    fn rolled_sheet_stores_the_plates_bending_energy() {
        let (young, poisson, thickness, side) = (1e6, 0.3, 1e-3, 0.5);
        let sheet = TriMesh::sheet(side, side, side / 32.0);
        let shell = Shell::new(&sheet, thickness, young, poisson).unwrap();
        let material = Corotated::plane_stress(young, poisson, 0.0);
        let plate = young * thickness.powi(3) / (12.0 * (1.0 - poisson * poisson));
        let radius = 0.3;
        for axis in [0, 2] {
            let rolled: Vec<Vec3> = sheet
                .vertices
                .iter()
                .map(|p| {
                    let (s, along) = if axis == 0 { (p.z, p.x) } else { (p.x, p.z) };
                    let angle = s / radius;
                    let (a, b) = (radius * angle.sin(), radius * (1.0 - angle.cos()));
                    if axis == 0 {
                        Vec3::new(along, b, a)
                    } else {
                        Vec3::new(a, b, along)
                    }
                })
                .collect();
            let expected = 0.5 * plate / (radius * radius) * side * side;
            let energy = shell.energy(&material, &rolled);
            assert!((energy / expected - 1.0).abs() < 0.05, "rolled about axis {axis}: {energy} J against {expected} J");
        }
    }

    /// Damping is symmetric, dissipates and spares rigid motion of the deformed sheet.
    #[test]
    fn damping_is_symmetric_dissipative_and_spares_rigid_motion() {
        let shell = Shell::new(&strip(), 0.05, 1e4, 0.3).unwrap();
        let material = Corotated::plane_stress(1e4, 0.3, 0.05);
        let x = deformed();
        let apply = |v: &[Vec3]| {
            let mut f = vec![Vec3::zeros(); v.len()];
            shell.damping_forces(&material, &shell.freeze(&x), v, &mut f);
            f
        };
        let dot = |a: &[Vec3], b: &[Vec3]| a.iter().zip(b).map(|(p, q)| p.dot(q)).sum::<Real>();
        let v: Vec<Vec3> = (0..5).map(|i| Vec3::new((i as Real * 1.3).sin(), (i as Real * 0.7).cos(), 0.1 * i as Real)).collect();
        let w: Vec<Vec3> = (0..5).map(|i| Vec3::new((i as Real * 0.4).cos(), -(i as Real * 1.9).sin(), 0.3 - 0.2 * i as Real)).collect();
        let (vw, wv) = (dot(&v, &apply(&w)), dot(&w, &apply(&v)));
        assert!((vw - wv).abs() < 1e-12 * vw.abs().max(1.0), "v.Dw {vw} against w.Dv {wv}");
        assert!(dot(&v, &apply(&v)) < 0.0);
        let omega = Vec3::new(0.2, -1.0, 0.5);
        let spin: Vec<Vec3> = x.iter().map(|x| omega.cross(x) + Vec3::new(0.3, 0.1, -0.2)).collect();
        assert!(apply(&spin).iter().all(|f| f.norm() < 1e-12));
    }

    /// Three triangles on one edge, or two facing opposite ways across it, are refused.
    #[test]
    fn non_manifold_sheets_are_refused() {
        let mut fan = strip();
        fan.vertices.push(Vec3::new(0.5, 0.0, 1.0));
        fan.triangles.push([0, 1, 5]);
        assert!(Shell::new(&fan, 0.01, 1e4, 0.3).unwrap_err().contains("non-manifold"));
        let mut flipped = strip();
        flipped.triangles[1] = [0, 1, 3];
        assert!(Shell::new(&flipped, 0.01, 1e4, 0.3).unwrap_err().contains("inconsistently oriented"));
    }
}
