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
//!
//! Reactions (sec. 4.6) turn two regions into a third where they touch ([`Reaction`]).
//! `docs/methods/multiphase.md` gives the method and its limits.

use crate::coupling::PhaseView;
use crate::fluids::eulerian::particles::MarkerParticle;
use crate::fluids::eulerian::VolumeControl;
use crate::fluids::viscoelasticity::Elasticity;
use crate::fluids::viscosity::{face_cells, FaceMedia};
use crate::grid::{Array3, Grid, Location};
use crate::math::{Real, Vec3};
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

/// New properties of a phase from `time` on; the ones not given stay as they were.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseChange {
    /// When it takes effect (s).
    pub time: Real,
    /// New density (kg/m^3).
    pub density: Option<Real>,
    /// New dynamic viscosity (Pa s).
    pub viscosity: Option<Real>,
    /// New elasticity ([`Elasticity::NONE`]: none).
    pub elasticity: Option<Elasticity>,
    /// New surface tension against the air (N/m).
    pub air_tension: Option<Real>,
}

impl PhaseChange {
    /// `phase` with this change applied.
    fn apply(&self, phase: &Phase) -> Phase {
        Phase {
            name: phase.name.clone(),
            density: self.density.unwrap_or(phase.density),
            viscosity: self.viscosity.unwrap_or(phase.viscosity),
            elasticity: self.elasticity.unwrap_or(phase.elasticity),
            air_tension: self.air_tension.unwrap_or(phase.air_tension),
        }
    }
}

/// The phases of a liquid and where each is.
#[derive(Clone, Debug)]
pub struct Phases {
    /// The phases as they are now, in the scene's order.
    pub phases: Vec<Phase>,
    /// The phases as they start, and per phase its changes in time order
    /// ([`Phases::at_time`]).
    schedule: Vec<(Phase, Vec<PhaseChange>)>,
    /// Between phases `a` and `b` of `n`: `tension[a * n + b]` (N/m, symmetric).
    pub tension: Vec<Real>,
    /// Per phase: its level set at cell centres (negative inside).
    pub phi: Vec<Array3<Real>>,
    /// Per phase: the marker particles of its particle level set.
    pub particles: Vec<Vec<MarkerParticle>>,
    /// The reactions between regions (phases and the air).
    pub reactions: Vec<Reaction>,
    /// Per reaction: the reactant volume it has consumed and not yet turned into product (m^3).
    pub pending: Vec<Real>,
    /// Per phase: the volume a reaction's expansion adds in the next projection (m^3).
    pub expanding: Vec<Real>,
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
        Phases {
            schedule: phases.iter().map(|p| (p.clone(), Vec::new())).collect(),
            phases,
            tension,
            particles: vec![Vec::new(); n],
            phi,
            reactions: Vec::new(),
            pending: Vec::new(),
            expanding: vec![0.0; n],
            volume: vec![control; n],
            densities,
            air_tensions,
            divergence: vec![0.0; n],
        }
    }

    /// The phases with `reactions` between them, none consumed yet.
    pub fn with_reactions(mut self, reactions: Vec<Reaction>) -> Self {
        self.pending = vec![0.0; reactions.len()];
        self.reactions = reactions;
        self
    }

    /// The phases with `changes` to their properties over time (per phase, in time order),
    /// as they are at time 0.
    pub fn with_changes(mut self, changes: Vec<Vec<PhaseChange>>) -> Self {
        for ((_, scheduled), changes) in self.schedule.iter_mut().zip(changes) {
            *scheduled = changes;
        }
        self.at_time(0.0);
        self
    }

    /// Sets each phase's properties to what its changes make them at time `t`.
    pub fn at_time(&mut self, t: Real) {
        if self.schedule.iter().all(|(_, changes)| changes.is_empty()) {
            return;
        }
        for (phase, (start, changes)) in self.phases.iter_mut().zip(&self.schedule) {
            *phase = changes.iter().take_while(|c| c.time <= t).fold(start.clone(), |p, c| c.apply(&p));
        }
        self.densities = self.phases.iter().map(|p| p.density).collect();
        self.air_tensions = self.phases.iter().map(|p| p.air_tension).collect();
    }

    /// Every state each phase takes over the run: as it starts and after each change.
    fn all_states(&self) -> impl Iterator<Item = Phase> + '_ {
        self.schedule.iter().flat_map(|(start, changes)| {
            changes
                .iter()
                .scan(start.clone(), |p, c| {
                    *p = c.apply(p);
                    Some(p.clone())
                })
                .chain([start.clone()])
        })
    }

    /// Per phase: how many changes its properties have over the run.
    pub fn change_counts(&self) -> Vec<usize> {
        self.schedule.iter().map(|(_, changes)| changes.len()).collect()
    }

    /// Whether a phase is elastic at any time of the run.
    pub fn ever_elastic(&self) -> bool {
        self.all_states().any(|p| p.elasticity.is_on())
    }

    /// The region index of the air (after the phases') in a [`Reaction`].
    pub fn air(&self) -> usize {
        self.phases.len()
    }

    /// The phases as the coupled solve takes them.
    pub fn view(&self) -> PhaseView<'_> {
        PhaseView { phi: &self.phi, density: &self.densities, tension: &self.tension, air_tension: &self.air_tensions, divergence: &self.divergence }
    }

    /// Advances each phase's volume control by `dt` for its measured `volumes`: the
    /// divergences the next projection imposes in its cells, with the expansion reactions
    /// have asked for (which then joins the target).
    pub fn control_volumes(&mut self, volumes: &[Real], dt: Real) {
        for (((control, divergence), expanding), &volume) in self.volume.iter_mut().zip(&mut self.divergence).zip(&mut self.expanding).zip(volumes) {
            *divergence = control.update(volume, dt);
            if volume > 0.0 {
                *divergence += *expanding / (volume * dt);
                control.target += *expanding;
            }
            *expanding = 0.0;
        }
    }

    /// Puts back the volume controls of a checkpoint, with the divergences they imposed last.
    pub(crate) fn restore_volume_controls(&mut self, volume: Vec<VolumeControl>) {
        self.divergence = volume.iter().map(|c| c.divergence).collect();
        self.volume = volume;
    }

    /// The densest phase's density at any time of the run (kg/m^3).
    pub fn max_density(&self) -> Real {
        self.all_states().map(|p| p.density).fold(0.0, Real::max)
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

/// A surface reaction (sec. 4.6): where the two `reactants` touch, they turn into `product`
/// at `rate`: the reactant volume consumed per unit area of contact per second (m/s). Regions
/// are phases by index, or the air ([`Phases::air`]). The consumed volume accumulates until it
/// fills a sphere of `bubble_radius`, which is then put into the product at a point of the
/// contact ([`insert_product`]): a layer thinner than a cell would vanish from a level set, a
/// sphere of a few cells stays. A phase as product may grow to `expansion` times the volume it
/// replaced (the next projection expands it by the difference and its volume control's target
/// takes it in: [`Phases::control_volumes`]), the way a gas takes more room than the liquids it
/// came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Reaction {
    /// The two regions that react.
    pub reactants: [usize; 2],
    /// The region they turn into (may be one of the reactants: it then eats the other).
    pub product: usize,
    /// Reactant volume consumed per contact area and second (m/s).
    pub rate: Real,
    /// Radius of the spheres of product put in (m).
    pub bubble_radius: Real,
    /// Product volume per reactant volume consumed (a phase as product; 1 for the air).
    pub expansion: Real,
}

