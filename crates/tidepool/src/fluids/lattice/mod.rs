//! Surface flow as a lattice-gas automaton (Barcellos et al. sec. 3): whole water particles
//! counted at the nodes of the surface's lattice hop to neighbouring nodes whose free surface
//! is lower. Node `(i, j)` is at index `i + nx j`; its neighbours `V1..V4` are `(i-1, j)`,
//! `(i, j-1)`, `(i+1, j)`, `(i, j+1)`.

pub mod terrain;

use crate::geometry::TriMesh;
use crate::math::{Real, Vec3};
use crate::solids::mass_spring::ElasticSheet;
use rayon::prelude::*;

/// Lattice offsets of the four neighbours `V1..V4`.
const DIRECTIONS: [[isize; 2]; 4] = [[-1, 0], [0, -1], [1, 0], [0, 1]];

/// Water as particle counters on a lattice.
#[derive(Clone, Debug)]
pub struct LatticeGas {
    /// Nodes along x and z.
    pub dims: [usize; 2],
    /// Particles at each node.
    pub counters: Vec<u32>,
    /// Nodes that belong to the domain (holes and the outside of irregular domains are not).
    pub active: Vec<bool>,
    /// Height of water one particle makes at a node, `beta` of eq. 1 (m).
    pub particle_height: Real,
    /// Whether particles may leave across the lattice's edge (an open boundary).
    pub open: bool,
    /// Particles that left across the open boundary so far.
    pub left: u64,
    /// Work arrays of [`LatticeGas::step`], kept between steps.
    scratch: Scratch,
}

/// Per-node work arrays of one automaton step.
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// Free-surface elevations.
    free: Vec<Real>,
    /// Bit k: one particle goes in direction k.
    sends: Vec<u8>,
    /// The counters after the step.
    next: Vec<u32>,
}

impl LatticeGas {
    /// A closed, dry lattice with every node active.
    pub fn new(dims: [usize; 2], particle_height: Real) -> Self {
        let n = dims[0] * dims[1];
        LatticeGas { dims, counters: vec![0; n], active: vec![true; n], particle_height, open: false, left: 0, scratch: Scratch::default() }
    }

    /// Particles on the lattice.
    pub fn total(&self) -> u64 {
        self.counters.iter().map(|&c| c as u64).sum()
    }

    /// The free surface's elevation over ground elevations `ground(c)` (eq. 1):
    /// `f = ground + beta counter`.
    pub fn free_surface(&self, ground: impl Fn(usize) -> Real + Sync) -> Vec<Real> {
        let mut free = vec![0.0; self.counters.len()];
        self.fill_free_surface(&ground, &mut free);
        free
    }

    /// [`LatticeGas::free_surface`] written into `free`.
    fn fill_free_surface(&self, ground: impl Fn(usize) -> Real + Sync, free: &mut [Real]) {
        free.par_iter_mut().enumerate().for_each(|(c, f)| *f = ground(c) + self.particle_height * self.counters[c] as Real);
    }

    /// The neighbour of node `(i, j)` in direction `k`: `Some(Some(n))` inside the lattice,
    /// `Some(None)` across the edge of an open lattice, `None` where nothing can go.
    fn target_at(&self, i: usize, j: usize, k: usize) -> Option<Option<usize>> {
        let [nx, nz] = self.dims;
        let (i, j) = (i as isize + DIRECTIONS[k][0], j as isize + DIRECTIONS[k][1]);
        if i < 0 || j < 0 || i >= nx as isize || j >= nz as isize {
            return self.open.then_some(None);
        }
        let n = i as usize + nx * j as usize;
        self.active[n].then_some(Some(n))
    }

