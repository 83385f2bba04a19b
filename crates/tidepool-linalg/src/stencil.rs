//! Symmetric seven-point matrices on a 3D index box and their MIC(0) preconditioner.

use crate::reduce::grain;
use crate::{CsrMatrix, LinearOperator, Preconditioner};
use rayon::prelude::*;

/// A symmetric matrix whose row for index `(i, j, k)` couples it only to its six axis
/// neighbours, stored matrix-free as coefficients: `diag[c] = A[c][c]` and
/// `plus[a][c] = A[c][c + e_a]` (so `A[c][c - e_a] = plus[a][c - e_a]`).
///
/// Indices are `c = i + nx (j + ny k)`. A row with `diag == 0` is inactive: it must have no
/// off-diagonal entries, [`LinearOperator::apply`] returns 0 there, and solvers leave it at 0.
///
/// The constant vector restricted to each set in `floating` spans the nullspace (a region with
/// only Neumann boundaries); the sets are removed by [`LinearOperator::project_nullspace`].
#[derive(Clone, Debug, Default)]
pub struct Stencil7 {
    /// `[nx, ny, nz]`.
    pub dims: [usize; 3],
    /// Diagonal entries.
    pub diag: Vec<f64>,
    /// Off-diagonal entries towards `+x`, `+y`, `+z`.
    pub plus: [Vec<f64>; 3],
    /// Index sets on which the constant vector is in the nullspace.
    pub floating: Vec<Vec<u32>>,
}

impl Stencil7 {
    /// An all-zero (all-inactive) matrix.
    pub fn zeros(dims: [usize; 3]) -> Self {
        let n = dims[0] * dims[1] * dims[2];
        Stencil7 { dims, diag: vec![0.0; n], plus: [vec![0.0; n], vec![0.0; n], vec![0.0; n]], floating: Vec::new() }
    }

    /// Index strides along x, y and z.
    pub fn strides(&self) -> [usize; 3] {
        [1, self.dims[0], self.dims[0] * self.dims[1]]
    }

    /// `A[c][c']` for any pair of indices (zero off the stencil).
    pub fn entry(&self, c: usize, other: usize) -> f64 {
        if c == other {
            return self.diag[c];
        }
        let (lo, hi) = (c.min(other), c.max(other));
        let st = self.strides();
        for a in 0..3 {
            if hi - lo == st[a] && self.neighbour(lo, a, true).is_some() {
                return self.plus[a][lo];
            }
        }
        0.0
    }

    /// All six neighbours of `c` inside the box ([`box_neighbours`]).
    pub fn neighbours(&self, c: usize) -> [Option<usize>; 6] {
        box_neighbours(self.dims, c)
    }

    /// The neighbour of `c` along axis `a` (`up` towards +), if inside the box.
    pub fn neighbour(&self, c: usize, a: usize, up: bool) -> Option<usize> {
        box_neighbours(self.dims, c)[2 * a + usize::from(up)]
    }
}

