//! Collisions and contact between bodies and with static geometry (Guendelman, Bridson and
//! Fedkiw 2003, as used in Shinar's thesis ch. 3), written once for every kind of body through
//! [`ContactBody`]: rigid bodies, and the sub-bodies of reduced deformable bodies, whose
//! impulses act through their impulse factor `K_lambda` (Lu, Jin, Fedkiw sec. 4: split between
//! frame and modes so that momentum is conserved).
//!
//! Interference is tested at predicted positions: each body's surface samples against the
//! other body's signed distance (less the sample's reach: a sheet's samples lie on its
//! mid-surface, half its thickness inside it). Impulses act at the samples' current positions along the
//! other body's outward normal, with Coulomb friction (`impulse`). Bodies of one group (the
//! sub-bodies of an articulation, joined where they overlap) do not collide with each other.

use crate::geometry::{unit_gradient, Shape};
use crate::math::{Mat3, Real, Vec3};
use crate::solids::rigid::Material;
use std::collections::HashMap;

/// A signed distance (negative inside).
pub type Distance<'a> = Box<dyn Fn(&Vec3) -> Real + 'a>;

/// What collisions and contact need from a body.
pub trait ContactBody {
    /// Whether impulses move the body (static and kinematic bodies push as with infinite mass).
    fn is_dynamic(&self) -> bool;
    /// Restitution and friction.
    fn material(&self) -> Material;
    /// A ball (centre, radius) containing the body.
    fn bounding_sphere(&self) -> (Vec3, Real);
    /// A bound on the speed of the body's points (m/s).
    fn speed_bound(&self) -> Real;
    /// The body's contact samples on its surface: where each is, and where it will be after
    /// `dt` with the body's velocities plus `kick`.
    fn samples(&self, dt: Real, kick: &Vec3) -> Vec<(Vec3, Vec3)>;
    /// How far the body's material reaches beyond its samples (m): half a sheet's thickness,
    /// whose samples lie on its mid-surface; 0 for bodies sampled on their surface.
    fn reach(&self) -> Real {
        0.0
    }
    /// The body's signed distance (negative inside) where it will be after `dt` with its
    /// velocities plus `kick`: exact where it is below `within`; elsewhere it may be any value
    /// from `within` up (a body whose exact distance is costly far from it stops looking there).
    fn distance_after(&self, dt: Real, kick: &Vec3, within: Real) -> Distance<'_>;
    /// Velocity of the body's material at world point `x`.
    fn point_velocity(&self, x: &Vec3) -> Vec3;
    /// Impulse response at `x`: the velocity change there per unit impulse applied there
    /// (zero for a body that does not move).
    fn impulse_factor(&self, x: &Vec3) -> Mat3;
    /// Applies impulse `j` (N s) at world point `x`.
    fn apply_impulse(&mut self, j: &Vec3, x: &Vec3);
}

/// Sweeps over all pairs in the collision phase.
const COLLISION_ITERATIONS: usize = 5;
/// Sweeps over the touching pairs in each contact phase, before the shock-propagation sweep.
const CONTACT_ITERATIONS: usize = 10;
/// Sweeps over the interpenetrating pairs in the interpenetration resolution.
const SEPARATION_ITERATIONS: usize = 5;
/// Samples closer than this fraction of the body's size to a surface count as touching in the
/// contact phase (so contacts keep their friction once their normal velocity is stopped).
const CONTACT_MARGIN: Real = 1e-3;
/// Step of the central differences that give surface normals (m).
const NORMAL_STEP: Real = 1e-6;

/// Restitution and friction of the domain walls and obstacles in collisions with bodies.
pub const STATIC_MATERIAL: Material = Material { restitution: 0.2, friction: 0.5 };