    /// One step of the automaton over ground elevations `ground(c)` with downhill directions
    /// `slope(c)` (the surface normal projected onto the lattice's plane; asked for only where
    /// a node has fewer particles than lower neighbours). Every node
    /// ranks its four directions by their angle to the slope (Algorithm 1) and, in that order,
    /// sends one particle to each neighbour whose free surface stays below its own after the
    /// move (`f_n + beta < f_c - beta`, so no particle is sent back the next step); all nodes
    /// decide on the same state (in parallel), then gather what their neighbours sent them.
    /// Across an open edge the outside counts as ground at the node's own elevation. Returns
    /// the particles moved.
    pub fn step(&mut self, ground: impl Fn(usize) -> Real + Sync, slope: impl Fn(usize) -> [Real; 2] + Sync) -> u64 {
        let beta = self.particle_height;
        let nx = self.dims[0];
        let mut scratch = std::mem::take(&mut self.scratch);
        let nodes = self.counters.len();
        scratch.free.resize(nodes, 0.0);
        scratch.sends.resize(nodes, 0);
        scratch.next.resize(nodes, 0);
        let Scratch { free, sends, next } = &mut scratch;
        let gas = &*self;
        gas.fill_free_surface(&ground, free);
        let free = &*free;
        let f = |c: usize| free[c];
        let all_active = self.active.iter().all(|&a| a);
        let nz = self.dims[1];
        sends.par_chunks_mut(nx).enumerate().for_each(|(j, row)| {
            let interior = all_active && j > 0 && j + 1 < nz;
            for (i, bits) in row.iter_mut().enumerate() {
                *bits = 0;
                let c = i + nx * j;
                let particles = gas.counters[c];
                if particles == 0 || !gas.active[c] {
                    continue;
                }
                let top = f(c) - beta;
                let mut lower = 0u8;
                if interior && i > 0 && i + 1 < nx {
                    // Away from edges and holes the neighbours are simply c -+ 1, c -+ nx.
                    for (k, n) in [c - 1, c - nx, c + 1, c + nx].into_iter().enumerate() {
                        lower |= ((f(n) + beta < top) as u8) << k;
                    }
                } else {
                    for k in 0..4 {
                        let below = match gas.target_at(i, j, k) {
                            Some(Some(n)) => f(n) + beta < top,
                            Some(None) => ground(c) + beta < top,
                            None => false,
                        };
                        lower |= (below as u8) << k;
                    }
                }
                // With a particle for every lower neighbour the ranking decides nothing.
                if lower.count_ones() <= particles {
                    *bits = lower;
                    continue;
                }
                let mut left = particles;
                for k in flow_directions(slope(c)) {
                    if left == 0 {
                        break;
                    }
                    if lower & (1 << k) != 0 {
                        *bits |= 1 << k;
                        left -= 1;
                    }
                }
            }
        });
        // Each node keeps what it did not send and gathers the bits its neighbours set towards
        // it (V3 of its left neighbour, V1 of its right one, V4 below, V2 above); bits pointing
        // off the lattice (set only on an open edge) leave.
        let sends = &*sends;
        let (out, moved) = next
            .par_chunks_mut(nx)
            .enumerate()
            .map(|(j, row)| {
                let (mut out, mut moved) = (0, 0);
                for (i, counter) in row.iter_mut().enumerate() {
                    let c = i + nx * j;
                    let mut n = gas.counters[c] - sends[c].count_ones();
                    if i > 0 {
                        n += ((sends[c - 1] >> 2) & 1) as u32;
                    }
                    if i + 1 < nx {
                        n += (sends[c + 1] & 1) as u32;
                    }
                    if j > 0 {
                        n += ((sends[c - nx] >> 3) & 1) as u32;
                    }
                    if j + 1 < nz {
                        n += ((sends[c + nx] >> 1) & 1) as u32;
                    }
                    *counter = n;
                    let off = (i == 0) as u8 | ((j == 0) as u8) << 1 | ((i + 1 == nx) as u8) << 2 | ((j + 1 == nz) as u8) << 3;
                    out += (sends[c] & off).count_ones() as u64;
                    moved += sends[c].count_ones() as u64;
                }
                (out, moved)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        std::mem::swap(&mut self.counters, &mut scratch.next);
        self.scratch = scratch;
        self.left += out;
        moved
    }

    /// Precipitation and evaporation (eq. 7): adds `rain[c]` particles to every active node
    /// and takes up to `evaporation[c]` away. Returns the particles added and removed.
    pub fn exchange(&mut self, rain: &[u32], evaporation: &[u32]) -> (u64, u64) {
        let (mut added, mut removed) = (0, 0);
        for c in 0..self.counters.len() {
            if !self.active[c] {
                continue;
            }
            let gain = rain.get(c).copied().unwrap_or(0);
            let loss = evaporation.get(c).copied().unwrap_or(0).min(self.counters[c] + gain);
            self.counters[c] = self.counters[c] + gain - loss;
            added += gain as u64;
            removed += loss as u64;
        }
        (added, removed)
    }
}

/// A vertical force on every node during a time window (eq. 8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VerticalForce {
    /// Force per node, up positive (N).
    pub magnitude: Real,
    /// Window of time it acts in (s), inclusive.
    pub start: Real,
    pub end: Real,
}

/// A vertical force travelling along x, `amplitude sin(wavenumber x - frequency t)` per node
/// (eq. 10).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HarmonicWave {
    /// Peak force per node (N).
    pub amplitude: Real,
    /// Wave number `b` (rad/m).
    pub wavenumber: Real,
    /// Angular frequency `omega` (rad/s).
    pub frequency: Real,
}