impl Stencil7 {
    /// The connected sets of `rows` (coupled through nonzero entries) in which no row has a
    /// Dirichlet part (a diagonal above the sum of its couplings' magnitudes): the sets on which
    /// a constant is in the nullspace, for [`Stencil7::floating`]. Each set lists its rows in
    /// ascending order; the sets come in the order of their lowest rows.
    ///
    /// The rows connected to a Dirichlet part (in a liquid with a free surface: all of them)
    /// are found first, by depth-first searches from every such row in parallel that claim each
    /// row they reach once (the rows reached do not depend on which search claims them); the
    /// rest is split into its sets by a union-find.
    pub fn floating_sets(&self, rows: &[bool]) -> Vec<Vec<u32>> {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        const DIRICHLET: u8 = 1 << 6;
        let n = self.diag.len();
        let [nx, ny, _] = self.dims;
        let strides = [1, nx, nx * ny];
        // Per row: bit `2 a + up` where it couples to its neighbour along axis `a` (the order of
        // [`box_neighbours`]), and `DIRICHLET` where it has a Dirichlet part.
        let mut links = vec![0u8; n];
        links.par_chunks_mut(strides[2].max(1)).with_min_len(grain(n).div_ceil(strides[2].max(1))).enumerate().for_each(|(k, slab)| {
            for j in 0..ny {
                for i in 0..nx {
                    let c = i + nx * j + strides[2] * k;
                    if !rows[c] {
                        continue;
                    }
                    let (mut bits, mut off) = (0, 0.0);
                    for (s, d) in neighbours_at(self.dims, c, [i, j, k]).into_iter().enumerate() {
                        let Some(d) = d else { continue };
                        let w = if s % 2 == 1 { self.plus[s / 2][c] } else { self.plus[s / 2][d] };
                        if w != 0.0 {
                            bits |= 1 << s;
                            off -= w;
                        }
                    }
                    if self.diag[c] > off * (1.0 + 1e-12) {
                        bits |= DIRICHLET;
                    }
                    slab[i + nx * j] = bits;
                }
            }
        });
        let links = &links;
        let coupled = move |c: usize| (0..6).filter(move |s| links[c] & (1 << s) != 0).map(move |s| if s % 2 == 1 { c + strides[s / 2] } else { c - strides[s / 2] });
        let reached: Vec<AtomicBool> = links.par_iter().map(|&l| AtomicBool::new(l & DIRICHLET != 0)).collect();
        (0..n).into_par_iter().filter(|&c| links[c] & DIRICHLET != 0).for_each(|start| {
            let mut stack = vec![start];
            while let Some(c) = stack.pop() {
                stack.extend(coupled(c).filter(|&d| !reached[d].load(Relaxed) && !reached[d].swap(true, Relaxed)));
            }
        });
        let seen: Vec<bool> = reached.into_iter().map(AtomicBool::into_inner).collect();
        // The rest: a union-find over each remaining row's couplings to its lower neighbours,
        // in ascending order, each set rooted at its lowest row (the rest is closed under the
        // couplings: a row coupled to a reached one is reached).
        let rest = (0..n).filter(|&c| rows[c] && !seen[c]);
        if rest.clone().next().is_none() {
            return Vec::new();
        }
        let mut parent: Vec<u32> = (0..n as u32).collect();
        let root = |parent: &mut [u32], mut c: u32| {
            while parent[c as usize] != c {
                let up = parent[parent[c as usize] as usize];
                parent[c as usize] = up;
                c = up;
            }
            c
        };
        for c in rest.clone() {
            // `c` is still its own root: only higher rows have been joined to it.
            let mut r = c as u32;
            for a in (0..3).filter(|a| links[c] & (1 << (2 * a)) != 0) {
                let s = root(&mut parent, (c - strides[a]) as u32);
                parent[r.max(s) as usize] = r.min(s);
                r = r.min(s);
            }
        }
        let mut sets: Vec<(u32, Vec<u32>)> = Vec::new();
        for c in rest {
            let r = root(&mut parent, c as u32);
            match sets.binary_search_by_key(&r, |s| s.0) {
                Ok(s) => sets[s].1.push(c as u32),
                Err(_) => sets.push((r, vec![c as u32])),
            }
        }
        sets.into_iter().map(|s| s.1).collect()
    }
}

/// The six axis neighbours of index `c` (`c = i + nx (j + ny k)`) in a box of `dims` cells,
/// `None` outside it: entry `2 a + up` for axis `a` (`up` towards +), so `-x, +x, -y, +y, -z,
/// +z`. The coordinates are computed once.
pub fn box_neighbours(dims: [usize; 3], c: usize) -> [Option<usize>; 6] {
    let [nx, ny, _] = dims;
    neighbours_at(dims, c, [c % nx, (c / nx) % ny, c / (nx * ny)])
}

/// [`box_neighbours`] of index `c` whose coordinates `coord` are known.
fn neighbours_at(dims: [usize; 3], c: usize, coord: [usize; 3]) -> [Option<usize>; 6] {
    let strides = [1, dims[0], dims[0] * dims[1]];
    std::array::from_fn(|n| {
        let a = n / 2;
        if n % 2 == 1 {
            (coord[a] + 1 < dims[a]).then(|| c + strides[a])
        } else {
            (coord[a] > 0).then(|| c - strides[a])
        }
    })
}

