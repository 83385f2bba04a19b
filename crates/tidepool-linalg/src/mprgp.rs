//! Bound-constrained convex quadratic programs by MPRGP, modified proportioning with reduced
//! gradient projections (Dostál, *Optimal Quadratic Programming Algorithms*, 2009, ch. 5;
//! Dostál and Schöberl 2005), preconditioned on the free set.
//!
//! Minimises `f(x) = 1/2 x^T A x + c^T x` subject to `x >= l` for a symmetric positive-definite
//! `A`. Its optimality conditions are a linear complementarity problem: with the gradient
//! `g = A x + c`, `x >= l`, `g >= 0` and `(x - l) . g = 0`. The unilateral incompressibility of
//! Gerszewski's thesis (eq. 3.3–3.5) is that problem with `l = 0`.
//!
//! The variables are split into the *active* set (`x_i = l_i`) and the *free* set. Three kinds
//! of step:
//! - *conjugate gradient* steps on the free set while they stay feasible;
//! - an *expansion* step when a CG step would leave the feasible set: as far as feasible along
//!   the CG direction, then a projected gradient step of length `step_length` (below `2/||A||`),
//!   which may add many variables to the active set at once;
//! - a *proportioning* step when the gradient pushing active variables off their bounds (the
//!   chopped gradient) is large against the free gradient: a line search along it, which frees
//!   them.
//!
//! It stops when the projected gradient is small: `||g^P|| <= tolerance ||c||`.

use crate::reduce::{chunk_grain, dot, grain, norm2, CHUNK};
use crate::LinearOperator;
use rayon::prelude::*;

/// `z = M_F^-1 r` for an approximation `M_F` of the operator's principal submatrix on a free
/// set, which the solver changes as it goes.
pub trait FreeSetPreconditioner {
    /// The free set changed to the indices where `free` is true.
    fn set_free(&mut self, free: &[bool]);
    /// `z = M_F^-1 r` for `r` supported on the free set; `z` is zero outside it.
    fn apply(&self, r: &[f64], z: &mut [f64]);
}

/// No preconditioning: `z = r` on the free set.
pub struct NoPreconditioner {
    free: Vec<bool>,
}

impl NoPreconditioner {
    /// The identity on `n` variables.
    pub fn new(n: usize) -> Self {
        NoPreconditioner { free: vec![true; n] }
    }
}

impl FreeSetPreconditioner for NoPreconditioner {
    fn set_free(&mut self, free: &[bool]) {
        self.free.copy_from_slice(free);
    }

    fn apply(&self, r: &[f64], z: &mut [f64]) {
        for ((zi, ri), f) in z.iter_mut().zip(r).zip(&self.free) {
            *zi = if *f { *ri } else { 0.0 };
        }
    }
}

/// Stopping rule and parameters of [`mprgp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MprgpParams {
    /// Stop when `||g^P||_2 <= tolerance ||c||_2`.
    pub tolerance: f64,
    /// Give up after this many steps of any kind (then reported as not converged).
    pub max_iterations: usize,
    /// Proportioning parameter `Gamma > 0`: a proportioning step is taken when the chopped
    /// gradient's norm exceeds `Gamma` times the reduced free gradient's.
    pub gamma: f64,
    /// Length `alpha` of the expansion's projected gradient step, in `(0, 2/||A||)`; see
    /// [`largest_eigenvalue`].
    pub step_length: f64,
}

/// What [`mprgp`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MprgpInfo {
    /// Steps of all kinds.
    pub iterations: usize,
    /// Conjugate gradient, expansion and proportioning steps.
    pub cg_steps: usize,
    pub expansion_steps: usize,
    pub proportioning_steps: usize,
    /// Final `||g^P|| / ||c||`.
    pub relative_residual: f64,
    /// Whether the tolerance was met.
    pub converged: bool,
    /// Variables at their bound at the end.
    pub active: usize,
}

