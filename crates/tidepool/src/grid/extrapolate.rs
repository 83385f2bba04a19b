//! Extrapolation of grid values from valid samples into invalid ones, layer by layer.

use super::array::NEIGHBOURS;
use super::Array3;
use crate::math::Real;

/// Extends `values` from samples marked `valid` into the rest: in each of `layers` passes, every
/// invalid sample with at least one valid axis neighbour takes the average of those neighbours and
/// becomes valid. Samples further than `layers` from any valid sample are left as they were and
/// stay invalid. Passes are computed in parallel (each reads only the previous pass).
pub fn extrapolate(values: &mut Array3<Real>, valid: &mut Array3<bool>, layers: usize) {
    for _ in 0..layers {
        let next = values.par_map(|i, j, k, v| {
            if valid.get(i, j, k) {
                return None;
            }
            let (mut sum, mut count) = (0.0, 0);
            for off in NEIGHBOURS {
                if valid.get_offset(i, j, k, off) == Some(true) {
                    sum += values.get_offset(i, j, k, off).unwrap_or(v);
                    count += 1;
                }
            }
            (count > 0).then(|| sum / count as Real)
        });
        let mut changed = false;
        for (c, update) in next.as_slice().iter().enumerate() {
            if let Some(v) = update {
                values.as_mut_slice()[c] = *v;
                valid.as_mut_slice()[c] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