/// Precipitation and evaporation (eq. 7): particles added to and taken from every node per
/// step during time windows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WaterExchange {
    /// Particles each node gains per step while it rains (empty: none).
    pub rain: Vec<u32>,
    /// When it rains (s).
    pub rain_window: (Real, Real),
    /// Particles each node loses per evaporation event (empty: none).
    pub evaporation: Vec<u32>,
    /// When evaporation starts (s), and the steps between two evaporation events.
    pub evaporation_start: Real,
    pub evaporation_every: u64,
}

/// Water flowing over an elastic surface: the lattice gas on the mass-spring sheet, each
/// pushing the other (Barcellos et al. sec. 3). The library's game-loop API: build one, call
/// [`SurfaceFlow::step`] as often as wanted.
#[derive(Clone, Debug)]
pub struct SurfaceFlow {
    /// The surface.
    pub sheet: ElasticSheet,
    /// The water on it.
    pub gas: LatticeGas,
    /// Gravity on the sheet's masses (m/s²).
    pub gravity: Vec3,
    /// Weight each particle puts on its node, downwards (N; eq. 3 and 9).
    pub particle_weight: Real,
    /// Vertical forces over time windows.
    pub forces: Vec<VerticalForce>,
    /// A travelling wave, if any.
    pub wave: Option<HarmonicWave>,
    /// Rain and evaporation.
    pub exchange: WaterExchange,
    /// Step length (s).
    pub dt: Real,
    /// Time (s) and steps taken.
    pub time: Real,
    pub steps: u64,
    /// Particles rained in and evaporated so far.
    pub rained: u64,
    pub evaporated: u64,
}

impl SurfaceFlow {
    /// `gas` on `sheet` at time 0 with step length `dt`: no gravity on the sheet, weightless
    /// water, no forcing, rain or evaporation (set the public fields for those).
    pub fn new(sheet: ElasticSheet, gas: LatticeGas, dt: Real) -> Self {
        SurfaceFlow {
            sheet,
            gas,
            gravity: Vec3::zeros(),
            particle_weight: 0.0,
            forces: Vec::new(),
            wave: None,
            exchange: WaterExchange::default(),
            dt,
            time: 0.0,
            steps: 0,
            rained: 0,
            evaporated: 0,
        }
    }

    /// One step (sec. 3): the surface moves under its springs, damping, gravity, the water's
    /// weight and the external forces (Verlet); the water then flows over the moved surface,
    /// downhill along its new slope; rain falls and water evaporates.
    pub fn step(&mut self) {
        let (t, dt) = (self.time, self.dt);
        let vertical: Real = self.forces.iter().filter(|f| f.start <= t && t <= f.end).map(|f| f.magnitude).sum();
        let (sheet, gas, wave) = (&mut self.sheet, &self.gas, self.wave);
        let nx = sheet.dims[0];
        let spacing = sheet.spacing;
        let weight = self.particle_weight;
        sheet.step(dt, &self.gravity, |c| {
            let wave = wave.map_or(0.0, |w| w.amplitude * (w.wavenumber * (c % nx) as Real * spacing - w.frequency * t).sin());
            Vec3::new(0.0, vertical + wave - weight * gas.counters[c] as Real, 0.0)
        });
        let sheet = &self.sheet;
        self.gas.step(|c| sheet.positions[c].y, |c| slope_at(sheet, c));
        let x = &self.exchange;
        let raining = !x.rain.is_empty() && x.rain_window.0 <= t && t <= x.rain_window.1;
        let evaporating = !x.evaporation.is_empty() && t >= x.evaporation_start && self.steps % x.evaporation_every.max(1) == 0;
        if raining || evaporating {
            let (rain, evaporation): (&[u32], &[u32]) = (if raining { &x.rain } else { &[] }, if evaporating { &x.evaporation } else { &[] });
            let (added, removed) = self.gas.exchange(rain, evaporation);
            self.rained += added;
            self.evaporated += removed;
        }
        self.time += dt;
        self.steps += 1;
    }

