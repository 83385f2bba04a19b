//! A geometric multigrid V-cycle for [`Stencil7`] systems, used as the preconditioner of
//! conjugate gradients (MGPCG, after McAdams, Sifakis and Teran 2010).
//!
//! Levels halve the grid. A coarse cell is active where any of its eight children is; its
//! operator is re-discretised from the fine one: the weight of a coarse face is half the sum
//! of the four fine face weights across it, and a coarse cell's Dirichlet part (the diagonal
//! beyond its face weights: air cells of a free surface) is half the sum of its children's.
//! With the cell-centred trilinear prolongation `P` and the restriction `R = P^T`, this is the
//! Galerkin operator `R A P` of a constant-coefficient Laplacian, and it keeps every level a
//! weighted graph Laplacian plus a non-negative diagonal: symmetric, positive (semi-)definite.
//! The smoother is damped Jacobi, the same number of sweeps before and after the coarse
//! correction, so the V-cycle is a symmetric positive-definite preconditioner; every step is a
//! parallel pass over the cells.

use crate::reduce::grain;
use crate::{Preconditioner, Stencil7};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::Mutex;

/// Jacobi damping: smooths the high frequencies of a seven-point Laplacian.
const OMEGA: f64 = 0.8;
/// Smoothing sweeps before and after each coarse correction.
const SWEEPS: usize = 2;
/// Sweeps on the coarsest level, which stands in for an exact solve.
const COARSEST_SWEEPS: usize = 32;
/// Coarsening stops when a level has fewer cells along its shortest side than this.
const MIN_SIDE: usize = 4;

/// Vectors kept between applications: four per level, and two for the transfers.
type Scratch = (Vec<[Vec<f64>; 4]>, [Vec<f64>; 2]);

/// The levels of a multigrid hierarchy over a fine [`Stencil7`], finest first.
///
/// The hierarchy covers only the smallest box that holds the operator's active rows (the
/// liquid and its neighbours, not the air or solid around them): the residual is gathered into
/// that box and the correction scattered back, zero elsewhere.
pub struct Multigrid<'a> {
    fine: Cow<'a, Stencil7>,
    /// Where the fine level sits in the operator's box, when it is only part of it.
    crop: Option<Crop>,
    coarse: Vec<Stencil7>,
    /// Per level: the iterate, a second one for the sweeps, the residual, and the right-hand
    /// side (on the fine level only when cropped: else it is the residual handed to `apply`);
    /// and the transfers' two intermediate boxes. Kept between applications.
    scratch: Mutex<Scratch>,
}

impl<'a> Multigrid<'a> {
    /// The hierarchy of `operator`'s active box, coarsened while every side keeps at least four
    /// cells.
    pub fn new(operator: &'a Stencil7) -> Self {
        let crop = Crop::of(operator);
        let fine = match &crop {
            Some(crop) => Cow::Owned(crop.stencil(operator)),
            None => Cow::Borrowed(operator),
        };
        let mut coarse: Vec<Stencil7> = Vec::new();
        loop {
            let last = coarse.last().unwrap_or(&fine);
            if last.dims.iter().any(|&n| n < 2 * MIN_SIDE) {
                break;
            }
            coarse.push(coarsen(last));
        }
        let levels = || std::iter::once(&*fine).chain(&coarse);
        let fine_rhs = crop.is_some();
        let scratch = levels().enumerate().map(|(l, a)| std::array::from_fn(|v| vec![0.0; if l == 0 && v == 3 && !fine_rhs { 0 } else { a.diag.len() }])).collect();
        Multigrid { fine, crop, coarse, scratch: Mutex::new((scratch, [Vec::new(), Vec::new()])) }
    }

    /// Number of levels, the fine one included.
    pub fn levels(&self) -> usize {
        1 + self.coarse.len()
    }

    fn level(&self, l: usize) -> &Stencil7 {
        if l == 0 {
            &self.fine
        } else {
            &self.coarse[l - 1]
        }
    }

