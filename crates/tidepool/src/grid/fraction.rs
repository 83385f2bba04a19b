//! Fractions of a triangle, square, tetrahedron or cube where a linearly interpolated function is
//! negative: the cut-cell face fractions of solids and the volume fractions of liquid.

use crate::math::{Real, Vec3};

/// Parameter along the edge from a (negative) to b where the linear interpolant is zero.
fn crossing(a: Real, b: Real) -> Real {
    if a == b {
        0.5
    } else {
        (a / (a - b)).clamp(0.0, 1.0)
    }
}

/// Area fraction of a triangle where the linear interpolant of the corner values is negative.
pub fn triangle_fraction_inside(phi: [Real; 3]) -> Real {
    let negatives = phi.iter().filter(|&&v| v < 0.0).count();
    match negatives {
        0 => 0.0,
        3 => 1.0,
        1 => {
            let a = phi.iter().position(|&v| v < 0.0).unwrap();
            let (b, c) = ((a + 1) % 3, (a + 2) % 3);
            crossing(phi[a], phi[b]) * crossing(phi[a], phi[c])
        }
        _ => 1.0 - triangle_fraction_inside(phi.map(|v| -v)),
    }
}

/// Area fraction of a square where the interpolant of its corner values is negative. Corners are
/// `[(0,0), (1,0), (0,1), (1,1)]`; the square is split into four triangles around its centre.
pub fn square_fraction_inside(phi: [Real; 4]) -> Real {
    let centre = 0.25 * phi.iter().sum::<Real>();
    let ring = [phi[0], phi[1], phi[3], phi[2]];
    (0..4).map(|e| triangle_fraction_inside([ring[e], ring[(e + 1) % 4], centre])).sum::<Real>() * 0.25
}

/// Volume fraction of a tetrahedron where the linear interpolant of its corner values is
/// negative (it depends only on the four values).
pub fn tet_fraction_inside(phi: [Real; 4]) -> Real {
    let neg: Vec<usize> = (0..4).filter(|&i| phi[i] < 0.0).collect();
    match neg.len() {
        0 => 0.0,
        4 => 1.0,
        1 => {
            let a = neg[0];
            (0..4).filter(|&i| i != a).map(|i| crossing(phi[a], phi[i])).product()
        }
        3 => 1.0 - tet_fraction_inside(phi.map(|v| -v)),
        _ => {
            // Two negative corners A, B and two positive C, D: the negative part is the
            // prism-like polyhedron A, P_ac, P_ad / B, P_bc, P_bd, cut into three tetrahedra.
            let corner = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
            let (a, b) = (neg[0], neg[1]);
            let pos: Vec<usize> = (0..4).filter(|&i| phi[i] >= 0.0).collect();
            let (c, d) = (pos[0], pos[1]);
            let at = |p: usize, q: usize| corner[p] + crossing(phi[p], phi[q]) * (corner[q] - corner[p]);
            let bottom = [corner[a], at(a, c), at(a, d)];
            let top = [corner[b], at(b, c), at(b, d)];
            let vol = |p: Vec3, q: Vec3, r: Vec3, s: Vec3| (q - p).cross(&(r - p)).dot(&(s - p)).abs() / 6.0;
            let v = vol(bottom[0], bottom[1], bottom[2], top[0]) + vol(bottom[1], bottom[2], top[0], top[1]) + vol(bottom[2], top[0], top[1], top[2]);
            (v * 6.0).clamp(0.0, 1.0)
        }
    }
}

/// Fraction of a box of side `side` inside a surface whose signed distance from the box's
/// centre is `distance` (negative inside): `clamp(1/2 - distance/side, 0, 1)`, whole or empty
/// for boxes the surface misses and exact for a plane crossing the box along an axis.
pub fn box_fraction_inside(distance: Real, side: Real) -> Real {
    (0.5 - distance / side).clamp(0.0, 1.0)
}