    /// The surface's downhill direction at every node ([`slope_at`]).
    pub fn slopes(&self) -> Vec<[Real; 2]> {
        (0..self.sheet.positions.len()).into_par_iter().map(|c| slope_at(&self.sheet, c)).collect()
    }

    /// The water's volume, `particles * particle_height * spacing²` (m³).
    pub fn water_volume(&self) -> Real {
        let spacing = self.sheet.spacing;
        self.gas.total() as Real * self.gas.particle_height * spacing * spacing
    }

    /// The terrain (the sheet's nodes) and the water's free surface over the wet quads, as
    /// meshes facing up.
    pub fn meshes(&self) -> (TriMesh, TriMesh) {
        let dims = self.sheet.dims;
        let terrain = TriMesh { vertices: self.sheet.positions.clone(), triangles: lattice_triangles(dims, |_| true) };
        let beta = self.gas.particle_height;
        let water = TriMesh {
            vertices: self.sheet.positions.iter().zip(&self.gas.counters).map(|(p, &n)| p + Vec3::new(0.0, beta * n as Real, 0.0)).collect(),
            triangles: lattice_triangles(dims, |quad| quad.iter().all(|&c| self.gas.counters[c] > 0)),
        };
        (terrain, water)
    }

    /// The health check: a node at a non-finite position is a blow-up (a frame whose
    /// energies overflow is refused where the frame is measured).
    pub fn check(&self) -> Result<(), String> {
        let finite = |x: &Vec3| x.iter().all(|v| v.is_finite());
        if self.sheet.positions.iter().chain(&self.sheet.previous).all(finite) {
            Ok(())
        } else {
            Err("the surface's motion is no longer finite (a stiffer sheet needs a smaller simulation.dt)".into())
        }
    }

    /// Heap bytes held by the state.
    pub fn heap_bytes(&self) -> usize {
        let n = self.sheet.positions.len();
        n * (2 * std::mem::size_of::<Vec3>() + 2 * std::mem::size_of::<Real>() + 2 + 3 * std::mem::size_of::<u32>() + 2 * std::mem::size_of::<Real>())
    }

    /// The state for a checkpoint: the sheet's two positions (Verlet), the counters, the clock
    /// and the tallies.
    pub fn save_state(&self) -> Vec<u8> {
        let g = &self.gas;
        postcard::to_allocvec(&(&self.sheet.positions, &self.sheet.previous, &g.counters, g.left, self.time, self.steps, self.rained, self.evaporated))
            .expect("surface flow serialises")
    }

    /// Restores a state written by [`SurfaceFlow::save_state`] for the same scene.
    pub fn restore_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        type State = (Vec<Vec3>, Vec<Vec3>, Vec<u32>, u64, Real, u64, u64, u64);
        let (positions, previous, counters, left, time, steps, rained, evaporated): State =
            postcard::from_bytes(bytes).map_err(|e| format!("the surface flow's state does not decode: {e}"))?;
        let n = self.sheet.positions.len();
        if positions.len() != n || previous.len() != n || counters.len() != n {
            return Err(format!("the checkpoint holds a lattice of {} nodes where the scene has {n}", positions.len()));
        }
        (self.sheet.positions, self.sheet.previous, self.gas.counters, self.gas.left) = (positions, previous, counters, left);
        (self.time, self.steps, self.rained, self.evaporated) = (time, steps, rained, evaporated);
        Ok(())
    }
}

/// Triangles over the lattice's quads for which `keep(corners)` holds.
fn lattice_triangles(dims: [usize; 2], keep: impl Fn([usize; 4]) -> bool) -> Vec<[u32; 3]> {
    let [nx, nz] = dims;
    let mut triangles = Vec::new();
    for j in 0..nz - 1 {
        for i in 0..nx - 1 {
            let c = i + nx * j;
            let quad = [c, c + 1, c + nx + 1, c + nx];
            if keep(quad) {
                let [a, b, d, e] = quad.map(|q| q as u32);
                triangles.push([a, d, b]);
                triangles.push([a, e, d]);
            }
        }
    }
    triangles
}

