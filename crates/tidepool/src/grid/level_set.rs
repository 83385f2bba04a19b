//! Signed-distance level sets on cell centres: reinitialisation and enclosed volume.
//!
//! Convention: `phi < 0` inside (liquid, solid), `phi > 0` outside, `|phi|` ~ distance.

use super::array::NEIGHBOURS;
use super::fraction::cube_fraction_inside;
use super::{Array3, Grid};
use crate::math::Real;
use tidepool_linalg::reduce::sum_by;

/// Rebuilds `phi` as a signed distance function without moving its zero level set, capping
/// `|phi|` at `max_distance`.
///
/// Cells with a neighbour across the interface get `|phi| / |grad phi|`, the gradient taken
/// across the zero crossing on axes that have one and by central differences on the others (exact
/// for a plane, whatever its orientation); the rest solve the eikonal equation `|grad phi| = 1` by
/// fast sweeping (Zhao 2005) with those cells held fixed.
pub fn reinitialize(phi: &mut Array3<Real>, dx: Real, max_distance: Real) {
    let dims = phi.dims();
    let sign = phi.par_map(|_, _, _, v| v < 0.0);
    // Unsigned distance; `fixed` marks the interface cells.
    let mut dist = phi.par_map(|i, j, k, v| {
        let mut slope_sq = 0.0;
        let mut interface = false;
        for a in 0..3 {
            let neighbour = |dir: isize| {
                let mut off = [0isize; 3];
                off[a] = dir;
                phi.get_offset(i, j, k, off)
            };
            let (lo, hi) = (neighbour(-1), neighbour(1));
            let crossing_slope = [lo, hi]
                .iter()
                .flatten()
                .filter(|&&n| (n < 0.0) != (v < 0.0))
                .map(|&n| (v - n).abs() / dx)
                .fold(None, |m: Option<Real>, s| Some(m.map_or(s, |m| m.max(s))));
            let slope = match (crossing_slope, lo, hi) {
                (Some(s), _, _) => {
                    interface = true;
                    s
                }
                (None, Some(l), Some(h)) => (h - l).abs() / (2.0 * dx),
                (None, Some(n), None) | (None, None, Some(n)) => (v - n).abs() / dx,
                (None, None, None) => 0.0,
            };
            slope_sq += slope * slope;
        }
        if !interface {
            return (max_distance, false);
        }
        ((v.abs() / slope_sq.sqrt()).min(dx).min(max_distance), true)
    });
    fast_sweep(&mut dist, dx, max_distance);
    phi.par_fill_with(|i, j, k| {
        let d = dist.get(i, j, k).0;
        if sign.get(i, j, k) {
            -d
        } else {
            d
        }
    });
    debug_assert_eq!(phi.dims(), dims);
}

/// Gauss-Seidel sweeps in the eight diagonal orderings, solving the upwind (Godunov)
/// discretisation of `|grad d| = 1` at every non-fixed cell.
fn fast_sweep(dist: &mut Array3<(Real, bool)>, dx: Real, max_distance: Real) {
    let [nx, ny, nz] = dist.dims();
    let rounds = 2;
    for _ in 0..rounds {
        for sweep in 0..8 {
            let order = |n: usize, flip: bool| -> Box<dyn Iterator<Item = usize>> {
                if flip {
                    Box::new((0..n).rev())
                } else {
                    Box::new(0..n)
                }
            };
            for k in order(nz, sweep & 4 != 0) {
                for j in order(ny, sweep & 2 != 0) {
                    for i in order(nx, sweep & 1 != 0) {
                        let (d, fixed) = dist.get(i, j, k);
                        if fixed {
                            continue;
                        }
                        let mut m = [0.0; 3];
                        for (a, pair) in NEIGHBOURS.chunks(2).enumerate() {
                            m[a] = pair
                                .iter()
                                .filter_map(|&off| dist.get_offset(i, j, k, off))
                                .map(|(v, _)| v)
                                .fold(Real::INFINITY, Real::min);
                        }
                        let updated = eikonal_update(m, dx).min(max_distance);
                        if updated < d {
                            dist.set(i, j, k, (updated, false));
                        }
                    }
                }
            }
        }
    }
}

/// Solution of the Godunov upwind update for `|grad d| = 1` from the smallest neighbour value
/// along each axis.
fn eikonal_update(mut m: [Real; 3], h: Real) -> Real {
    m.sort_by(|a, b| a.total_cmp(b));
    let [a, b, c] = m;
    let d = a + h;
    if d <= b {
        return d;
    }
    let d = 0.5 * (a + b + (2.0 * h * h - (a - b) * (a - b)).max(0.0).sqrt());
    if d <= c {
        return d;
    }
    let s = a + b + c;
    (s + (s * s - 3.0 * (a * a + b * b + c * c - h * h)).max(0.0).sqrt()) / 3.0
}

