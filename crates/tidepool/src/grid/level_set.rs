//! Signed-distance level sets on cell centres: reinitialisation and enclosed volume.
//!
//! Convention: `phi < 0` inside (liquid, solid), `phi > 0` outside, `|phi|` ~ distance.

use super::fraction::cube_fraction_inside;
use super::{Array3, Grid, Location};
use crate::math::{Real, Vec3};
use rayon::prelude::*;
use tidepool_linalg::box_neighbours;
use tidepool_linalg::reduce::sum_by;

/// Rebuilds `phi` as a signed distance function, capping `|phi|` at `max_distance`, while
/// keeping its zero level set (that of the trilinear interpolant every other part of the code
/// uses) in place.
///
/// 1. Cells with a neighbour of opposite sign among their 26 neighbours ("interface cells", the
///    cells whose values shape the interpolated surface) find their closest point on the zero
///    set by Newton projection `x <- x - phi(x) grad phi(x) / |grad phi(x)|^2` (after Chopp 2001)
///    and take its distance.
/// 2. Trilinear interpolation of exact distances is biased on curved surfaces (it shrinks a
///    sphere by about `dx^2 / 8R`, which repeated every substep adds up), so the interface cells'
///    values are then corrected until the new interpolant vanishes again at the closest points.
/// 3. The other cells take the distance to the nearest of their neighbours' closest points,
///    spread outwards from the interface cells pass by pass (closest-point propagation, as in
///    fast marching or sweeping but carrying closest points rather than solving a first-order
///    eikonal update), each refined by sliding it on the surface.
/// 4. Cells within `KEEP_BAND` cells of the surface where `phi` is still a distance function
///    (see [`is_distance_like`]) keep their value. Rebuilding an accurate distance function
///    gains nothing there and costs accuracy: the closest points lie on the trilinear surface,
///    which sits inside a convex surface by about `dx^2 / 8R`, so rebuilt values beyond the
///    interface cells are biased by that much, and advection, which blends them into the
///    interface cells, turns the bias into a steady shrinking.
pub fn reinitialize(grid: &Grid, phi: &mut Array3<Real>, max_distance: Real) {
    let input = &*phi;
    let mut state: Array3<Closest> = input.par_map(|i, j, k, v| {
        let near = (0..27).any(|n| {
            let off = [(n % 3) as isize - 1, ((n / 3) % 3) as isize - 1, (n / 9) as isize - 1];
            input.get_offset(i, j, k, off).is_some_and(|w| (w < 0.0) != (v < 0.0))
        });
        if !near {
            return Closest::far(max_distance);
        }
        let start = grid.position(Location::Cell, i, j, k);
        let point = project_to_zero(grid, input, start).map(|p| slide_to_closest(grid, input, start, p, 3));
        let distance = point.map_or(v.abs(), |p| (p - start).norm());
        Closest::new(distance.min(max_distance), point, true)
    });
    remove_interpolation_bias(grid, input, &mut state);
    spread_closest_points(grid, &mut state, max_distance);
    refine_closest_points(grid, input, &mut state);
    *phi = phi.par_map(|i, j, k, v| {
        if v.abs() < KEEP_BAND * grid.dx && is_distance_like(grid, input, [i, j, k]) {
            return v;
        }
        let d = state.get(i, j, k).distance;
        if v < 0.0 {
            -d
        } else {
            d
        }
    });
}

/// Half-width, in cells, of the band in which distance-like values are kept.
const KEEP_BAND: Real = 3.0;
/// How far the gradient's length may be from one for values to count as distance-like.
const GRADIENT_TOLERANCE: Real = 0.2;

