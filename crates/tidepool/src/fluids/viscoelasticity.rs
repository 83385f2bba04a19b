//! Viscoelastic liquids: an elastic strain carried with the flow (Shinar sec. 4.3.3, after
//! Goktekin, Bargteil and O'Brien 2004, with the strain rotated by the flow as Losasso et al.
//! 2006 do).
//!
//! The liquid holds a symmetric strain tensor `e` at cell centres. Its stress `mu_e e` (`mu_e`
//! the elastic modulus) pushes the liquid back towards where it came from, a force per mass
//! `(mu_e / rho) div e` on the faces; the strain follows the material,
//!
//! `e_t + u . grad e = D - e_t^plastic`,  `D = (grad u + grad u^T) / 2`,
//!
//! advected semi-Lagrangian, turned by the flow's local rotation (half the vorticity, over the
//! substep), and grown by the strain rate `D`. Beyond the yield strain `gamma` it flows away
//! (von Mises): `e_t^plastic = alpha max(0, |e| - gamma) / |e| e`, `alpha` the plastic rate, an
//! infinite rate taking it straight back to `|e| = gamma`. With no yield strain the liquid is
//! elastic for ever, a jelly. The force is explicit: the substep follows the elastic wave
//! speed ([`Elasticity::stable_dt`]).
//!
//! For a divergence-free velocity `div D = Laplacian(u) / 2`, so a small strain makes shear
//! waves at the speed `sqrt(mu_e / (2 rho))`: a vortex that is an eigenfunction of the
//! Laplacian with eigenvalue `-k^2` oscillates at `omega = k sqrt(mu_e / (2 rho))`.

use crate::grid::advection::carried;
use crate::grid::{Array3, Grid, Location, MacVelocity};
use crate::math::Real;
use nalgebra::{Matrix3, Rotation3, Vector3};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The liquid's elasticity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Elasticity {
    /// The elastic modulus `mu_e` (Pa); 0: none.
    pub modulus: Real,
    /// The yield strain `gamma` (infinite: never yields).
    pub yield_strain: Real,
    /// The plastic rate `alpha` (1/s; infinite: back to the yield strain at once).
    pub plastic_rate: Real,
}

impl Elasticity {
    /// No elasticity.
    pub const NONE: Elasticity = Elasticity { modulus: 0.0, yield_strain: Real::INFINITY, plastic_rate: Real::INFINITY };

    /// Whether the liquid is elastic.
    pub fn is_on(&self) -> bool {
        self.modulus > 0.0
    }

    /// The longest stable substep of the explicit elastic force, `dx sqrt(rho / (2 mu_e))`:
    /// the strain's force on a face gathers the second differences along its own axis (at most
    /// `4 / dx^2`) and half of those across (another `4 / dx^2`), so the substep's update is
    /// stable while `dt^2 (mu_e / rho) 8 / dx^2 <= 4`. Infinite without elasticity.
    pub fn stable_dt(&self, grid: &Grid, density: Real) -> Real {
        if self.is_on() {
            grid.dx * (density / (2.0 * self.modulus)).sqrt()
        } else {
            Real::INFINITY
        }
    }
}

/// The strain tensor's six components at cell centres, in the order `xx, yy, zz, xy, xz, yz`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Strain {
    /// The components.
    pub components: [Array3<Real>; 6],
}

/// The component index of `e_ab`.
fn index(a: usize, b: usize) -> usize {
    match (a.min(b), a.max(b)) {
        (a, b) if a == b => a,
        (0, 1) => 3,
        (0, 2) => 4,
        _ => 5,
    }
}

impl Strain {
    /// No strain on `grid`.
    pub fn zeros(grid: &Grid) -> Self {
        Strain { components: std::array::from_fn(|_| grid.zeros(Location::Cell)) }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.components.iter().map(Array3::heap_bytes).sum()
    }

