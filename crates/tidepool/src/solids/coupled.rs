//! What the monolithic solid–fluid solve ([`crate::coupling`]) needs from a solid: its shape,
//! the velocity of its material, and its impulse response `J K J^T` (Lu, Jin, Fedkiw eq. 43).

use crate::math::{Real, Vec3};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

/// Where the fluid samples a solid: a coupled face's dual cell (the cube `centre +- half`) and
/// the centroid `point` of the solid's part of it (Shinar sec. 5.3). A point alone (a contact,
/// a viscous link) is a site whose cell is that point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Site {
    /// Where the impulse acts on a solid that answers at a point (m).
    pub point: Vec3,
    /// The dual cell's centre, the face's position (m).
    pub centre: Vec3,
    /// Half the dual cell's side (m): `dx/2`, or 0 for a point alone.
    pub half: Real,
}

impl Site {
    /// The point `point` alone.
    pub fn at(point: Vec3) -> Self {
        Site { point, centre: point, half: 0.0 }
    }

    /// The sites' points.
    pub fn points(sites: &[Site]) -> Vec<Vec3> {
        sites.iter().map(|s| s.point).collect()
    }

    /// The dual cell's corners.
    pub fn cell(&self) -> (Vec3, Vec3) {
        (self.centre - Vec3::repeat(self.half), self.centre + Vec3::repeat(self.half))
    }
}

/// What the coupled solve needs from a solid.
pub trait CoupledSolid: Sync {
    /// Signed distance from `x` to the solid's surface (negative inside).
    fn signed_distance(&self, x: &Vec3) -> Real;
    /// A ball (centre, radius) containing the solid.
    fn bounding_sphere(&self) -> (Vec3, Real);
    /// The solid's volume (m^3).
    fn volume(&self) -> Real;
    /// Velocity of the solid's material at `x`.
    fn velocity_at(&self, x: &Vec3) -> Vec3;
    /// The solid's velocity as the fluid samples it at `site` (`W_DC V`, Shinar eq. 5.3); the
    /// impulses at a site spread over the solid by the same weights (eq. 5.4). By default its
    /// velocity at the site's point.
    fn velocity_in(&self, site: &Site) -> Vec3 {
        self.velocity_at(&site.point)
    }
    /// The velocity changes at `sites` that the impulses `impulses` applied there would cause
    /// (`J K J^T`), written to `changes`.
    fn impulse_response(&self, sites: &[Site], impulses: &[Vec3], changes: &mut [Vec3]);
    /// The diagonal of the response on `sites` along `axes`: the velocity change along each
    /// site's axis that an impulse `scale` along it alone causes. By default one
    /// [`CoupledSolid::impulse_response`] a site ([`diagonal_by_responses`]).
    fn impulse_diagonal(&self, sites: &[Site], axes: &[usize], scale: Real) -> Vec<Real> {
        diagonal_by_responses(self, sites, axes, scale)
    }
    /// The number of independent velocities the solid's impulses change (6 for a rigid body,
    /// 0 for one that moves by script): the response at any points has at most this rank.
    fn degrees_of_freedom(&self) -> usize;
    /// Applies the impulses `impulses` at `sites`.
    fn apply_impulses(&mut self, sites: &[Site], impulses: &[Vec3]);
    /// Whether the solid is a sheet with no inside (cloth, a thin shell simulated in full):
    /// the coupled solve then couples only the faces whose two cells it separates (Shinar sec.
    /// 5.5), not those whose dual cells it merely passes through alongside the face's axis.
    fn is_sheet(&self) -> bool {
        false
    }
    /// Whether the segment from `a` to `b` passes through a sheet's middle surface: the
    /// particle transfers of FLIP do not reach across it. Never for a solid with an inside.
    fn crosses(&self, _a: &Vec3, _b: &Vec3) -> bool {
        false
    }
    /// Whether impulses at `x`, on the solid, move it freely there (not where it is pinned,
    /// nor next to a pin).
    fn moves_at(&self, _x: &Vec3) -> bool {
        self.degrees_of_freedom() > 0
    }
}

/// [`CoupledSolid::impulse_diagonal`] by one response of `solid` a site, the sites side by
/// side.
pub fn diagonal_by_responses<S: CoupledSolid + ?Sized>(solid: &S, sites: &[Site], axes: &[usize], scale: Real) -> Vec<Real> {
    sites
        .par_iter()
        .zip(axes)
        .map(|(x, &a)| {
            let mut change = [Vec3::zeros()];
            solid.impulse_response(&[*x], &[Vec3::ith(a, scale)], &mut change);
            change[0][a]
        })
        .collect()
}

