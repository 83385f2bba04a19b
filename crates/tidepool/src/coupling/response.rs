//! Each solid's block of the coupled system, `S = rho dx^3 J K J^T` on its coupled faces,
//! applied by the solid's impulse response until that has cost more than finding the block
//! outright, and then as a small matrix in an orthonormal basis of its range.
//!
//! A solid's impulses change at most [`CoupledSolid::degrees_of_freedom`] velocities (six for
//! a rigid body, six and one per mode for a reduced one), so its block on `n` faces has at most
//! that rank `r`. Applied to `r` vectors of pseudo-random numbers (seeded by the sizes alone:
//! a solve depends on neither the thread count nor earlier solves) it gives vectors spanning
//! its range (with probability one); their orthonormal basis `Q` (`n x r`) holds
//! `S = Q (Q^T S Q) Q^T` exactly, `S` being symmetric. Finding `Q` and `Q^T S Q` costs `2 r`
//! responses of the solid; each product afterwards `4 n r` operations instead of a response
//! (for a reduced body a walk over its modes at every face point). A solve of few iterations
//! never needs the block; one of many pays for it at most once over: the block is found after
//! the solid has been applied `2 r` times (the rule of renting skis until their price is
//! spent), and never where `r` is not below `n`.

use super::CoupledFace;
use crate::math::{Real, SplitMix64, Vec3};
use crate::solids::{CoupledSolid, Site};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// One solid's block of the impulse unknowns, on the coupled faces `range`.
pub(crate) struct SolidBlock<'a> {
    solid: &'a dyn CoupledSolid,
    range: Range<usize>,
    /// The faces' sites and axes.
    sites: Vec<Site>,
    axes: Vec<usize>,
    /// `rho dx^3`: an unknown `mu` on a face is the impulse `rho dx^3 mu` along its axis.
    cell_mass: Real,
    /// The solid's degrees of freedom, the bound on the block's rank.
    rank: usize,
    /// Products taken through the solid's response so far.
    applied: AtomicUsize,
    /// `Q` and `Q^T S Q`, once found.
    factors: OnceLock<(DMatrix<Real>, DMatrix<Real>)>,
}

impl<'a> SolidBlock<'a> {
    /// The block of `solid` on the coupled faces `range`, which are `faces`.
    pub fn new(solid: &'a dyn CoupledSolid, range: Range<usize>, faces: &[CoupledFace], cell_mass: Real) -> Self {
        let (sites, axes) = faces.iter().map(|f| (f.site, f.axis)).unzip();
        SolidBlock { range, ..Self::at_sites(solid, sites, axes, cell_mass) }
    }

    /// The block of `solid` on impulses at `sites` along `axes` (each an unknown times
    /// `cell_mass`), outside any coupled system.
    pub(crate) fn at_sites(solid: &'a dyn CoupledSolid, sites: Vec<Site>, axes: Vec<usize>, cell_mass: Real) -> Self {
        SolidBlock { solid, range: 0..sites.len(), sites, axes, cell_mass, rank: solid.degrees_of_freedom(), applied: AtomicUsize::new(0), factors: OnceLock::new() }
    }

    /// `Q` and `Q^T S Q`, found by probing on first use (`Q` has no columns for a solid that
    /// impulses do not move).
    pub(crate) fn factored(&self) -> &(DMatrix<Real>, DMatrix<Real>) {
        self.factors.get_or_init(|| self.factor())
    }

    /// `S v` through the solid's response.
    fn response(&self, v: &[Real]) -> Vec<Real> {
        let impulses: Vec<Vec3> = v.iter().zip(&self.axes).map(|(x, &a)| Vec3::ith(a, self.cell_mass * x)).collect();
        let mut changes = vec![Vec3::zeros(); v.len()];
        self.solid.impulse_response(&self.sites, &impulses, &mut changes);
        changes.iter().zip(&self.axes).map(|(c, &a)| c[a]).collect()
    }

    /// `Q` from `r` probes and `C = Q^T S Q`.
    fn factor(&self) -> (DMatrix<Real>, DMatrix<Real>) {
        let n = self.range.len();
        let applied = |m: &DMatrix<Real>| -> DMatrix<Real> {
            let columns: Vec<Vec<Real>> = (0..m.ncols()).into_par_iter().map(|j| self.response(m.column(j).as_slice())).collect();
            DMatrix::from_fn(n, m.ncols(), |i, j| columns[j][i])
        };
        let mut rng = SplitMix64::keyed(&[n as u64, self.rank as u64]);
        let probes = DMatrix::from_fn(n, self.rank, |_, _| 2.0 * rng.next_unit() - 1.0);
        let basis = applied(&probes).qr().q();
        let product = basis.tr_mul(&applied(&basis));
        let core = 0.5 * (&product + product.transpose());
        (basis, core)
    }

