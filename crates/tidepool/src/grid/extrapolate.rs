//! Extrapolation of grid values from valid samples into invalid ones, layer by layer.

use super::Array3;
use crate::math::Real;
use rayon::prelude::*;
use tidepool_linalg::box_neighbours;

/// Extends `values` from samples marked `valid` into the rest: in each of `layers` passes, every
/// invalid sample with at least one valid axis neighbour takes the average of those neighbours and
/// becomes valid. Samples further than `layers` from any valid sample are left as they were and
/// stay invalid. Each pass reads only the previous one's values, so the result does not depend on
/// the order or the number of threads. The first pass finds its samples by one parallel sweep;
/// each later pass visits only the invalid neighbours of the samples the pass before filled, so
/// the cost follows the extrapolated band, not the grid.
pub fn extrapolate(values: &mut Array3<Real>, valid: &mut Array3<bool>, layers: usize) {
    let dims = values.dims();
    let neighbours = move |c: usize| box_neighbours(dims, c).into_iter().flatten();
    let mut front: Vec<usize> = {
        let valid = valid.as_slice();
        (0..valid.len()).into_par_iter().filter(|&c| !valid[c] && neighbours(c).any(|d| valid[d])).collect()
    };
    for layer in 0..layers {
        if front.is_empty() {
            break;
        }
        let update: Vec<Real> = {
            let (values, valid) = (values.as_slice(), valid.as_slice());
            front
                .par_iter()
                .map(|&c| {
                    let (sum, count) = neighbours(c).filter(|&d| valid[d]).fold((0.0, 0), |(s, n), d| (s + values[d], n + 1));
                    sum / count as Real
                })
                .collect()
        };
        for (&c, v) in front.iter().zip(&update) {
            values.as_mut_slice()[c] = *v;
            valid.as_mut_slice()[c] = true;
        }
        if layer + 1 < layers {
            let valid = valid.as_slice();
            let mut next: Vec<usize> = front.par_iter().flat_map_iter(|&c| neighbours(c).filter(|&d| !valid[d])).collect();
            next.par_sort_unstable();
            next.dedup();
            front = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::array::NEIGHBOURS;

    #[test]
    fn extends_a_linear_profile_layer_by_layer() {
        let mut values = Array3::filled([8, 1, 1], 0.0);
        let mut valid = Array3::filled([8, 1, 1], false);
        for i in 0..3 {
            values.set(i, 0, 0, i as Real);
            valid.set(i, 0, 0, true);
        }
        extrapolate(&mut values, &mut valid, 2);
        assert_eq!(values.get(3, 0, 0), 2.0);
        assert_eq!(values.get(4, 0, 0), 2.0);
        assert!(valid.get(4, 0, 0) && !valid.get(5, 0, 0));
        assert_eq!(values.get(5, 0, 0), 0.0);
    }

    /// The band-following passes give exactly what the definition gives: every pass over the
    /// whole array, each invalid sample with valid neighbours taking their average.
    #[test]
    fn matches_whole_array_passes() {
        let dims = [9, 7, 6];
        let mut s = 5u64;
        let mut unit = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as Real / (1u64 << 53) as Real
        };
        let mut values = Array3::filled(dims, 0.0);
        let mut valid = Array3::filled(dims, false);
        for c in 0..values.as_slice().len() {
            values.as_mut_slice()[c] = unit();
            valid.as_mut_slice()[c] = unit() < 0.08;
        }
        for layers in [1, 2, 4, 20] {
            let (mut expected, mut expected_valid) = (values.clone(), valid.clone());
            for _ in 0..layers {
                let before = (expected.clone(), expected_valid.clone());
                for k in 0..dims[2] {
                    for j in 0..dims[1] {
                        for i in 0..dims[0] {
                            if before.1.get(i, j, k) {
                                continue;
                            }
                            let around: Vec<Real> =
                                NEIGHBOURS.iter().filter(|off| before.1.get_offset(i, j, k, **off) == Some(true)).map(|off| before.0.get_offset(i, j, k, *off).unwrap()).collect();
                            if !around.is_empty() {
                                expected.set(i, j, k, around.iter().sum::<Real>() / around.len() as Real);
                                expected_valid.set(i, j, k, true);
                            }
                        }
                    }
                }
            }
            let (mut got, mut got_valid) = (values.clone(), valid.clone());
            extrapolate(&mut got, &mut got_valid, layers);
            assert_eq!(got.as_slice(), expected.as_slice(), "{layers} layers");
            assert_eq!(got_valid.as_slice(), expected_valid.as_slice(), "{layers} layers");
        }
    }
}