/// Solves `min 1/2 x^T A x + c^T x` subject to `x >= lower` (entries may be `-inf`). `x` holds
/// the initial guess (projected onto the bounds first) and the solution on exit. Rows of `A`
/// that are identically zero must have `c = 0` there; they stay at their bound.
pub fn mprgp<A, M>(a: &A, m: &mut M, c: &[f64], lower: &[f64], x: &mut [f64], params: MprgpParams) -> MprgpInfo
where
    A: LinearOperator + ?Sized,
    M: FreeSetPreconditioner + ?Sized,
{
    let n = a.len();
    assert!(c.len() == n && lower.len() == n && x.len() == n, "mprgp: vector lengths");
    let alpha_bar = params.step_length;
    let inverse_step = 1.0 / alpha_bar;
    let scale = norm2(c).max(f64::MIN_POSITIVE);
    let (mut g, mut free) = (vec![0.0; n], vec![false; n]);
    let (mut z, mut p, mut ap, mut phi) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut info = MprgpInfo::default();
    // A new free set (and at the start): x projected onto the bounds, the gradient afresh,
    // the preconditioner for the free set, and conjugate gradients restarted from the
    // preconditioned free gradient phi.
    let restart = |m: &mut M, x: &mut [f64], g: &mut [f64], free: &mut [bool], phi: &mut [f64], z: &mut [f64], p: &mut [f64]| {
        x.par_iter_mut().with_min_len(grain(n)).zip(free.par_iter_mut()).zip(lower.par_iter()).for_each(|((xi, f), li)| {
            *xi = xi.max(*li);
            *f = *xi > *li;
        });
        a.apply(x, g);
        g.par_iter_mut().with_min_len(grain(n)).zip(phi.par_iter_mut()).zip(c.par_iter().zip(free.par_iter())).for_each(|((gi, pi), (ci, f))| {
            *gi += ci;
            *pi = if *f { *gi } else { 0.0 };
        });
        m.set_free(free);
        m.apply(phi, z);
        p.copy_from_slice(z);
        let rz = dot(phi, z);
        (rz, gradient_sums(g, x, lower, free, inverse_step))
    };
    let (mut rz, mut sums) = restart(m, x, &mut g, &mut free, &mut phi, &mut z, &mut p);
    loop {
        // The chopped gradient beta (active variables whose gradient points off the bound),
        // and the reduced free gradient phi~ (free gradient capped by the room to the bound).
        let (beta_sq, reduced_dot, projected_sq) = sums;
        info.relative_residual = projected_sq.sqrt() / scale;
        if info.relative_residual <= params.tolerance {
            info.converged = true;
            break;
        }
        if info.iterations >= params.max_iterations {
            break;
        }
        info.iterations += 1;
        if beta_sq <= params.gamma * params.gamma * reduced_dot {
            // Proportional: try a conjugate gradient step on the free set.
            a.apply(&p, &mut ap);
            // p . Ap (summed as `dot` sums) and the longest feasible step along p, in one pass.
            let (pap, alpha_feasible) = p
                .par_chunks(CHUNK)
                .zip(ap.par_chunks(CHUNK))
                .zip(x.par_chunks(CHUNK).zip(lower.par_chunks(CHUNK)))
                .with_min_len(chunk_grain(n))
                .map(|((p, ap), (x, lower))| {
                    let mut step = f64::INFINITY;
                    for i in 0..p.len() {
                        if p[i] > 0.0 {
                            step = step.min((x[i] - lower[i]) / p[i]);
                        }
                    }
                    (p.iter().zip(ap).map(|(p, q)| p * q).sum::<f64>(), step)
                })
                .collect::<Vec<_>>()
                .into_iter()
                .fold((0.0, f64::INFINITY), |(s, m), (t, q)| (s + t, m.min(q)));
            let alpha_cg = rz / pap;
            if alpha_cg <= alpha_feasible && pap > 0.0 {
                info.cg_steps += 1;
                // x and g along p, the new free gradient, and the next step's sums, in one pass.
                sums = x
                    .par_chunks_mut(CHUNK)
                    .zip(g.par_chunks_mut(CHUNK))
                    .zip(phi.par_chunks_mut(CHUNK))
                    .zip(p.par_chunks(CHUNK).zip(ap.par_chunks(CHUNK)))
                    .zip(free.par_chunks(CHUNK).zip(lower.par_chunks(CHUNK)))
                    .with_min_len(chunk_grain(n))
                    .map(|((((x, g), phi), (p, ap)), (free, lower))| {
                        for i in 0..x.len() {
                            x[i] -= alpha_cg * p[i];
                            g[i] -= alpha_cg * ap[i];
                            phi[i] = if free[i] { g[i] } else { 0.0 };
                        }
                        chunk_sums(g, x, lower, free, inverse_step)
                    })
                    .collect::<Vec<_>>()
                    .into_iter()
                    .fold((0.0, 0.0, 0.0), add_sums);
                m.apply(&phi, &mut z);
                let rz_new = dot(&phi, &z);
                let b = rz_new / rz;
                rz = rz_new;
                p.par_iter_mut().with_min_len(grain(n)).zip(z.par_iter()).for_each(|(pi, zi)| *pi = zi + b * *pi);
                continue;
            }
            // Expansion: to the boundary along p, then a projected free-gradient step.
            info.expansion_steps += 1;
            let step = alpha_feasible.min(alpha_cg.max(0.0));
            x.par_iter_mut().with_min_len(grain(n)).zip(g.par_iter().zip(p.par_iter())).zip(ap.par_iter().zip(free.par_iter().zip(lower.par_iter()))).for_each(
                |((xi, (gi, pi)), (api, (f, li)))| {
                    *xi -= step * pi;
                    if *f {
                        *xi = (*xi - alpha_bar * (gi - step * api)).max(*li);
                    }
                },
            );
        } else {
            // Proportioning: a line search along the chopped gradient frees active variables.
            info.proportioning_steps += 1;
            // The chopped gradient d, in z (the restart below overwrites it).
            let d = &mut z;
            d.par_iter_mut().with_min_len(grain(n)).zip(g.par_iter().zip(free.par_iter())).for_each(|(di, (gi, f))| *di = if *f { 0.0 } else { gi.min(0.0) });
            a.apply(d, &mut ap);
            let step = beta_sq / dot(d, &ap);
            x.par_iter_mut().with_min_len(grain(n)).zip(d.par_iter()).for_each(|(xi, di)| *xi -= step * di);
        }
        (rz, sums) = restart(m, x, &mut g, &mut free, &mut phi, &mut z, &mut p);
    }
    info.active = free.iter().filter(|f| !**f).count();
    info
}