impl Stencil7 {
    /// `y[c] = f(c, (A x)[c])` on active rows, 0 on inactive ones: a product fused with what
    /// is done with it, in one parallel pass.
    pub fn apply_with(&self, x: &[f64], y: &mut [f64], f: impl Fn(usize, f64) -> f64 + Sync) {
        let [nx, ny, _] = self.dims;
        let slab = nx * ny;
        y.par_chunks_mut(slab).with_min_len(grain(self.diag.len()).div_ceil(slab)).enumerate().for_each(|(k, ys)| {
            for j in 0..ny {
                for i in 0..nx {
                    let c = i + nx * j + slab * k;
                    let d = self.diag[c];
                    if d == 0.0 {
                        ys[i + nx * j] = 0.0;
                        continue;
                    }
                    let mut s = d * x[c];
                    if i + 1 < nx {
                        s += self.plus[0][c] * x[c + 1];
                    }
                    if i > 0 {
                        s += self.plus[0][c - 1] * x[c - 1];
                    }
                    if j + 1 < ny {
                        s += self.plus[1][c] * x[c + nx];
                    }
                    if j > 0 {
                        s += self.plus[1][c - nx] * x[c - nx];
                    }
                    if k + 1 < self.dims[2] {
                        s += self.plus[2][c] * x[c + slab];
                    }
                    if k > 0 {
                        s += self.plus[2][c - slab] * x[c - slab];
                    }
                    ys[i + nx * j] = f(c, s);
                }
            }
        });
    }
}

impl LinearOperator for Stencil7 {
    fn len(&self) -> usize {
        self.diag.len()
    }

    fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.apply_with(x, y, |_, ax| ax);
    }

    fn project_nullspace(&self, x: &mut [f64]) {
        for set in &self.floating {
            let mean = crate::reduce::sum_by(set.len(), |i| x[set[i] as usize]) / set.len() as f64;
            if set.len() == x.len() {
                // The whole vector (a closed box full of liquid): a plain parallel pass.
                x.par_iter_mut().for_each(|v| *v -= mean);
            } else {
                for &c in set {
                    x[c as usize] -= mean;
                }
            }
        }
    }
}

/// The active rows of a [`Stencil7`] in index order: a system's unknowns, packed. Vectors
/// move between the whole index box and the packed rows by [`Packing::gather`] and
/// [`Packing::scatter`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packing {
    /// The whole-box index of each packed row.
    pub rows: Vec<u32>,
}

impl Packing {
    /// The packed rows' entries of a whole-box vector.
    pub fn gather(&self, full: &[f64]) -> Vec<f64> {
        self.rows.par_iter().map(|&c| full[c as usize]).collect()
    }

    /// Writes the packed vector `part` into its rows of the whole-box vector `full` (the other
    /// entries are left as they are).
    pub fn scatter(&self, part: &[f64], full: &mut [f64]) {
        for (&c, v) in self.rows.iter().zip(part) {
            full[c as usize] = *v;
        }
    }
}

impl Stencil7 {
    /// The matrix on its active rows only, as a sparse matrix over the packed rows (rows
    /// outside have no couplings, so solving the packed system is solving the whole one, at a
    /// cost that follows the unknowns, not the grid: a liquid filling a tenth of the grid
    /// costs a tenth). For matrices without nullspace sets (a sparse matrix has none).
    pub fn packed(&self) -> (CsrMatrix, Packing) {
        debug_assert!(self.floating.is_empty(), "packed: the nullspace sets would be lost");
        let rows: Vec<u32> = (0..self.diag.len() as u32).filter(|&c| self.diag[c as usize] != 0.0).collect();
        let mut packed_index = vec![u32::MAX; self.diag.len()];
        for (r, &c) in rows.iter().enumerate() {
            packed_index[c as usize] = r as u32;
        }
        // Each row's entries in column order: -z, -y, -x, the diagonal, +x, +y, +z.
        let entries: Vec<([u32; 7], [f64; 7], usize)> = rows
            .par_iter()
            .enumerate()
            .map(|(r, &c)| {
                let c = c as usize;
                let (mut columns, mut values, mut count) = ([0; 7], [0.0; 7], 0);
                let mut push = |column: u32, value: f64| {
                    columns[count] = column;
                    values[count] = value;
                    count += 1;
                };
                let around = self.neighbours(c);
                for a in (0..3).rev() {
                    if let Some(d) = around[2 * a].filter(|&d| self.plus[a][d] != 0.0) {
                        push(packed_index[d], self.plus[a][d]);
                    }
                }
                push(r as u32, self.diag[c]);
                for a in 0..3 {
                    if let Some(d) = around[2 * a + 1].filter(|_| self.plus[a][c] != 0.0) {
                        push(packed_index[d], self.plus[a][c]);
                    }
                }
                (columns, values, count)
            })
            .collect();
        let mut start = Vec::with_capacity(rows.len() + 1);
        start.push(0);
        let (mut columns, mut values) = (Vec::new(), Vec::new());
        for (c, v, count) in &entries {
            columns.extend_from_slice(&c[..*count]);
            values.extend_from_slice(&v[..*count]);
            start.push(columns.len());
        }
        (CsrMatrix { n: rows.len(), start, columns, values }, Packing { rows })
    }
}

