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

/// `G M^-1 G^T` over the particles' pressures, regularized; with a skeleton, `M^-1` is the
/// response of the free particles and the bones.
struct Pressure<'a> {
    tets: &'a Tetrahedra,
    x: &'a [Vec3],
    gradients: &'a [[Vec3; 4]],
    inverse_masses: &'a [Real],
    skeleton: Option<&'a Skeleton>,
    /// [`REGULARIZATION`] times the diagonal.
    regularization: Vec<Real>,
}

impl Pressure<'_> {
    /// `G^T p`: each tetrahedron's corners pushed by the mean pressure of its corners along its
    /// volume's gradient.
    fn forces(&self, p: &[Real]) -> Vec<Vec3> {
        let mut f = vec![Vec3::zeros(); p.len()];
        for (t, g) in self.tets.tets.iter().zip(self.gradients) {
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
            for (i, u) in u.iter_mut().enumerate() {
                if let Some(carried) = skeleton.particle_velocity(&twists, i, &self.x[i]) {
                    *u = carried;
                }
            }
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
        let u = self.response(&self.forces(p));
        for ((y, rate), (p, e)) in y.iter_mut().zip(volume_rates(self.tets, self.gradients, &u)).zip(p.iter().zip(&self.regularization)) {
            *y = rate + e * p;
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

/// The pressure system of the free particles, `G M^-1 G^T` regularized, assembled and factored
/// where the particles are: a preconditioner of [`project`]'s solve. Without bones it is the
/// system itself (the solve takes one iteration); bones add their response, a term of rank at
/// most six per bone. A particle whose volume nothing free can change has a 1 on the diagonal.
/// Factored once per move, it makes the projection cheap enough to run inside every product
/// of the coupled solve with the liquid (see `DeformableBody::kicked`): preconditioned by the
/// diagonal there, a ball in water took 2.6 times as long a frame. For the body's own one or
/// two projections per move the diagonal is cheaper: factoring at every move made a ball
/// bouncing on the floor take 9 times as long.
pub struct PressureFactor(SparseCholesky);

impl PressureFactor {
    /// The factor for particles at `x` with inverse masses `inverse_masses` (0: not free).
    pub fn new(tets: &Tetrahedra, x: &[Vec3], inverse_masses: &[Real]) -> Self {
        let gradients = volume_gradients(tets, x);
        let n = x.len();
        // `G`'s column of each particle's velocity: the particles whose volume it changes.
        let mut columns: Vec<Vec<(u32, Vec3)>> = vec![Vec::new(); n];
        for (t, g) in tets.tets.iter().zip(&gradients) {
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
        let diagonal = diagonal(tets, &gradients, inverse_masses);
        triplets.extend(diagonal.iter().enumerate().map(|(i, d)| (i as u32, i as u32, if *d > 0.0 { REGULARIZATION * d } else { 1.0 })));
        PressureFactor(SparseCholesky::new(&CsrMatrix::from_triplets(n, triplets)).expect("G M^-1 G^T regularized is positive definite"))
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
        self.0.solve(&mut column);
        z.copy_from_slice(&column[0]);
    }
}

/// Projects velocities `v` of particles at `x` (inverse masses `inverse_masses`, 0 for those
/// whose motion is prescribed or bound to a bone of `skeleton`) so that the particles' volumes
/// change at `rates` (`G v = r`), as far as free particles and bones can make them (the
/// skeleton's rates change with its bound particles' velocities); preconditioned by `factor`,
/// the [`PressureFactor`] there, where given, else by the diagonal. Returns the largest rate
/// left off, relative to the largest asked change (0 when none was).
pub fn project(tets: &Tetrahedra, x: &[Vec3], inverse_masses: &[Real], skeleton: Option<&mut Skeleton>, factor: Option<&PressureFactor>, v: &mut [Vec3], rates: &[Real]) -> Real {
    let gradients = volume_gradients(tets, x);
    let diagonal = diagonal(tets, &gradients, inverse_masses);
    let regularization = diagonal.iter().map(|d| REGULARIZATION * d).collect();
    let operator = Pressure { tets, x, gradients: &gradients, inverse_masses, skeleton: skeleton.as_deref(), regularization };
    let free: Vec<bool> = diagonal.iter().map(|d| *d > 0.0).collect();
    let b: Vec<Real> = volume_rates(tets, &gradients, v).iter().zip(rates).zip(&free).map(|((now, wanted), free)| if *free { now - wanted } else { 0.0 }).collect();
    let scale = b.iter().fold(0.0, |m: Real, r| m.max(r.abs()));
    if scale == 0.0 {
        return 0.0;
    }
    let mut p = vec![0.0; x.len()];
    let params = PcgParams { tolerance: TOLERANCE, max_iterations: 10 * x.len().max(10) };
    match factor {
        Some(factor) => pcg(&operator, factor, &b, &mut p, params),
        None => pcg(&operator, &Jacobi::from_diagonal(&diagonal.iter().map(|d| if *d > 0.0 { *d } else { 1.0 }).collect::<Vec<_>>()), &b, &mut p, params),
    };
    let forces = operator.forces(&p);
    for ((v, f), w) in v.iter_mut().zip(&forces).zip(inverse_masses) {
        *v -= *w * f;
    }
    if let Some(skeleton) = skeleton {
        skeleton.kick(x, v, forces.iter().enumerate().map(|(i, f)| (i, -f)));
    }
    let left = volume_rates(tets, &gradients, v).iter().zip(rates).zip(&free).fold(0.0, |m: Real, ((now, wanted), free)| if *free { m.max((now - wanted).abs()) } else { m });
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
        let factor = PressureFactor::new(&tets, &mesh.vertices, &inverse);
        let left = project(&tets, &mesh.vertices, &inverse, None, Some(&factor), &mut v, &vec![0.0; mesh.vertices.len()]);
        let after = momenta(&v);
        assert!(left < 1e-5, "the volumes still change at {left:e} of the start");
        assert!((after.0 - before.0).norm() < 1e-12 && (after.1 - before.1).norm() < 1e-12, "momenta {before:?} became {after:?}");
        assert!((particle_volumes(&tets, &mesh.vertices).iter().sum::<Real>() - 0.2 * 0.1 * 0.1).abs() < 1e-15);
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