    /// One V-cycle on level `l` for `A x = b` from `x = 0`, into `scratch[0][0]`. `scratch`
    /// holds this level's vectors and the coarser levels'; the right-hand side is `fine_rhs`
    /// on the fine level, else `scratch[0][3]`.
    fn cycle(&self, l: usize, fine_rhs: Option<&[f64]>, scratch: &mut [[Vec<f64>; 4]], tmp: &mut [Vec<f64>; 2]) {
        let a = self.level(l);
        let (here, below) = scratch.split_first_mut().expect("a level");
        let [x, y, r, rhs] = here;
        let b: &[f64] = fine_rhs.unwrap_or(rhs);
        let smooth = |x: &mut Vec<f64>, y: &mut Vec<f64>, sweeps: usize| {
            for _ in 0..sweeps {
                a.apply_with(x, y, |c, ax| x[c] + OMEGA / a.diag[c] * (b[c] - ax));
                std::mem::swap(x, y);
            }
        };
        // The first sweep from zero is `x = omega D^-1 b`.
        x.par_iter_mut().with_min_len(grain(b.len())).zip(b.par_iter().zip(a.diag.par_iter())).for_each(|(x, (b, d))| *x = if *d > 0.0 { OMEGA * b / d } else { 0.0 });
        if below.is_empty() {
            smooth(x, y, COARSEST_SWEEPS - 1);
            return;
        }
        smooth(x, y, SWEEPS - 1);
        a.apply_with(x, r, |c, ax| b[c] - ax);
        let coarse = self.level(l + 1);
        restrict(a.dims, coarse, r, tmp, &mut below[0][3]);
        self.cycle(l + 1, None, below, tmp);
        prolong_add(a, &below[0][0], tmp, x);
        smooth(x, y, SWEEPS);
    }
}

impl Preconditioner for Multigrid<'_> {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let (levels, tmp) = &mut *guard;
        match &self.crop {
            None => {
                self.cycle(0, Some(r), levels, tmp);
                z.copy_from_slice(&levels[0][0]);
            }
            Some(crop) => {
                crop.gather(r, &mut levels[0][3]);
                self.cycle(0, None, levels, tmp);
                crop.scatter(&levels[0][0], z);
            }
        }
    }
}

/// The smallest box holding a [`Stencil7`]'s active rows: `dims` cells from `lo`, in a box of
/// `full` cells.
struct Crop {
    full: [usize; 3],
    lo: [usize; 3],
    dims: [usize; 3],
}

impl Crop {
    /// The active rows' box, or `None` when it is the whole box (or there are none).
    fn of(a: &Stencil7) -> Option<Crop> {
        let [nx, ny, _] = a.dims;
        let (lo, hi) = a
            .diag
            .par_chunks((nx * ny).max(1))
            .enumerate()
            .flat_map_iter(|(k, slab)| slab.chunks(nx.max(1)).enumerate().map(move |(j, row)| (j, k, row)))
            .filter_map(|(j, k, row)| {
                let first = row.iter().position(|&d| d != 0.0)?;
                let last = row.iter().rposition(|&d| d != 0.0)?;
                Some(([first, j, k], [last + 1, j + 1, k + 1]))
            })
            .reduce(|| ([usize::MAX; 3], [0; 3]), |(lo, hi), (l, h)| (std::array::from_fn(|i| lo[i].min(l[i])), std::array::from_fn(|i| hi[i].max(h[i]))));
        if hi == [0; 3] {
            return None;
        }
        // One inactive layer kept around the rows (where the box has room): beyond a free
        // surface the correction then fades to the air's zero, as on the whole box; only the
        // box's own walls are ends of the transfers.
        let lo: [usize; 3] = std::array::from_fn(|i| lo[i].saturating_sub(1));
        let dims: [usize; 3] = std::array::from_fn(|i| (hi[i] + 1).min(a.dims[i]) - lo[i]);
        (dims != a.dims).then_some(Crop { full: a.dims, lo, dims })
    }

    /// The x-row of the whole box holding the crop's x-row `w`.
    fn row(&self, w: usize) -> usize {
        let [_, wy, _] = self.dims;
        (self.lo[1] + w % wy) + self.full[1] * (self.lo[2] + w / wy)
    }