/// The `n^3` boxes of side `side` that tile the cube from `corner`: each box's index along the
/// three axes and its centre.
pub fn sub_boxes(corner: Vec3, side: Real, n: usize) -> impl Iterator<Item = ([usize; 3], Vec3)> {
    (0..n * n * n).map(move |s| {
        let index = [s % n, (s / n) % n, s / (n * n)];
        (index, corner + side * Vec3::from_fn(|a, _| index[a] as Real + 0.5))
    })
}

/// Volume fraction of a box where the interpolant of its corner values is negative. Corner `c`
/// is at `(c & 1, (c >> 1) & 1, (c >> 2) & 1)`; the box is split into the six tetrahedra around
/// its main diagonal.
pub fn cube_fraction_inside(phi: [Real; 8]) -> Real {
    if phi.iter().all(|&v| v < 0.0) {
        return 1.0;
    }
    if phi.iter().all(|&v| v >= 0.0) {
        return 0.0;
    }
    const AXES: [[usize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    AXES.iter()
        .map(|&[a, b, _]| {
            let first = 1 << a;
            let second = first | (1 << b);
            tet_fraction_inside([phi[0], phi[first], phi[second], phi[7]])
        })
        .sum::<Real>()
        / 6.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane_corners(n: Vec3, offset: Real) -> [Real; 8] {
        std::array::from_fn(|c| {
            let p = Vec3::new((c & 1) as Real, ((c >> 1) & 1) as Real, ((c >> 2) & 1) as Real);
            n.dot(&p) - offset
        })
    }

    /// Monte-Carlo-free reference: the fraction of a fine lattice of points below the plane.
    fn plane_fraction_reference(n: Vec3, offset: Real) -> Real {
        let m = 200;
        let mut inside = 0usize;
        for k in 0..m {
            for j in 0..m {
                for i in 0..m {
                    let p = Vec3::new(i as Real + 0.5, j as Real + 0.5, k as Real + 0.5) / m as Real;
                    if n.dot(&p) < offset {
                        inside += 1;
                    }
                }
            }
        }
        inside as Real / (m * m * m) as Real
    }

    #[test]
    fn axis_plane_fractions_are_exact() {
        for s in [0.1, 0.37, 0.5, 0.93] {
            assert!((cube_fraction_inside(plane_corners(Vec3::x(), s)) - s).abs() < 1e-14);
            assert!((square_fraction_inside([-s, 1.0 - s, -s, 1.0 - s]) - s).abs() < 1e-14);
        }
    }

    #[test]
    fn oblique_planes_match_a_fine_lattice() {
        for (n, offset) in [(Vec3::new(1.0, 2.0, 0.5), 1.1), (Vec3::new(-1.0, 0.3, 0.7), 0.2), (Vec3::new(0.2, -0.9, 1.4), 0.4)] {
            let f = cube_fraction_inside(plane_corners(n, offset));
            let reference = plane_fraction_reference(n, offset);
            assert!((f - reference).abs() < 2e-3, "{f} vs {reference}");
            let g = cube_fraction_inside(plane_corners(-n, -offset));
            assert!((f + g - 1.0).abs() < 1e-12, "complement");
        }
    }

    #[test]
    fn tetrahedron_cases_are_complementary() {
        let cases = [[-1.0, 2.0, 3.0, 0.5], [-1.0, -0.2, 3.0, 0.5], [-1.0, -0.2, -3.0, 0.5]];
        for phi in cases {
            let f = tet_fraction_inside(phi);
            assert!((0.0..=1.0).contains(&f));
            assert!((f + tet_fraction_inside(phi.map(|v| -v)) - 1.0).abs() < 1e-12);
        }
        // One corner: the corner tetrahedron scaled by the crossing parameters.
        assert!((tet_fraction_inside([-1.0, 1.0, 1.0, 1.0]) - 0.125).abs() < 1e-15);
    }
}
