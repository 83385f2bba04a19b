//! Volume conservation for volumes simulated in full (Irving, Schroeder and Fedkiw 2007, the
//! `[41]` of Shinar sec. 3.3 and 3.7): each particle owns a quarter of every tetrahedron it is
//! a corner of, `V_i = sum_{t ∋ i} V_t / 4`, and the velocities are projected so that these
//! volumes change at prescribed rates, `G v = r` with `G = dV/dx`: a pressure `p` per particle
//! and `v <- v - M^-1 G^T p`, where `(G M^-1 G^T) p = G v - r` is solved by conjugate
//! gradients. Shinar's step I.2 (volume correction) asks for the rates that restore the rest
//! volumes, `r = (V_rest - V) / (4 dt)` (a quarter of the error each step: see
//! `VOLUME_RELAXATION` in `body.rs`); step V.1 (make incompressible) for none, `r = 0`. Volumes per particle rather than per tetrahedron leave linear tetrahedra
//! free to bend (one constraint per particle, not per element, so they do not lock).
//!
//! A closed sheet made incompressible (a bag full of liquid) keeps the one volume it encloses
//! the same way, with `G` a single row ([`project_enclosed`]).
//!
//! `G^T p` is a set of internal forces — the gradients of volumes, which neither a translation
//! nor a rotation changes — so the projection keeps linear and angular momentum.
//!
//! With bones, the particles bound to them move only as the bones do: `M^-1` becomes the
//! response of the free particles and the skeleton, `W M_r^-1 W^T` (the bound particles'
//! forces reach the bones as generalized forces, `M_s^-1 W^T f`, and come back as their
//! particles' velocities), so the pressure projection runs in the skeleton's reduced
//! coordinates and the joints still hold exactly.

use super::elastic::Tetrahedra;
use super::skeleton::Skeleton;
use crate::math::{Real, Vec3};
use tidepool_linalg::{pcg, CsrMatrix, Jacobi, LinearOperator, PcgParams, Preconditioner, SparseCholesky};

/// Relative residual of the pressure solve.
const TOLERANCE: Real = 1e-10;
/// The fraction of each particle's diagonal added to the pressure system. Per-particle volumes
/// of a lattice cut at a curved surface leave pressure patterns that barely move anything
/// (nearly in `G^T`'s null space): unregularized, rounding noise in the right-hand side along
/// them comes back as huge pressures. This bounds them, at the cost of meeting the rates to
/// about this fraction.
const REGULARIZATION: Real = 1e-6;

/// The gradient of each tetrahedron's volume with respect to its four corners at `x`.
fn volume_gradients(tets: &Tetrahedra, x: &[Vec3]) -> Vec<[Vec3; 4]> {
    tets.tets
        .iter()
        .map(|t| {
            let [a, b, c, d] = t.map(|i| x[i as usize]);
            let (gb, gc, gd) = ((c - a).cross(&(d - a)) / 6.0, (d - a).cross(&(b - a)) / 6.0, (b - a).cross(&(c - a)) / 6.0);
            [-(gb + gc + gd), gb, gc, gd]
        })
        .collect()
}

/// Each particle's share of the volume at `x`: a quarter of each tetrahedron it is a corner
/// of (at rest with `x` the rest positions).
pub fn particle_volumes(tets: &Tetrahedra, x: &[Vec3]) -> Vec<Real> {
    let mut volumes = vec![0.0; x.len()];
    for t in &tets.tets {
        let [a, b, c, d] = t.map(|i| x[i as usize]);
        let v = (b - a).dot(&(c - a).cross(&(d - a))) / 6.0;
        for &i in t {
            volumes[i as usize] += 0.25 * v;
        }
    }
    volumes
}

/// What the pressure system takes from where the particles are: each tetrahedron's volume
/// gradient, and each particle's diagonal without cross terms ([`diagonal`]). A particle whose
/// volume no free particle changes (deep in a bone, or pinned; diagonal 0) has no pressure.
struct Geometry {
    gradients: Vec<[Vec3; 4]>,
    diagonal: Vec<Real>,
}

impl Geometry {
    fn new(tets: &Tetrahedra, x: &[Vec3], inverse_masses: &[Real]) -> Self {
        let gradients = volume_gradients(tets, x);
        let diagonal = diagonal(tets, &gradients, inverse_masses);
        Geometry { gradients, diagonal }
    }

    fn has_pressure(&self, i: usize) -> bool {
        self.diagonal[i] > 0.0
    }

