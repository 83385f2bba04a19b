//! Semi-Lagrangian and MacCormack advection of grid quantities through a MAC velocity field, and
//! conservative (flux-form) advection of amounts per volume.

use super::{Array3, Grid, Location, MacVelocity};
use crate::math::{Real, Vec3};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How a quantity is carried along the flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdvectionScheme {
    /// First order: trace each sample back along the flow (second-order midpoint trace) and
    /// interpolate trilinearly there. Stable, smooth, diffusive.
    SemiLagrangian,
    /// Second order: a semi-Lagrangian step forward, one backward to estimate its error, half
    /// the error added back, and the result clamped to the values it interpolated from
    /// (falling back to semi-Lagrangian where clamping is needed) (Selle et al. 2008).
    #[default]
    #[serde(rename = "maccormack")]
    MacCormack,
}

/// Where the fluid at `x`, moving at `v` there, was `dt` seconds ago (midpoint rule). A
/// negative `dt` traces forward.
fn backtrace(grid: &Grid, velocity: &MacVelocity, x: &Vec3, v: &Vec3, dt: Real) -> Vec3 {
    let mid = x - 0.5 * dt * v;
    x - dt * velocity.at(grid, &mid)
}

/// Where the flow carries `x` in `dt` ([`backtrace`] forward), clamped to the domain.
pub fn carried(grid: &Grid, velocity: &MacVelocity, x: &Vec3, dt: Real) -> Vec3 {
    grid.clamp(&backtrace(grid, velocity, x, &velocity.at(grid, x), -dt))
}

/// Moves points (passive tracers) through `velocity` over `dt` ([`carried`]).
pub fn advect_points(grid: &Grid, velocity: &MacVelocity, points: &mut [Vec3], dt: Real) {
    points.par_iter_mut().for_each(|x| *x = carried(grid, velocity, x, dt));
}

/// A MacCormack forward step's result at one sample: the value, the range of the values it
/// blended (for the clamp), and the velocity at the sample (which the backward step starts
/// from too).
#[derive(Clone, Copy, Default)]
struct Forward {
    value: Real,
    lo: Real,
    hi: Real,
    velocity: Vec3,
}

/// Advects `field` (samples at `loc`) through `velocity` over `dt`.
pub fn advect(grid: &Grid, velocity: &MacVelocity, field: &Array3<Real>, loc: Location, dt: Real, scheme: AdvectionScheme) -> Array3<Real> {
    let dims = field.dims();
    match scheme {
        AdvectionScheme::SemiLagrangian => {
            let mut out = Array3::filled(dims, 0.0);
            out.par_fill_with(|i, j, k| {
                let x = grid.position(loc, i, j, k);
                grid.interpolate(field, loc, &backtrace(grid, velocity, &x, &velocity.at(grid, &x), dt))
            });
            out
        }
        AdvectionScheme::MacCormack => {
            let mut forward = Array3::filled(dims, Forward::default());
            forward.par_fill_with(|i, j, k| {
                let x = grid.position(loc, i, j, k);
                let v = velocity.at(grid, &x);
                let (value, lo, hi) = grid.interpolate_with_bounds(field, loc, &backtrace(grid, velocity, &x, &v, dt));
                Forward { value, lo, hi, velocity: v }
            });
            let values = forward.par_map(|_, _, _, f| f.value);
            let mut out = Array3::filled(dims, 0.0);
            out.par_fill_with(|i, j, k| {
                let f = forward.get(i, j, k);
                let x = grid.position(loc, i, j, k);
                let back = grid.interpolate(&values, loc, &backtrace(grid, velocity, &x, &f.velocity, -dt));
                let corrected = f.value + 0.5 * (field.get(i, j, k) - back);
                if corrected < f.lo || corrected > f.hi {
                    f.value
                } else {
                    corrected
                }
            });
            out
        }
    }
}

/// Advects every component of `velocity` through itself.
pub fn advect_velocity(grid: &Grid, velocity: &MacVelocity, dt: Real, scheme: AdvectionScheme) -> MacVelocity {
    MacVelocity { faces: [0, 1, 2].map(|a| advect(grid, velocity, &velocity.faces[a], Location::Face(a), dt, scheme)) }
}

/// Most of a cell's content that may leave it in one substep of [`advect_conservative`].
const OUTFLOW_SHARE: Real = 0.5;

/// The monotonized central slope (per cell) of a cell value `q` between its neighbours `below`
/// and `above`: zero at an extremum, else the smallest of the central difference and twice
/// either one-sided difference (van Leer 1977).
fn limited_slope(below: Real, q: Real, above: Real) -> Real {
    let (back, ahead) = (q - below, above - q);
    if back * ahead <= 0.0 {
        return 0.0;
    }
    let central = 0.5 * (back + ahead);
    central.signum() * central.abs().min(2.0 * back.abs()).min(2.0 * ahead.abs())
}

