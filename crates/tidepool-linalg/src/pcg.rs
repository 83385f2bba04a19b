//! Preconditioned conjugate gradients.

use crate::reduce::{axpy, dot, grain, norm2};
use crate::{LinearOperator, Preconditioner};
use rayon::prelude::*;

/// Stopping rule for [`pcg`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcgParams {
    /// Stop when `||b - A x||_2 <= tolerance * ||b||_2`.
    pub tolerance: f64,
    /// Give up after this many iterations (the result is then reported as not converged).
    pub max_iterations: usize,
}

/// What [`pcg`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PcgInfo {
    /// Iterations performed (0 when the initial guess already met the tolerance).
    pub iterations: usize,
    /// Final `||b - A x||_2 / ||b||_2` (0 for `b = 0`).
    pub relative_residual: f64,
    /// Whether the tolerance was met.
    pub converged: bool,
}

/// Solves `A x = b` for a symmetric positive (semi-)definite `A` by conjugate gradients
/// preconditioned with `m`. `x` holds the initial guess on entry and the solution on exit.
///
/// A singular `A` is supported when its nullspace is removed by
/// [`LinearOperator::project_nullspace`]: the right-hand side and every residual are projected.
pub fn pcg<A, M>(a: &A, m: &M, b: &[f64], x: &mut [f64], params: PcgParams) -> PcgInfo
where
    A: LinearOperator + ?Sized,
    M: Preconditioner + ?Sized,
{
    let n = a.len();
    assert_eq!(b.len(), n, "pcg: right-hand side length");
    assert_eq!(x.len(), n, "pcg: solution length");
    let mut r = b.to_vec();
    a.project_nullspace(&mut r);
    let b_norm = norm2(&r);
    if b_norm == 0.0 {
        x.fill(0.0);
        return PcgInfo { iterations: 0, relative_residual: 0.0, converged: true };
    }
    let mut q = vec![0.0; n];
    a.apply(x, &mut q);
    axpy(-1.0, &q, &mut r);
    a.project_nullspace(&mut r);
    let mut relative = norm2(&r) / b_norm;
    if relative <= params.tolerance {
        return PcgInfo { iterations: 0, relative_residual: relative, converged: true };
    }
    let mut z = vec![0.0; n];
    m.apply(&r, &mut z);
    a.project_nullspace(&mut z);
    let mut s = z.clone();
    let mut rho = dot(&r, &z);
    for iteration in 1..=params.max_iterations {
        a.apply(&s, &mut q);
        let sq = dot(&s, &q);
        // Not positive, or NaN: the operator is not positive definite on this direction.
        if sq.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !rho.is_finite() {
            return PcgInfo { iterations: iteration, relative_residual: relative, converged: false };
        }
        let alpha = rho / sq;
        axpy(alpha, &s, x);
        axpy(-alpha, &q, &mut r);
        relative = norm2(&r) / b_norm;
        if relative <= params.tolerance {
            return PcgInfo { iterations: iteration, relative_residual: relative, converged: true };
        }
        m.apply(&r, &mut z);
        a.project_nullspace(&mut z);
        let rho_new = dot(&r, &z);
        let beta = rho_new / rho;
        rho = rho_new;
        s.par_iter_mut().with_min_len(grain(z.len())).zip(z.par_iter()).for_each(|(si, zi)| *si = zi + beta * *si);
    }
    PcgInfo { iterations: params.max_iterations, relative_residual: relative, converged: false }
}