    /// `G v` on the particles with a pressure (0 on the others).
    fn rates(&self, tets: &Tetrahedra, v: &[Vec3]) -> Vec<Real> {
        let mut rates = volume_rates(tets, &self.gradients, v);
        for (i, r) in rates.iter_mut().enumerate() {
            if !self.has_pressure(i) {
                *r = 0.0;
            }
        }
        rates
    }
}

/// `G M^-1 G^T` over the particles' pressures, regularized; with a skeleton, `M^-1` is the
/// response of the free particles and the bones. A particle without a pressure has the
/// identity for its row.
struct Pressure<'a> {
    tets: &'a Tetrahedra,
    x: &'a [Vec3],
    geometry: &'a Geometry,
    inverse_masses: &'a [Real],
    skeleton: Option<&'a Skeleton>,
}

impl Pressure<'_> {
    fn has_pressure(&self, i: usize) -> bool {
        self.geometry.has_pressure(i)
    }

    /// `G^T p`: each tetrahedron's corners pushed by the mean pressure of its corners along its
    /// volume's gradient.
    fn forces(&self, p: &[Real]) -> Vec<Vec3> {
        let mut f = vec![Vec3::zeros(); p.len()];
        for (t, g) in self.tets.tets.iter().zip(&self.geometry.gradients) {
            let mean = 0.25 * t.iter().map(|&i| p[i as usize]).sum::<Real>();
            for (&i, g) in t.iter().zip(g) {
                f[i as usize] += mean * g;
            }
        }
        f
    }

    /// The velocity changes that forces `f` make: `f / m` on the free particles, and on the
    /// bound ones what the bones' response to their forces carries them at.
    fn response(&self, f: &[Vec3]) -> Vec<Vec3> {
        let mut u: Vec<Vec3> = f.iter().zip(self.inverse_masses).map(|(f, w)| *w * f).collect();
        if let Some(skeleton) = self.skeleton {
            let (_, twists) = skeleton.response_to(self.x, f.iter().copied().enumerate());
            skeleton.carry(self.x, &twists, &mut u);
        }
        u
    }
}

/// `G v`: the rates at which the particles' volumes change with velocities `v` (`gradients`
/// each tetrahedron's volume gradient).
fn volume_rates(tets: &Tetrahedra, gradients: &[[Vec3; 4]], v: &[Vec3]) -> Vec<Real> {
    let mut rates = vec![0.0; v.len()];
    for (t, g) in tets.tets.iter().zip(gradients) {
        let rate = 0.25 * t.iter().zip(g).map(|(&i, g)| g.dot(&v[i as usize])).sum::<Real>();
        for &i in t {
            rates[i as usize] += rate;
        }
    }
    rates
}

impl LinearOperator for Pressure<'_> {
    fn len(&self) -> usize {
        self.inverse_masses.len()
    }

    fn apply(&self, p: &[f64], y: &mut [f64]) {
        let pressures: Vec<Real> = p.iter().enumerate().map(|(i, p)| if self.has_pressure(i) { *p } else { 0.0 }).collect();
        let u = self.response(&self.forces(&pressures));
        for (i, (y, rate)) in y.iter_mut().zip(volume_rates(self.tets, &self.geometry.gradients, &u)).enumerate() {
            *y = if self.has_pressure(i) { rate + REGULARIZATION * self.geometry.diagonal[i] * p[i] } else { p[i] };
        }
    }
}

/// Each particle's diagonal of `G M^-1 G^T` without the tetrahedra's cross terms: the scale of
/// the regularization (zero for a particle whose volume nothing free can change).
fn diagonal(tets: &Tetrahedra, gradients: &[[Vec3; 4]], inverse_masses: &[Real]) -> Vec<Real> {
    let mut diagonal = vec![0.0; inverse_masses.len()];
    for (t, g) in tets.tets.iter().zip(gradients) {
        let share: Real = t.iter().zip(g).map(|(&i, g)| inverse_masses[i as usize] * g.norm_squared()).sum::<Real>() / 16.0;
        for &i in t {
            diagonal[i as usize] += share;
        }
    }
    diagonal
}