/// Modified incomplete Cholesky factorisation with zero fill-in, MIC(0), of a [`Stencil7`].
///
/// `A ~ (F + E) E^-1 (F + E)^T` with `E` diagonal and `F` the strictly lower part of `A`; the
/// modification adds `tau` times the dropped fill-in to the diagonal so that row sums match,
/// which keeps the preconditioner effective on the smooth error modes of Poisson problems.
/// `sigma` guards against tiny pivots (Bridson, *Fluid Simulation for Computer Graphics*, 2nd ed.,
/// sec. 5.4). The triangular solves are sequential in index order.
pub struct Mic0<'a> {
    matrix: &'a Stencil7,
    /// `1 / sqrt(E_cc)` per active row, 0 elsewhere.
    inv_sqrt_pivot: Vec<f64>,
}

impl<'a> Mic0<'a> {
    /// Default modification parameter.
    pub const TAU: f64 = 0.97;
    /// Default pivot safety factor.
    pub const SIGMA: f64 = 0.25;

    /// Factorises `matrix` with the default parameters.
    pub fn new(matrix: &'a Stencil7) -> Self {
        Self::with_parameters(matrix, Self::TAU, Self::SIGMA)
    }

    /// Factorises `matrix`; `tau = 0` gives plain IC(0).
    pub fn with_parameters(matrix: &'a Stencil7, tau: f64, sigma: f64) -> Self {
        Mic0 { matrix, inv_sqrt_pivot: mic0_pivots(matrix, tau, sigma) }
    }
}

/// `1 / sqrt(E_cc)` of the MIC(0) factorisation of `matrix` per active row, 0 elsewhere.
fn mic0_pivots(matrix: &Stencil7, tau: f64, sigma: f64) -> Vec<f64> {
    let [nx, ny, nz] = matrix.dims;
    let slab = nx * ny;
    let mut p = vec![0.0; matrix.diag.len()];
    let [ax, ay, az] = &matrix.plus;
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let c = i + nx * j + slab * k;
                let d = matrix.diag[c];
                if d == 0.0 {
                    continue;
                }
                let mut e = d;
                if i > 0 {
                    let b = c - 1;
                    let t = ax[b] * p[b];
                    e -= t * t + tau * ax[b] * (ay[b] + az[b]) * p[b] * p[b];
                }
                if j > 0 {
                    let b = c - nx;
                    let t = ay[b] * p[b];
                    e -= t * t + tau * ay[b] * (ax[b] + az[b]) * p[b] * p[b];
                }
                if k > 0 {
                    let b = c - slab;
                    let t = az[b] * p[b];
                    e -= t * t + tau * az[b] * (ax[b] + ay[b]) * p[b] * p[b];
                }
                if e < sigma * d {
                    e = d;
                }
                p[c] = 1.0 / e.sqrt();
            }
        }
    }
    p
}

impl Preconditioner for Mic0<'_> {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        mic0_solve(self.matrix, &self.inv_sqrt_pivot, r, z);
    }
}