    /// The operator on the crop.
    fn stencil(&self, a: &Stencil7) -> Stencil7 {
        let take = |v: &[f64]| {
            let mut part = vec![0.0; self.dims.iter().product()];
            self.gather(v, &mut part);
            part
        };
        Stencil7 { dims: self.dims, diag: take(&a.diag), plus: a.plus.each_ref().map(|p| take(p)), floating: Vec::new() }
    }

    /// The crop's part of a whole-box vector.
    fn gather(&self, full: &[f64], part: &mut [f64]) {
        let (wx, fx) = (self.dims[0], self.full[0]);
        part.par_chunks_mut(wx).enumerate().for_each(|(w, dst)| {
            let start = self.row(w) * fx + self.lo[0];
            dst.copy_from_slice(&full[start..start + wx]);
        });
    }

    /// The whole-box vector that is `part` on the crop and zero elsewhere.
    fn scatter(&self, part: &[f64], full: &mut [f64]) {
        let ([wx, wy, wz], fx, fy) = (self.dims, self.full[0], self.full[1]);
        full.par_chunks_mut(fx).enumerate().for_each(|(row, dst)| {
            let (j, k) = (row % fy, row / fy);
            dst.fill(0.0);
            if (self.lo[1]..self.lo[1] + wy).contains(&j) && (self.lo[2]..self.lo[2] + wz).contains(&k) {
                let w = (j - self.lo[1]) + wy * (k - self.lo[2]);
                dst[self.lo[0]..self.lo[0] + wx].copy_from_slice(&part[w * wx..(w + 1) * wx]);
            }
        });
    }
}

/// The coarse operator of `fine` (see the module documentation).
fn coarsen(fine: &Stencil7) -> Stencil7 {
    let dims = fine.dims.map(|n| n.div_ceil(2));
    let [fx, fy, _] = fine.dims;
    let [cx, cy, _] = dims;
    let n = dims.iter().product::<usize>();
    let children = |c: usize| {
        let (i, j, k) = (c % cx, (c / cx) % cy, c / (cx * cy));
        (0..8).filter_map(move |o| {
            let (fi, fj, fk) = (2 * i + (o & 1), 2 * j + ((o >> 1) & 1), 2 * k + (o >> 2));
            (fi < fx && fj < fy && fk < fine.dims[2]).then_some(fi + fx * (fj + fy * fk))
        })
    };
    // Each fine cell's Dirichlet part: its diagonal less the weights of its faces.
    let dirichlet = |f: usize| {
        if fine.diag[f] == 0.0 {
            return 0.0;
        }
        let faces: f64 = (0..3).map(|a| fine.neighbour(f, a, true).map_or(0.0, |_| -fine.plus[a][f]) + fine.neighbour(f, a, false).map_or(0.0, |g| -fine.plus[a][g])).sum();
        (fine.diag[f] - faces).max(0.0)
    };
    let active: Vec<bool> = (0..n).into_par_iter().map(|c| children(c).any(|f| fine.diag[f] > 0.0)).collect();
    let strides = [1, fx, fx * fy];
    let plus: [Vec<f64>; 3] = [0, 1, 2].map(|a| {
        (0..n)
            .into_par_iter()
            .map(|c| {
                let coord = [c % cx, (c / cx) % cy, c / (cx * cy)];
                if coord[a] + 1 >= dims[a] {
                    return 0.0;
                }
                // Fine faces across the coarse face: from the children on the upper side of `c`.
                children(c)
                    .filter(|&f| {
                        let fc = [f % fx, (f / fx) % fy, f / (fx * fy)];
                        fc[a] % 2 == 1 && fc[a] + 1 < fine.dims[a]
                    })
                    .map(|f| {
                        debug_assert!(fine.neighbour(f, a, true) == Some(f + strides[a]));
                        0.5 * fine.plus[a][f]
                    })
                    .sum()
            })
            .collect()
    });
    let mut coarse = Stencil7 { dims, diag: vec![0.0; n], plus, floating: Vec::new() };
    let diag: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|c| {
            if !active[c] {
                return 0.0;
            }
            let faces: f64 =
                (0..3).map(|a| coarse.neighbour(c, a, true).map_or(0.0, |_| -coarse.plus[a][c]) + coarse.neighbour(c, a, false).map_or(0.0, |g| -coarse.plus[a][g])).sum();
            faces + 0.5 * children(c).map(dirichlet).sum::<f64>()
        })
        .collect();
    coarse.diag = diag;
    coarse
}