/// Whether `phi` is a distance function around `cell`: its central-difference gradient has
/// length within [`GRADIENT_TOLERANCE`] of one. Cells on the domain's edge never are.
fn is_distance_like(grid: &Grid, phi: &Array3<Real>, [i, j, k]: [usize; 3]) -> bool {
    let mut length2 = 0.0;
    for axis in 0..3 {
        let mut off = [0isize; 3];
        off[axis] = 1;
        let Some(plus) = phi.get_offset(i, j, k, off) else { return false };
        off[axis] = -1;
        let Some(minus) = phi.get_offset(i, j, k, off) else { return false };
        length2 += ((plus - minus) / (2.0 * grid.dx)).powi(2);
    }
    (length2.sqrt() - 1.0).abs() < GRADIENT_TOLERANCE
}

/// Distance state of one cell during reinitialisation (24 bytes: the closest point is kept in
/// single precision, ample for positions on the surface).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Closest {
    distance: Real,
    point: [f32; 3],
    has_point: bool,
    fixed: bool,
}

impl Closest {
    fn far(distance: Real) -> Self {
        Closest { distance, ..Closest::default() }
    }

    fn new(distance: Real, point: Option<Vec3>, fixed: bool) -> Self {
        let p = point.unwrap_or_default();
        Closest { distance, point: [p.x as f32, p.y as f32, p.z as f32], has_point: point.is_some(), fixed }
    }

    fn point(&self) -> Option<Vec3> {
        self.has_point.then(|| Vec3::new(self.point[0] as Real, self.point[1] as Real, self.point[2] as Real))
    }
}

/// Newton projection of `start` onto the zero set of the trilinear interpolant of `phi`;
/// `None` if it does not converge within a few cells.
fn project_to_zero(grid: &Grid, phi: &Array3<Real>, start: Vec3) -> Option<Vec3> {
    let dx = grid.dx;
    let mut x = start;
    for _ in 0..12 {
        let v = grid.interpolate(phi, Location::Cell, &x);
        if v.abs() < 1e-6 * dx {
            return Some(x);
        }
        let g = grid.gradient(phi, Location::Cell, &x);
        let g2 = g.norm_squared();
        if g2 < 1e-20 {
            return None;
        }
        let mut step = -v * g / g2;
        let len = step.norm();
        if len > 0.5 * dx {
            step *= 0.5 * dx / len;
        }
        x += step;
        if (x - start).norm() > 5.0 * dx {
            return None;
        }
    }
    (grid.interpolate(phi, Location::Cell, &x).abs() < 1e-3 * dx).then_some(x)
}

/// Improves a point `p` on the zero set towards the closest point to `x`: `p` moves to the
/// projection on the zero set of the foot of the perpendicular from `x` on the tangent plane at
/// `p`, as long as that brings it closer.
fn slide_to_closest(grid: &Grid, phi: &Array3<Real>, x: Vec3, mut p: Vec3, iterations: usize) -> Vec3 {
    for _ in 0..iterations {
        let Some(n) = grid.gradient(phi, Location::Cell, &p).try_normalize(1e-12) else { break };
        let foot = x - (x - p).dot(&n) * n;
        match project_to_zero(grid, phi, foot) {
            Some(q) if (x - q).norm() < (x - p).norm() => p = q,
            _ => break,
        }
    }
    p
}

/// Corrects the interface cells' distances so that the trilinear interpolant of the new signed
/// values vanishes at their closest points (which lie on the old zero set): a few Jacobi sweeps
/// of `d_c -= s_c psi(p_c)` (the interpolation weights at `p_c` sum to one, so neighbouring
/// cells with similar residuals cancel them together), never changing a sign.
fn remove_interpolation_bias(grid: &Grid, input: &Array3<Real>, state: &mut Array3<Closest>) {
    let signed = |state: &Array3<Closest>, c: usize| {
        let d = state.as_slice()[c].distance;
        if input.as_slice()[c] < 0.0 {
            -d
        } else {
            d
        }
    };
    let mut values = Array3::filled(input.dims(), 0.0);
    for _ in 0..4 {
        values.par_fill_with(|i, j, k| signed(state, input.index(i, j, k)));
        state.par_update(|i, j, k, s| {
            let (Some(p), true) = (s.point(), s.fixed) else { return };
            let residual = grid.interpolate(&values, Location::Cell, &p);
            let sign = if input.get(i, j, k) < 0.0 { -1.0 } else { 1.0 };
            s.distance = (s.distance - sign * residual).max(1e-3 * grid.dx);
        });
    }
}

