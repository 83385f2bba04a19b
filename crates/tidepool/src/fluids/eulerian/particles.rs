//! The particle level set (Enright, Fedkiw, Ferziger, Mitchell 2002).
//!
//! Marker particles seeded on both sides of the surface, within `BAND` cells of it, are carried
//! by the flow with the level set. Where the level set's own advection loses or smears detail,
//! particles end up on the wrong side of the interface by more than their radius ("escaped"):
//! each escaped particle is a small sphere `phi_p(x) = s_p (r_p - |x - x_p|)` that rebuilds the
//! level set around it, raising `phi+` (air particles) or lowering `phi-` (liquid particles);
//! the corrected value at each cell is whichever of the two is smaller in magnitude.

use crate::grid::advection::carried;
use crate::grid::{Array3, Grid, Location, MacVelocity};
use crate::math::{Real, SplitMix64, Vec3};
use rayon::prelude::*;

/// Half-width of the seeding band, in cells.
pub const BAND: Real = 3.0;
/// Smallest particle radius, in cells.
pub const RADIUS_MIN: Real = 0.1;
/// Largest particle radius, in cells.
pub const RADIUS_MAX: Real = 0.5;

/// A marker particle: its sign says on which side it was seeded (`-1` liquid, `+1` air).
/// Stored in single precision: positions need far less than a cell's width of precision.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MarkerParticle {
    /// World position (m).
    pub position: [f32; 3],
    /// Radius (m).
    pub radius: f32,
    /// `-1.0` (liquid side) or `+1.0` (air side).
    pub sign: f32,
}

impl MarkerParticle {
    /// Position as a vector.
    pub fn x(&self) -> Vec3 {
        Vec3::new(self.position[0] as Real, self.position[1] as Real, self.position[2] as Real)
    }

    fn set_x(&mut self, x: &Vec3) {
        self.position = [x.x as f32, x.y as f32, x.z as f32];
    }
}

/// New particles for one cell: `count` uniform positions attracted to a random level in
/// `[RADIUS_MIN, BAND]` cells on their side (Enright et al. sec. 3.2). Rejected particles are
/// dropped.
fn seed_cell(grid: &Grid, phi: &Array3<Real>, cell: [usize; 3], count: usize, key: &[u64]) -> Vec<MarkerParticle> {
    let mut rng = SplitMix64::keyed(key);
    let dx = grid.dx;
    let corner = grid.origin + Vec3::new(cell[0] as Real, cell[1] as Real, cell[2] as Real) * dx;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let mut x = corner + Vec3::new(rng.next_unit(), rng.next_unit(), rng.next_unit()) * dx;
        let phi0 = grid.interpolate(phi, Location::Cell, &x);
        let sign = if phi0 <= 0.0 { -1.0 } else { 1.0 };
        let goal = sign * dx * (RADIUS_MIN + rng.next_unit() * (BAND - RADIUS_MIN));
        let mut lambda = 1.0;
        for _ in 0..15 {
            let value = grid.interpolate(phi, Location::Cell, &x);
            let n = grid.gradient(phi, Location::Cell, &x);
            let len = n.norm();
            if len < 1e-12 {
                break;
            }
            let candidate = grid.clamp(&(x + lambda * (goal - value) * n / (len * len)));
            let reached = grid.interpolate(phi, Location::Cell, &candidate);
            if sign * reached < RADIUS_MIN * dx || sign * reached > BAND * dx {
                lambda *= 0.5;
                continue;
            }
            x = candidate;
            if (reached - goal).abs() < 0.05 * dx {
                break;
            }
        }
        let value = grid.interpolate(phi, Location::Cell, &x);
        if sign * value >= RADIUS_MIN * dx && sign * value <= BAND * dx {
            let mut p = MarkerParticle { position: [0.0; 3], radius: 0.0, sign: sign as f32 };
            p.set_x(&x);
            p.radius = (sign * value).clamp(RADIUS_MIN * dx, RADIUS_MAX * dx) as f32;
            out.push(p);
        }
    }
    out
}

/// Cells within the seeding band, in index order.
fn band_cells(phi: &Array3<Real>, dx: Real) -> Vec<usize> {
    phi.as_slice().par_iter().enumerate().filter(|(_, v)| v.abs() < BAND * dx).map(|(c, _)| c).collect()
}

/// Seeds `per_cell` particles in every band cell. `key` makes the placement reproducible.
pub fn seed(grid: &Grid, phi: &Array3<Real>, per_cell: usize, key: [u64; 2]) -> Vec<MarkerParticle> {
    band_cells(phi, grid.dx).par_iter().flat_map_iter(|&c| seed_cell(grid, phi, phi.coords(c), per_cell, &[key[0], key[1], c as u64])).collect()
}

/// Moves particles through `velocity` over `dt` (midpoint rule), keeping them in the domain.
pub fn advect(grid: &Grid, velocity: &MacVelocity, particles: &mut [MarkerParticle], dt: Real) {
    particles.par_iter_mut().for_each(|p| p.set_x(&carried(grid, velocity, &p.x(), dt)));
}