/// One axis of the transfers, on a box of `dims` cells whose `axis` side is `fine` long on
/// the fine side and `fine.div_ceil(2)` on the coarse one (the other sides as they are).
/// Restriction sums each fine cell into its two nearest coarse cells, 3/4 into its parent and
/// 1/4 into the parent's neighbour on its side; prolongation is its transpose.
fn restrict_axis(src: &[f64], dims: [usize; 3], axis: usize, dst: &mut [f64]) {
    let fine = dims[axis];
    let mut out = dims;
    out[axis] = fine.div_ceil(2);
    let strides = [1, dims[0], dims[0] * dims[1]];
    let n = dst.len();
    dst.par_iter_mut().with_min_len(grain(n)).enumerate().for_each(|(o, v)| {
        let coord = [o % out[0], (o / out[0]) % out[1], o / (out[0] * out[1])];
        let base: usize = (0..3).filter(|&a| a != axis).map(|a| coord[a] * strides[a]).sum();
        let c = coord[axis] as isize;
        let mut sum = 0.0;
        let coarse = fine.div_ceil(2) as isize;
        // A fine cell with no second coarse neighbour (at the box's ends) gives all of itself to its parent.
        let (even, odd) = (if c == 0 { 1.0 } else { 0.75 }, if c + 1 == coarse { 1.0 } else { 0.75 });
        for (f, w) in [(2 * c - 1, 0.25), (2 * c, even), (2 * c + 1, odd), (2 * c + 2, 0.25)] {
            if f >= 0 && (f as usize) < fine {
                sum += w * src[base + f as usize * strides[axis]];
            }
        }
        *v = sum;
    });
}

/// The transpose of [`restrict_axis`]: `dims` is the fine box; `put(index, slot, value)`
/// stores each prolonged value.
fn prolong_axis(src: &[f64], dims: [usize; 3], axis: usize, dst: &mut [f64], put: impl Fn(usize, &mut f64, f64) + Sync) {
    let coarse = dims[axis].div_ceil(2);
    let mut from = dims;
    from[axis] = coarse;
    let strides = [1, from[0], from[0] * from[1]];
    let n = dst.len();
    dst.par_iter_mut().with_min_len(grain(n)).enumerate().for_each(|(o, v)| {
        let coord = [o % dims[0], (o / dims[0]) % dims[1], o / (dims[0] * dims[1])];
        let base: usize = (0..3).filter(|&a| a != axis).map(|a| coord[a] * strides[a]).sum();
        let f = coord[axis];
        let near = f / 2;
        let far = if f % 2 == 0 { near.checked_sub(1) } else { (near + 1 < coarse).then_some(near + 1) };
        let p = match far {
            Some(g) => 0.75 * src[base + near * strides[axis]] + 0.25 * src[base + g * strides[axis]],
            None => src[base + near * strides[axis]],
        };
        put(o, v, p);
    });
}

/// `x += P e` on the active fine cells, by three one-axis passes (`tmp` holds the two
/// intermediate boxes).
fn prolong_add(fine: &Stencil7, e: &[f64], tmp: &mut [Vec<f64>; 2], x: &mut [f64]) {
    let d = fine.dims;
    let z_fine = [d[0].div_ceil(2), d[1].div_ceil(2), d[2]];
    let zy_fine = [d[0].div_ceil(2), d[1], d[2]];
    let [t0, t1] = tmp;
    t0.resize(z_fine.iter().product(), 0.0);
    t1.resize(zy_fine.iter().product(), 0.0);
    let set = |_: usize, v: &mut f64, p: f64| *v = p;
    prolong_axis(e, z_fine, 2, t0, set);
    prolong_axis(t0, zy_fine, 1, t1, set);
    prolong_axis(t1, d, 0, x, |f, v, p| {
        if fine.diag[f] != 0.0 {
            *v += p;
        }
    });
}