/// The downhill direction of `sheet` at node `c`: the surface normal projected onto the
/// lattice's plane, `(-dy/dx, -dy/dz)` up to a positive factor (which does not change the
/// ranking of directions); central differences, one-sided at the edges.
pub fn slope_at(sheet: &ElasticSheet, c: usize) -> [Real; 2] {
    let [nx, nz] = sheet.dims;
    let (i, j) = (c % nx, c / nx);
    let x = &sheet.positions;
    let (l, r) = (if i > 0 { c - 1 } else { c }, if i + 1 < nx { c + 1 } else { c });
    let (d, u) = (if j > 0 { c - nx } else { c }, if j + 1 < nz { c + nx } else { c });
    let run = |a: usize, b: usize, axis: usize| (x[b][axis] - x[a][axis]).abs().max(1e-12);
    [-(x[r].y - x[l].y) / run(l, r, 0), -(x[u].y - x[d].y) / run(d, u, 2)]
}

/// The four directions ranked by their angle to the downhill direction `slope` (smallest
/// first; Algorithm 1), ties in the order `V1..V4`.
pub fn flow_directions(slope: [Real; 2]) -> [usize; 4] {
    // Alignment of V1..V4 with the slope; an insertion sort keeps ties in index order.
    let score = [-slope[0], -slope[1], slope[0], slope[1]];
    let mut order = [0, 1, 2, 3];
    for a in 1..4 {
        let mut b = a;
        while b > 0 && score[order[b]] > score[order[b - 1]] {
            order.swap(b, b - 1);
            b -= 1;
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lattice with ground `ground(i, j)` and its downhill directions by central
    /// differences.
    fn terrain(dims: [usize; 2], ground: impl Fn(Real, Real) -> Real) -> (Vec<Real>, Vec<[Real; 2]>) {
        let [nx, nz] = dims;
        let heights: Vec<Real> = (0..nx * nz).map(|c| ground((c % nx) as Real, (c / nx) as Real)).collect();
        let slope = (0..nx * nz)
            .map(|c| {
                let (x, z) = ((c % nx) as Real, (c / nx) as Real);
                [-(ground(x + 0.5, z) - ground(x - 0.5, z)), -(ground(x, z + 0.5) - ground(x, z - 0.5))]
            })
            .collect();
        (heights, slope)
    }

    #[test]
    fn directions_are_ranked_by_their_angle_to_the_slope() {
        assert_eq!(flow_directions([1.0, 0.2]), [2, 3, 1, 0]);
        assert_eq!(flow_directions([0.0, -1.0])[0], 1);
        assert_eq!(flow_directions([0.0, 0.0]), [0, 1, 2, 3]);
    }

    /// On a closed lattice the particle count never changes, over 10 000 steps of a heap
    /// spreading over a bumpy floor; with evaporation it drops by exactly what evaporated,
    /// until the lattice is dry.
    #[test]
    fn particles_are_conserved_and_evaporate_exactly() {
        let dims = [40, 30];
        let (ground, slope) = terrain(dims, |x, z| 0.01 * (x * 0.7).sin() * (z * 0.5).cos());
        let mut gas = LatticeGas::new(dims, 0.002);
        gas.active[12 + 40 * 13] = false;
        for (c, n) in gas.counters.iter_mut().enumerate().filter(|(c, _)| *c != 12 + 40 * 13) {
            let (x, z) = ((c % 40) as Real - 12.0, (c / 40) as Real - 15.0);
            *n = (200.0 * (-(x * x + z * z) / 30.0).exp()) as u32;
        }
        let total = gas.total();
        let mut moved = 0;
        for _ in 0..10_000 {
            moved += gas.step(|c| ground[c], |c| slope[c]);
            assert_eq!(gas.total(), total);
        }
        assert!(moved > total, "the heap hardly spread: {moved} moves");
        let evaporation = vec![1; 40 * 30];
        let mut remaining = gas.total();
        while remaining > 0 {
            let (_, removed) = gas.exchange(&[], &evaporation);
            gas.step(|c| ground[c], |c| slope[c]);
            assert_eq!(gas.total(), remaining - removed);
            assert!(removed > 0);
            remaining = gas.total();
        }
    }

    /// Water poured into a bowl comes to rest at its bottom: after enough steps nothing moves,
    /// no node ever sent a particle to a higher free surface, the deepest node is wet, and no
    /// wet node's free surface stands two particle heights or more above a neighbour's (the
    /// closest to level whole particles get without sending particles back and forth).
    #[test]
    fn water_in_a_bowl_comes_to_rest_at_the_bottom() {
        let dims = [31, 31];
        let bowl = |x: Real, z: Real| 0.001 * ((x - 15.0).powi(2) + (z - 15.0).powi(2));
        let (ground, slope) = terrain(dims, bowl);
        let mut gas = LatticeGas::new(dims, 0.002);
        gas.counters[3 + 31 * 27] = 400;
        let total = gas.total();
        let mut steps = 0;
        loop {
            let before = gas.free_surface(|c| ground[c]);
            let counters = gas.counters.clone();
            if gas.step(|c| ground[c], |c| slope[c]) == 0 {
                break;
            }
            for c in 0..counters.len() {
                if gas.counters[c] > counters[c] {
                    // Every receiver got its particles from higher free surfaces.
                    let higher_neighbour = (0..4).filter_map(|k| gas.target_at(c % 31, c / 31, k).flatten()).any(|n| before[n] > before[c]);
                    assert!(higher_neighbour, "node {c} filled from below");
                }
            }
            steps += 1;
            assert!(steps < 100_000, "still moving after {steps} steps");
        }
        assert_eq!(gas.total(), total);
        let wet: Vec<usize> = (0..gas.counters.len()).filter(|&c| gas.counters[c] > 0).collect();
        let f = gas.free_surface(|c| ground[c]);
        for &c in &wet {
            for n in (0..4).filter_map(|k| gas.target_at(c % 31, c / 31, k).flatten()) {
                assert!(f[c] - f[n] < 2.0 * gas.particle_height, "node {c} stands {} m above node {n}", f[c] - f[n]);
            }
        }
        assert!(gas.counters[15 + 31 * 15] > 0, "the bottom of the bowl is dry");
    }

    /// A flat sheet pinned at its edges, without gravity on its own masses, with water on
    /// one third of it: the water's weight makes it sag (a dry sheet stays flat), the water
    /// runs into the sag, and after settling the wet nodes sit lower than the dry ones — the
    /// coupling works both ways. No particle is lost.
    #[test]
    fn the_surface_sags_where_the_water_sits() {
        let build = |water: bool| {
            let mut sheet = ElasticSheet::new([41, 41], 1.0, |_, _| 0.0, 1.0, 20.0, 0.3);
            sheet.pin_edges();
            let mut gas = LatticeGas::new([41, 41], 0.01);
            if water {
                for c in 0..41 * 41 {
                    if (c % 41) < 14 && !sheet.pinned[c] {
                        gas.counters[c] = 20;
                    }
                }
            }
            let mut flow = SurfaceFlow::new(sheet, gas, 0.1);
            flow.particle_weight = 0.05;
            flow
        };
        let mut dry = build(false);
        let mut wet = build(true);
        let total = wet.gas.total();
        for _ in 0..3000 {
            dry.step();
            wet.step();
        }
        assert!(dry.sheet.positions.iter().all(|p| p.y.abs() < 1e-12), "a dry sheet moved");
        assert_eq!(wet.gas.total(), total);
        let interior: Vec<usize> = (0..41 * 41).filter(|&c| !wet.sheet.pinned[c]).collect();
        let mean = |nodes: &[usize]| nodes.iter().map(|&c| wet.sheet.height(c)).sum::<Real>() / nodes.len() as Real;
        let (wet_nodes, dry_nodes): (Vec<usize>, Vec<usize>) = interior.iter().partition(|&&c| wet.gas.counters[c] > 0);
        assert!(!wet_nodes.is_empty() && !dry_nodes.is_empty());
        assert!(mean(&wet_nodes) < 0.0, "the wet sheet did not sag");
        assert!(mean(&wet_nodes) < mean(&dry_nodes) - 0.1 * mean(&wet_nodes).abs(), "wet nodes at {} m, dry ones at {} m", mean(&wet_nodes), mean(&dry_nodes));
        let lowest = interior.iter().copied().min_by(|&a, &b| wet.sheet.height(a).total_cmp(&wet.sheet.height(b))).unwrap();
        assert!(wet.gas.counters[lowest] > 0, "the lowest node is dry");
    }
}
