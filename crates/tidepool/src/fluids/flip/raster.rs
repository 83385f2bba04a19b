//! Particles to grid: particles binned by cell, the trilinear rasterization of their mass and
//! momentum (Gerszewski eq. 3.10–3.12) gathered per grid sample, and the blurred obstacle
//! fractions (eq. 3.13) computed with the same kernel.

use crate::grid::{Array3, Grid, Location};
use crate::math::{Real, Vec3};
use rayon::prelude::*;

/// Particles sorted by the cell they are in: the particles of cell `c` are
/// `start[c]..start[c + 1]` (after [`Bins::sort`] has reordered the particle arrays).
#[derive(Clone, Debug, Default)]
pub struct Bins {
    pub start: Vec<usize>,
}

impl Bins {
    /// Sorts `positions` and the arrays in `with` (per-particle data in the same order) by cell
    /// (a counting sort, stable) and records where each cell's particles start.
    pub fn sort(grid: &Grid, positions: &mut Vec<Vec3>, with: &mut [&mut Vec<Vec3>]) -> Bins {
        let cells = grid.cell_count();
        let [nx, ny, _] = grid.dims;
        let cell: Vec<usize> = positions
            .par_iter()
            .map(|x| {
                let [i, j, k] = grid.cell_of(x);
                i + nx * (j + ny * k)
            })
            .collect();
        let mut start = vec![0usize; cells + 1];
        for &c in &cell {
            start[c + 1] += 1;
        }
        for c in 0..cells {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut order = vec![0usize; positions.len()];
        for (p, &c) in cell.iter().enumerate() {
            order[next[c]] = p;
            next[c] += 1;
        }
        let permute = |v: &Vec<Vec3>| order.par_iter().map(|&p| v[p]).collect::<Vec<Vec3>>();
        *positions = permute(positions);
        for v in with.iter_mut() {
            **v = permute(v);
        }
        Bins { start }
    }

    /// Particles in cell `c`.
    pub fn cell(&self, c: usize) -> std::ops::Range<usize> {
        self.start[c]..self.start[c + 1]
    }
}

/// The lower corner of the box of samples at `loc` around `x` and the position in it (0 to 1
/// per axis): the eight samples the particle's kernel reaches, corner `c` at offset
/// `(c & 1, (c >> 1) & 1, c >> 2)` (some may lie outside the grid).
#[inline(always)]
pub fn kernel_box(grid: &Grid, loc: Location, x: &Vec3) -> ([isize; 3], [Real; 3]) {
    let o = loc.offset();
    let mut base = [0isize; 3];
    let mut upper = [0.0; 3];
    for a in 0..3 {
        // As `Grid::cell_of` computes it, so the z sample slabs are those of the particle's bin.
        let g = (x[a] - grid.origin[a]) / grid.dx - o[a];
        let b = g.floor();
        base[a] = b as isize;
        upper[a] = g - b;
    }
    (base, upper)
}

/// For every sample at `loc`: the sum of the particles' kernel weights, and the sum of the
/// weights times `value(p)`; `blocked[p]`, where given, has bit `c` set for the corners of
/// [`kernel_box`] particle `p` does not reach (across a sheet, [`super::sheets`]).
///
/// Each particle adds to the (up to) eight samples around it, those its kernel reaches. The
/// particles of cell slab `k` (along z) reach sample slabs `k - 1` to `k + 1` only, so the slabs
/// `k = r, r + 3, r + 6, ...` of one colour `r` write to disjoint samples and run in parallel;
/// the three colours run in turn. Every sample thus sums its particles in one fixed order (by
/// colour, then by particle), whatever the number of threads.
pub fn rasterize(grid: &Grid, bins: &Bins, positions: &[Vec3], loc: Location, value: impl Fn(usize) -> Real + Sync, blocked: Option<&[u8]>) -> (Array3<Real>, Array3<Real>) {
    let dims = grid.dims_at(loc);
    let [nx, ny, nz] = grid.dims;
    let slab = dims[0] * dims[1];
    let mut sums = vec![[0.0; 2]; dims.iter().product()];
    for colour in 0..3 {
        // The block of sample slabs each cell slab of this colour writes to.
        let mut blocks = Vec::new();
        let (mut rest, mut first_slab) = (sums.as_mut_slice(), 0);
        for k in (colour..nz).step_by(3) {
            let (lo, hi) = (k.saturating_sub(1), (k + 2).min(dims[2]));
            let (_, tail) = rest.split_at_mut((lo - first_slab) * slab);
            let (block, tail) = tail.split_at_mut((hi - lo) * slab);
            blocks.push((k, lo, block));
            (rest, first_slab) = (tail, hi);
        }
        blocks.into_par_iter().for_each(|(k, lo, block)| {
            for c in (nx * ny * k..nx * ny * (k + 1)).flat_map(|c| bins.cell(c)) {
                let (base, upper) = kernel_box(grid, loc, &positions[c]);
                let v = value(c);
                let skip = blocked.map_or(0, |b| b[c]);
                for corner in 0..8 {
                    let offset = [corner & 1, (corner >> 1) & 1, corner >> 2];
                    let idx: [isize; 3] = std::array::from_fn(|a| base[a] + offset[a] as isize);
                    if skip & (1 << corner) != 0 || (0..3).any(|a| idx[a] < 0 || idx[a] as usize >= dims[a]) {
                        continue;
                    }
                    let w: Real = (0..3).map(|a| if offset[a] == 1 { upper[a] } else { 1.0 - upper[a] }).product();
                    if w > 0.0 {
                        let s = idx[0] as usize + dims[0] * idx[1] as usize + slab * (idx[2] as usize - lo);
                        block[s][0] += w;
                        block[s][1] += w * v;
                    }
                }
            }
        });
    }
    (Array3::from_vec(dims, sums.iter().map(|s| s[0]).collect()), Array3::from_vec(dims, sums.iter().map(|s| s[1]).collect()))
}

/// Sub-samples per cell edge of the obstacle indicator.
pub const SUBSAMPLES: usize = 4;

/// Where liquid may be, sampled `SUBSAMPLES^3` times per cell over the domain padded by one
/// cell on every side (the padding is the outside: closed walls are solid, open sides are not).
#[derive(Clone, Debug)]
pub struct Indicator {
    /// Samples along x, y, z.
    pub dims: [usize; 3],
    /// 1 where liquid may be, 0 in solids.
    pub open: Vec<u8>,
}

impl Indicator {
    /// Samples `open(x)` (inside the domain) and `outside_open[axis][side]` (in the padding).
    pub fn new(grid: &Grid, outside_open: [[bool; 2]; 3], open: impl Fn(&Vec3) -> bool + Sync) -> Self {
        let s = SUBSAMPLES;
        let dims = grid.dims.map(|n| s * (n + 2));
        let values = (0..dims.iter().product::<usize>())
            .into_par_iter()
            .map(|m| {
                let sub = [m % dims[0], (m / dims[0]) % dims[1], m / (dims[0] * dims[1])];
                for a in 0..3 {
                    if sub[a] < s {
                        return u8::from(outside_open[a][0]);
                    }
                    if sub[a] >= dims[a] - s {
                        return u8::from(outside_open[a][1]);
                    }
                }
                u8::from(open(&Indicator::position(grid, sub)))
            })
            .collect();
        Indicator { dims, open: values }
    }

