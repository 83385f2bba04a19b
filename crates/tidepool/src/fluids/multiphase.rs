//! Several liquids in one level-set liquid (Shinar 2008 ch. 4): each phase has its own
//! particle level set, the air (an empty region) is the liquid's own level set turned
//! inside out, and all of them share the velocity field and one pressure solve with the
//! phases' densities and the surface tensions between them ([`crate::coupling::PhaseView`]).
//!
//! Each level set is advected and corrected by its particles on its own, so afterwards they
//! overlap (two negative at a point) or leave a vacuum (none negative). The projection of sec.
//! 4.2.1 removes both: at every point the mean of the two smallest values is subtracted from
//! all of them. The smallest stays the smallest and becomes the only negative one, where the
//! two smallest were equal (the interface) both become zero, and where the level sets were
//! already consistent signed distances (the two smallest equal and opposite) nothing changes.
//! It runs after the particle correction and again after reinitialisation
//! ([`crate::fluids::eulerian::LevelSetLiquid::advect_surface`]).
//! `docs/methods/multiphase.md` gives the method and its limits.

use crate::coupling::PhaseView;
use crate::fluids::eulerian::particles::MarkerParticle;
use crate::fluids::eulerian::VolumeControl;
use crate::fluids::viscoelasticity::Elasticity;
use crate::fluids::viscosity::{face_cells, FaceMedia};
use crate::grid::{Array3, Grid, Location};
use crate::math::Real;
use rayon::prelude::*;

/// One liquid among several: its name (in outputs), density, viscosity and surface tension
/// against the air.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Name, as the scene gives it.
    pub name: String,
    /// Density (kg/m^3).
    pub density: Real,
    /// Dynamic viscosity (Pa s; 0: inviscid).
    pub viscosity: Real,
    /// Elasticity (a viscoelastic phase; [`Elasticity::NONE`] for none).
    pub elasticity: Elasticity,
    /// Surface tension against the air (N/m).
    pub air_tension: Real,
}

/// The phases of a liquid and where each is.
#[derive(Clone, Debug)]
pub struct Phases {
    /// The phases, in the scene's order.
    pub phases: Vec<Phase>,
    /// Between phases `a` and `b` of `n`: `tension[a * n + b]` (N/m, symmetric).
    pub tension: Vec<Real>,
    /// Per phase: its level set at cell centres (negative inside).
    pub phi: Vec<Array3<Real>>,
    /// Per phase: the marker particles of its particle level set.
    pub particles: Vec<Vec<MarkerParticle>>,
    /// Per phase: its volume control. Films thinner than a cell vanish from one phase's level
    /// set as from the liquid's, and the others' projected level sets take their place, so
    /// each phase's volume is steered to its own target (the liquid's is then the sum).
    pub volume: Vec<VolumeControl>,
    densities: Vec<Real>,
    air_tensions: Vec<Real>,
    divergence: Vec<Real>,
}

impl Phases {
    /// `phases` with the surface `tension` between each pair (`n * n`, symmetric), filling
    /// their level sets `phi`. Their volume controls have no target yet.
    pub fn new(phases: Vec<Phase>, tension: Vec<Real>, phi: Vec<Array3<Real>>) -> Self {
        let n = phi.len();
        let densities = phases.iter().map(|p| p.density).collect();
        let air_tensions = phases.iter().map(|p| p.air_tension).collect();
        let control = VolumeControl { enabled: false, target: 0.0, error_integral: 0.0, divergence: 0.0 };
        Phases { phases, tension, particles: vec![Vec::new(); n], phi, volume: vec![control; n], densities, air_tensions, divergence: vec![0.0; n] }
    }

    /// The phases as the coupled solve takes them.
    pub fn view(&self) -> PhaseView<'_> {
        PhaseView { phi: &self.phi, density: &self.densities, tension: &self.tension, air_tension: &self.air_tensions, divergence: &self.divergence }
    }

    /// Advances each phase's volume control by `dt` for its measured `volumes`: the
    /// divergences the next projections impose in its cells.
    pub fn control_volumes(&mut self, volumes: &[Real], dt: Real) {
        for ((control, divergence), &volume) in self.volume.iter_mut().zip(&mut self.divergence).zip(volumes) {
            *divergence = control.update(volume, dt);
        }
    }

    /// Puts back the volume controls of a checkpoint, with the divergences they imposed last.
    pub(crate) fn restore_volume_controls(&mut self, volume: Vec<VolumeControl>) {
        self.divergence = volume.iter().map(|c| c.divergence).collect();
        self.volume = volume;
    }

    /// The densest phase's density (kg/m^3).
    pub fn max_density(&self) -> Real {
        self.densities.iter().copied().fold(0.0, Real::max)
    }

    /// Whether any phase is viscous.
    pub fn is_viscous(&self) -> bool {
        self.phases.iter().any(|p| p.viscosity > 0.0)
    }

    /// Each face's density over `reference` and dynamic viscosity for the viscous solve: the
    /// mean of the phases of its two cells, or of the one of them in the liquid (`liquid`, the
    /// level set of all the phases together) where the other is air.
    pub fn face_media(&self, grid: &Grid, liquid: &Array3<Real>, reference: Real) -> FaceMedia {
        let phase = self.view().cell_phases(grid);
        let per_face = |a: usize, property: &(dyn Fn(&Phase) -> Real + Sync)| {
            grid.zeros(Location::Face(a)).par_map(|i, j, k, _| {
                let cells: Vec<[usize; 3]> = face_cells(grid, a, [i, j, k]).into_iter().flatten().collect();
                let wet: Vec<&[usize; 3]> = cells.iter().filter(|c| liquid.get(c[0], c[1], c[2]) < 0.0).collect();
                let counted = if wet.is_empty() { cells.iter().collect() } else { wet };
                counted.iter().map(|c| property(&self.phases[phase.get(c[0], c[1], c[2]) as usize])).sum::<Real>() / counted.len() as Real
            })
        };
        FaceMedia { density: [0, 1, 2].map(|a| per_face(a, &|p| p.density / reference)), viscosity: [0, 1, 2].map(|a| per_face(a, &|p| p.viscosity)) }
    }

    /// Whether any interface, between phases or against the air, has a surface tension.
    pub fn has_surface_tension(&self) -> bool {
        self.tension.iter().chain(&self.air_tensions).any(|&s| s > 0.0)
    }

    /// The capillary time-step limit over all interfaces: `sqrt(rho_mean dx^3 / (2 pi sigma))`
    /// (Brackbill, Kothe, Zemach 1992) with the mean density of the two sides, the air's zero.
    pub fn capillary_dt(&self, grid: &Grid) -> Real {
        let n = self.phases.len();
        let limit = |rho_mean: Real, sigma: Real| if sigma > 0.0 { (rho_mean * grid.dx.powi(3) / (2.0 * std::f64::consts::PI * sigma)).sqrt() } else { Real::INFINITY };
        let pairs = (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).map(|(a, b)| limit(0.5 * (self.densities[a] + self.densities[b]), self.tension[a * n + b]));
        let air = self.phases.iter().map(|p| limit(0.5 * p.density, p.air_tension));
        pairs.chain(air).fold(Real::INFINITY, Real::min)
    }

    /// The phase at cell `(i, j, k)`: the one whose level set is smallest there.
    pub fn phase_at(&self, i: usize, j: usize, k: usize) -> usize {
        self.view().phase_at(i, j, k)
    }
}

