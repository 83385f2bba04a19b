//! Sparse symmetric matrices in compressed sparse row form, assembled from triplets, applied
//! in parallel over rows; and the diagonal (Jacobi) preconditioner.

use crate::reduce::grain;
use crate::{FreeSetPreconditioner, LinearOperator, Mic0, Preconditioner};
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
        y.par_iter_mut().with_min_len(grain(self.n)).enumerate().for_each(|(i, yi)| *yi = row(i));
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
        z.par_iter_mut().with_min_len(grain(r.len())).zip(r.par_iter()).zip(self.inverse.par_iter()).for_each(|((zi, ri), d)| *zi = ri * d);
    }
}

/// Modified incomplete Cholesky, MIC(0), of a [`CsrMatrix`]'s principal submatrix on a
/// changing free set: the preconditioner [`crate::mprgp`] applies on the free variables of a
/// packed pressure LCP ([`crate::Stencil7::packed`]).
///
/// `A_F ~ (L + E) E^-1 (L + E)^T` with `L` the strictly lower part of `A_F` and `E` diagonal,
/// built row by row in order: `E_i = A_ii - sum_j (A_ij^2 / E_j + tau A_ij / E_j sum_k A_jk)`
/// over the free `j < i` coupled to `i`, the inner sum over the free `k > j` other than `i`:
/// the fill-in that zero fill drops, added back to the diagonal with weight `tau` so that row
/// sums match (the modification that keeps the smooth modes of a Poisson matrix well
/// preconditioned). A pivot below `sigma A_ii` is replaced by `A_ii` (`tau` and `sigma` are
/// [`Mic0`]'s). The triangular solves are
/// sequential in row order. The matrix must have no triangles (two columns coupled to one row
/// are not coupled to each other), as a seven-point matrix packed in index order has none:
/// then every such fill-in is dropped, and this is the MIC(0) of Bridson's *Fluid Simulation
/// for Computer Graphics*, sec. 5.4.
pub struct FreeSetMic0<'a> {
    matrix: &'a CsrMatrix,
    /// Where each row's diagonal entry is: the entries before it are the lower part.
    diagonal: Vec<usize>,
    free: Vec<bool>,
    /// `1 / sqrt(E_i)` on free rows, 0 elsewhere (so bound rows drop out of every sum).
    inv_sqrt_pivot: Vec<f64>,
    /// Per row, the sum of its entries to free columns after it.
    upper_sum: Vec<f64>,
}

impl<'a> FreeSetMic0<'a> {
    /// The factorisation on all of `matrix` until the solver sets a free set.
    ///
    /// # Panics
    /// If a row has no diagonal entry, or the matrix has a triangle (see the type's
    /// documentation).
    pub fn new(matrix: &'a CsrMatrix) -> Self {
        let n = matrix.n;
        let diagonal: Vec<usize> = (0..n)
            .into_par_iter()
            .map(|i| {
                let row = &matrix.columns[matrix.start[i]..matrix.start[i + 1]];
                matrix.start[i] + row.binary_search(&(i as u32)).expect("FreeSetMic0: every row has a diagonal entry")
            })
            .collect();
        let triangle = (0..n).into_par_iter().any(|i| {
            let after = &matrix.columns[diagonal[i] + 1..matrix.start[i + 1]];
            after.iter().enumerate().any(|(a, &j)| after[a + 1..].iter().any(|&k| matrix.get(j as usize, k as usize) != 0.0))
        });
        assert!(!triangle, "FreeSetMic0: the matrix has a triangle (it is not a packed seven-point matrix)");
        let mut m = FreeSetMic0 { matrix, diagonal, free: vec![true; n], inv_sqrt_pivot: vec![0.0; n], upper_sum: vec![0.0; n] };
        m.factorise();
        m
    }

    fn factorise(&mut self) {
        let m = self.matrix;
        for i in 0..m.n {
            let (lower, diagonal, upper) = (m.start[i]..self.diagonal[i], self.diagonal[i], self.diagonal[i] + 1..m.start[i + 1]);
            if !self.free[i] {
                self.inv_sqrt_pivot[i] = 0.0;
                continue;
            }
            let d = m.values[diagonal];
            let mut e = d;
            for k in lower {
                let (j, a_ij) = (m.columns[k] as usize, m.values[k]);
                let p = self.inv_sqrt_pivot[j];
                let dropped = self.upper_sum[j] - a_ij;
                e -= (a_ij * p) * (a_ij * p) + Mic0::TAU * a_ij * dropped * p * p;
            }
            if e < Mic0::SIGMA * d {
                e = d;
            }
            self.inv_sqrt_pivot[i] = 1.0 / e.sqrt();
            self.upper_sum[i] = upper.filter(|&k| self.free[m.columns[k] as usize]).map(|k| m.values[k]).sum();
        }
    }
}