/// `z = M^-1 r` for the MIC(0) factorisation of `m` with pivots `p` ([`mic0_pivots`]).
fn mic0_solve(m: &Stencil7, p: &[f64], r: &[f64], z: &mut [f64]) {
    let [nx, ny, nz] = m.dims;
    let slab = nx * ny;
    let [ax, ay, az] = &m.plus;
    // Forward substitution: q = (F + E)^-1 r, stored in z.
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let c = i + nx * j + slab * k;
                if p[c] == 0.0 {
                    z[c] = 0.0;
                    continue;
                }
                let mut t = r[c];
                if i > 0 {
                    t -= ax[c - 1] * p[c - 1] * z[c - 1];
                }
                if j > 0 {
                    t -= ay[c - nx] * p[c - nx] * z[c - nx];
                }
                if k > 0 {
                    t -= az[c - slab] * p[c - slab] * z[c - slab];
                }
                z[c] = t * p[c];
            }
        }
    }
    // Backward substitution: z = (F + E)^-T E q, in place.
    for k in (0..nz).rev() {
        for j in (0..ny).rev() {
            for i in (0..nx).rev() {
                let c = i + nx * j + slab * k;
                if p[c] == 0.0 {
                    continue;
                }
                let mut t = z[c];
                if i + 1 < nx {
                    t -= ax[c] * p[c] * z[c + 1];
                }
                if j + 1 < ny {
                    t -= ay[c] * p[c] * z[c + nx];
                }
                if k + 1 < nz {
                    t -= az[c] * p[c] * z[c + slab];
                }
                z[c] = t * p[c];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::{dot, norm2};
    use crate::{pcg, IdentityPreconditioner, PcgParams};

    /// The 7-point Laplacian on an `n^3` box with Dirichlet walls on the `+y` side only
    /// (elsewhere Neumann), scaled like a pressure matrix (integer entries).
    fn laplacian(n: usize, dirichlet_top: bool) -> Stencil7 {
        let mut a = Stencil7::zeros([n, n, n]);
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    let c = i + n * (j + n * k);
                    let coord = [i, j, k];
                    for ax in 0..3 {
                        if coord[ax] + 1 < n {
                            a.diag[c] += 1.0;
                            a.plus[ax][c] = -1.0;
                        }
                        if coord[ax] > 0 {
                            a.diag[c] += 1.0;
                        }
                    }
                    if dirichlet_top && j + 1 == n {
                        a.diag[c] += 2.0;
                    }
                }
            }
        }
        if !dirichlet_top {
            a.floating = vec![(0..(n * n * n) as u32).collect()];
        }
        a
    }

    /// A graph Laplacian on an `n^3` box coupling each cell to its neighbours in the same
    /// `region` (cells in none are left inactive).
    fn coupled_within(n: usize, region: impl Fn(usize) -> Option<usize>) -> Stencil7 {
        let mut a = Stencil7::zeros([n, n, n]);
        for c in 0..n * n * n {
            for ax in 0..3 {
                if let Some(d) = a.neighbour(c, ax, true).filter(|&d| region(c).is_some() && region(c) == region(d)) {
                    a.plus[ax][c] = -1.0;
                    a.diag[c] += 1.0;
                    a.diag[d] += 1.0;
                }
            }
        }
        a
    }

    /// Regions of a 6^3 box coupled within themselves only: `x < 2` with a Dirichlet part in
    /// one cell, `x = 3` closed, `x = 5` closed and cut in two at `y = 3`; `x = 2, 4` are not
    /// rows. Only the three closed regions are floating, each with all its rows, the same on
    /// one thread and on three.
    #[test]
    fn floating_sets_are_the_closed_regions() {
        let n = 6;
        let region = |c: usize| {
            let (i, j) = (c % n, (c / n) % n);
            match i {
                0 | 1 => Some(0),
                3 => Some(1),
                5 => Some(if j < 3 { 2 } else { 3 }),
                _ => None,
            }
        };
        let mut a = coupled_within(n, region);
        a.diag[n * n] += 2.0;
        let rows: Vec<bool> = (0..n * n * n).map(|c| region(c).is_some()).collect();
        let sets = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| a.floating_sets(&rows));
        let found = sets(1);
        assert_eq!(found, sets(3));
        let mut members: Vec<Vec<u32>> = found
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.sort_unstable();
                s
            })
            .collect();
        members.sort();
        let expected: Vec<Vec<u32>> = (1..4).map(|r| (0..(n * n * n) as u32).filter(|&c| region(c as usize) == Some(r)).collect()).collect();
        assert_eq!(members, expected);
    }

    /// A closed U in the z = 0 layer of a 6^3 box: two prongs (`x = 0` and `x = 4`, `y < 5`)
    /// joined only by the row `y = 5`, after both in index order, and a closed block elsewhere
    /// (`z >= 2`) beside rows that are not coupled to anything. The U is one set (its prongs
    /// found apart, then merged), listed in ascending order before the block's.
    #[test]
    fn floating_sets_join_regions_met_late_in_index_order() {
        let n = 6;
        let region = |c: usize| {
            let (i, j, k) = (c % n, (c / n) % n, c / (n * n));
            match k {
                0 if (j < 5 && (i == 0 || i == 4)) || (j == 5 && i <= 4) => Some(0),
                2.. if i < 3 => Some(1),
                _ => None,
            }
        };
        let mut a = coupled_within(n, region);
        // Rows coupled to nothing, with a diagonal: all Dirichlet part, never floating.
        let lone: Vec<usize> = (0..n * n * n).filter(|&c| region(c).is_none() && c % 7 == 0).collect();
        lone.iter().for_each(|&c| a.diag[c] = 1.0);
        let rows: Vec<bool> = (0..n * n * n).map(|c| region(c).is_some() || lone.contains(&c)).collect();
        let expected: Vec<Vec<u32>> = (0..2).map(|r| (0..(n * n * n) as u32).filter(|&c| region(c as usize) == Some(r)).collect()).collect();
        assert_eq!(a.floating_sets(&rows), expected);
    }

    fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
            })
            .collect()
    }

    #[test]
    fn stencil_apply_is_symmetric() {
        let a = laplacian(7, true);
        let x = pseudo_random(a.len(), 1);
        let y = pseudo_random(a.len(), 2);
        let (mut ax, mut ay) = (vec![0.0; a.len()], vec![0.0; a.len()]);
        a.apply(&x, &mut ax);
        a.apply(&y, &mut ay);
        let (l, r) = (dot(&y, &ax), dot(&x, &ay));
        assert!((l - r).abs() <= 1e-12 * l.abs().max(1.0));
        assert_eq!(a.entry(3, 3 + 7), a.entry(3 + 7, 3));
        assert_eq!(a.entry(6, 7), 0.0, "x-neighbours do not wrap across rows");
    }

    #[test]
    fn pcg_meets_tolerance_and_mic0_beats_plain_cg() {
        let a = laplacian(24, true);
        let b = pseudo_random(a.len(), 3);
        let params = PcgParams { tolerance: 1e-8, max_iterations: 2000 };
        let mut x_cg = vec![0.0; a.len()];
        let cg = pcg(&a, &IdentityPreconditioner, &b, &mut x_cg, params);
        let mic = Mic0::new(&a);
        let mut x = vec![0.0; a.len()];
        let info = pcg(&a, &mic, &b, &mut x, params);
        assert!(info.converged && cg.converged);
        // The reported residual is the true residual.
        let mut ax = vec![0.0; a.len()];
        a.apply(&x, &mut ax);
        let r: Vec<f64> = b.iter().zip(&ax).map(|(p, q)| p - q).collect();
        assert!(norm2(&r) / norm2(&b) <= 1e-8 * 1.01);
        assert!(info.iterations * 2 < cg.iterations, "MIC(0) {} iterations vs CG {}", info.iterations, cg.iterations);
    }

    #[test]
    fn singular_neumann_system_converges_after_projection() {
        let a = laplacian(12, false);
        let mut b = pseudo_random(a.len(), 4);
        // Make b inconsistent on purpose: PCG must solve the projected (consistent) system.
        b.iter_mut().for_each(|v| *v += 0.3);
        let mic = Mic0::new(&a);
        let mut x = vec![0.0; a.len()];
        let info = pcg(&a, &mic, &b, &mut x, PcgParams { tolerance: 1e-10, max_iterations: 500 });
        assert!(info.converged, "{info:?}");
        let mut ax = vec![0.0; a.len()];
        a.apply(&x, &mut ax);
        let mut bp = b.clone();
        a.project_nullspace(&mut bp);
        let err: f64 = ax.iter().zip(&bp).map(|(p, q)| (p - q).powi(2)).sum::<f64>().sqrt();
        assert!(err <= 1e-9 * norm2(&bp));
    }

    #[test]
    fn inactive_rows_stay_zero() {
        let mut a = laplacian(6, true);
        // Deactivate index 0 and remove its couplings (rebuilding the neighbours' diagonals).
        a.diag[0] = 0.0;
        for ax in 0..3 {
            if let Some(nb) = a.neighbour(0, ax, true) {
                a.diag[nb] -= 1.0;
                a.plus[ax][0] = 0.0;
            }
        }
        let b: Vec<f64> = (0..a.len()).map(|c| if c == 0 { 0.0 } else { 1.0 }).collect();
        let mic = Mic0::new(&a);
        let mut x = vec![0.0; a.len()];
        let info = pcg(&a, &mic, &b, &mut x, PcgParams { tolerance: 1e-10, max_iterations: 500 });
        assert!(info.converged);
        assert_eq!(x[0], 0.0);
    }
}