/// A solid in a solve after contact: its velocity along the normals of its contact points is
/// prescribed (contact has just set it), along every other direction it responds as the solid
/// does. Its response is `K - K C^T (C K C^T)^+ C K`, `K` the solid's (`J K J^T`) and `C` the
/// rows that take the normal velocity at each contact point: the contact's reactions `-C^T
/// lambda` cancel the normal velocity an impulse would cause there. Still symmetric and
/// positive semi-definite. Without contact points it is the solid itself.
pub struct Constrained<'a> {
    solid: &'a mut dyn CoupledSolid,
    /// The contact points and their unit normals.
    contacts: Vec<(Vec3, Vec3)>,
    /// `(C K C^T)^+`, the pseudo-inverse (contacts are often redundant: a box on the floor
    /// touches at many points and is held in three directions).
    inverse: DMatrix<Real>,
}

/// Eigenvalues of `C K C^T` below this fraction of the largest are taken as zero.
const CONSTRAINT_RANK_TOLERANCE: Real = 1e-9;

/// At most this many contact points hold a solid: a resting face touches at many samples
/// that hold it no more than a few spread over it do (a rigid body has six directions to hold),
/// and each point costs a response of the solid to build `C K C^T`. The first 32 frames of
/// `starfish_rocks.toml` at 28 cells (twelve starfish of twenty modes reaching the rocks) took
/// 283 s with all their samples, 242 s with sixteen.
const MAX_CONTACT_POINTS: usize = 16;

/// Up to [`MAX_CONTACT_POINTS`] of `contacts`, spread out: the first the farthest from their
/// mean, each next the farthest from those taken, points apart by their distance plus the
/// contacts' size times the difference of their normals (a box in a corner keeps both walls).
fn spread(contacts: &[(Vec3, Vec3)]) -> Vec<(Vec3, Vec3)> {
    if contacts.len() <= MAX_CONTACT_POINTS {
        return contacts.to_vec();
    }
    let mean = contacts.iter().map(|(p, _)| p).sum::<Vec3>() / contacts.len() as Real;
    let size = contacts.iter().map(|(p, _)| (p - mean).norm()).fold(0.0, Real::max);
    let apart = |(p, n): &(Vec3, Vec3), (q, m): &(Vec3, Vec3)| (p - q).norm() + size * (n - m).norm();
    let first = contacts.iter().map(|(p, _)| (p - mean).norm()).enumerate().max_by(|a, b| a.1.total_cmp(&b.1)).map_or(0, |(i, _)| i);
    let mut nearest: Vec<Real> = contacts.iter().map(|c| apart(c, &contacts[first])).collect();
    let mut taken = vec![contacts[first]];
    while taken.len() < MAX_CONTACT_POINTS {
        let (next, _) = nearest.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).expect("contacts");
        taken.push(contacts[next]);
        for (d, c) in nearest.iter_mut().zip(contacts) {
            *d = d.min(apart(c, &contacts[next]));
        }
    }
    taken
}

impl<'a> Constrained<'a> {
    /// `solid` held along `contacts` (point, unit normal; [`MAX_CONTACT_POINTS`] of them spread
    /// out where there are more).
    pub fn new(solid: &'a mut dyn CoupledSolid, contacts: &[(Vec3, Vec3)]) -> Self {
        Self::exactly(solid, &spread(contacts))
    }

    /// `solid` held along every one of `contacts`.
    fn exactly(solid: &'a mut dyn CoupledSolid, contacts: &[(Vec3, Vec3)]) -> Self {
        let m = contacts.len();
        if m == 0 {
            return Constrained { solid, contacts: Vec::new(), inverse: DMatrix::zeros(0, 0) };
        }
        let points: Vec<Site> = contacts.iter().map(|(p, _)| Site::at(*p)).collect();
        let mut a = DMatrix::zeros(m, m);
        let mut changes = vec![Vec3::zeros(); m];
        let mut impulses = vec![Vec3::zeros(); m];
        for (j, (_, n)) in contacts.iter().enumerate() {
            impulses[j] = *n;
            solid.impulse_response(&points, &impulses, &mut changes);
            impulses[j] = Vec3::zeros();
            for (i, ((_, ni), v)) in contacts.iter().zip(&changes).enumerate() {
                a[(i, j)] = ni.dot(v);
            }
        }
        let a = 0.5 * (&a + a.transpose());
        let eigen = a.symmetric_eigen();
        let largest = eigen.eigenvalues.iter().fold(0.0, |m: Real, e| m.max(*e));
        let inverse_values = eigen.eigenvalues.map(|e| if largest > 0.0 && e > CONSTRAINT_RANK_TOLERANCE * largest { 1.0 / e } else { 0.0 });
        let inverse = &eigen.eigenvectors * DMatrix::from_diagonal(&inverse_values) * eigen.eigenvectors.transpose();
        Constrained { solid, contacts: contacts.to_vec(), inverse }
    }