/// Volume where `phi < 0`, optionally only counting the part outside a solid given by its
/// signed distance `solid` (negative inside, sampled at the same cell centres).
///
/// The domain is tiled by the boxes between neighbouring cell centres (half boxes at the
/// domain walls, where values are extended as constants, as in trilinear sampling); each box's
/// fraction is integrated exactly for the piecewise-linear interpolant on six tetrahedra. With a
/// solid, a box counts `liquid fraction x (1 - solid fraction)`.
pub fn volume_inside(grid: &Grid, phi: &Array3<Real>, solid: Option<&Array3<Real>>) -> Real {
    let [nx, ny, nz] = grid.dims;
    let dual = [nx + 1, ny + 1, nz + 1];
    let half = |i: usize, n: usize| if i == 0 || i == n { 0.5 } else { 1.0 };
    let corners = |a: &Array3<Real>, i: usize, j: usize, k: usize| -> [Real; 8] {
        std::array::from_fn(|c| {
            let pick = |idx: usize, bit: usize, n: usize| (idx + bit).saturating_sub(1).min(n - 1);
            a.get(pick(i, c & 1, nx), pick(j, (c >> 1) & 1, ny), pick(k, (c >> 2) & 1, nz))
        })
    };
    let cell_volume = grid.dx.powi(3);
    sum_by(dual[0] * dual[1] * dual[2], |c| {
        let (i, j, k) = (c % dual[0], (c / dual[0]) % dual[1], c / (dual[0] * dual[1]));
        let liquid = cube_fraction_inside(corners(phi, i, j, k));
        if liquid == 0.0 {
            return 0.0;
        }
        let open = solid.map_or(1.0, |s| 1.0 - cube_fraction_inside(corners(s, i, j, k)));
        liquid * open * cell_volume * half(i, nx) * half(j, ny) * half(k, nz)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Location;
    use crate::math::Vec3;
    use std::f64::consts::PI;

    #[test]
    fn reinitialization_restores_distance_and_keeps_the_interface() {
        let n = 40;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let c = Vec3::new(0.5, 0.45, 0.52);
        let r: Real = 0.3;
        let exact = grid.sample_fn(Location::Cell, |x| (x - c).norm() - r);
        // A distorted level set with the same zero set: (d)(1 + d^2 * 20) * 3.
        let mut phi = exact.par_map(|_, _, _, d| 3.0 * d * (1.0 + 20.0 * d * d));
        reinitialize(&mut phi, grid.dx, 5.0 * grid.dx);
        let mut worst: Real = 0.0;
        let mut by_band = [0.0f64; 5];
        for (p, e) in phi.as_slice().iter().zip(exact.as_slice()) {
            if e.abs() < 4.0 * grid.dx {
                worst = worst.max((p - e).abs());
                let b = (e.abs() / grid.dx) as usize;
                by_band[b] = by_band[b].max((p - e).abs() / grid.dx);
            }
        }
        assert!(by_band[0] < 0.1, "interface cells: errors by band (cells) {by_band:?}");
        assert!(worst < 0.25 * grid.dx, "errors by band (cells) {by_band:?}");
        let v = volume_inside(&grid, &phi, None);
        let v_exact = 4.0 / 3.0 * PI * r.powi(3);
        assert!((v - v_exact).abs() / v_exact < 0.01, "volume {v} vs {v_exact}");
    }

    #[test]
    fn volume_converges_at_second_order_and_respects_solids() {
        let c = Vec3::new(0.51, 0.47, 0.5);
        let r: Real = 0.31;
        let v_exact = 4.0 / 3.0 * PI * r.powi(3);
        let mut errors = vec![];
        for n in [16, 32, 64] {
            let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
            let phi = grid.sample_fn(Location::Cell, |x| (x - c).norm() - r);
            errors.push((volume_inside(&grid, &phi, None) - v_exact).abs() / v_exact);
        }
        assert!(errors[2] < 2e-3, "{errors:?}");
        assert!(errors[1] / errors[2] > 2.5, "order: {errors:?}");
        // A pool of depth 0.3 filling the whole box up to the walls, with a solid floor slab of
        // height 0.1 taking away a tenth of the box.
        let n = 20;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let pool = grid.sample_fn(Location::Cell, |x| x.y - 0.3);
        assert!((volume_inside(&grid, &pool, None) - 0.3).abs() < 1e-12);
        let slab = grid.sample_fn(Location::Cell, |x| x.y - 0.1);
        assert!((volume_inside(&grid, &pool, Some(&slab)) - 0.2).abs() < 1e-12);
    }
}