/// The static world: the closed sides of the domain box and fixed obstacles.
#[derive(Clone, Debug)]
pub struct StaticGeometry {
    /// Domain corner with the smallest coordinates (m).
    pub min: Vec3,
    /// Domain corner with the largest coordinates (m).
    pub max: Vec3,
    /// Which sides are closed walls: `[axis][0]` the low side, `[axis][1]` the high side.
    pub walls: [[bool; 2]; 3],
    /// Obstacles, in world space.
    pub obstacles: Vec<Shape>,
    /// Restitution and friction of all static surfaces.
    pub material: Material,
}

impl StaticGeometry {
    /// Signed distance to the static solid (negative inside a wall or an obstacle).
    pub fn signed_distance(&self, x: &Vec3) -> Real {
        let mut d = Real::INFINITY;
        for a in 0..3 {
            if self.walls[a][0] {
                d = d.min(x[a] - self.min[a]);
            }
            if self.walls[a][1] {
                d = d.min(self.max[a] - x[a]);
            }
        }
        self.obstacles.iter().fold(d, |d, o| d.min(o.signed_distance(x)))
    }
}

/// What a body touches: another body or the static world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Partner {
    /// The body with this index.
    Body(usize),
    /// The static geometry.
    Static,
}

/// A pair that may touch: a dynamic body and its partner.
pub type Pair = (usize, Partner);

/// A sample of `owner` found inside `other` at the predicted positions.
struct Contact {
    owner: usize,
    other: Partner,
    /// Index of the sample in the owner's list.
    sample: usize,
    /// The sample's current world position, where the impulse acts.
    point: Vec3,
    /// Outward normal of `other` at the sample's predicted position.
    normal: Vec3,
    /// Signed distance of the predicted sample to `other` (negative).
    depth: Real,
}

/// Samples of each body of the pair inside the other or within `margin` of its surface, with
/// both where they will be after `dt` with their velocities plus `kick`.
fn find_contacts(bodies: &[&mut dyn ContactBody], statics: &StaticGeometry, pair: Pair, margin: Real, dt: Real, kick: &Vec3) -> Vec<Contact> {
    let mut found = Vec::new();
    let mut test = |owner: usize, other: Partner| {
        let body = &bodies[owner];
        let (distance, reach): (Distance<'_>, Option<(Vec3, Real)>) = match other {
            Partner::Static => (Box::new(|y: &Vec3| statics.signed_distance(y)), None),
            Partner::Body(b) => {
                let (centre, radius) = bodies[b].bounding_sphere();
                let moved = dt * (bodies[b].speed_bound() + kick.norm());
                // Exact wherever a sample may count as touching, and the normal's differences
                // around it.
                let within = margin + body.reach() + 2.0 * NORMAL_STEP;
                (bodies[b].distance_after(dt, kick, within), Some((centre, 1.1 * radius + moved + margin)))
            }
        };
        for (sample, (now, at)) in body.samples(dt, kick).into_iter().enumerate() {
            if reach.is_some_and(|(centre, radius)| (at - centre).norm() > radius) {
                continue;
            }
            let depth = distance(&at) - body.reach();
            if depth < margin {
                if let Some(normal) = unit_gradient(&distance, &at, NORMAL_STEP) {
                    found.push(Contact { owner, other, sample, point: now, normal, depth });
                }
            }
        }
    };
    let (a, partner) = pair;
    test(a, partner);
    if let Partner::Body(b) = partner {
        test(b, Partner::Body(a));
    }
    found.sort_by(|x, y| x.depth.total_cmp(&y.depth));
    found
}

/// Whether impulses move body `i` (dynamic and not frozen by shock propagation; bodies past
/// the end of `frozen` are not frozen).
fn mobile(bodies: &[&mut dyn ContactBody], frozen: &[bool], i: usize) -> bool {
    bodies[i].is_dynamic() && !frozen.get(i).copied().unwrap_or(false)
}

/// How a contact's two sides respond to an impulse at its point.
struct Response {
    /// Relative velocity of owner against other at the point.
    u: Vec3,
    /// Sum of both sides' impulse factors (frozen and static sides have none).
    k: Mat3,
    material: Material,
    owner_moves: bool,
    other_moves: bool,
}