/// The pressure system `G M^-1 G^T` regularized, factored where the particles are; it inverts
/// the system (the rows without pressure are the identity in both), so [`project`] solves
/// with it directly. The free particles' part `F = G M_f^-1 G^T` is assembled and factored;
/// bones add `U M_s^-1 U^T`, with `U = G W` the rates of the volumes that each of the
/// skeleton's degrees of freedom makes (`W` carries the bound particles) and `M_s` its
/// generalized mass, a term of the skeleton's rank (6 plus one a hinge), inverted by the
/// Woodbury identity: `(F + U M_s^-1 U^T)^-1 = F^-1 - Z (M_s + U^T Z)^-1 Z^T` with `Z = F^-1 U`.
/// Factored once per move, it makes the projection cheap enough to run inside every product
/// of the coupled solve with the liquid (see `DeformableBody::kicked`): preconditioned by the
/// diagonal there, a ball in water took 2.6 times as long a frame. For a body without bones'
/// own one or two projections per move the diagonal is cheaper: factoring at every move made a
/// ball bouncing on the floor take 9 times as long. With bones the diagonal leaves their term
/// to conjugate gradients, about 550 iterations for a fish of five bones.
pub struct PressureFactor {
    free: SparseCholesky,
    bones: Option<BoneTerm>,
    /// Where it was factored.
    geometry: Geometry,
}

/// The bones' part of [`PressureFactor`]: `Z = F^-1 U` (a column a degree of freedom) and
/// `M_s + U^T Z` factored.
struct BoneTerm {
    z: Vec<Vec<Real>>,
    core: nalgebra::Cholesky<Real, nalgebra::Dyn>,
}

impl PressureFactor {
    /// The factor for particles at `x` with inverse masses `inverse_masses` (0: not free), the
    /// bound ones carried by `skeleton`.
    pub fn new(tets: &Tetrahedra, x: &[Vec3], inverse_masses: &[Real], skeleton: Option<&Skeleton>) -> Self {
        let geometry = Geometry::new(tets, x, inverse_masses);
        let gradients = &geometry.gradients;
        let n = x.len();
        // `G`'s column of each particle's velocity: the particles whose volume it changes.
        let mut columns: Vec<Vec<(u32, Vec3)>> = vec![Vec::new(); n];
        for (t, g) in tets.tets.iter().zip(gradients) {
            for (&c, g) in t.iter().zip(g) {
                columns[c as usize].extend(t.iter().map(|&i| (i, 0.25 * g)));
            }
        }
        for column in &mut columns {
            column.sort_unstable_by_key(|(i, _)| *i);
            column.dedup_by(|(i, g), (kept, sum)| {
                let same = i == kept;
                if same {
                    *sum += *g;
                }
                same
            });
        }
        let mut triplets = Vec::new();
        for (c, column) in columns.iter().enumerate().filter(|(c, _)| inverse_masses[*c] > 0.0) {
            for (i, gi) in column {
                triplets.extend(column.iter().map(|(j, gj)| (*i, *j, inverse_masses[c] * gi.dot(gj))));
            }
        }
        triplets.extend(geometry.diagonal.iter().enumerate().map(|(i, d)| (i as u32, i as u32, if *d > 0.0 { REGULARIZATION * d } else { 1.0 })));
        let free = SparseCholesky::new(&CsrMatrix::from_triplets(n, triplets)).expect("G M^-1 G^T regularized is positive definite");
        let bones = skeleton.map(|skeleton| {
            let dofs = skeleton.dofs();
            let u: Vec<Vec<Real>> = (0..dofs)
                .map(|d| {
                    let twists = skeleton.twists(&(0..dofs).map(|e| if e == d { 1.0 } else { 0.0 }).collect::<Vec<_>>());
                    let mut carried = vec![Vec3::zeros(); n];
                    skeleton.carry(x, &twists, &mut carried);
                    geometry.rates(tets, &carried)
                })
                .collect();
            let mut z = u.clone();
            free.solve(&mut z);
            let mut k = skeleton.mass().clone();
            for (a, ua) in u.iter().enumerate() {
                for (b, zb) in z.iter().enumerate() {
                    k[(a, b)] += ua.iter().zip(zb).map(|(u, z)| u * z).sum::<Real>();
                }
            }
            BoneTerm { z, core: nalgebra::Cholesky::new(k).expect("M_s + U^T F^-1 U is positive definite") }
        });
        PressureFactor { free, bones, geometry }
    }

    /// `(G u)^T A^-1 (G u)` for the velocity changes `u = K f` that forces `f` cause (`A` the
    /// pressure system): what the projection takes off `f . K f`, the projected response being
    /// `K - K G^T A^-1 G K`.
    pub fn projected_part(&self, tets: &Tetrahedra, u: &[Vec3]) -> Real {
        let rates = self.geometry.rates(tets, u);
        let mut p = vec![0.0; rates.len()];
        self.apply(&rates, &mut p);
        rates.iter().zip(&p).map(|(r, p)| r * p).sum()
    }
}