/// Carries `q`, an amount per volume at cell centres (smoke density, heat), through `velocity`
/// over `dt` in flux form: each face passes `u A q_f dt` from the cell upwind of it to the one
/// downwind, `A` its open share (`open`, per axis), so whatever leaves a cell enters its
/// neighbour and the total `sum q dx^3` changes only through the faces on the domain's sides (a
/// wall's face is closed; through an open side `q` leaves, and what comes in carries none).
/// `q_f` is the upwind cell's value continued to the face along its [`limited_slope`], less the
/// part that crosses during the step (second order where `q` is smooth, no new extrema). The
/// step is cut into as many equal substeps as keep the share of any cell that leaves it in one
/// under [`OUTFLOW_SHARE`], which keeps `q` from going negative.
pub fn advect_conservative(grid: &Grid, velocity: &MacVelocity, open: &[Array3<Real>; 3], q: &Array3<Real>, dt: Real) -> Array3<Real> {
    let courant: Real = velocity.faces.iter().map(|f| f.as_slice().par_iter().map(|u| u.abs()).reduce(|| 0.0, Real::max)).sum::<Real>() * dt / grid.dx;
    let substeps = (courant / OUTFLOW_SHARE).ceil().max(1.0);
    let h = dt / substeps;
    let dims = grid.dims;
    let mut q = q.clone();
    for _ in 0..substeps as usize {
        let fluxes: [Array3<Real>; 3] = [0, 1, 2].map(|a| {
            let mut flux = Array3::filled(velocity.faces[a].dims(), 0.0);
            flux.par_fill_with(|i, j, k| {
                let (u, share) = (velocity.faces[a].get(i, j, k), open[a].get(i, j, k));
                if u == 0.0 || share == 0.0 {
                    return 0.0;
                }
                // The cell upwind of the face, and its neighbours along `a` (itself past the
                // domain's side, where its slope is then zero).
                let face = [i, j, k];
                let upwind = if u > 0.0 { face[a].checked_sub(1) } else { (face[a] < dims[a]).then_some(face[a]) };
                let Some(at) = upwind else { return 0.0 };
                let cell = |n: usize| {
                    let mut c = face;
                    c[a] = n;
                    q.get(c[0], c[1], c[2])
                };
                let centre = cell(at);
                let slope = limited_slope(cell(at.saturating_sub(1)), centre, cell((at + 1).min(dims[a] - 1)));
                let towards = u.signum();
                u * share * (centre + 0.5 * towards * slope * (1.0 - u.abs() * h / grid.dx))
            });
            flux
        });
        let scale = h / grid.dx;
        q.par_update(|i, j, k, value| {
            let mut net = 0.0;
            for (a, flux) in fluxes.iter().enumerate() {
                let mut above = [i, j, k];
                above[a] += 1;
                net += flux.get(above[0], above[1], above[2]) - flux.get(i, j, k);
            }
            *value -= scale * net;
        });
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform_flow(grid: &Grid, v: Vec3) -> MacVelocity {
        let mut vel = MacVelocity::zeros(grid);
        for a in 0..3 {
            vel.faces[a].as_mut_slice().fill(v[a]);
        }
        vel
    }

    #[test]
    fn linear_field_is_translated_exactly() {
        let grid = Grid { dims: [12, 10, 8], dx: 0.1, origin: Vec3::zeros() };
        let vel = uniform_flow(&grid, Vec3::new(0.3, -0.2, 0.1));
        let f = grid.sample_fn(Location::Cell, |x| x.x + 2.0 * x.y - x.z);
        let dt = 0.1;
        for scheme in [AdvectionScheme::SemiLagrangian, AdvectionScheme::MacCormack] {
            let g = advect(&grid, &vel, &f, Location::Cell, dt, scheme);
            // Away from the boundary (clamped sampling) the result is f(x - v dt).
            for k in 2..6 {
                for j in 2..8 {
                    for i in 2..10 {
                        let x = grid.position(Location::Cell, i, j, k) - Vec3::new(0.3, -0.2, 0.1) * dt;
                        assert!((g.get(i, j, k) - (x.x + 2.0 * x.y - x.z)).abs() < 1e-12);
                    }
                }
            }
        }
    }

    /// L1 error of advecting a smooth bump half-way across a periodic-free 1D channel.
    fn bump_error(n: usize, scheme: AdvectionScheme) -> Real {
        let grid = Grid { dims: [n, 2, 2], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let vel = uniform_flow(&grid, Vec3::new(1.0, 0.0, 0.0));
        let bump = |x: Real| (-((x - 0.3) / 0.1).powi(2)).exp();
        let steps = n / 2;
        let dt = 0.8 * grid.dx;
        let mut f = grid.sample_fn(Location::Cell, |x| bump(x.x));
        for _ in 0..steps {
            f = advect(&grid, &vel, &f, Location::Cell, dt, scheme);
        }
        let shift = dt * steps as Real;
        (0..n).map(|i| (f.get(i, 0, 0) - bump(grid.position(Location::Cell, i, 0, 0).x - shift)).abs()).sum::<Real>() * grid.dx
    }

    #[test]
    fn semi_lagrangian_is_first_order_and_maccormack_second() {
        let order = |scheme| (bump_error(64, scheme) / bump_error(128, scheme)).log2();
        let sl = order(AdvectionScheme::SemiLagrangian);
        let mc = order(AdvectionScheme::MacCormack);
        assert!((0.7..1.4).contains(&sl), "semi-Lagrangian order {sl}");
        assert!(mc > 1.6, "MacCormack order {mc}");
        assert!(bump_error(64, AdvectionScheme::MacCormack) < 0.5 * bump_error(64, AdvectionScheme::SemiLagrangian));
    }

    /// Every face open (no obstacles, closed only where the velocity is zero).
    fn all_open(grid: &Grid) -> [Array3<Real>; 3] {
        [0, 1, 2].map(|a| Array3::filled(grid.dims_at(Location::Face(a)), 1.0))
    }

    /// L1 error of carrying a smooth bump (per volume) conservatively along x, as
    /// [`bump_error`] does.
    fn conservative_bump_error(n: usize) -> Real {
        let grid = Grid { dims: [n, 2, 2], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let vel = uniform_flow(&grid, Vec3::new(1.0, 0.0, 0.0));
        let bump = |x: Real| (-((x - 0.3) / 0.1).powi(2)).exp();
        let dt = 0.8 * grid.dx;
        let mut f = grid.sample_fn(Location::Cell, |x| bump(x.x));
        for _ in 0..n / 2 {
            f = advect_conservative(&grid, &vel, &all_open(&grid), &f, dt);
        }
        let shift = dt * (n / 2) as Real;
        (0..n).map(|i| (f.get(i, 0, 0) - bump(grid.position(Location::Cell, i, 0, 0).x - shift)).abs()).sum::<Real>() * grid.dx
    }

    #[test]
    fn conservative_advection_is_second_order_where_smooth() {
        let order = (conservative_bump_error(64) / conservative_bump_error(128)).log2();
        assert!(order > 1.4, "order {order}");
    }

    #[test]
    fn conservative_advection_keeps_the_total_in_a_closed_box_and_stays_positive() {
        // A divergence-free swirl in a closed box (a discrete stream function's curl: each
        // cell's net outflow is zero to round-off, and the walls' faces carry none).
        let grid = Grid { dims: [16, 16, 4], dx: 1.0 / 16.0, origin: Vec3::zeros() };
        let psi = |i: usize, j: usize| {
            let (x, y) = (i as Real / 16.0, j as Real / 16.0);
            (std::f64::consts::PI * x).sin() * (std::f64::consts::PI * y).sin() / 16.0
        };
        let mut vel = MacVelocity::zeros(&grid);
        vel.faces[0].par_fill_with(|i, j, _| 16.0 * (psi(i, j + 1) - psi(i, j)));
        vel.faces[1].par_fill_with(|i, j, _| -16.0 * (psi(i + 1, j) - psi(i, j)));
        let blob = grid.sample_fn(Location::Cell, |x| if (x - Vec3::new(0.3, 0.5, 0.1)).norm() < 0.15 { 1.0 } else { 0.0 });
        let total = |q: &Array3<Real>| q.as_slice().iter().sum::<Real>();
        let mut q = blob.clone();
        for _ in 0..40 {
            q = advect_conservative(&grid, &vel, &all_open(&grid), &q, 0.05);
        }
        assert!((total(&q) - total(&blob)).abs() < 1e-12 * total(&blob), "total {} -> {}", total(&blob), total(&q));
        let lowest = q.as_slice().iter().copied().fold(Real::INFINITY, Real::min);
        assert!(lowest >= -1e-12, "lowest {lowest}");
        let highest = q.as_slice().iter().copied().fold(0.0, Real::max);
        assert!(highest <= 1.0 + 1e-12, "highest {highest}");
        // It moved: the swirl carried the blob away from where it started.
        let overlap: Real = q.as_slice().iter().zip(blob.as_slice()).map(|(a, b)| a * b).sum();
        assert!(overlap < 0.5 * total(&blob), "overlap {overlap}");
    }

    #[test]
    fn conservative_advection_lets_content_out_of_an_open_side_and_none_in() {
        let grid = Grid { dims: [8, 2, 2], dx: 0.125, origin: Vec3::zeros() };
        let vel = uniform_flow(&grid, Vec3::new(1.0, 0.0, 0.0));
        let q = grid.sample_fn(Location::Cell, |_| 1.0);
        let after = advect_conservative(&grid, &vel, &all_open(&grid), &q, 0.25 * grid.dx);
        // A quarter of the last cell left through the +x side; the first cell lost as much and
        // gained nothing through the -x side.
        let cells = 4.0;
        let total: Real = after.as_slice().iter().sum();
        assert!((total - (8.0 * cells - 0.25 * cells)).abs() < 1e-12, "total {total}");
        assert!((after.get(0, 0, 0) - 0.75).abs() < 1e-12 && (after.get(7, 0, 0) - 1.0).abs() < 1e-12);
    }
}
