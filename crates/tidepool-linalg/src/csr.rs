//! Sparse symmetric matrices in compressed sparse row form, assembled from triplets, applied
//! in parallel over rows; and the diagonal (Jacobi) preconditioner.

use crate::reduce::PARALLEL_MIN;
use crate::{FreeSetPreconditioner, LinearOperator, Preconditioner};
use rayon::prelude::*;

/// A square sparse matrix in compressed sparse row form (both triangles stored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsrMatrix {
    /// Rows (and columns).
    pub n: usize,
    /// Row `i`'s entries are `start[i]..start[i + 1]` of `columns` and `values`.
    pub start: Vec<usize>,
    pub columns: Vec<u32>,
    pub values: Vec<f64>,
}

impl CsrMatrix {
    /// An `n x n` matrix from `(row, column, value)` triplets; duplicates are summed.
    pub fn from_triplets(n: usize, mut triplets: Vec<(u32, u32, f64)>) -> Self {
        triplets.par_sort_unstable_by_key(|t| (t.0, t.1));
        let mut start = vec![0usize; n + 1];
        let (mut columns, mut values): (Vec<u32>, Vec<f64>) = (Vec::new(), Vec::new());
        let mut last: Option<(u32, u32)> = None;
        for (r, c, v) in triplets {
            if last == Some((r, c)) {
                *values.last_mut().expect("an entry was pushed") += v;
            } else {
                columns.push(c);
                values.push(v);
                start[r as usize + 1] += 1;
                last = Some((r, c));
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        CsrMatrix { n, start, columns, values }
    }

    /// Entry `(i, j)` (zero where not stored).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let row = self.start[i]..self.start[i + 1];
        match self.columns[row.clone()].binary_search(&(j as u32)) {
            Ok(k) => self.values[row.start + k],
            Err(_) => 0.0,
        }
    }

    /// The diagonal.
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.n).map(|i| self.get(i, i)).collect()
    }

    /// `a A + b B` for matrices of the same size.
    pub fn combine(a: f64, first: &CsrMatrix, b: f64, second: &CsrMatrix) -> CsrMatrix {
        let mut triplets = Vec::with_capacity(first.values.len() + second.values.len());
        for (scale, m) in [(a, first), (b, second)] {
            for i in 0..m.n {
                for k in m.start[i]..m.start[i + 1] {
                    triplets.push((i as u32, m.columns[k], scale * m.values[k]));
                }
            }
        }
        CsrMatrix::from_triplets(first.n, triplets)
    }

    /// Largest `|A_ij - A_ji|` (zero for a symmetric matrix).
    pub fn asymmetry(&self) -> f64 {
        (0..self.n)
            .flat_map(|i| (self.start[i]..self.start[i + 1]).map(move |k| (i, k)))
            .map(|(i, k)| (self.values[k] - self.get(self.columns[k] as usize, i)).abs())
            .fold(0.0, f64::max)
    }
}

impl LinearOperator for CsrMatrix {
    fn len(&self) -> usize {
        self.n
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        let row = |i: usize| (self.start[i]..self.start[i + 1]).map(|k| self.values[k] * x[self.columns[k] as usize]).sum();
        // Below a few thousand rows, waking the thread pool costs more than the product.
        if self.n < PARALLEL_MIN {
            y.iter_mut().enumerate().for_each(|(i, yi)| *yi = row(i));
        } else {
            y.par_iter_mut().enumerate().for_each(|(i, yi)| *yi = row(i));
        }
    }
}

/// `z = D^-1 r` with `D` the diagonal of a matrix (Jacobi).
pub struct Jacobi {
    inverse: Vec<f64>,
}

impl Jacobi {
    /// The preconditioner of `matrix`'s diagonal (zero entries are left alone).
    pub fn new(matrix: &CsrMatrix) -> Self {
        Jacobi::from_diagonal(&matrix.diagonal())
    }

    /// The preconditioner of a matrix with this diagonal (zero entries are left alone).
    pub fn from_diagonal(diagonal: &[f64]) -> Self {
        Jacobi { inverse: diagonal.iter().map(|d| if *d != 0.0 { 1.0 / d } else { 0.0 }).collect() }
    }
}

/// Jacobi on MPRGP's free set: `z = r / diag` on free variables, zero on the others.
pub struct FreeSetJacobi {
    jacobi: Jacobi,
    free: Vec<bool>,
}

impl FreeSetJacobi {
    /// Of a matrix with this diagonal, every variable free.
    pub fn from_diagonal(diagonal: &[f64]) -> Self {
        FreeSetJacobi { jacobi: Jacobi::from_diagonal(diagonal), free: vec![true; diagonal.len()] }
    }
}

impl FreeSetPreconditioner for FreeSetJacobi {
    fn set_free(&mut self, free: &[bool]) {
        self.free.copy_from_slice(free);
    }

    fn apply(&self, r: &[f64], z: &mut [f64]) {
        self.jacobi.apply(r, z);
        z.iter_mut().zip(&self.free).filter(|(_, f)| !**f).for_each(|(z, _)| *z = 0.0);
    }
}

impl Preconditioner for Jacobi {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        if z.len() < PARALLEL_MIN {
            z.iter_mut().zip(r).zip(&self.inverse).for_each(|((zi, ri), d)| *zi = ri * d);
        } else {
            z.par_iter_mut().zip(r.par_iter()).zip(self.inverse.par_iter()).for_each(|((zi, ri), d)| *zi = ri * d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triplets_are_summed_and_applied() {
        let m = CsrMatrix::from_triplets(3, vec![(0, 0, 2.0), (1, 0, -1.0), (0, 1, -1.0), (1, 1, 2.0), (1, 1, 1.0), (2, 2, 4.0)]);
        assert_eq!(m.get(1, 1), 3.0);
        assert_eq!(m.get(2, 0), 0.0);
        assert_eq!(m.asymmetry(), 0.0);
        let mut y = vec![0.0; 3];
        m.apply(&[1.0, 2.0, 3.0], &mut y);
        assert_eq!(y, vec![0.0, 5.0, 12.0]);
        let sum = CsrMatrix::combine(1.0, &m, 2.0, &m);
        assert_eq!(sum.get(1, 0), -3.0);
    }
}