/// The value of region `r` at cell `c`: phase `r`'s level set, or for `r` past the phases the
/// air's (minus the liquid's).
fn region_value(phases: &[Array3<Real>], liquid: &Array3<Real>, r: usize, c: usize) -> Real {
    phases.get(r).map_or(-liquid.as_slice()[c], |phi| phi.as_slice()[c])
}

/// The two regions nearest cell `c` (smallest values first).
fn two_nearest(phases: &[Array3<Real>], liquid: &Array3<Real>, c: usize) -> [usize; 2] {
    let (mut first, mut second) = ((phases.len(), -liquid.as_slice()[c]), (usize::MAX, Real::INFINITY));
    for (r, phi) in phases.iter().enumerate() {
        let v = phi.as_slice()[c];
        if v < first.1 {
            (first, second) = ((r, v), first);
        } else if v < second.1 {
            second = (r, v);
        }
    }
    [first.0, second.0]
}

/// Where regions `pair` touch: the area of their interface (m^2, the smoothed delta function
/// of the first's level set, 1.5 cells wide, integrated over the cells they are the nearest
/// two of) and the cells beside the interface (within a cell of it, outside `solid`),
/// where product may go.
pub fn contact(grid: &Grid, phases: &[Array3<Real>], liquid: &Array3<Real>, pair: [usize; 2], solid: Option<&Array3<Real>>) -> (Real, Vec<usize>) {
    let (dx, width) = (grid.dx, 1.5 * grid.dx);
    let touching = |c: usize| {
        let nearest = two_nearest(phases, liquid, c);
        nearest == pair || nearest == [pair[1], pair[0]]
    };
    // The cells of the interface's band, with the first's level set there.
    let band: Vec<(usize, Real)> = (0..liquid.as_slice().len())
        .into_par_iter()
        .filter_map(|c| {
            let v = region_value(phases, liquid, pair[0], c);
            (v.abs() < width && touching(c)).then_some((c, v))
        })
        .collect();
    let area = tidepool_linalg::reduce::sum_by(band.len(), |i| (1.0 + (std::f64::consts::PI * band[i].1 / width).cos()) / (2.0 * width) * dx.powi(3));
    let sites = band.iter().filter(|&&(c, v)| v.abs() < dx && solid.is_none_or(|s| s.as_slice()[c] >= 0.0)).map(|&(c, _)| c).collect();
    (area, sites)
}

