//! Sparse Cholesky factorization of a symmetric positive-definite [`CsrMatrix`], the one
//! adapter to `faer` (a fill-reducing ordering and a supernodal factorization): the direct
//! solves of shift-inverted eigenvalue iterations.

use crate::CsrMatrix;
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};
use faer::{Mat, Side};

/// `A = L L^T` of a sparse symmetric positive-definite matrix.
pub struct SparseCholesky {
    n: usize,
    factor: faer::sparse::linalg::solvers::Llt<usize, f64>,
}

impl SparseCholesky {
    /// Factors `a` (its lower triangle is read). Fails when `a` is not positive definite.
    pub fn new(a: &CsrMatrix) -> Result<Self, String> {
        let triplets: Vec<Triplet<usize, usize, f64>> = (0..a.n)
            .flat_map(|i| (a.start[i]..a.start[i + 1]).filter(move |&k| a.columns[k] as usize <= i).map(move |k| Triplet::new(i, a.columns[k] as usize, a.values[k])))
            .collect();
        let matrix = SparseColMat::<usize, f64>::try_new_from_triplets(a.n, a.n, &triplets).map_err(|e| format!("{e:?}"))?;
        let factor = matrix.sp_cholesky(Side::Lower).map_err(|e| format!("the matrix is not positive definite ({e:?})"))?;
        Ok(SparseCholesky { n: a.n, factor })
    }

    /// Solves `A x = b` for every right-hand side in `columns` (overwritten with the solutions).
    pub fn solve(&self, columns: &mut [Vec<f64>]) {
        let b = Mat::<f64>::from_fn(self.n, columns.len(), |i, j| columns[j][i]);
        let x = self.factor.solve(&b);
        for (j, column) in columns.iter_mut().enumerate() {
            column.iter_mut().enumerate().for_each(|(i, v)| *v = x[(i, j)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LinearOperator;

    /// A 3D Laplacian plus identity (a stiffness-like SPD matrix): the solutions satisfy
    /// `A x = b` to round-off; an indefinite matrix is refused.
    #[test]
    fn solves_a_sparse_spd_system_and_refuses_an_indefinite_one() {
        let m = 6;
        let n = m * m * m;
        let index = |i: usize, j: usize, k: usize| (i + m * (j + m * k)) as u32;
        let mut triplets = Vec::new();
        for k in 0..m {
            for j in 0..m {
                for i in 0..m {
                    let c = index(i, j, k);
                    triplets.push((c, c, 7.0));
                    for (di, dj, dk) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                        if i + di < m && j + dj < m && k + dk < m {
                            let d = index(i + di, j + dj, k + dk);
                            triplets.push((c, d, -1.0));
                            triplets.push((d, c, -1.0));
                        }
                    }
                }
            }
        }
        let a = CsrMatrix::from_triplets(n, triplets.clone());
        let cholesky = SparseCholesky::new(&a).unwrap();
        let b: Vec<Vec<f64>> = (0..3).map(|s| (0..n).map(|i| ((i * 7 + s * 13) % 11) as f64 - 5.0).collect()).collect();
        let mut x = b.clone();
        cholesky.solve(&mut x);
        for (x, b) in x.iter().zip(&b) {
            let mut ax = vec![0.0; n];
            a.apply(x, &mut ax);
            let error = ax.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
            assert!(error < 1e-12, "residual {error}");
        }
        let indefinite = CsrMatrix::from_triplets(n, triplets.into_iter().map(|(r, c, v)| (r, c, if r == c { v - 10.0 } else { v })).collect());
        assert!(SparseCholesky::new(&indefinite).is_err());
    }
}