/// The swept closest points are the nearest of the interface cells' closest points, a sampling
/// of the surface about one per cell; each is refined by sliding it on the surface.
fn refine_closest_points(grid: &Grid, phi: &Array3<Real>, state: &mut Array3<Closest>) {
    state.par_update(|i, j, k, s| {
        let Some(p) = s.point().filter(|_| !s.fixed) else { return };
        let x = grid.position(Location::Cell, i, j, k);
        let q = slide_to_closest(grid, phi, x, p, 1);
        *s = Closest::new(s.distance.min((x - q).norm()), Some(q), false);
    });
}

/// Spreads the interface cells' closest points outwards: in each pass, every cell next to one
/// that changed in the pass before takes the nearest of its axis neighbours' closest points if it
/// is nearer than its own (Jacobi passes: each reads only the previous pass's points, so the
/// result does not depend on the order or the number of threads), until no cell changes. Distances
/// are capped at `max_distance`, so the passes stay in the band within it of the surface and the
/// cost follows the band, not the grid.
fn spread_closest_points(grid: &Grid, state: &mut Array3<Closest>, max_distance: Real) {
    let dims = state.dims();
    let mut changed: Vec<usize> = {
        let state = state.as_slice();
        (0..state.len()).into_par_iter().filter(|&c| state[c].fixed && state[c].has_point).collect()
    };
    while !changed.is_empty() {
        let updates: Vec<(usize, Closest)> = {
            let cells = state.as_slice();
            let mut front: Vec<usize> = changed.par_iter().flat_map_iter(|&c| box_neighbours(dims, c).into_iter().flatten().filter(|&d| !cells[d].fixed)).collect();
            front.par_sort_unstable();
            front.dedup();
            front
                .into_par_iter()
                .filter_map(|c| {
                    let here = cells[c];
                    let [i, j, k] = state.coords(c);
                    let x = grid.position(Location::Cell, i, j, k);
                    let mut best = here;
                    for p in box_neighbours(dims, c).into_iter().flatten().filter_map(|d| cells[d].point()) {
                        let d = (x - p).norm();
                        if d < best.distance {
                            best = Closest::new(d.min(max_distance), Some(p), false);
                        }
                    }
                    (best != here).then_some((c, best))
                })
                .collect()
        };
        let cells = state.as_mut_slice();
        for &(c, s) in &updates {
            cells[c] = s;
        }
        changed = updates.into_iter().map(|(c, _)| c).collect();
    }
}

/// How far outside a solid [`continue_level`] reads the liquid's level set (cells): far enough
/// that no value extended into the solid enters its trilinear interpolation.
const CONTINUE_FROM: Real = 2.0;