fn response(bodies: &[&mut dyn ContactBody], frozen: &[bool], statics: &StaticGeometry, c: &Contact) -> Response {
    let owner = &bodies[c.owner];
    let owner_moves = mobile(bodies, frozen, c.owner);
    let (other_velocity, other_moves, other_material) = match c.other {
        Partner::Static => (Vec3::zeros(), false, statics.material),
        Partner::Body(b) => (bodies[b].point_velocity(&c.point), mobile(bodies, frozen, b), bodies[b].material()),
    };
    let mut k = Mat3::zeros();
    if owner_moves {
        k += owner.impulse_factor(&c.point);
    }
    if let (Partner::Body(b), true) = (c.other, other_moves) {
        k += bodies[b].impulse_factor(&c.point);
    }
    Response { u: owner.point_velocity(&c.point) - other_velocity, k, material: owner.material().combine(&other_material), owner_moves, other_moves }
}

/// Applies `j` to the owner and `-j` to the other side at the contact point.
fn apply(bodies: &mut [&mut dyn ContactBody], c: &Contact, r: &Response, j: &Vec3) {
    if r.owner_moves {
        bodies[c.owner].apply_impulse(j, &c.point);
    }
    if let (Partner::Body(b), true) = (c.other, r.other_moves) {
        bodies[b].apply_impulse(&-j, &c.point);
    }
}

/// Collision impulse: if owner and other approach at the point (`u.n < 0`), their relative
/// velocity becomes `-e (u.n) n` without sliding when the needed impulse
/// `j = K^-1 (-e (u.n) n - u)` lies in the friction cone `|j_t| <= mu j_n`; otherwise the point
/// slides, `j = j_n (n - mu t)` along the sliding direction `t`, with the `j_n` that gives the
/// normal velocity.
fn collision_impulse(bodies: &mut [&mut dyn ContactBody], statics: &StaticGeometry, c: &Contact) {
    let r = response(bodies, &[], statics, c);
    let (n, e, mu) = (c.normal, r.material.restitution, r.material.friction);
    let un = r.u.dot(&n);
    let Some(k_inverse) = r.k.try_inverse().filter(|_| un < 0.0) else { return };
    let mut j = k_inverse * (-e * un * n - r.u);
    let jn = j.dot(&n);
    if (j - jn * n).norm() > mu * jn {
        if let Some(t) = (r.u - un * n).try_normalize(1e-12) {
            let direction = n - mu * t;
            j = (-(1.0 + e) * un / n.dot(&(r.k * direction))) * direction;
        }
    }
    apply(bodies, c, &r, &j);
}

/// Contact impulse, accumulated over the sweeps of one contact phase (sequential impulses):
/// first the normal part, `dj_n = -u.n / (n.K n)` added to the contact's total normal impulse
/// and the total kept at least zero (contacts push, never pull, but may take back what they
/// gave in earlier sweeps); then the friction part, the impulse along the sliding direction
/// `t` that stops the sliding, `-|u_t| / (t.K t)`, added to the total tangential impulse and
/// the total kept within the friction cone `|j_t| <= mu j_n`. So static friction holds and
/// sliding friction is `mu` times the normal impulse.
fn contact_impulse(bodies: &mut [&mut dyn ContactBody], frozen: &[bool], statics: &StaticGeometry, c: &Contact, total: &mut Vec3) {
    let n = c.normal;
    let r = response(bodies, frozen, statics, c);
    let nkn = n.dot(&(r.k * n));
    if nkn <= 0.0 {
        return;
    }
    let (old_normal, old_tangent) = (total.dot(&n), *total - total.dot(&n) * n);
    let normal = (old_normal - r.u.dot(&n) / nkn).max(0.0);
    apply(bodies, c, &r, &((normal - old_normal) * n));
    let r = response(bodies, frozen, statics, c);
    let sliding = r.u - r.u.dot(&n) * n;
    let mut tangent = old_tangent;
    if let Some(t) = sliding.try_normalize(1e-12) {
        tangent -= t * (sliding.norm() / t.dot(&(r.k * t)));
    }
    let limit = r.material.friction * normal;
    if tangent.norm() > limit {
        tangent *= limit / tangent.norm();
    }
    apply(bodies, c, &r, &(tangent - old_tangent));
    *total = normal * n + tangent;
}