impl std::fmt::Debug for PressureFactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PressureFactor")
    }
}

impl Preconditioner for PressureFactor {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let mut column = [r.to_vec()];
        self.free.solve(&mut column);
        z.copy_from_slice(&column[0]);
        if let Some(BoneTerm { z: columns, core }) = &self.bones {
            let s = core.solve(&nalgebra::DVector::from_iterator(columns.len(), columns.iter().map(|c| c.iter().zip(r).map(|(c, r)| c * r).sum::<Real>())));
            for (c, s) in columns.iter().zip(s.iter()) {
                for (z, c) in z.iter_mut().zip(c) {
                    *z -= s * c;
                }
            }
        }
    }
}

/// Projects velocities `v` of particles at `x` (inverse masses `inverse_masses`, 0 for those
/// whose motion is prescribed or bound to a bone of `skeleton`) so that the particles' volumes
/// change at `rates` (`G v = r`), those whose volume a free particle changes, by the free
/// particles and the bones (the skeleton's rates change with its bound particles' velocities); preconditioned by `factor`,
/// the [`PressureFactor`] there, where given, else by the diagonal. Returns the largest rate
/// left off, relative to the largest asked change (0 when none was).
pub fn project(tets: &Tetrahedra, x: &[Vec3], inverse_masses: &[Real], skeleton: Option<&mut Skeleton>, factor: Option<&PressureFactor>, v: &mut [Vec3], rates: &[Real]) -> Real {
    // The factor's geometry is where the particles are (it is dropped when they move).
    let owned;
    let geometry = match factor {
        Some(factor) => &factor.geometry,
        None => {
            owned = Geometry::new(tets, x, inverse_masses);
            &owned
        }
    };
    let operator = Pressure { tets, x, geometry, inverse_masses, skeleton: skeleton.as_deref() };
    let wanted: Vec<Real> = rates.iter().enumerate().map(|(i, r)| if geometry.has_pressure(i) { *r } else { 0.0 }).collect();
    let b: Vec<Real> = geometry.rates(tets, v).iter().zip(&wanted).map(|(now, wanted)| now - wanted).collect();
    let scale = b.iter().fold(0.0, |m: Real, r| m.max(r.abs()));
    if scale == 0.0 {
        return 0.0;
    }
    let mut p = vec![0.0; x.len()];
    match factor {
        // It inverts the system: the projection is a direct solve.
        Some(factor) => factor.apply(&b, &mut p),
        None => {
            let params = PcgParams { tolerance: TOLERANCE, max_iterations: 10 * x.len().max(10) };
            let jacobi = Jacobi::from_diagonal(&geometry.diagonal.iter().map(|d| if *d > 0.0 { *d } else { 1.0 }).collect::<Vec<_>>());
            pcg(&operator, &jacobi, &b, &mut p, params);
        }
    }
    let forces = operator.forces(&p);
    for ((v, f), w) in v.iter_mut().zip(&forces).zip(inverse_masses) {
        *v -= *w * f;
    }
    if let Some(skeleton) = skeleton {
        skeleton.kick(x, v, forces.iter().enumerate().map(|(i, f)| (i, -f)));
    }
    let left = geometry.rates(tets, v).iter().zip(&wanted).fold(0.0, |m: Real, (now, wanted)| m.max((now - wanted).abs()));
    left / scale
}

/// The volume a closed, consistently oriented triangle mesh at `x` encloses (its triangles'
/// signed tetrahedra from the origin).
pub fn enclosed_volume(triangles: &[[u32; 3]], x: &[Vec3]) -> Real {
    triangles.iter().map(|t| x[t[0] as usize].dot(&x[t[1] as usize].cross(&x[t[2] as usize]))).sum::<Real>() / 6.0
}