/// The liquid's level set `phi` at `x`, continued into and next to a solid (signed distance
/// `distance`, negative inside) from the liquid beside it at the same height (`up` the unit vector
/// against gravity): `phi(q)`, `q` the nearest point level with `x` [`CONTINUE_FROM`] cells
/// outside the solid, found by marching along the solid's normal made level, or along the
/// nearest of eight level directions where that normal is vertical. Exact for a level surface
/// whatever values `phi` holds inside the solid; where `phi` is capped far from its surface the
/// result still has the right sign. Not extrapolated along the level (`+ grad phi(q) . (x - q)`):
/// over a body's width that amplifies the ripples beside it, by several percent of a light
/// body's lift with FLIP's level set. Points farther out than that return `phi(x)`.
pub fn continue_level(grid: &Grid, phi: &Array3<Real>, distance: &dyn Fn(&Vec3) -> Real, up: &Vec3, x: &Vec3) -> Real {
    let out = CONTINUE_FROM * grid.dx;
    if distance(x) >= out {
        return grid.interpolate(phi, Location::Cell, x);
    }
    // Where `x` leaves the solid by `out` going along the level direction `u`.
    let exit = |u: &Vec3| {
        let mut p = *x;
        for _ in 0..64 {
            let d = distance(&p);
            if d >= out {
                return Some(p);
            }
            p += (out - d).max(0.25 * grid.dx) * u;
        }
        None
    };
    let level = |v: Vec3| (v - v.dot(up) * up).try_normalize(0.1);
    let normal = crate::geometry::unit_gradient(distance, x, 1e-3 * grid.dx).unwrap_or(*up);
    let q = level(normal).and_then(|u| exit(&u)).or_else(|| {
        let e1 = level(Vec3::x()).or_else(|| level(Vec3::y())).expect("a level direction");
        let e2 = up.cross(&e1);
        (0..8)
            .filter_map(|n| {
                let (s, c) = (std::f64::consts::FRAC_PI_4 * n as Real).sin_cos();
                exit(&(c * e1 + s * e2))
            })
            .min_by(|a, b| (a - x).norm().total_cmp(&(b - x).norm()))
    });
    let q = q.unwrap_or(*x);
    grid.interpolate(phi, Location::Cell, &q)
}

/// How far from the liquid's surface (cells) [`continue_into_solid`] replaces values: beyond
/// it only their sign matters.
const CONTINUED_BAND: Real = 3.0;

/// How far outside a solid (cells) [`continue_into_solid`] replaces values.
pub const CONTINUED_OUTSIDE: Real = 1.0;

/// Sets `phi` at those of `cells` whose centre lies inside a solid (signed distance
/// `distance`, negative inside) or less than [`CONTINUED_OUTSIDE`] outside it, within
/// [`CONTINUED_BAND`] of the surface, to the liquid's surface continued level from beside the
/// solid ([`continue_level`]). Values extended into a solid by averaging put the surface up to
/// half a cell off where it meets the solid at a waterline, and the coupled solve takes the
/// liquid's share of the waterline's dual cells from them. Just outside a solid the values do
/// not tell the level either: a full cell under a floating body's bottom only says it is full,
/// and FLIP's cells, whose fill counts the room a cell's kernel leaves beside a solid, read the
/// water higher where the solid takes mostly air from that room (a box of a twentieth of the
/// water's density floated 10% deep).
///
/// The sign a cell had is kept where the continuation would change the liquid's shape: inside a
/// solid, a cell the extension made air stays air (a shell's wall between the water outside and
/// a dry hollow must not become liquid beside the hollow); outside, a cell keeps its side of the
/// surface (water resting on a body's top stays water).
pub fn continue_into_solid(grid: &Grid, phi: &mut Array3<Real>, cells: Vec<[usize; 3]>, distance: &(dyn Fn(&Vec3) -> Real + Sync), up: &Vec3) {
    let band = CONTINUED_BAND * grid.dx;
    let source = &*phi;
    let updates: Vec<(usize, Real)> = cells
        .into_par_iter()
        .filter_map(|[i, j, k]| {
            let x = grid.position(Location::Cell, i, j, k);
            let extended = source.get(i, j, k);
            let d = distance(&x);
            if extended.abs() >= band || d >= CONTINUED_OUTSIDE * grid.dx {
                return None;
            }
            let continued = continue_level(grid, source, distance, up, &x);
            let keep = if d < 0.0 { continued >= 0.0 || extended < 0.0 } else { (continued < 0.0) == (extended < 0.0) };
            keep.then_some((source.index(i, j, k), continued))
        })
        .collect();
    let values = phi.as_mut_slice();
    for (c, value) in updates {
        values[c] = value;
    }
}