/// The projection of sec. 4.2.1 over the phases' level sets `phases` and the air's, `-liquid`
/// (`liquid` the level set of all the liquid together): at each cell the mean of the two
/// smallest values is subtracted from every level set. Afterwards exactly one is negative at
/// each cell (or two are zero), and `liquid` is the smallest phase's level set where the air
/// is next-nearest.
pub fn project(phases: &mut [Array3<Real>], liquid: &mut Array3<Real>) {
    let air = |c: usize| -liquid.as_slice()[c];
    let shift: Vec<Real> = (0..liquid.as_slice().len())
        .into_par_iter()
        .map(|c| {
            let (mut first, mut second) = (air(c), Real::INFINITY);
            for phi in phases.iter() {
                let v = phi.as_slice()[c];
                if v < first {
                    (first, second) = (v, first);
                } else if v < second {
                    second = v;
                }
            }
            0.5 * (first + second)
        })
        .collect();
    for phi in phases.iter_mut() {
        phi.as_mut_slice().par_iter_mut().zip(&shift).for_each(|(v, s)| *v -= s);
    }
    liquid.as_mut_slice().par_iter_mut().zip(&shift).for_each(|(v, s)| *v += s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Location;
    use crate::math::Vec3;

    /// Sec. 4.2.1's properties: two level sets that overlap in the middle and leave a vacuum
    /// beside the air are projected so that exactly one value is negative at each point (the
    /// smallest, kept smallest), the interface between the two phases stays where the two
    /// crossed, and consistent signed distances are left as they were.
    #[test]
    fn projection_removes_overlaps_and_vacuums_and_keeps_distances() {
        let grid = Grid { dims: [40, 1, 1], dx: 0.025, origin: Vec3::zeros() };
        // Phase 0 on x < 0.52, phase 1 on 0.48 < x < 0.8 (overlap), air beyond 0.85 (a
        // vacuum from 0.8 to 0.85).
        let mut phases = vec![grid.sample_fn(Location::Cell, |x| x.x - 0.52), grid.sample_fn(Location::Cell, |x| (0.48 - x.x).max(x.x - 0.8))];
        let mut liquid = grid.sample_fn(Location::Cell, |x| x.x - 0.85);
        let smallest_before: Vec<usize> = (0..40).map(|i| (0..3).min_by(|&a, &b| value(&phases, &liquid, a, i).total_cmp(&value(&phases, &liquid, b, i))).unwrap()).collect();
        project(&mut phases, &mut liquid);
        for (i, &smallest) in smallest_before.iter().enumerate() {
            let negative: Vec<usize> = (0..3).filter(|&r| value(&phases, &liquid, r, i) < 0.0).collect();
            assert_eq!(negative, vec![smallest], "cell {i}");
        }
        // The crossing of the two phases' lines (x = 0.5) is their new interface.
        let at = |r: usize, x: Real| grid.interpolate(if r < 2 { &phases[r] } else { &liquid }, Location::Cell, &Vec3::new(x, 0.0, 0.0));
        assert!(at(0, 0.5).abs() < 1e-12 && at(1, 0.5).abs() < 1e-12, "{} {}", at(0, 0.5), at(1, 0.5));
        // Consistent distances: a second projection changes nothing.
        let before = (phases.clone(), liquid.clone());
        project(&mut phases, &mut liquid);
        let largest_change = (0..2).flat_map(|r| phases[r].as_slice().iter().zip(before.0[r].as_slice()).map(|(a, b)| (a - b).abs()).collect::<Vec<_>>()).fold(0.0, Real::max);
        assert!(largest_change < 1e-15, "changed by {largest_change}");
    }

    /// The value of region `r` (the air last, as minus the liquid's) at cell `i`.
    fn value(phases: &[Array3<Real>], liquid: &Array3<Real>, r: usize, i: usize) -> Real {
        if r < phases.len() {
            phases[r].as_slice()[i]
        } else {
            -liquid.as_slice()[i]
        }
    }
}