impl FreeSetPreconditioner for FreeSetMic0<'_> {
    fn set_free(&mut self, free: &[bool]) {
        self.free.copy_from_slice(free);
        self.factorise();
    }

    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let (m, p) = (self.matrix, &self.inv_sqrt_pivot);
        // Forward substitution: q = (L + E)^-1 r, in z (bound rows have p = 0 and z = 0).
        for i in 0..m.n {
            let mut t = r[i];
            for k in m.start[i]..self.diagonal[i] {
                let j = m.columns[k] as usize;
                t -= m.values[k] * p[j] * z[j];
            }
            z[i] = t * p[i];
        }
        // Backward substitution: z = (L + E)^-T E q, in place.
        for i in (0..m.n).rev() {
            let mut t = z[i];
            for k in self.diagonal[i] + 1..m.start[i + 1] {
                t -= m.values[k] * p[i] * z[m.columns[k] as usize];
            }
            z[i] = t * p[i];
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

    /// A pool's pressure matrix with an obstacle: unit faces between liquid cells, a Dirichlet
    /// face on the liquid's top, the obstacle's cells inactive.
    fn pool(n: usize) -> crate::Stencil7 {
        let mut a = crate::Stencil7::zeros([n; 3]);
        let liquid = |c: usize| {
            let (i, j, k) = (c % n, (c / n) % n, c / (n * n));
            j < n / 2 && !(i > n / 3 && i < n / 2 && k > n / 4 && k < n / 2)
        };
        for c in (0..n * n * n).filter(|&c| liquid(c)) {
            for ax in 0..3 {
                for up in [true, false] {
                    match a.neighbour(c, ax, up) {
                        Some(d) if liquid(d) => {
                            a.diag[c] += 1.0;
                            if up {
                                a.plus[ax][c] = -1.0;
                            }
                        }
                        Some(_) if ax == 1 && up => a.diag[c] += 1.0,
                        _ => {}
                    }
                }
            }
        }
        a
    }

    /// Packed, a seven-point matrix is the same operator on its active rows; the sparse
    /// MIC(0) with every row free is the seven-point MIC(0); with a free set it is the MIC(0)
    /// of the submatrix (the bound rows and their couplings gone).
    #[test]
    fn packed_mic0_is_the_stencil_mic0() {
        use crate::{Mic0, Preconditioner};
        let a = pool(10);
        let (packed, packing) = a.packed();
        assert_eq!(packed.asymmetry(), 0.0);
        let full: Vec<f64> = (0..a.len()).map(|c| if a.diag[c] > 0.0 { ((c * 37) % 11) as f64 - 5.0 } else { 0.0 }).collect();
        let part = packing.gather(&full);
        let (mut y, mut y_packed) = (vec![0.0; a.len()], vec![0.0; packed.n]);
        a.apply(&full, &mut y);
        packed.apply(&part, &mut y_packed);
        assert_eq!(packing.gather(&y), y_packed);
        let (mut z, mut z_packed) = (vec![0.0; a.len()], vec![0.0; packed.n]);
        Mic0::new(&a).apply(&full, &mut z);
        let mut mic = FreeSetMic0::new(&packed);
        mic.apply(&part, &mut z_packed);
        let error = packing.gather(&z).iter().zip(&z_packed).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        assert!(error < 1e-12, "{error}");
        // A free set: the same as the seven-point MIC(0) of the matrix with the bound rows cut out.
        let free: Vec<bool> = (0..packed.n).map(|r| r % 5 != 2).collect();
        mic.set_free(&free);
        mic.apply(&part, &mut z_packed);
        let mut cut = a.clone();
        for (r, &c) in packing.rows.iter().enumerate().filter(|(r, _)| !free[*r]) {
            let c = c as usize;
            cut.diag[c] = 0.0;
            for ax in 0..3 {
                cut.plus[ax][c] = 0.0;
                if let Some(b) = cut.neighbour(c, ax, false) {
                    cut.plus[ax][b] = 0.0;
                }
            }
            assert_eq!(z_packed[r], 0.0);
        }
        let cut_full: Vec<f64> = full.iter().zip(&cut.diag).map(|(v, d)| if *d > 0.0 { *v } else { 0.0 }).collect();
        Mic0::new(&cut).apply(&cut_full, &mut z);
        let error = packing.gather(&z).iter().zip(&z_packed).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        assert!(error < 1e-12, "{error}");
    }
}