/// Mean curvature (1/m) of the level sets of `phi` at cell centres, the sum of the principal
/// curvatures `kappa = div(grad phi / |grad phi|)`: positive where the surface bulges out of the
/// region `phi < 0` (`2/R` on a ball of radius `R`, `1/R` on a cylinder). Central differences
/// of second order, with `phi` held constant across the grid's edges (as the level set meets
/// walls at right angles); bounded by `1/dx`, the sharpest curvature the grid can represent.
pub fn curvature(grid: &Grid, phi: &Array3<Real>) -> Array3<Real> {
    let [nx, ny, nz] = grid.dims;
    let h = grid.dx;
    let limit = 1.0 / h;
    phi.par_map(|i, j, k, _| {
        let at = |di: isize, dj: isize, dk: isize| {
            let clamp = |c: usize, d: isize, n: usize| (c as isize + d).clamp(0, n as isize - 1) as usize;
            phi.get(clamp(i, di, nx), clamp(j, dj, ny), clamp(k, dk, nz))
        };
        let offset = |axis: usize, d: isize| std::array::from_fn::<isize, 3, _>(|a| if a == axis { d } else { 0 });
        let value = |o: [isize; 3]| at(o[0], o[1], o[2]);
        let centre = value([0; 3]);
        let first: [Real; 3] = std::array::from_fn(|a| (value(offset(a, 1)) - value(offset(a, -1))) / (2.0 * h));
        let second: [Real; 3] = std::array::from_fn(|a| (value(offset(a, 1)) - 2.0 * centre + value(offset(a, -1))) / (h * h));
        let mixed = |a: usize, b: usize| {
            let corner = |sa: isize, sb: isize| {
                let (oa, ob) = (offset(a, sa), offset(b, sb));
                value([oa[0] + ob[0], oa[1] + ob[1], oa[2] + ob[2]])
            };
            (corner(1, 1) - corner(1, -1) - corner(-1, 1) + corner(-1, -1)) / (4.0 * h * h)
        };
        let [px, py, pz] = first;
        let [pxx, pyy, pzz] = second;
        let norm2 = px * px + py * py + pz * pz;
        if norm2 < 1e-12 {
            return 0.0;
        }
        let numerator = px * px * (pyy + pzz) + py * py * (pxx + pzz) + pz * pz * (pxx + pyy) - 2.0 * (px * py * mixed(0, 1) + px * pz * mixed(0, 2) + py * pz * mixed(1, 2));
        (numerator / norm2.powf(1.5)).clamp(-limit, limit)
    })
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
        reinitialize(&grid, &mut phi, 5.0 * grid.dx);
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

    /// The curvature of a ball's and a cylinder's distance (radius 8 cells) near their surface
    /// is `2/r` and `1/r` at distance `r` from the centre or axis, within 1%: the ball's after
    /// reinitialisation, as the solver sees it; the cylinder's exact distance, which runs
    /// through the grid's ends (in the end layers of cells the reinitialised distance is off by
    /// up to 12% of the curvature); and a ball of half a cell has the grid's largest curvature,
    /// `1/dx`.
    #[test]
    fn curvature_of_a_ball_and_a_cylinder() {
        let n = 32;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let c = Vec3::new(0.5, 0.47, 0.52);
        let r = 8.0 * grid.dx;
        for (dimensions, axis_mask) in [(2.0, Vec3::new(1.0, 1.0, 1.0)), (1.0, Vec3::new(1.0, 1.0, 0.0))] {
            let mut phi = grid.sample_fn(Location::Cell, |x| (x - c).component_mul(&axis_mask).norm() - r);
            if dimensions == 2.0 {
                reinitialize(&grid, &mut phi, 5.0 * grid.dx);
            }
            let kappa = curvature(&grid, &phi);
            let mut worst: Real = 0.0;
            for (index, p) in phi.as_slice().iter().enumerate() {
                if p.abs() < grid.dx {
                    let [i, j, k] = phi.coords(index);
                    let distance = (grid.position(Location::Cell, i, j, k) - c).component_mul(&axis_mask).norm();
                    worst = worst.max((kappa.as_slice()[index] * distance / dimensions - 1.0).abs());
                }
            }
            assert!(worst < 0.01, "{dimensions} principal curvatures: worst relative error {worst}");
        }
        let tiny = grid.sample_fn(Location::Cell, |x| (x - c).norm() - 0.5 * grid.dx);
        let kappa = curvature(&grid, &tiny);
        assert!(kappa.as_slice().iter().any(|&k| k == 1.0 / grid.dx) && kappa.as_slice().iter().all(|&k| k <= 1.0 / grid.dx));
    }

    #[test]
    fn spread_closest_points_reach_the_band_and_are_locally_nearest_on_any_thread_count() {
        // Interface cells of a sphere hold their exact closest points; the spread fills the band.
        let n = 36;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let (c, r) = (Vec3::new(0.49, 0.52, 0.5), 0.27);
        let max_distance = 5.0 * grid.dx;
        let exact = grid.sample_fn(Location::Cell, |x| (x - c).norm() - r);
        let initial = exact.par_map(|i, j, k, d| {
            let x = grid.position(Location::Cell, i, j, k);
            if d.abs() < grid.dx {
                Closest::new(d.abs(), Some(c + (x - c).normalize() * r), true)
            } else {
                Closest::far(max_distance)
            }
        });
        let spread = |threads: usize| {
            let mut state = initial.clone();
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| spread_closest_points(&grid, &mut state, max_distance));
            state
        };
        let state = spread(1);
        assert!(state == spread(3), "the result depends on the thread count");
        let dims = state.dims();
        // Closest points are kept in single precision.
        let tol = 1e-5 * grid.dx;
        let (mut excess, mut band) = (0.0, 0);
        for (cell, s) in state.as_slice().iter().enumerate() {
            let [i, j, k] = state.coords(cell);
            let x = grid.position(Location::Cell, i, j, k);
            let e = exact.as_slice()[cell].abs();
            if e < max_distance - grid.dx {
                // Inside the band every cell found a point on the sphere, at most about a cell's
                // sampling gap farther than the true closest point.
                let p = s.point().expect("a closest point in the band");
                assert!((s.distance - (x - p).norm()).abs() < tol);
                assert!(s.distance >= e - tol && s.distance - e < 0.75 * grid.dx, "cell {:?}: {} vs {}", [i, j, k], s.distance, e);
                excess += s.distance - e;
                band += 1;
            }
            if !s.fixed {
                // No neighbour's point is nearer than the cell's own.
                for p in box_neighbours(dims, cell).into_iter().flatten().filter_map(|d| state.as_slice()[d].point()) {
                    assert!((x - p).norm() >= s.distance - tol);
                }
            }
        }
        let mean = excess / band as Real / grid.dx;
        assert!(mean < 0.1, "mean excess {mean} cells over {band} cells");
    }

    #[test]
    fn distance_functions_near_the_surface_are_left_alone() {
        // Near the surface an exact distance function keeps every value (and so its volume);
        // farther out the values are rebuilt and capped.
        let n = 32;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let c = Vec3::new(0.5, 0.48, 0.51);
        let exact = grid.sample_fn(Location::Cell, |x| (x - c).norm() - 0.27);
        let mut phi = exact.clone();
        reinitialize(&grid, &mut phi, 4.0 * grid.dx);
        for (p, e) in phi.as_slice().iter().zip(exact.as_slice()) {
            if e.abs() < 3.0 * grid.dx {
                assert_eq!(p, e);
            } else {
                assert!(p.abs() <= 4.0 * grid.dx && (p - e.clamp(-4.0 * grid.dx, 4.0 * grid.dx)).abs() < 0.25 * grid.dx, "{} {}", p / grid.dx, e / grid.dx);
            }
        }
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
