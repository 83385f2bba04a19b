//! The pressure projection: second-order convergence of the ghost-fluid Poisson solve on a
//! manufactured solution, a residual below the requested tolerance, and exact symmetry.

use tidepool::coupling::poisson::{assemble, liquid_cells};
use tidepool::grid::{Grid, Location, MacVelocity};
use tidepool::math::{Real, Vec3};
use tidepool::scene::Boundary;
use tidepool::solids::StaticSolids;
use tidepool_linalg::reduce::{dot, norm2};
use tidepool_linalg::{pcg, LinearOperator, Mic0, PcgParams};

const CENTRE: [Real; 3] = [0.5, 0.5, 0.5];
const RADIUS: Real = 0.37;

/// p = (R^2 - r^2) cos(x): zero on the sphere r = R.
fn exact(x: &Vec3) -> Real {
    let d = x - Vec3::from(CENTRE);
    (RADIUS * RADIUS - d.norm_squared()) * x.x.cos()
}

/// Laplacian of `exact`.
fn laplacian(x: &Vec3) -> Real {
    let d = x - Vec3::from(CENTRE);
    let g = RADIUS * RADIUS - d.norm_squared();
    -6.0 * x.x.cos() + 4.0 * d.x * x.x.sin() - g * x.x.cos()
}

/// Max error of the discrete solution inside a spherical drop with zero pressure on its surface.
fn max_error(n: usize, tolerance: Real) -> (Real, Real) {
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let solids = StaticSolids::new(&grid, [[Boundary::Wall; 2]; 3], Vec::new());
    let phi = grid.sample_fn(Location::Cell, |x| (x - Vec3::from(CENTRE)).norm() - RADIUS);
    let liquid = liquid_cells(&phi, &solids);
    let (a, _) = assemble(&grid, &phi, &liquid, &solids, &MacVelocity::zeros(&grid));
    assert!(a.floating.is_empty(), "the drop has a free surface");
    // The matrix is -dx^2 times the Laplacian: A p = -dx^2 f.
    let b: Vec<Real> = (0..grid.cell_count())
        .map(|c| {
            if liquid.as_slice()[c] {
                let [i, j, k] = phi.coords(c);
                -grid.dx * grid.dx * laplacian(&grid.position(Location::Cell, i, j, k))
            } else {
                0.0
            }
        })
        .collect();
    let mut p = vec![0.0; b.len()];
    let info = pcg(&a, &Mic0::new(&a), &b, &mut p, PcgParams { tolerance, max_iterations: 1000 });
    assert!(info.converged, "{info:?}");
    // The reported residual is the true one and meets the tolerance.
    let mut ap = vec![0.0; b.len()];
    a.apply(&p, &mut ap);
    let r: Vec<Real> = b.iter().zip(&ap).map(|(x, y)| x - y).collect();
    let true_residual = norm2(&r) / norm2(&b);
    assert!(true_residual <= tolerance * (1.0 + 1e-6), "residual {true_residual} > {tolerance}");
    let mut err: Real = 0.0;
    for c in 0..grid.cell_count() {
        if liquid.as_slice()[c] {
            let [i, j, k] = phi.coords(c);
            err = err.max((p[c] - exact(&grid.position(Location::Cell, i, j, k))).abs());
        }
    }
    (err, true_residual)
}

#[test]
fn ghost_fluid_poisson_solve_converges_at_second_order() {
    let errors: Vec<Real> = [16, 32, 64].iter().map(|&n| max_error(n, 1e-10).0).collect();
    let orders: Vec<Real> = errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect();
    assert!(orders.iter().all(|&o| o > 1.8), "errors {errors:?}, orders {orders:?}");
}

#[test]
fn pcg_stops_below_the_requested_tolerance() {
    for tolerance in [1e-3, 1e-6, 1e-9] {
        let (_, residual) = max_error(24, tolerance);
        assert!(residual <= tolerance * (1.0 + 1e-6));
    }
}

#[test]
fn assembled_matrix_is_symmetric_with_cut_cells() {
    // A liquid slab cut by a spherical obstacle, with an open side: the stencil is symmetric
    // (x . A y == y . A x) and positive definite on random vectors.
    let n = 14;
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let ball = tidepool::geometry::Shape::Sphere { center: Vec3::new(0.45, 0.3, 0.5), radius: 0.22 };
    let mut sides = [[Boundary::Wall; 2]; 3];
    sides[0][1] = Boundary::Open;
    let solids = StaticSolids::new(&grid, sides, vec![("ball".into(), ball)]);
    let phi = grid.sample_fn(Location::Cell, |x| x.y - 0.61);
    let liquid = liquid_cells(&phi, &solids);
    let (a, _) = assemble(&grid, &phi, &liquid, &solids, &MacVelocity::zeros(&grid));
    let mut s = 1u64;
    let mut random = || {
        (0..grid.cell_count())
            .map(|c| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if liquid.as_slice()[c] {
                    (s >> 11) as Real / (1u64 << 53) as Real - 0.5
                } else {
                    0.0
                }
            })
            .collect::<Vec<Real>>()
    };
    let (x, y) = (random(), random());
    let (mut ax, mut ay) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    a.apply(&x, &mut ax);
    a.apply(&y, &mut ay);
    assert!((dot(&y, &ax) - dot(&x, &ay)).abs() < 1e-12 * dot(&x, &ax).abs());
    assert!(dot(&x, &ax) > 0.0 && dot(&y, &ay) > 0.0);
    let cut = solids.face_open.iter().flat_map(|f| f.as_slice()).filter(|&&o| o > 0.0 && o < 1.0).count();
    assert!(cut > 20, "the obstacle cuts faces ({cut})");
}