/// Pairs of bodies of different `groups` whose bounding spheres, grown by what the bodies can
/// move in `dt`, overlap; bodies against the static world always.
fn candidate_pairs(bodies: &[&mut dyn ContactBody], groups: &[usize], dt: Real) -> Vec<Pair> {
    let spheres: Vec<(Vec3, Real)> = bodies
        .iter()
        .map(|b| {
            let (centre, radius) = b.bounding_sphere();
            (centre, radius + 2.0 * dt * b.speed_bound())
        })
        .collect();
    let mut pairs = Vec::new();
    for i in (0..bodies.len()).filter(|&i| bodies[i].is_dynamic()) {
        pairs.push((i, Partner::Static));
        for (j, b) in bodies.iter().enumerate() {
            let counted = b.is_dynamic() && j < i;
            if j != i && groups[j] != groups[i] && !counted && (spheres[i].0 - spheres[j].0).norm() < spheres[i].1 + spheres[j].1 {
                pairs.push((i, Partner::Body(j)));
            }
        }
    }
    pairs
}

/// The margin within which a sample of body `owner` counts as touching in the contact phase.
fn contact_margin(bodies: &[&mut dyn ContactBody], owner: usize) -> Real {
    CONTACT_MARGIN * bodies[owner].bounding_sphere().1
}

/// Collision phase: in sweeps over all candidate pairs (bodies of one of `groups` never
/// collide with each other), the deepest interference at the positions reached with the
/// current velocities plus `kick` (the half-step gravity) gets a collision impulse with the
/// pair's restitution. Returns the pairs found touching, the only ones contact will process.
pub fn collide(bodies: &mut [&mut dyn ContactBody], groups: &[usize], statics: &StaticGeometry, dt: Real, kick: &Vec3) -> Vec<Pair> {
    let pairs = candidate_pairs(bodies, groups, dt);
    let mut touching = vec![false; pairs.len()];
    for _ in 0..COLLISION_ITERATIONS {
        for (p, &pair) in pairs.iter().enumerate() {
            let contacts = find_contacts(bodies, statics, pair, 0.0, dt, kick);
            if let Some(deepest) = contacts.first() {
                touching[p] = true;
                collision_impulse(bodies, statics, deepest);
            }
        }
    }
    pairs.into_iter().zip(touching).filter_map(|(pair, t)| t.then_some(pair)).collect()
}

/// The pairs (of bodies of different `groups`) that touch (within the contact margin) at the
/// positions the current velocities lead to; and where the static geometry touches them, for
/// each body (by index) its samples within the margin and the static geometry's unit normals
/// there, one list of `(point, normal)` per body. Contact between two bodies holds neither in
/// place (two floats pressed together still rise and fall together), so it gives none.
pub fn touching(bodies: &[&mut dyn ContactBody], groups: &[usize], statics: &StaticGeometry, dt: Real) -> (Vec<Pair>, Vec<Vec<(Vec3, Vec3)>>) {
    let mut static_points = vec![Vec::new(); bodies.len()];
    let pairs = candidate_pairs(bodies, groups, dt)
        .into_iter()
        .filter(|&pair| {
            let found = find_contacts(bodies, statics, pair, contact_margin(bodies, pair.0), dt, &Vec3::zeros());
            if pair.1 == Partner::Static {
                for c in &found {
                    static_points[c.owner].push((c.point, c.normal));
                }
            }
            !found.is_empty()
        })
        .collect();
    (pairs, static_points)
}