/// Corrects `phi` with the escaped particles (Enright et al. sec. 3.3).
pub fn correct(grid: &Grid, phi: &mut Array3<Real>, particles: &[MarkerParticle]) {
    let escaped: Vec<&MarkerParticle> = particles.par_iter().filter(|p| (p.sign as Real) * grid.interpolate(phi, Location::Cell, &p.x()) < -(p.radius as Real)).collect();
    if escaped.is_empty() {
        return;
    }
    let mut plus = phi.clone();
    let mut minus = phi.clone();
    let [nx, ny, nz] = grid.dims;
    for p in escaped {
        let x = p.x();
        // The eight cell centres around the particle.
        let g = (x - grid.origin) / grid.dx - Vec3::repeat(0.5);
        let base = [g.x, g.y, g.z].map(|v| v.floor() as isize);
        for c in 0..8 {
            let idx = [base[0] + (c & 1), base[1] + ((c >> 1) & 1), base[2] + ((c >> 2) & 1)];
            if idx[0] < 0 || idx[1] < 0 || idx[2] < 0 {
                continue;
            }
            let [i, j, k] = idx.map(|v| v as usize);
            if i >= nx || j >= ny || k >= nz {
                continue;
            }
            let centre = grid.position(Location::Cell, i, j, k);
            let sphere = p.sign as Real * (p.radius as Real - (centre - x).norm());
            if p.sign > 0.0 {
                plus.set(i, j, k, plus.get(i, j, k).max(sphere));
            } else {
                minus.set(i, j, k, minus.get(i, j, k).min(sphere));
            }
        }
    }
    phi.par_fill_with(|i, j, k| {
        let (a, b) = (plus.get(i, j, k), minus.get(i, j, k));
        if a.abs() <= b.abs() {
            a
        } else {
            b
        }
    });
}

/// After the correction: particles on their own side of the surface take their distance to it
/// as radius, clamped to `[RADIUS_MIN, RADIUS_MAX]` cells; particles still escaped by more than
/// 1.5 radii are features the grid cannot hold and are deleted; the others keep their radius.
pub fn adjust_radii(grid: &Grid, phi: &Array3<Real>, particles: &mut Vec<MarkerParticle>) {
    let dx = grid.dx;
    particles.par_iter_mut().for_each(|p| {
        let d = p.sign as Real * grid.interpolate(phi, Location::Cell, &p.x());
        if d >= 0.0 {
            p.radius = d.clamp(RADIUS_MIN * dx, RADIUS_MAX * dx) as f32;
        } else if d < -1.5 * p.radius as Real {
            p.radius = -1.0;
        }
    });
    particles.retain(|p| p.radius > 0.0);
}

/// Reseeding: drops particles that left the band on either side or sit inside a solid; tops up band cells that have fewer than `per_cell` particles and thins out cells
/// with more than twice that.
pub fn reseed(grid: &Grid, phi: &Array3<Real>, solid: &Array3<Real>, particles: &mut Vec<MarkerParticle>, per_cell: usize, key: [u64; 2]) {
    let dx = grid.dx;
    particles.retain(|p| {
        let x = p.x();
        let d = p.sign as Real * grid.interpolate(phi, Location::Cell, &x);
        d.abs() <= BAND * dx && grid.interpolate(solid, Location::Cell, &x) > 0.0
    });
    let mut count = vec![0u32; grid.cell_count()];
    particles.retain(|p| {
        let [i, j, k] = grid.cell_of(&p.x());
        let c = phi.index(i, j, k);
        count[c] += 1;
        count[c] as usize <= 2 * per_cell
    });
    let added: Vec<MarkerParticle> = band_cells(phi, dx)
        .par_iter()
        .filter(|&&c| (count[c] as usize) < per_cell)
        .flat_map_iter(|&c| {
            let missing = per_cell - count[c] as usize;
            seed_cell(grid, phi, phi.coords(c), missing, &[key[0], key[1], c as u64])
        })
        .collect();
    particles.extend(added);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_particles_sit_on_their_side_within_the_band() {
        let n = 24;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let c = Vec3::repeat(0.5);
        let phi = grid.sample_fn(Location::Cell, |x| (x - c).norm() - 0.3);
        let particles = seed(&grid, &phi, 16, [7, 0]);
        assert!(particles.len() > 1000);
        for p in &particles {
            let d = p.sign as Real * ((p.x() - c).norm() - 0.3);
            assert!(d > 0.05 * grid.dx && d < (BAND + 0.1) * grid.dx, "distance {} cells", d / grid.dx);
        }
        // Reproducible for a key, different for another.
        assert_eq!(particles, seed(&grid, &phi, 16, [7, 0]));
        assert_ne!(particles, seed(&grid, &phi, 16, [8, 0]));
    }

    #[test]
    fn escaped_particles_restore_a_lost_bump() {
        // A flat pool whose level set has forgotten a bump that its particles remember: the
        // correction brings back most of the bump's volume, and never adds volume elsewhere.
        let n = 24;
        let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
        let bump = |x: Vec3| 0.12 * (-(x - Vec3::new(0.5, 0.5, 0.5)).xz().norm_squared() / 0.02).exp();
        let phi_true = grid.sample_fn(Location::Cell, |x| x.y - 0.5 - bump(x));
        let particles = seed(&grid, &phi_true, 16, [1, 0]);
        let flat = grid.sample_fn(Location::Cell, |x| x.y - 0.5);
        let mut phi = flat.clone();
        correct(&grid, &mut phi, &particles);
        let volume = |a: &Array3<Real>| crate::grid::level_set::volume_inside(&grid, a, None);
        let (lost, recovered) = (volume(&phi_true) - volume(&flat), volume(&phi) - volume(&flat));
        assert!(recovered > 0.5 * lost && recovered < 1.05 * lost, "recovered {recovered} of {lost}");
        // Far from the bump nothing changes.
        for c in 0..grid.cell_count() {
            let [i, j, k] = phi.coords(c);
            if bump(grid.position(Location::Cell, i, j, k)) < 1e-4 {
                assert_eq!(phi.as_slice()[c], flat.as_slice()[c]);
            }
        }
    }
}