/// The squared norm of the chopped gradient, the reduced free gradient's product with the
/// free gradient, and the squared norm of the projected gradient, over one chunk.
fn chunk_sums(g: &[f64], x: &[f64], lower: &[f64], free: &[bool], inverse_step: f64) -> (f64, f64, f64) {
    let mut sums = (0.0, 0.0, 0.0);
    for i in 0..g.len() {
        if free[i] {
            let reduced = if g[i] > 0.0 { g[i].min((x[i] - lower[i]) * inverse_step) } else { g[i] };
            sums.1 += reduced * g[i];
            sums.2 += g[i] * g[i];
        } else {
            let b = g[i].min(0.0);
            sums.0 += b * b;
            sums.2 += b * b;
        }
    }
    sums
}

fn add_sums(s: (f64, f64, f64), t: (f64, f64, f64)) -> (f64, f64, f64) {
    (s.0 + t.0, s.1 + t.1, s.2 + t.2)
}

/// [`chunk_sums`] over whole vectors, the chunks added in order (the same for any thread count).
fn gradient_sums(g: &[f64], x: &[f64], lower: &[f64], free: &[bool], inverse_step: f64) -> (f64, f64, f64) {
    g.par_chunks(CHUNK)
        .zip(x.par_chunks(CHUNK))
        .zip(lower.par_chunks(CHUNK).zip(free.par_chunks(CHUNK)))
        .with_min_len(chunk_grain(g.len()))
        .map(|((g, x), (lower, free))| chunk_sums(g, x, lower, free, inverse_step))
        .collect::<Vec<_>>()
        .into_iter()
        .fold((0.0, 0.0, 0.0), add_sums)
}