/// `P^T r` into `out`, zero on inactive coarse cells, by three one-axis passes.
fn restrict(fine_dims: [usize; 3], coarse: &Stencil7, r: &[f64], tmp: &mut [Vec<f64>; 2], out: &mut [f64]) {
    let d = fine_dims;
    let x_coarse = [d[0].div_ceil(2), d[1], d[2]];
    let xy_coarse = [d[0].div_ceil(2), d[1].div_ceil(2), d[2]];
    let [t0, t1] = tmp;
    t0.resize(x_coarse.iter().product(), 0.0);
    t1.resize(xy_coarse.iter().product(), 0.0);
    restrict_axis(r, d, 0, t0);
    restrict_axis(t0, x_coarse, 1, t1);
    restrict_axis(t1, xy_coarse, 2, out);
    out.par_iter_mut().with_min_len(grain(coarse.diag.len())).zip(coarse.diag.par_iter()).for_each(|(v, &d)| {
        if d == 0.0 {
            *v = 0.0;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{pcg, LinearOperator, Mic0, PcgParams};

    /// A random-ish vector, zero on inactive cells.
    fn field(a: &Stencil7, seed: u64) -> Vec<f64> {
        let mut s = seed;
        a.diag
            .iter()
            .map(|&d| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if d > 0.0 {
                    (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// The Poisson matrix of the liquid cells (`liquid(c)`) of an `n^3` box: unit faces
    /// between liquid cells; a liquid cell next to air (`air(c)`) takes that face on its
    /// diagonal (a Dirichlet condition at the free surface, with a ghost-fluid weight of 2
    /// where the surface is half a cell away); walls and obstacles are Neumann (nothing).
    fn poisson(n: usize, liquid: impl Fn([usize; 3]) -> bool, air: impl Fn([usize; 3]) -> bool) -> Stencil7 {
        let mut a = Stencil7::zeros([n; 3]);
        let coord = |c: usize| [c % n, (c / n) % n, c / (n * n)];
        let mut floating = true;
        for c in 0..n * n * n {
            if !liquid(coord(c)) {
                continue;
            }
            for ax in 0..3 {
                for up in [true, false] {
                    if let Some(g) = a.neighbour(c, ax, up) {
                        if liquid(coord(g)) {
                            a.diag[c] += 1.0;
                            if up {
                                a.plus[ax][c] = -1.0;
                            }
                        } else if air(coord(g)) {
                            a.diag[c] += 2.0;
                            floating = false;
                        }
                    }
                }
            }
        }
        if floating {
            a.floating = vec![(0..n * n * n).filter(|&c| a.diag[c] > 0.0).map(|c| c as u32).collect()];
        }
        a
    }

    /// A closed box full of liquid (singular: the constant is in the nullspace).
    fn closed_box(n: usize) -> Stencil7 {
        poisson(n, |_| true, |_| false)
    }

    /// A pool half full under air, with a solid block standing in it.
    fn pool_with_block(n: usize) -> Stencil7 {
        let block = move |[i, j, k]: [usize; 3]| (n / 4..n / 2).contains(&i) && j < n / 3 && (n / 4..n / 2).contains(&k);
        poisson(n, move |c| c[1] < n / 2 && !block(c), move |c| c[1] >= n / 2)
    }

    /// A ball of liquid in air (a drop).
    fn drop(n: usize) -> Stencil7 {
        let inside = move |[i, j, k]: [usize; 3]| {
            let d = [i, j, k].map(|v| v as f64 + 0.5 - 0.5 * n as f64);
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() < 0.4 * n as f64
        };
        poisson(n, inside, move |c| !inside(c))
    }

    const PARAMS: PcgParams = PcgParams { tolerance: 1e-8, max_iterations: 2000 };

    /// Solves `a x = b` (`b` random, consistent) with both preconditioners: the solutions, and
    /// multigrid's iterations.
    fn both(a: &Stencil7) -> (Vec<f64>, Vec<f64>, usize) {
        let mut b = field(a, 7);
        a.project_nullspace(&mut b);
        let (mut x_mic, mut x_mg) = (vec![0.0; b.len()], vec![0.0; b.len()]);
        let mic = pcg(a, &Mic0::new(a), &b, &mut x_mic, PARAMS);
        let mg = pcg(a, &Multigrid::new(a), &b, &mut x_mg, PARAMS);
        assert!(mic.converged && mg.converged, "{mic:?} {mg:?}");
        (x_mic, x_mg, mg.iterations)
    }

    /// The V-cycle is symmetric: `<M^-1 u, v> = <u, M^-1 v>`, and positive: `<M^-1 u, u> > 0`,
    /// cropped to the active rows' box (a drop, a half-full pool) or not (a full box).
    #[test]
    fn the_v_cycle_is_symmetric_and_positive() {
        for (a, cropped) in [(drop(24), true), (pool_with_block(24), true), (closed_box(16), false)] {
            let mg = Multigrid::new(&a);
            assert!(mg.levels() >= 2);
            assert_eq!(mg.crop.is_some(), cropped, "the hierarchy covers the active rows' box");
            let (u, v) = (field(&a, 1), field(&a, 2));
            let (mut mu, mut mv) = (vec![0.0; u.len()], vec![0.0; u.len()]);
            mg.apply(&u, &mut mu);
            mg.apply(&v, &mut mv);
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
            let (uv, vu) = (dot(&mu, &v), dot(&u, &mv));
            assert!((uv - vu).abs() <= 1e-12 * uv.abs().max(vu.abs()), "{uv} vs {vu}");
            assert!(dot(&mu, &u) > 0.0 && dot(&mv, &v) > 0.0);
        }
    }

    /// Multigrid-preconditioned CG reaches MIC(0)-CG's solution (to the tolerance, relative
    /// to the solution's size) on a free surface, a closed box (up to the constant, which
    /// both remove) and a pool with an obstacle.
    #[test]
    fn multigrid_and_mic0_reach_the_same_solution() {
        for (name, a) in [("drop", drop(32)), ("closed box", closed_box(32)), ("pool with a block", pool_with_block(32))] {
            let (x_mic, x_mg, _) = both(&a);
            let size = x_mic.iter().map(|v| v * v).sum::<f64>().sqrt();
            let difference = x_mic.iter().zip(&x_mg).map(|(p, q)| (p - q) * (p - q)).sum::<f64>().sqrt();
            assert!(difference <= 1e-5 * size, "{name}: |x_mg - x_mic| = {difference:e}, |x| = {size:e}");
        }
    }

    /// Multigrid's iterations stay bounded under refinement: at 128^3 (2 million unknowns) at
    /// most twice those at 32^3, to the solver's usual 1e-6 (MIC(0) roughly doubles with each
    /// halving of the cell).
    #[test]
    fn multigrid_iterations_stay_bounded_under_refinement() {
        let iterations = |a: &Stencil7| {
            let mut b = field(a, 7);
            a.project_nullspace(&mut b);
            let mut x = vec![0.0; b.len()];
            let info = pcg(a, &Multigrid::new(a), &b, &mut x, PcgParams { tolerance: 1e-6, max_iterations: 200 });
            assert!(info.converged, "{info:?}");
            info.iterations
        };
        for make in [drop as fn(usize) -> Stencil7, pool_with_block, closed_box] {
            let (coarse, fine) = (iterations(&make(32)), iterations(&make(128)));
            eprintln!("multigrid iterations to 1e-6: {coarse} at 32^3, {fine} at 128^3");
            assert!(fine <= 2 * coarse, "{coarse} iterations at 32^3, {fine} at 128^3");
        }
    }
}