/// Contact phase on the touching `pairs`: sweeps that stop every approaching sample (no
/// restitution) at the positions the current velocities lead to, then one sweep in the
/// order of the contact graph's levels (bodies on the static world first, then what rests on
/// them, ...), each level processed with the levels below it frozen (shock propagation), so
/// that stacks settle without the lower bodies being pushed into the ground.
pub fn contact(bodies: &mut [&mut dyn ContactBody], statics: &StaticGeometry, dt: Real, pairs: &[Pair]) {
    let mut totals: HashMap<(usize, Partner, usize), Vec3> = HashMap::new();
    let mut sweep = |bodies: &mut [&mut dyn ContactBody], pairs: &[Pair], frozen: &[bool]| {
        for &pair in pairs {
            let contacts = find_contacts(bodies, statics, pair, contact_margin(bodies, pair.0), dt, &Vec3::zeros());
            for c in &contacts {
                let total = totals.entry((c.owner, c.other, c.sample)).or_default();
                contact_impulse(bodies, frozen, statics, c, total);
            }
        }
    };
    for _ in 0..CONTACT_ITERATIONS {
        sweep(bodies, pairs, &[]);
    }
    let levels = contact_levels(bodies.len(), pairs);
    let top = levels.iter().copied().max().unwrap_or(0);
    for level in 0..=top {
        let frozen: Vec<bool> = levels.iter().map(|&l| l < level).collect();
        let at_level: Vec<Pair> = pairs
            .iter()
            .copied()
            .filter(|&(a, other)| {
                let other_level = match other {
                    Partner::Static => 0,
                    Partner::Body(b) => levels[b],
                };
                levels[a].max(other_level) == level
            })
            .collect();
        sweep(bodies, &at_level, &frozen);
    }
}

/// Interpenetration resolution (Shinar sec. 3.6.1), pairwise: neither collisions nor contact
/// push bodies apart that already overlap (they only stop them approaching), so a body
/// placed into another, or pressed in by a stiff liquid solve or a fast deformation, would
/// stay inside. Called on the velocities the positions are about to move with over `dt`
/// (`v^{n+1/2}`, which the pipeline discards afterwards), it adds to them the pseudo-velocity
/// that moves every sample found deeper inside another body or the static world than the
/// contact margin `m` (`d < -m`) back to that depth over `dt`: a relative normal velocity of
/// `-(d + m)/dt` more, by equal and opposite normal impulses (so the pair's centre of mass
/// stays where it was and no velocity is left behind). Shallower overlaps are contact's: a
/// rubber box resting on another presses into it a little, and pushing that out every substep
/// made a standing tower drift (3.3 mm in four seconds, against 0.14 mm).
/// Like contact, sequential impulses over the `touching` pairs (those within the contact
/// margin, [`touching`]): each sample's accumulated impulse is kept at least zero, and the
/// depths are measured anew each sweep at the positions the velocities lead to.
pub fn separate(bodies: &mut [&mut dyn ContactBody], statics: &StaticGeometry, dt: Real, touching: &[Pair]) {
    // The samples deeper than their body's contact margin, which contact leaves alone.
    let overlapping = |bodies: &[&mut dyn ContactBody], pair: Pair| {
        let mut found = find_contacts(bodies, statics, pair, 0.0, dt, &Vec3::zeros());
        found.retain(|c| c.depth < -contact_margin(bodies, c.owner));
        found
    };
    // The overlapping pairs with their samples found for the first sweep; later sweeps look again.
    let mut found: Vec<(Pair, Vec<Contact>)> = touching.iter().map(|&pair| (pair, overlapping(bodies, pair))).filter(|(_, c)| !c.is_empty()).collect();
    let mut totals: HashMap<(usize, Partner, usize), Real> = HashMap::new();
    for sweep in 0..SEPARATION_ITERATIONS {
        for (pair, contacts) in &mut found {
            if sweep > 0 {
                *contacts = overlapping(bodies, *pair);
            }
            let targets: Vec<Real> = contacts.iter().map(|c| response(bodies, &[], statics, c).u.dot(&c.normal) - (c.depth + contact_margin(bodies, c.owner)) / dt).collect();
            for (c, target) in contacts.iter().zip(targets) {
                let r = response(bodies, &[], statics, c);
                let nkn = c.normal.dot(&(r.k * c.normal));
                if nkn <= 0.0 {
                    continue;
                }
                let total = totals.entry((c.owner, c.other, c.sample)).or_default();
                let pushed = (*total + (target - r.u.dot(&c.normal)) / nkn).max(0.0);
                apply(bodies, c, &r, &((pushed - *total) * c.normal));
                *total = pushed;
            }
        }
    }
}