    /// World position of sub-sample `sub`.
    pub fn position(grid: &Grid, sub: [usize; 3]) -> Vec3 {
        let h = grid.dx / SUBSAMPLES as Real;
        grid.origin + Vec3::new(sub[0] as Real + 0.5, sub[1] as Real + 0.5, sub[2] as Real + 0.5) * h - Vec3::repeat(grid.dx)
    }

    /// Closes the sub-samples inside the box `[lo, hi]` where the signed distance `distance(x)`
    /// of a solid is negative. The distance is asked once per cell first: farther than a cell
    /// from the surface, the cell's sub-samples are all on one side of it (a distance changes
    /// by at most the distance moved, and the cell's corners are 0.87 cells from its centre),
    /// so a sheet's few inside sub-samples cost a query per cell, not one per sub-sample.
    pub fn close(&mut self, grid: &Grid, lo: &Vec3, hi: &Vec3, distance: impl Fn(&Vec3) -> Real + Sync) {
        let s = SUBSAMPLES;
        let h = grid.dx / s as Real;
        let dims = self.dims;
        let range = |a: usize| {
            let from = ((lo[a] - grid.origin[a] + grid.dx) / h - 0.5).floor().max(0.0) as usize;
            let to = (((hi[a] - grid.origin[a] + grid.dx) / h - 0.5).ceil().max(0.0) as usize).min(dims[a] - 1);
            from..=to
        };
        let (rx, ry, rz) = (range(0), range(1), range(2));
        // The sub-samples of padded cell `c` along an axis are `s c .. s c + s`.
        let cells = |r: &std::ops::RangeInclusive<usize>| r.start() / s..=r.end() / s;
        self.open.par_chunks_mut(dims[0] * dims[1] * s).enumerate().filter(|(ck, _)| cells(&rz).contains(ck)).for_each(|(ck, layer)| {
            for cj in cells(&ry) {
                for ci in cells(&rx) {
                    let centre = grid.origin + (Vec3::new(ci as Real, cj as Real, ck as Real) + Vec3::repeat(0.5)) * grid.dx - Vec3::repeat(grid.dx);
                    let d = distance(&centre);
                    if d > grid.dx {
                        continue;
                    }
                    for k in (s * ck..s * ck + s).filter(|k| rz.contains(k)) {
                        for j in (s * cj..s * cj + s).filter(|j| ry.contains(j)) {
                            for i in (s * ci..s * ci + s).filter(|i| rx.contains(i)) {
                                let m = i + dims[0] * (j + dims[1] * (k - s * ck));
                                if layer[m] == 1 && (d < -grid.dx || distance(&Indicator::position(grid, [i, j, k])) < 0.0) {
                                    layer[m] = 0;
                                }
                            }
                        }
                    }
                }
            }
        });
    }