/// Projects the velocities `v` of a closed sheet's particles at `x` (inverse masses
/// `inverse_masses`, 0 where pinned) so that the volume it encloses changes at `rate`: one
/// constraint `g . v = rate` with `g = dV/dx` (each particle's `sum (x_b x x_c) / 6` over its
/// triangles `(i, b, c)`), and `v <- v - M^-1 g p` with `p = (g . v - rate) / (g M^-1 g)`.
/// The gradient of a volume changes with neither a translation nor a rotation, so `g`'s forces
/// are internal: the momenta are kept. Nothing is done where no free particle can change the
/// volume.
pub fn project_enclosed(triangles: &[[u32; 3]], x: &[Vec3], inverse_masses: &[Real], v: &mut [Vec3], rate: Real) {
    let mut g = vec![Vec3::zeros(); x.len()];
    for t in triangles {
        for k in 0..3 {
            let (a, b, c) = (t[k] as usize, t[(k + 1) % 3] as usize, t[(k + 2) % 3] as usize);
            g[a] += x[b].cross(&x[c]) / 6.0;
        }
    }
    let stiffness: Real = g.iter().zip(inverse_masses).map(|(g, w)| w * g.norm_squared()).sum();
    if stiffness <= 0.0 {
        return;
    }
    let p = (g.iter().zip(v.iter()).map(|(g, v)| g.dot(v)).sum::<Real>() - rate) / stiffness;
    for ((v, g), w) in v.iter_mut().zip(&g).zip(inverse_masses) {
        *v -= *w * p * g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::TetMesh;

    /// A block's particles given random velocities are projected to keep every particle's
    /// volume: afterwards `G v` is under 1e-5 of what it was (5.8e-7: the regularization leaves
    /// about its 1e-6), and the linear and angular momentum
    /// are what they were (the pressures' forces are internal).
    #[test]
    fn the_projection_keeps_the_volumes_and_the_momenta() {
        let mesh = TetMesh::box_grid(&Vec3::new(-0.1, -0.05, -0.05), &Vec3::new(0.1, 0.05, 0.05), [4, 2, 2]);
        let tets = Tetrahedra::new(&mesh);
        let masses = tets.masses(1000.0, mesh.vertices.len());
        let inverse: Vec<Real> = masses.iter().map(|m| 1.0 / m).collect();
        let mut seed = 7u64;
        let mut random = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as Real / (1u64 << 53) as Real - 0.5
        };
        let mut v: Vec<Vec3> = mesh.vertices.iter().map(|_| Vec3::new(random(), random(), random())).collect();
        let momenta = |v: &[Vec3]| {
            let linear: Vec3 = v.iter().zip(&masses).map(|(v, m)| *m * v).sum();
            let angular: Vec3 = mesh.vertices.iter().zip(v).zip(&masses).map(|((x, v), m)| *m * x.cross(v)).sum();
            (linear, angular)
        };
        let before = momenta(&v);
        let factor = PressureFactor::new(&tets, &mesh.vertices, &inverse, None);
        let left = project(&tets, &mesh.vertices, &inverse, None, Some(&factor), &mut v, &vec![0.0; mesh.vertices.len()]);
        let after = momenta(&v);
        assert!(left < 1e-5, "the volumes still change at {left:e} of the start");
        assert!((after.0 - before.0).norm() < 1e-12 && (after.1 - before.1).norm() < 1e-12, "momenta {before:?} became {after:?}");
        assert!((particle_volumes(&tets, &mesh.vertices).iter().sum::<Real>() - 0.2 * 0.1 * 0.1).abs() < 1e-15);
    }

    /// With bones (a free one at one end of a block, one hinged on it at the other) the factor
    /// inverts the pressure system: for random pressures `p`, `P^-1 A p` gives `p` back to 1e-8;
    /// without the bones' term it is off by order one.
    #[test]
    fn with_bones_the_factor_inverts_the_pressure_system() {
        use super::super::skeleton::{BoneSetup, Joint};
        let mesh = TetMesh::box_grid(&Vec3::new(-0.1, -0.05, -0.05), &Vec3::new(0.1, 0.05, 0.05), [6, 3, 3]);
        let tets = Tetrahedra::new(&mesh);
        let masses = tets.masses(1000.0, mesh.vertices.len());
        let near = |x: Real| -> Vec<u32> { (0..mesh.vertices.len() as u32).filter(|&i| (mesh.vertices[i as usize].x - x).abs() < 0.04).collect() };
        let setups = vec![
            BoneSetup { name: "head".into(), particles: near(-0.1), joint: Joint::Free },
            BoneSetup { name: "tail".into(), particles: near(0.1), joint: Joint::Hinge { parent: Some(0), pivot: Vec3::zeros(), axis: Vec3::y(), drive: None } },
        ];
        let skeleton = Skeleton::new(setups, &mesh.vertices, &masses).unwrap();
        let inverse: Vec<Real> = (0..masses.len()).map(|i| if skeleton.owner(i).is_some() { 0.0 } else { 1.0 / masses[i] }).collect();
        let geometry = Geometry::new(&tets, &mesh.vertices, &inverse);
        let operator = Pressure { tets: &tets, x: &mesh.vertices, geometry: &geometry, inverse_masses: &inverse, skeleton: Some(&skeleton) };
        let mut seed = 5u64;
        let p: Vec<Real> = (0..inverse.len())
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 11) as Real / (1u64 << 53) as Real - 0.5
            })
            .collect();
        let without_pressure = (0..p.len()).filter(|&i| !operator.has_pressure(i)).count();
        assert!(without_pressure > 0 && without_pressure < p.len() / 2, "{without_pressure} particles without pressure: the test wants some");
        let mut ap = vec![0.0; p.len()];
        operator.apply(&p, &mut ap);
        let error = |factor: &PressureFactor| {
            let mut back = vec![0.0; p.len()];
            factor.apply(&ap, &mut back);
            let scale = p.iter().fold(0.0, |m: Real, p| m.max(p.abs()));
            back.iter().zip(&p).fold(0.0, |m: Real, (b, p)| m.max((b - p).abs())) / scale
        };
        let with = error(&PressureFactor::new(&tets, &mesh.vertices, &inverse, Some(&skeleton)));
        let without = error(&PressureFactor::new(&tets, &mesh.vertices, &inverse, None));
        assert!(with < 1e-8, "with the bones' term the factor is off by {with:e}");
        assert!(without > 0.1, "without it, off by only {without:e}: the test does not see the bones");
    }

    /// A closed sheet's particles (a box's surface, unequal masses, one pinned) given random
    /// velocities are projected so that the volume it encloses changes at the asked rate (to
    /// 1e-6 of the rates), and the momenta are kept where no particle is pinned; the enclosed volume
    /// is the box's.
    #[test]
    fn the_enclosed_projection_sets_the_volume_rate_and_keeps_the_momenta() {
        use crate::geometry::Shape;
        let mesh = Shape::Box { min: Vec3::new(-0.1, -0.05, -0.05), max: Vec3::new(0.1, 0.05, 0.05) }.surface_mesh();
        assert!((enclosed_volume(&mesh.triangles, &mesh.vertices) - 0.2 * 0.1 * 0.1).abs() < 1e-15);
        let n = mesh.vertices.len();
        let masses: Vec<Real> = (0..n).map(|i| 1.0 + 0.3 * i as Real).collect();
        let mut seed = 11u64;
        let mut random = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as Real / (1u64 << 53) as Real - 0.5
        };
        let start: Vec<Vec3> = (0..n).map(|_| Vec3::new(random(), random(), random())).collect();
        let rate_of = |v: &[Vec3]| {
            // A central difference: exact but for round-off, the volume being cubic.
            let h = 1e-4;
            let moved = |s: Real| -> Vec<Vec3> { mesh.vertices.iter().zip(v).map(|(x, v)| x + s * h * v).collect() };
            (enclosed_volume(&mesh.triangles, &moved(1.0)) - enclosed_volume(&mesh.triangles, &moved(-1.0))) / (2.0 * h)
        };
        let momenta = |v: &[Vec3]| {
            let linear: Vec3 = v.iter().zip(&masses).map(|(v, m)| *m * v).sum();
            let angular: Vec3 = mesh.vertices.iter().zip(v).zip(&masses).map(|((x, v), m)| *m * x.cross(v)).sum();
            (linear, angular)
        };
        for (pinned, rate) in [(None, 0.0), (None, 0.003), (Some(2), -0.002)] {
            let inverse: Vec<Real> = (0..n).map(|i| if Some(i) == pinned { 0.0 } else { 1.0 / masses[i] }).collect();
            let mut v = start.clone();
            project_enclosed(&mesh.triangles, &mesh.vertices, &inverse, &mut v, rate);
            assert!((rate_of(&v) - rate).abs() < 1e-6 * (rate_of(&start).abs() + rate.abs()), "rate {} asked {rate}", rate_of(&v));
            if let Some(p) = pinned {
                assert_eq!(v[p], start[p], "the pinned particle moved");
            } else {
                let (before, after) = (momenta(&start), momenta(&v));
                assert!((after.0 - before.0).norm() < 1e-12 && (after.1 - before.1).norm() < 1e-12, "momenta {before:?} became {after:?}");
            }
        }
    }
}