    /// Adds `dt div(mu_e e) / rho` to the face velocities `faces`: `modulus` gives `mu_e` at
    /// each cell (by flat index; 0 where the liquid is not elastic) and `density` `rho` at each
    /// face (by axis and index). The strain beyond the grid counts as zero (walls hold their
    /// faces' normal velocity anyway).
    pub fn push(&self, grid: &Grid, modulus: &(dyn Fn(usize) -> Real + Sync), density: &(dyn Fn(usize, [usize; 3]) -> Real + Sync), dt: Real, faces: &mut [Array3<Real>; 3]) {
        let cells = &self.components[0];
        for (a, faces) in faces.iter_mut().enumerate() {
            faces.par_update(|i, j, k, u| {
                if [i, j, k][a] == 0 || [i, j, k][a] == grid.dims[a] {
                    return;
                }
                // The stress component at the face's upper cell `(i, j, k)` moved by `offset`
                // (the lower cell is `-1` along `a`).
                let at = |component: usize, offset: [isize; 3]| {
                    let n: [isize; 3] = std::array::from_fn(|b| [i, j, k][b] as isize + offset[b]);
                    let inside = (0..3).all(|b| n[b] >= 0 && (n[b] as usize) < grid.dims[b]);
                    if !inside {
                        return 0.0;
                    }
                    let c = cells.index(n[0] as usize, n[1] as usize, n[2] as usize);
                    modulus(c) * self.components[component].as_slice()[c]
                };
                let moved = |moves: &[(usize, isize)]| {
                    let mut offset = [0; 3];
                    moves.iter().for_each(|&(axis, by)| offset[axis] += by);
                    offset
                };
                let mut divergence = at(index(a, a), [0; 3]) - at(index(a, a), moved(&[(a, -1)]));
                for b in (0..3).filter(|&b| b != a) {
                    let c = index(a, b);
                    divergence += 0.25 * (at(c, moved(&[(a, -1), (b, 1)])) + at(c, moved(&[(b, 1)])) - at(c, moved(&[(a, -1), (b, -1)])) - at(c, moved(&[(b, -1)])));
                }
                *u += dt * divergence / (grid.dx * density(a, [i, j, k]));
            });
        }
    }

    /// Moves the strain on by `dt` with the liquid's `velocity`: advected (semi-Lagrangian:
    /// each elastic cell's tensor taken from where the flow brings it from), turned by the
    /// local rotation, grown by the strain rate, yielded by the cell's `elasticity` (by flat
    /// index), and zero where that is `None` (air, or a phase that is not elastic).
    pub fn evolve(&mut self, grid: &Grid, velocity: &MacVelocity, elasticity: &(dyn Fn(usize) -> Option<Elasticity> + Sync), dt: Real) {
        let cells = &self.components[0];
        let updated: Vec<[Real; 6]> = (0..grid.cell_count())
            .into_par_iter()
            .map(|c| {
                let Some(elasticity) = elasticity(c) else { return [0.0; 6] };
                let cell = cells.coords(c);
                let x = grid.position(Location::Cell, cell[0], cell[1], cell[2]);
                let from = carried(grid, velocity, &x, -dt);
                let carried_in = Matrix3::from_fn(|a, b| grid.interpolate(&self.components[index(a, b)], Location::Cell, &from));
                let g = velocity_gradient(grid, velocity, cell);
                let vorticity = Vector3::new(g[(2, 1)] - g[(1, 2)], g[(0, 2)] - g[(2, 0)], g[(1, 0)] - g[(0, 1)]);
                let turn = Rotation3::new(0.5 * dt * vorticity).into_inner();
                let mut e = turn * carried_in * turn.transpose() + dt * 0.5 * (g + g.transpose());
                let size = e.norm();
                if size > elasticity.yield_strain {
                    let flow = (dt * elasticity.plastic_rate * (size - elasticity.yield_strain) / size).min(1.0 - elasticity.yield_strain / size);
                    e *= 1.0 - flow;
                }
                [e[(0, 0)], e[(1, 1)], e[(2, 2)], e[(0, 1)], e[(0, 2)], e[(1, 2)]]
            })
            .collect();
        for (n, component) in self.components.iter_mut().enumerate() {
            component.as_mut_slice().par_iter_mut().zip(updated.par_iter()).for_each(|(v, e)| *v = e[n]);
        }
    }
}

/// The velocity gradient `g[(a, b)] = du_a / dx_b` at the centre of `cell`: the diagonal from
/// the cell's two faces, the rest by central differences of the velocity averaged to the
/// neighbouring cells' centres (one-sided at the grid's edges).
fn velocity_gradient(grid: &Grid, velocity: &MacVelocity, cell: [usize; 3]) -> Matrix3<Real> {
    let centred = |a: usize, c: [usize; 3]| {
        let mut upper = c;
        upper[a] += 1;
        0.5 * (velocity.faces[a].get(c[0], c[1], c[2]) + velocity.faces[a].get(upper[0], upper[1], upper[2]))
    };
    Matrix3::from_fn(|a, b| {
        if a == b {
            let mut upper = cell;
            upper[a] += 1;
            return (velocity.faces[a].get(upper[0], upper[1], upper[2]) - velocity.faces[a].get(cell[0], cell[1], cell[2])) / grid.dx;
        }
        let (mut lo, mut hi) = (cell, cell);
        lo[b] = cell[b].saturating_sub(1);
        hi[b] = (cell[b] + 1).min(grid.dims[b] - 1);
        (centred(a, hi) - centred(a, lo)) / ((hi[b] - lo[b]) as Real * grid.dx)
    })
}