/// Puts a sphere of `reaction`'s bubble radius about `centre` into its product where either
/// reactant was: the product's region becomes its union with the sphere's part of the
/// reactants' (the outside of all other regions), and each reactant other than the product
/// gives up the sphere. Marker particles on the wrong side of the new level sets within `margin` of the
/// sphere go: a reactant's inner ones, the product's outer ones (the liquid's `particles` are
/// the air's, turned inside out).
pub fn insert_product(grid: &Grid, phases: &mut Phases, liquid: &mut Array3<Real>, particles: &mut Vec<MarkerParticle>, reaction: &Reaction, centre: &Vec3, margin: Real) {
    let (radius, [a, b], p) = (reaction.bubble_radius, reaction.reactants, reaction.product);
    let sphere = |x: &Vec3| (x - centre).norm() - radius;
    let reach = radius + 2.0 * grid.dx;
    let cells = |a: usize| {
        let index = |x: Real| ((x - grid.origin[a]) / grid.dx - 0.5).clamp(0.0, (grid.dims[a] - 1) as Real);
        index(centre[a] - reach).floor() as usize..=index(centre[a] + reach).ceil() as usize
    };
    let air = phases.air();
    for k in cells(2) {
        for j in cells(1) {
            for i in cells(0) {
                let c = liquid.index(i, j, k);
                let s = sphere(&grid.position(Location::Cell, i, j, k));
                let value = |r: usize| region_value(&phases.phi, liquid, r, c);
                let (va, vb, vp) = (value(a), value(b), value(p));
                // The reactants together: the outside of every other region (the smaller of
                // theirs would be zero along their shared interface).
                let reactants = -(0..=air).filter(|&r| r != a && r != b).map(value).fold(Real::INFINITY, Real::min);
                let mut set = |r: usize, v: Real| if r == air { liquid.as_mut_slice()[c] = -v } else { phases.phi[r].as_mut_slice()[c] = v };
                for (r, v) in [(a, va), (b, vb)] {
                    if r != p {
                        set(r, v.max(-s));
                    }
                }
                set(p, vp.min(s.max(reactants)));
            }
        }
    }
    // Phase markers are inside for sign -1; the liquid's are the air's with the sign turned.
    let mut drop = |r: usize, inner: bool| {
        let (markers, inside) = if r == air { (&mut *particles, 1.0) } else { (&mut phases.particles[r], -1.0) };
        let wrong = if inner { inside } else { -inside };
        markers.retain(|m| m.sign != wrong || sphere(&m.x()) > margin);
    };
    for r in [a, b].into_iter().filter(|&r| r != p) {
        drop(r, true);
    }
    drop(p, false);
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
    use crate::grid::level_set::volume_inside;
    use crate::grid::Location;

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

    /// A sphere of product put in where two phases meet takes its volume from the two
    /// reactants, about half from each, leaves the liquid's volume as it was, and takes the
    /// reactants' inner markers inside it with it; one put in where a phase meets the air
    /// (both reactants, the air the product) turns that phase's part into air and leaves the
    /// other phases untouched. Volumes by the piecewise-linear measure, which cuts corners
    /// where the sphere crosses an interface: the reactants lose 4% more than the product
    /// gains (bound 6%), the phase beside the air half a sphere 7% more (bound 10%).
    #[test]
    fn a_product_sphere_replaces_the_reactants_where_it_lands() {
        let grid = Grid { dims: [24, 24, 24], dx: 1.0 / 24.0, origin: Vec3::zeros() };
        let nowhere = grid.sample_fn(Location::Cell, |_| 1.0);
        let mut phases = Phases::new(
            ["a", "b", "c"].map(|name| Phase { name: name.into(), density: 1000.0, viscosity: 0.0, elasticity: Elasticity::NONE, air_tension: 0.0 }).to_vec(),
            vec![0.0; 9],
            vec![grid.sample_fn(Location::Cell, |x| x.y - 0.5), grid.sample_fn(Location::Cell, |x| (0.5 - x.y).max(x.y - 0.8)), nowhere],
        );
        let mut liquid = grid.sample_fn(Location::Cell, |x| x.y - 0.8);
        let marker = |y: f32, sign: f32| MarkerParticle { position: [0.5, y, 0.5], radius: 0.01, sign };
        phases.particles[0] = vec![marker(0.45, -1.0), marker(0.2, -1.0)];
        let volumes = |phases: &Phases, liquid: &Array3<Real>| -> Vec<Real> { phases.phi.iter().chain([liquid]).map(|phi| volume_inside(&grid, phi, None)).collect() };
        let before = volumes(&phases, &liquid);
        let (radius, centre) = (0.15, Vec3::new(0.5, 0.5, 0.5));
        let reaction = Reaction { reactants: [0, 1], product: 2, rate: 1.0, bubble_radius: radius, expansion: 1.0 };
        insert_product(&grid, &mut phases, &mut liquid, &mut Vec::new(), &reaction, &centre, 0.0);
        let after = volumes(&phases, &liquid);
        // The sphere as the same measure sees it (its tetrahedra cut a round surface short).
        let sphere = volume_inside(&grid, &grid.sample_fn(Location::Cell, |x| (x - centre).norm() - radius), None);
        let (lost_a, lost_b, gained) = (before[0] - after[0], before[1] - after[1], after[2] - before[2]);
        assert!((gained / sphere - 1.0).abs() < 0.01, "the product gained {gained} m^3 of a {sphere} m^3 sphere");
        // The piecewise-linear measure cuts the corners where the sphere meets the reactants'
        // interface (measured 4% more lost than gained at 3.6 cells of radius).
        assert!(((lost_a + lost_b) / gained - 1.0).abs() < 0.06, "the reactants lost {lost_a} + {lost_b} m^3 for {gained} m^3 of product");
        assert!((lost_a / lost_b - 1.0).abs() < 0.05, "the reactants lost {lost_a} and {lost_b} m^3");
        assert!((after[3] / before[3] - 1.0).abs() < 1e-3, "the liquid's volume went from {} to {}", before[3], after[3]);
        assert_eq!(phases.particles[0], vec![marker(0.2, -1.0)], "the inner marker in the sphere goes, the one outside stays");

        // Phase b meets the air at y = 0.8: b and the air turn into air.
        let venting = Reaction { reactants: [1, phases.air()], product: phases.air(), rate: 1.0, bubble_radius: radius, expansion: 1.0 };
        let before = volumes(&phases, &liquid);
        insert_product(&grid, &mut phases, &mut liquid, &mut Vec::new(), &venting, &Vec3::new(0.5, 0.8, 0.5), 0.0);
        let after = volumes(&phases, &liquid);
        let (lost_b, lost_liquid) = (before[1] - after[1], before[3] - after[3]);
        assert!((lost_b / (0.5 * sphere) - 1.0).abs() < 0.1, "b lost {lost_b} m^3 of half a {sphere} m^3 sphere");
        assert!((lost_liquid / lost_b - 1.0).abs() < 0.03, "the liquid lost {lost_liquid} m^3, b {lost_b} m^3");
        assert_eq!((after[0], after[2]), (before[0], before[2]), "the other phases are untouched");
    }

    /// The contact between two phases measures the area of their interface: a plane across a
    /// unit box within 1% (measured 1e-14), a sphere of radius 0.3 (10 cells) within 2% of
    /// `4 pi r^2` (measured 0.3%); it is zero between
    /// phases that do not touch, and the sites lie within a cell of the interface.
    #[test]
    fn the_contact_measures_the_interface_area() {
        let grid = Grid { dims: [32, 32, 32], dx: 1.0 / 32.0, origin: Vec3::zeros() };
        let liquid = grid.sample_fn(Location::Cell, |_| -1.0);
        let nowhere = grid.sample_fn(Location::Cell, |_| 1.0);
        let plane = grid.sample_fn(Location::Cell, |x| x.y - 0.51);
        let (area, sites) = contact(&grid, &[plane.clone(), plane.par_map(|_, _, _, v| -v), nowhere.clone()], &liquid, [0, 1], None);
        assert!((area - 1.0).abs() < 0.01, "a plane's area {area}");
        assert!(sites.iter().all(|&c| plane.as_slice()[c].abs() < grid.dx) && sites.len() == 2 * 32 * 32, "{} sites", sites.len());
        let centre = Vec3::repeat(0.5);
        let ball = grid.sample_fn(Location::Cell, |x| (x - centre).norm() - 0.3);
        let (area, _) = contact(&grid, &[ball.clone(), ball.par_map(|_, _, _, v| -v), nowhere.clone()], &liquid, [1, 0], None);
        let exact = 4.0 * std::f64::consts::PI * 0.09;
        assert!((area / exact - 1.0).abs() < 0.02, "a sphere's area {area}, 4 pi r^2 = {exact}");
        let (area, sites) = contact(&grid, &[ball.clone(), ball.par_map(|_, _, _, v| -v), nowhere], &liquid, [0, 2], None);
        assert!(area == 0.0 && sites.is_empty(), "phases that do not touch have a contact of {area}");
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