    /// `sites` followed by the contact points.
    fn with_contacts(&self, sites: &[Site]) -> Vec<Site> {
        sites.iter().copied().chain(self.contacts.iter().map(|(p, _)| Site::at(*p))).collect()
    }

    /// The loads at `all` ([`Constrained::with_contacts`] of the impulses' points): `impulses`
    /// followed by the reactions `-lambda n` at the contact points that cancel the normal
    /// velocity the impulses cause there.
    fn loads(&self, all: &[Site], impulses: &[Vec3]) -> Vec<Vec3> {
        let mut loads: Vec<Vec3> = impulses.iter().copied().chain(std::iter::repeat_n(Vec3::zeros(), self.contacts.len())).collect();
        let mut changes = vec![Vec3::zeros(); all.len()];
        self.solid.impulse_response(all, &loads, &mut changes);
        let normal = DVector::from_iterator(self.contacts.len(), self.contacts.iter().zip(&changes[impulses.len()..]).map(|((_, n), v)| n.dot(v)));
        let lambda = &self.inverse * normal;
        for ((load, (_, n)), l) in loads[impulses.len()..].iter_mut().zip(&self.contacts).zip(lambda.iter()) {
            *load = -*l * n;
        }
        loads
    }
}

impl CoupledSolid for Constrained<'_> {
    fn signed_distance(&self, x: &Vec3) -> Real {
        self.solid.signed_distance(x)
    }

    fn bounding_sphere(&self) -> (Vec3, Real) {
        self.solid.bounding_sphere()
    }

    fn volume(&self) -> Real {
        self.solid.volume()
    }

    fn velocity_at(&self, x: &Vec3) -> Vec3 {
        self.solid.velocity_at(x)
    }

    fn velocity_in(&self, site: &Site) -> Vec3 {
        self.solid.velocity_in(site)
    }

    fn is_sheet(&self) -> bool {
        self.solid.is_sheet()
    }

    fn crosses(&self, a: &Vec3, b: &Vec3) -> bool {
        self.solid.crosses(a, b)
    }

    fn moves_at(&self, x: &Vec3) -> bool {
        self.solid.moves_at(x)
    }

    fn degrees_of_freedom(&self) -> usize {
        self.solid.degrees_of_freedom()
    }

    fn impulse_response(&self, sites: &[Site], impulses: &[Vec3], changes: &mut [Vec3]) {
        if self.contacts.is_empty() {
            return self.solid.impulse_response(sites, impulses, changes);
        }
        let all = self.with_contacts(sites);
        let loads = self.loads(&all, impulses);
        let mut all_changes = vec![Vec3::zeros(); all.len()];
        self.solid.impulse_response(&all, &loads, &mut all_changes);
        changes.copy_from_slice(&all_changes[..sites.len()]);
    }

    fn impulse_diagonal(&self, sites: &[Site], axes: &[usize], scale: Real) -> Vec<Real> {
        if self.contacts.is_empty() {
            return self.solid.impulse_diagonal(sites, axes, scale);
        }
        diagonal_by_responses(self, sites, axes, scale)
    }

    fn apply_impulses(&mut self, sites: &[Site], impulses: &[Vec3]) {
        if self.contacts.is_empty() {
            return self.solid.apply_impulses(sites, impulses);
        }
        let all = self.with_contacts(sites);
        let loads = self.loads(&all, impulses);
        self.solid.apply_impulses(&all, &loads);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Shape;
    use crate::math::SplitMix64;
    use crate::solids::rigid::{BodyKind, Material, RigidBody};

    /// A box 0.4 x 0.1 x 0.2 m resting on the floor at its four bottom corners (normal up),
    /// and a set of random impulses at random points in it.
    fn resting_box() -> (RigidBody, Vec<(Vec3, Vec3)>) {
        let shape = Shape::Box { min: Vec3::new(0.0, 0.0, 0.0), max: Vec3::new(0.4, 0.1, 0.2) };
        let body = RigidBody::new("box", BodyKind::Dynamic, &shape, 2000.0, Material { restitution: 0.0, friction: 0.5 }, 0.05);
        let corners = [[0.0, 0.0], [0.4, 0.0], [0.0, 0.2], [0.4, 0.2]].map(|[x, z]| (Vec3::new(x, 0.0, z), Vec3::y()));
        (body, corners.to_vec())
    }

    fn random_impulses(seed: u64, count: usize) -> (Vec<Site>, Vec<Vec3>) {
        let mut rng = SplitMix64::keyed(&[seed]);
        let mut unit = || rng.next_unit();
        let points = (0..count).map(|_| Site::at(Vec3::new(0.4 * unit(), 0.1 * unit(), 0.2 * unit()))).collect();
        let impulses = (0..count).map(|_| Vec3::new(unit() - 0.5, unit() - 0.5, unit() - 0.5)).collect();
        (points, impulses)
    }

    #[test]
    fn a_solid_held_along_its_contacts_responds_symmetrically_along_the_other_directions() {
        let (mut body, contacts) = resting_box();
        let (points, a) = random_impulses(1, 6);
        let (_, b) = random_impulses(2, 6);
        let dot = |x: &[Vec3], y: &[Vec3]| x.iter().zip(y).map(|(u, v)| u.dot(v)).sum::<Real>();
        let held = Constrained::new(&mut body, &contacts);
        let (mut ka, mut kb) = (vec![Vec3::zeros(); 6], vec![Vec3::zeros(); 6]);
        held.impulse_response(&points, &a, &mut ka);
        held.impulse_response(&points, &b, &mut kb);
        assert!((dot(&a, &kb) - dot(&b, &ka)).abs() <= 1e-12 * dot(&a, &ka).abs(), "not symmetric: {} vs {}", dot(&a, &kb), dot(&b, &ka));
        assert!(dot(&a, &ka) > 0.0, "not positive: {}", dot(&a, &ka));
        // Where contact holds it, nothing moves: the corners keep their normal velocity.
        let mut with_corners = points.clone();
        with_corners.extend(contacts.iter().map(|(p, _)| Site::at(*p)));
        let mut loads = a.clone();
        loads.extend([Vec3::zeros(); 4]);
        let mut changes = vec![Vec3::zeros(); 10];
        held.impulse_response(&with_corners, &loads, &mut changes);
        let scale = ka.iter().map(|v| v.norm()).fold(0.0, Real::max);
        for (c, (_, n)) in changes[6..].iter().zip(&contacts) {
            assert!(c.dot(n).abs() <= 1e-12 * scale, "a corner moves along its normal at {}", c.dot(n));
        }
        // Along the floor it is free: a push through its centre moves it as it moves the box alone.
        let centre = [Site::at(Vec3::new(0.2, 0.05, 0.1))];
        let push = [Vec3::new(1.0, 0.0, 0.5)];
        let (mut constrained, mut free) = ([Vec3::zeros()], [Vec3::zeros()]);
        held.impulse_response(&centre, &push, &mut constrained);
        body.impulse_response(&centre, &push, &mut free);
        assert!((constrained[0] - free[0]).norm() <= 1e-12 * free[0].norm(), "{constrained:?} vs {free:?}");
    }

    /// A box in a corner touching the floor and a wall at 100 points each: the 16 spread points
    /// keep both normals and hold the rigid box exactly as all 200 do.
    #[test]
    fn spread_contact_points_hold_a_rigid_solid_as_all_of_them_do() {
        let (mut body, _) = resting_box();
        let mut contacts = Vec::new();
        for i in 0..10 {
            for j in 0..10 {
                let (u, v) = (i as Real / 9.0, j as Real / 9.0);
                contacts.push((Vec3::new(0.4 * u, 0.0, 0.2 * v), Vec3::y()));
                contacts.push((Vec3::new(0.0, 0.1 * u, 0.2 * v), Vec3::x()));
            }
        }
        let kept = spread(&contacts);
        assert_eq!(kept.len(), MAX_CONTACT_POINTS);
        assert!(kept.iter().any(|(_, n)| *n == Vec3::y()) && kept.iter().any(|(_, n)| *n == Vec3::x()), "one wall's normal was lost");
        let (points, impulses) = random_impulses(4, 5);
        let (mut all, mut few) = (vec![Vec3::zeros(); 5], vec![Vec3::zeros(); 5]);
        Constrained::new(&mut body, &contacts).impulse_response(&points, &impulses, &mut few);
        Constrained::exactly(&mut body, &contacts).impulse_response(&points, &impulses, &mut all);
        for (f, a) in few.iter().zip(&all) {
            assert!((f - a).norm() <= 1e-9 * a.norm().max(1e-12), "{f:?} vs {a:?}");
        }
    }

    #[test]
    fn impulses_on_a_held_solid_change_its_velocity_as_its_response_says() {
        let (mut body, contacts) = resting_box();
        let (points, impulses) = random_impulses(3, 5);
        let before: Vec<Vec3> = points.iter().map(|p| body.velocity_at(&p.point)).collect();
        let mut expected = vec![Vec3::zeros(); 5];
        let mut held = Constrained::new(&mut body, &contacts);
        held.impulse_response(&points, &impulses, &mut expected);
        held.apply_impulses(&points, &impulses);
        for ((p, v0), e) in points.iter().zip(before).zip(expected) {
            let change = body.velocity_at(&p.point) - v0;
            assert!((change - e).norm() <= 1e-12 * e.norm().max(1e-12), "{change:?} vs {e:?}");
        }
    }
}