/// Level of each body in the contact graph: 0 for bodies touching the static world, one more
/// than the lowest touching neighbour otherwise; bodies not connected to the static world come
/// after all others.
fn contact_levels(count: usize, pairs: &[Pair]) -> Vec<usize> {
    let mut level = vec![usize::MAX; count];
    for &(a, other) in pairs {
        if other == Partner::Static {
            level[a] = 0;
        }
    }
    let mut current = 0;
    loop {
        let mut changed = false;
        for &(a, other) in pairs {
            if let Partner::Body(b) = other {
                for (x, y) in [(a, b), (b, a)] {
                    if level[x] == current && level[y] == usize::MAX {
                        level[y] = current + 1;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
        current += 1;
    }
    let last = level.iter().copied().filter(|&l| l != usize::MAX).max().map_or(0, |l| l + 1);
    level.iter().map(|&l| if l == usize::MAX { last } else { l }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::TetMesh;
    use crate::solids::reduced::body::{ReducedBody, ReducedModel};
    use crate::solids::reduced::fem::ElasticMaterial;
    use crate::solids::rigid::{BodyKind, RigidBody};
    use std::sync::Arc;

    /// A soft reduced ball (8 modes) and a rigid ball thrown at each other off-centre, without
    /// gravity or walls, collide and come apart: every impulse acts equal and opposite at one
    /// point and the reduced body's split of it keeps momentum exactly, so the pair's linear
    /// and angular momentum after are those before (to round-off); the soft ball rings; at the
    /// end neither is inside the other.
    #[test]
    fn soft_and_rigid_balls_collide_keeping_momentum() {
        let material = Material { restitution: 0.5, friction: 0.3 };
        let mesh = TetMesh::bcc(|x| x.norm() - 0.1, &Vec3::repeat(-0.1), &Vec3::repeat(0.1), 0.025, crate::geometry::tetmesh::BCC_KEEP);
        let model = Arc::new(ReducedModel::new(&mesh, &ElasticMaterial { young: 1e5, poisson: 0.3, density: 800.0 }, 8, 0.001, false, None).unwrap());
        let mut soft = ReducedBody::new("soft", model, Vec3::new(-0.15, 0.03, 0.0));
        soft.material = material;
        soft.velocity = Vec3::new(1.0, 0.0, 0.0);
        let mut hard = RigidBody::new("hard", BodyKind::Dynamic, &crate::geometry::Shape::Sphere { center: Vec3::new(0.15, 0.0, 0.0), radius: 0.1 }, 500.0, material, 0.02);
        hard.velocity = Vec3::new(-1.0, 0.0, 0.0);
        let statics = StaticGeometry { min: Vec3::repeat(-10.0), max: Vec3::repeat(10.0), walls: [[false; 2]; 3], obstacles: Vec::new(), material };
        let momentum = |soft: &ReducedBody, hard: &RigidBody| {
            let (p, l) = soft.momentum();
            (p + hard.mass * hard.velocity, l + hard.mass * hard.position.cross(&hard.velocity) + hard.angular_momentum)
        };
        let (p0, l0) = momentum(&soft, &hard);
        let dt = 1e-3;
        let mut rang = false;
        for _ in 0..200 {
            soft.predict_velocities(dt, &Vec3::zeros());
            {
                let mut bodies: [&mut dyn ContactBody; 2] = [&mut soft, &mut hard];
                let touching = collide(&mut bodies, &[0, 1], &statics, dt, &Vec3::zeros());
                contact(&mut bodies, &statics, dt, &touching);
            }
            rang |= soft.modal_energy() > 1e-4;
            soft.advance_positions(dt);
            hard.advance_pose(dt);
        }
        let (p1, l1) = momentum(&soft, &hard);
        assert!((p1 - p0).norm() < 1e-10 * p0.norm().max(1.0), "linear momentum moved by {:e}", (p1 - p0).norm());
        assert!((l1 - l0).norm() < 1e-10 * l0.norm().max(1.0), "angular momentum moved by {:e}", (l1 - l0).norm());
        assert!(soft.velocity.x < 0.0 && hard.velocity.x > 0.0, "they did not bounce: {:?} {:?}", soft.velocity, hard.velocity);
        assert!(rang, "the soft ball never deformed");
        let inside = soft.positions().iter().map(|x| hard.signed_distance_at(&hard.pose(), x)).fold(Real::INFINITY, Real::min);
        assert!(inside > -1e-3, "a particle is {} m inside the rigid ball", -inside);
    }

    /// Two soft reduced balls (one model, 8 modes) collide head-on and off-centre without
    /// gravity: linear and angular momentum are kept to round-off, they come apart, and no
    /// particle of one ends inside the other.
    #[test]
    fn two_soft_balls_collide_keeping_momentum() {
        let material = Material { restitution: 0.5, friction: 0.3 };
        let mesh = TetMesh::bcc(|x| x.norm() - 0.1, &Vec3::repeat(-0.1), &Vec3::repeat(0.1), 0.025, crate::geometry::tetmesh::BCC_KEEP);
        let model = Arc::new(ReducedModel::new(&mesh, &ElasticMaterial { young: 1e5, poisson: 0.3, density: 800.0 }, 8, 0.001, false, None).unwrap());
        let mut balls = [Vec3::new(-0.15, 0.04, 0.0), Vec3::new(0.15, -0.02, 0.01)].map(|x| {
            let mut b = ReducedBody::new("ball", model.clone(), x);
            b.material = material;
            b.velocity = Vec3::new(-x.x.signum(), 0.0, 0.0);
            b
        });
        let statics = StaticGeometry { min: Vec3::repeat(-10.0), max: Vec3::repeat(10.0), walls: [[false; 2]; 3], obstacles: Vec::new(), material };
        let momentum = |balls: &[ReducedBody; 2]| balls.iter().map(ReducedBody::momentum).fold((Vec3::zeros(), Vec3::zeros()), |(p, l), (q, m)| (p + q, l + m));
        let (p0, l0) = momentum(&balls);
        let dt = 1e-3;
        for _ in 0..200 {
            balls.iter_mut().for_each(|b| b.predict_velocities(dt, &Vec3::zeros()));
            let [a, b] = &mut balls;
            let mut bodies: [&mut dyn ContactBody; 2] = [a, b];
            let touching = collide(&mut bodies, &[0, 1], &statics, dt, &Vec3::zeros());
            contact(&mut bodies, &statics, dt, &touching);
            balls.iter_mut().for_each(|b| b.advance_positions(dt));
        }
        let (p1, l1) = momentum(&balls);
        assert!((p1 - p0).norm() < 1e-10, "linear momentum moved by {:e}", (p1 - p0).norm());
        assert!((l1 - l0).norm() < 1e-10 * l0.norm().max(1.0), "angular momentum moved by {:e}", (l1 - l0).norm());
        assert!(balls[0].velocity.x < 0.0 && balls[1].velocity.x > 0.0, "they did not bounce: {:?} {:?}", balls[0].velocity, balls[1].velocity);
        let inside = balls[0].positions().iter().map(|x| crate::solids::CoupledSolid::signed_distance(&balls[1], x)).fold(Real::INFINITY, Real::min);
        assert!(inside > -1e-3, "a particle is {} m inside the other ball", -inside);
    }
}