    /// `S` itself, one response per face (for a handful of faces).
    pub(crate) fn matrix(&self) -> DMatrix<Real> {
        let n = self.sites.len();
        let columns: Vec<Vec<Real>> = (0..n).map(|j| self.response(&(0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect::<Vec<_>>())).collect();
        DMatrix::from_fn(n, n, |i, j| columns[j][i])
    }

    /// Adds `S mu` to `y` (both over all coupled faces).
    pub fn add_apply(&self, mu: &[Real], y: &mut [Real]) {
        if self.rank == 0 || self.range.is_empty() {
            return;
        }
        let mu = &mu[self.range.clone()];
        let y = &mut y[self.range.clone()];
        let factored = self.rank < mu.len() && self.applied.fetch_add(1, Ordering::Relaxed) >= 2 * self.rank;
        if factored {
            let (basis, core) = self.factors.get_or_init(|| self.factor());
            let change = basis * (core * basis.tr_mul(&DVector::from_column_slice(mu)));
            y.iter_mut().zip(change.iter()).for_each(|(yi, c)| *yi += c);
        } else {
            y.iter_mut().zip(self.response(mu)).for_each(|(yi, c)| *yi += c);
        }
    }

    /// The range of the coupled faces and their sites, the solid let go.
    pub fn into_faces(self) -> (Range<usize>, Vec<Site>) {
        (self.range, self.sites)
    }

    /// The diagonal of `S`: each face's response to its own impulse alone.
    pub fn diagonal(&self) -> Vec<Real> {
        self.solid.impulse_diagonal(&self.sites, &self.axes, self.cell_mass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Shape, TetMesh};
    use crate::solids::reduced::body::{ReducedBody, ReducedModel};
    use crate::solids::reduced::fem::ElasticMaterial;
    use crate::solids::rigid::{BodyKind, Material, RigidBody};
    use crate::solids::Constrained;
    use std::sync::Arc;

    /// `count` coupled faces at random points in the box `size` from the origin along random
    /// axes, and a random `mu` on them.
    fn faces(count: usize, size: Vec3, seed: u64) -> (Vec<CoupledFace>, Vec<Real>) {
        let mut rng = SplitMix64::keyed(&[seed]);
        let mut unit = || rng.next_unit();
        let faces = (0..count)
            .map(|_| {
                let point = Vec3::new(size.x * unit(), size.y * unit(), size.z * unit());
                CoupledFace { axis: (3.0 * unit()) as usize, index: [0; 3], cells: [None, None], solid: 0, open: 1.0, mass: 1.0, site: Site::at(point) }
            })
            .collect();
        let mu = (0..count).map(|_| unit() - 0.5).collect();
        (faces, mu)
    }

    /// After `2 r` products through the solid's response the block is found by probing, and
    /// its products then agree with the response's to 1e-10 of their size: for a reduced body
    /// of eight modes (rank 14), a rigid box held on the floor at four corners (rank 6, its
    /// block of rank 3) and a kinematic body (rank 0: no block).
    #[test]
    fn probed_blocks_apply_as_the_solids_respond() {
        let size = Vec3::new(0.4, 0.2, 0.1);
        let mesh = TetMesh::box_grid(&Vec3::zeros(), &size, [4, 2, 2]);
        let model = ReducedModel::new(&mesh, &ElasticMaterial { young: 2e4, poisson: 0.3, density: 600.0 }, 8, 0.0, false, None).unwrap();
        let mut reduced = ReducedBody::new("soft", Arc::new(model), Vec3::zeros());
        reduced.q = (0..8).map(|k| 0.002 * (k as Real + 1.0)).collect();
        let shape = Shape::Box { min: Vec3::zeros(), max: size };
        let material = Material { restitution: 0.0, friction: 0.5 };
        let mut rigid = RigidBody::new("box", BodyKind::Dynamic, &shape, 2000.0, material, 0.05);
        let corners: Vec<(Vec3, Vec3)> = [[0.0, 0.0], [0.4, 0.0], [0.0, 0.1], [0.4, 0.1]].iter().map(|[x, z]| (Vec3::new(*x, 0.0, *z), Vec3::y())).collect();
        let held = Constrained::new(&mut rigid, &corners);
        let still = RigidBody::new("still", BodyKind::Kinematic, &shape, 2000.0, material, 0.05);
        let (faces, mu) = faces(40, size, 3);
        for (solid, rank) in [(&reduced as &dyn CoupledSolid, 14), (&held, 6), (&still as &dyn CoupledSolid, 0)] {
            assert_eq!(solid.degrees_of_freedom(), rank);
            let block = SolidBlock::new(solid, 0..40, &faces, 8.0);
            let direct = block.response(&mu);
            let scale = direct.iter().fold(0.0, |m: Real, v| m.max(v.abs()));
            for product in 0..=2 * rank + 1 {
                let mut y = vec![0.0; 40];
                block.add_apply(&mu, &mut y);
                let off = y.iter().zip(&direct).fold(0.0, |m: Real, (a, b)| m.max((a - b).abs()));
                assert!(off <= 1e-10 * scale, "rank {rank}, product {product}: off by {off} of {scale}");
                assert_eq!(block.factors.get().is_some(), rank > 0 && product >= 2 * rank, "rank {rank}, product {product}");
            }
        }
    }
}
