//! Numerical linear algebra for tidepool: pure numerics, no physics.
//!
//! - [`LinearOperator`] and [`Preconditioner`]: the small interfaces the solvers are written against.
//! - [`pcg`]: preconditioned conjugate gradients with optional nullspace projection.
//! - [`Stencil7`]: a symmetric seven-point matrix on a 3D index box (the shape of every
//!   MAC-grid pressure system), applied matrix-free from its stored coefficients, with the
//!   [`Mic0`] modified incomplete Cholesky preconditioner.
//! - [`CsrMatrix`]: sparse symmetric matrices from triplets, with the [`Jacobi`] preconditioner,
//!   and their sparse Cholesky factorization ([`SparseCholesky`], by `faer`).
//! - [`mprgp`]: bound-constrained convex quadratic programs (linear complementarity problems)
//!   by MPRGP, preconditioned on the free set ([`FreeSetMic0`]), and the power iteration that
//!   estimates the matrix norm it needs.
//! - [`reduce`]: reductions (dot products, norms) whose result does not depend on the number of
//!   threads, so simulations are bit-reproducible.

pub mod cholesky;
pub mod csr;
pub mod mprgp;
pub mod multigrid;
pub mod pcg;
pub mod reduce;
pub mod stencil;

pub use cholesky::SparseCholesky;
pub use csr::{CsrMatrix, FreeSetJacobi, FreeSetMic0, Jacobi};
pub use mprgp::{largest_eigenvalue, mprgp, FreeSetPreconditioner, MprgpInfo, MprgpParams, NoPreconditioner};
pub use multigrid::Multigrid;
pub use pcg::{pcg, PcgInfo, PcgParams};
pub use stencil::{box_neighbours, Mic0, Packing, Stencil7};

/// A symmetric linear operator `y = A x` on vectors of length [`LinearOperator::len`].
pub trait LinearOperator: Sync {
    /// Number of rows (and columns).
    fn len(&self) -> usize;
    /// Whether the operator acts on empty vectors.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `y = A x`. `y` is fully overwritten.
    fn apply(&self, x: &[f64], y: &mut [f64]);
    /// Removes from `x` its component in the operator's nullspace (no-op when `A` is
    /// nonsingular). PCG calls it on the right-hand side and on every residual so that a
    /// singular but consistent system (a closed, fully liquid tank) converges.
    fn project_nullspace(&self, _x: &mut [f64]) {}
}

/// `z = M^-1 r` for a symmetric positive-definite approximation `M` of an operator.
pub trait Preconditioner: Sync {
    /// `z = M^-1 r`. `z` is fully overwritten.
    fn apply(&self, r: &[f64], z: &mut [f64]);
}

/// The identity preconditioner: plain conjugate gradients.
pub struct IdentityPreconditioner;

impl Preconditioner for IdentityPreconditioner {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        z.copy_from_slice(r);
    }
}