    /// The blurred fraction at every sample of `loc` (eq. 3.13 without the density factor):
    /// the kernel-weighted share of open sub-samples around it, `int T f / int T`. The kernel is
    /// separable, so the blur runs one axis at a time.
    pub fn blurred(&self, grid: &Grid, loc: Location) -> Array3<Real> {
        let s = SUBSAMPLES;
        let o = loc.offset();
        let out_dims = grid.dims_at(loc);
        // The first pass reads the indicator's bytes; later ones the previous pass.
        let mut values: Vec<Real> = Vec::new();
        let mut dims = self.dims;
        for a in 0..3 {
            let n_out = out_dims[a];
            // Output i sits at padded position i + 1 + o (cells); sub-sample m at (m + 1/2)/s.
            let taps: Vec<Vec<(usize, Real)>> = (0..n_out)
                .map(|i| {
                    let centre = i as Real + 1.0 + o[a];
                    let first = (s as Real * (centre - 1.0) - 0.5).ceil().max(0.0) as usize;
                    let last = ((s as Real * (centre + 1.0) - 0.5).floor() as usize).min(dims[a] - 1);
                    (first..=last).map(|m| (m, (1.0 - ((m as Real + 0.5) / s as Real - centre).abs()) / s as Real)).filter(|(_, w)| *w > 0.0).collect()
                })
                .collect();
            let mut next_dims = dims;
            next_dims[a] = n_out;
            let stride = [1, dims[0], dims[0] * dims[1]];
            let next: Vec<Real> = (0..next_dims.iter().product::<usize>())
                .into_par_iter()
                .map(|t| {
                    let mut idx = [t % next_dims[0], (t / next_dims[0]) % next_dims[1], t / (next_dims[0] * next_dims[1])];
                    let i = idx[a];
                    idx[a] = 0;
                    let base = idx[0] * stride[0] + idx[1] * stride[1] + idx[2] * stride[2];
                    if a == 0 {
                        taps[i].iter().map(|&(m, w)| w * Real::from(self.open[base + m])).sum()
                    } else {
                        taps[i].iter().map(|&(m, w)| w * values[base + m * stride[a]]).sum()
                    }
                })
                .collect();
            values = next;
            dims = next_dims;
        }
        Array3::from_vec(out_dims, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stratified particles filling a box rasterize to the same density in every interior
    /// cell (the kernel is a partition of unity), and their total weight is their number.
    #[test]
    fn rasterized_weights_are_a_partition_of_unity() {
        let grid = Grid { dims: [8, 8, 8], dx: 0.1, origin: Vec3::new(-0.3, 0.0, 0.2) };
        let mut positions = Vec::new();
        for k in 2..14 {
            for j in 2..14 {
                for i in 2..14 {
                    positions.push(grid.origin + Vec3::new(i as Real + 0.5, j as Real + 0.5, k as Real + 0.5) * 0.05);
                }
            }
        }
        let bins = Bins::sort(&grid, &mut positions, &mut []);
        let (weight, weighted) = rasterize(&grid, &bins, &positions, Location::Cell, |_| 2.0, None);
        let total: Real = weight.as_slice().iter().sum();
        assert!((total - positions.len() as Real).abs() < 1e-9, "total weight {total}");
        for k in 2..6 {
            for j in 2..6 {
                for i in 2..6 {
                    assert!((weight.get(i, j, k) - 8.0).abs() < 1e-12);
                    assert!((weighted.get(i, j, k) - 16.0).abs() < 1e-12);
                }
            }
        }
    }

    /// The rasterized sums are the kernel sums over all particles, `sum_p T(x_p - x_s)` with
    /// `T(d) = prod_a max(0, 1 - |d_a| / dx)`, at every sample of every location, for
    /// particles scattered through the grid up to its walls, and do not depend on the number
    /// of threads.
    #[test]
    fn rasterization_is_the_kernel_sum_over_all_particles() {
        let grid = Grid { dims: [5, 4, 7], dx: 0.2, origin: Vec3::new(0.1, -0.4, 0.0) };
        let mut s = 11u64;
        let mut unit = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as Real / (1u64 << 53) as Real
        };
        let mut positions: Vec<Vec3> = (0..600).map(|_| grid.origin + Vec3::new(unit() * 1.0, unit() * 0.8, unit() * 1.4)).collect();
        positions.push(grid.origin);
        positions.push(grid.max_corner());
        let bins = Bins::sort(&grid, &mut positions, &mut []);
        let value = |p: usize| positions[p].x - 2.0 * positions[p].z;
        for loc in [Location::Cell, Location::Face(0), Location::Face(1), Location::Face(2)] {
            let (weight, weighted) = rasterize(&grid, &bins, &positions, loc, value, None);
            let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let (weight_1, _) = one.install(|| rasterize(&grid, &bins, &positions, loc, value, None));
            assert_eq!(weight.as_slice(), weight_1.as_slice());
            let dims = grid.dims_at(loc);
            for k in 0..dims[2] {
                for j in 0..dims[1] {
                    for i in 0..dims[0] {
                        let x = grid.position(loc, i, j, k);
                        let kernel = |p: &Vec3| (0..3).map(|a| (1.0 - ((p[a] - x[a]) / grid.dx).abs()).max(0.0)).product::<Real>();
                        let w: Real = positions.iter().map(kernel).sum();
                        let wv: Real = positions.iter().enumerate().map(|(p, q)| kernel(q) * value(p)).sum();
                        assert!((weight.get(i, j, k) - w).abs() < 1e-12 && (weighted.get(i, j, k) - wv).abs() < 1e-12, "{loc:?} {i} {j} {k}");
                    }
                }
            }
        }
    }

    /// The blurred open fraction is 1 in open space, 7/8 in cells against a closed wall (the
    /// kernel's share outside), 1/2 on the wall's faces, and the analytic shares next to a
    /// half-space obstacle.
    #[test]
    fn blurred_fractions_match_the_kernel_integrals() {
        let grid = Grid { dims: [4, 6, 4], dx: 1.0, origin: Vec3::zeros() };
        let open_sides = [[true, true], [true, true], [false, false]];
        let mut indicator = Indicator::new(&grid, open_sides, |_| true);
        let cells = indicator.blurred(&grid, Location::Cell);
        assert!((cells.get(1, 2, 1) - 1.0).abs() < 1e-12);
        assert!((cells.get(1, 2, 0) - 0.875).abs() < 1e-12, "{}", cells.get(1, 2, 0));
        let faces = indicator.blurred(&grid, Location::Face(2));
        assert!((faces.get(1, 2, 0) - 0.5).abs() < 1e-12);
        // A solid below y = 3: the kernel of cell row 3 (centre 3.5, reach 2.5 to 4.5) has
        // its lowest half-cell, an eighth of its weight, in it; row 2's all but its top
        // half-cell; row 4's none.
        indicator.close(&grid, &Vec3::repeat(-1.0), &Vec3::new(5.0, 3.0, 5.0), |x| x.y - 3.0);
        let cells = indicator.blurred(&grid, Location::Cell);
        assert!((cells.get(1, 3, 1) - 0.875).abs() < 1e-12, "{}", cells.get(1, 3, 1));
        assert!((cells.get(1, 2, 1) - 0.125).abs() < 1e-12, "{}", cells.get(1, 2, 1));
        assert!((cells.get(1, 4, 1) - 1.0).abs() < 1e-12, "{}", cells.get(1, 4, 1));
    }
}