/// The largest eigenvalue of a symmetric positive semi-definite `a` (its 2-norm) by power
/// iteration from `v`, which is left holding the eigenvector estimate so that the next call on
/// a similar matrix starts close (warm start). Stops when the estimate changes by less than
/// `tolerance` relatively or after `max_iterations`. Returns the estimate and the iterations.
pub fn largest_eigenvalue<A: LinearOperator + ?Sized>(a: &A, v: &mut Vec<f64>, tolerance: f64, max_iterations: usize) -> (f64, usize) {
    let n = a.len();
    if v.len() != n || norm2(v) == 0.0 {
        // A deterministic start with components along every direction.
        *v = (0..n).map(|i| 1.0 + 0.5 * ((i as f64) * 0.618_033_988_7).fract()).collect();
    }
    let mut w = vec![0.0; n];
    let mut estimate = 0.0;
    for iteration in 1..=max_iterations {
        let norm = norm2(v);
        v.par_iter_mut().with_min_len(grain(n)).for_each(|vi| *vi /= norm);
        a.apply(v, &mut w);
        let next = norm2(&w);
        std::mem::swap(v, &mut w);
        if next == 0.0 || (next - estimate).abs() <= tolerance * next {
            return (next, iteration);
        }
        estimate = next;
    }
    (estimate, max_iterations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stencil::Stencil7;
    use crate::FreeSetMic0;

    /// A dense symmetric matrix as an operator.
    struct Dense {
        n: usize,
        a: Vec<f64>,
    }

    impl LinearOperator for Dense {
        fn len(&self) -> usize {
            self.n
        }
        fn apply(&self, x: &[f64], y: &mut [f64]) {
            for (i, yi) in y.iter_mut().enumerate() {
                *yi = (0..self.n).map(|j| self.a[i * self.n + j] * x[j]).sum();
            }
        }
    }

    /// Uniform numbers in [-1, 1) from a seed.
    fn random(seed: u64, count: usize) -> Vec<f64> {
        let mut s = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (0..count)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    /// `B^T B + n/10 I` for a random `B`: symmetric positive definite, not diagonally dominant.
    fn random_spd(n: usize, seed: u64) -> Dense {
        let b = random(seed, n * n);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|k| b[k * n + i] * b[k * n + j]).sum::<f64>() + if i == j { 0.1 * n as f64 } else { 0.0 };
            }
        }
        Dense { n, a }
    }

    /// Projected Gauss–Seidel run until nothing changes: the reference solution.
    fn projected_gauss_seidel(a: &Dense, c: &[f64], lower: &[f64]) -> Vec<f64> {
        let n = a.n;
        let mut x = lower.iter().map(|l| l.max(0.0)).collect::<Vec<_>>();
        for _ in 0..200_000 {
            let mut change: f64 = 0.0;
            for i in 0..n {
                let off: f64 = (0..n).filter(|&j| j != i).map(|j| a.a[i * n + j] * x[j]).sum();
                let next = ((-c[i] - off) / a.a[i * n + i]).max(lower[i]);
                change = change.max((next - x[i]).abs());
                x[i] = next;
            }
            if change < 1e-15 {
                break;
            }
        }
        x
    }

    fn params(a: &Dense) -> MprgpParams {
        let (norm, _) = largest_eigenvalue(a, &mut Vec::new(), 1e-10, 10_000);
        MprgpParams { tolerance: 1e-12, max_iterations: 10_000, gamma: 1.0, step_length: 1.8 / norm }
    }

    /// Random LCPs: MPRGP's answer satisfies the KKT conditions (`x >= l`, `g >= 0`,
    /// `(x - l) . g = 0`) to the tolerance and agrees with projected Gauss–Seidel, with and
    /// without finite lower bounds and from a bad initial guess; some variables end on their
    /// bound and some off it, so all three kinds of step are exercised.
    #[test]
    fn solves_random_lcps_to_kkt_and_agrees_with_projected_gauss_seidel() {
        let mut steps = [0; 3];
        for seed in 1..=12 {
            let n = 6 + (seed as usize * 3) % 20;
            let a = random_spd(n, seed);
            let c: Vec<f64> = random(seed + 100, n).iter().map(|v| 3.0 * v).collect();
            let lower: Vec<f64> = if seed % 2 == 0 { vec![0.0; n] } else { random(seed + 200, n).iter().map(|v| 0.5 * v).collect() };
            let mut x: Vec<f64> = random(seed + 300, n).iter().map(|v| 4.0 * v).collect();
            let info = mprgp(&a, &mut NoPreconditioner::new(n), &c, &lower, &mut x, params(&a));
            assert!(info.converged, "seed {seed}: {info:?}");
            let mut g = vec![0.0; n];
            a.apply(&x, &mut g);
            for i in 0..n {
                g[i] += c[i];
                assert!(x[i] >= lower[i], "seed {seed}: x[{i}] below its bound");
                assert!(g[i] >= -1e-9, "seed {seed}: gradient {} < 0 at {i}", g[i]);
                assert!((x[i] - lower[i]) * g[i] <= 1e-9, "seed {seed}: complementarity {} at {i}", (x[i] - lower[i]) * g[i]);
            }
            let reference = projected_gauss_seidel(&a, &c, &lower);
            for i in 0..n {
                assert!((x[i] - reference[i]).abs() < 1e-8, "seed {seed}: x[{i}] = {} vs PGS {}", x[i], reference[i]);
            }
            let active = (0..n).filter(|&i| x[i] == lower[i]).count();
            assert!(active > 0 && active < n, "seed {seed}: {active} of {n} active: the test is not testing bounds");
            steps[0] += info.cg_steps;
            steps[1] += info.expansion_steps;
            steps[2] += info.proportioning_steps;
        }
        assert!(steps.iter().all(|&s| s > 0), "steps taken (cg, expansion, proportioning): {steps:?}");
    }

    /// A Poisson-like LCP on a 3D stencil (the shape of the liquid's): the MIC(0) free-set
    /// preconditioner gives the same solution as none, in fewer steps; the power iteration
    /// warm-started from its last vector converges faster the second time.
    #[test]
    fn free_set_mic0_preconditions_a_stencil_lcp() {
        let n = 12;
        let mut m = Stencil7::zeros([n, n, n]);
        for c in 0..n * n * n {
            m.diag[c] = 6.0;
            for a in 0..3 {
                if m.neighbour(c, a, true).is_some() {
                    m.plus[a][c] = -1.0;
                }
            }
        }
        let c: Vec<f64> = random(7, n * n * n).iter().map(|v| v + 0.2).collect();
        let mut v = Vec::new();
        let (norm, cold) = largest_eigenvalue(&m, &mut v, 1e-6, 1000);
        let (again, warm) = largest_eigenvalue(&m, &mut v, 1e-6, 1000);
        assert!(norm <= 12.0 && norm > 11.0 && (again - norm).abs() < 1e-3 * norm, "norm {norm}, again {again}");
        assert!(warm < cold, "warm start took {warm} iterations, cold {cold}");
        let params = MprgpParams { tolerance: 1e-9, max_iterations: 5000, gamma: 1.0, step_length: 1.8 / norm };
        let lower = vec![0.0; c.len()];
        let mut plain = vec![0.0; c.len()];
        let plain_info = mprgp(&m, &mut NoPreconditioner::new(c.len()), &c, &lower, &mut plain, params);
        let mut mic = vec![0.0; c.len()];
        let (packed, _) = m.packed();
        let mic_info = mprgp(&packed, &mut FreeSetMic0::new(&packed), &c, &lower, &mut mic, params);
        assert!(plain_info.converged && mic_info.converged, "{plain_info:?} {mic_info:?}");
        let difference = plain.iter().zip(&mic).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        assert!(difference < 1e-7, "solutions differ by {difference}");
        assert!(mic_info.active > 0 && mic_info.active < c.len(), "{mic_info:?}");
        assert!(mic_info.iterations < plain_info.iterations, "MIC(0) {} steps, none {}", mic_info.iterations, plain_info.iterations);
    }
}
