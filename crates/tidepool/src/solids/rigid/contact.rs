//! Collisions and contact between rigid bodies and with static geometry (Guendelman, Bridson
//! and Fedkiw 2003, as used in Shinar's thesis ch. 3).
//!
//! Interference is tested at predicted positions: each body's surface samples against the
//! other shape's signed distance. Impulses act at the samples' current positions along the
//! other shape's outward normal, with Coulomb friction (`impulse`).

use super::body::{Material, Pose, RigidBody};
use crate::geometry::Shape;
use crate::math::{Mat3, Real, Vec3};
use std::collections::HashMap;

/// Sweeps over all pairs in the collision phase.
const COLLISION_ITERATIONS: usize = 5;
/// Sweeps over the touching pairs in each contact phase, before the shock-propagation sweep.
const CONTACT_ITERATIONS: usize = 10;
/// Samples closer than this fraction of the body's size to a surface count as touching in the
/// contact phase (so contacts keep their friction once their normal velocity is stopped).
const CONTACT_MARGIN: Real = 1e-3;
/// Step of the central differences that give surface normals (m).
const NORMAL_STEP: Real = 1e-6;

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

/// Unit gradient of `f` at `x` by central differences.
fn normal_of(f: impl Fn(&Vec3) -> Real, x: &Vec3) -> Option<Vec3> {
    let g = Vec3::from_fn(|a, _| {
        let mut e = Vec3::zeros();
        e[a] = NORMAL_STEP;
        (f(&(x + e)) - f(&(x - e))) / (2.0 * NORMAL_STEP)
    });
    g.try_normalize(1e-12)
}

/// Samples of each body of the pair inside the other or within `margin` of its surface, with
/// both at the poses `poses` gives.
fn find_contacts(bodies: &[RigidBody], statics: &StaticGeometry, pair: Pair, margin: Real, poses: &impl Fn(usize) -> Pose) -> Vec<Contact> {
    let mut found = Vec::new();
    let mut test = |owner: usize, other: Partner| {
        let body = &bodies[owner];
        let (at, now) = (poses(owner), body.pose());
        let other_pose = match other {
            Partner::Static => now,
            Partner::Body(b) => poses(b),
        };
        for (sample, s) in body.samples.iter().enumerate() {
            let x = at.to_world(s);
            let distance = |y: &Vec3| match other {
                Partner::Static => statics.signed_distance(y),
                Partner::Body(b) => bodies[b].signed_distance_at(&other_pose, y),
            };
            let depth = distance(&x);
            if depth < margin {
                if let Some(normal) = normal_of(distance, &x) {
                    found.push(Contact { owner, other, sample, point: now.to_world(s), normal, depth });
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
fn mobile(bodies: &[RigidBody], frozen: &[bool], i: usize) -> bool {
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

fn response(bodies: &[RigidBody], frozen: &[bool], statics: &StaticGeometry, c: &Contact) -> Response {
    let owner = &bodies[c.owner];
    let owner_moves = mobile(bodies, frozen, c.owner);
    let (other_velocity, other_moves, other_material) = match c.other {
        Partner::Static => (Vec3::zeros(), false, statics.material),
        Partner::Body(b) => (bodies[b].point_velocity(&c.point), mobile(bodies, frozen, b), bodies[b].material),
    };
    let mut k = Mat3::zeros();
    if owner_moves {
        k += owner.impulse_factor(&c.point);
    }
    if let (Partner::Body(b), true) = (c.other, other_moves) {
        k += bodies[b].impulse_factor(&c.point);
    }
    Response { u: owner.point_velocity(&c.point) - other_velocity, k, material: owner.material.combine(&other_material), owner_moves, other_moves }
}

/// Applies `j` to the owner and `-j` to the other side at the contact point.
fn apply(bodies: &mut [RigidBody], c: &Contact, r: &Response, j: &Vec3) {
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
fn collision_impulse(bodies: &mut [RigidBody], statics: &StaticGeometry, c: &Contact) {
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
fn contact_impulse(bodies: &mut [RigidBody], frozen: &[bool], statics: &StaticGeometry, c: &Contact, total: &mut Vec3) {
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

/// Pairs whose bounding spheres, grown by what the bodies can move in `dt`, overlap; bodies
/// against the static world always.
fn candidate_pairs(bodies: &[RigidBody], dt: Real) -> Vec<Pair> {
    let reach = |b: &RigidBody| b.bounding_radius + 2.0 * dt * b.velocity.norm();
    let mut pairs = Vec::new();
    for (i, a) in bodies.iter().enumerate().filter(|(_, b)| b.is_dynamic()) {
        pairs.push((i, Partner::Static));
        for (j, b) in bodies.iter().enumerate() {
            let counted = b.is_dynamic() && j < i;
            if j != i && !counted && (a.position - b.position).norm() < reach(a) + reach(b) {
                pairs.push((i, Partner::Body(j)));
            }
        }
    }
    pairs
}

/// Collision phase: in sweeps over all candidate pairs, the deepest interference at the
/// positions reached with the current velocities plus `kick` (the half-step gravity) gets a
/// collision impulse with the pair's restitution. Returns the pairs found touching, the only
/// ones contact will process.
pub fn collide(bodies: &mut [RigidBody], statics: &StaticGeometry, dt: Real, kick: &Vec3) -> Vec<Pair> {
    let pairs = candidate_pairs(bodies, dt);
    let mut touching = vec![false; pairs.len()];
    for _ in 0..COLLISION_ITERATIONS {
        for (p, &pair) in pairs.iter().enumerate() {
            let contacts = {
                let view = &*bodies;
                find_contacts(view, statics, pair, 0.0, &|i| view[i].pose_after(dt, kick))
            };
            if let Some(deepest) = contacts.first() {
                touching[p] = true;
                collision_impulse(bodies, statics, deepest);
            }
        }
    }
    pairs.into_iter().zip(touching).filter_map(|(pair, t)| t.then_some(pair)).collect()
}

/// The pairs that touch (within the contact margin) at the positions the current velocities
/// lead to.
pub fn touching(bodies: &[RigidBody], statics: &StaticGeometry, dt: Real) -> Vec<Pair> {
    candidate_pairs(bodies, dt)
        .into_iter()
        .filter(|&pair| {
            let margin = CONTACT_MARGIN * bodies[pair.0].bounding_radius;
            !find_contacts(bodies, statics, pair, margin, &|i| bodies[i].pose_after(dt, &Vec3::zeros())).is_empty()
        })
        .collect()
}

/// Contact phase on the touching `pairs`: sweeps that stop every approaching sample (no
/// restitution) at the positions the current velocities lead to, then one sweep in the
/// order of the contact graph's levels (bodies on the static world first, then what rests on
/// them, ...), each level processed with the levels below it frozen (shock propagation), so
/// that stacks settle without the lower bodies being pushed into the ground.
pub fn contact(bodies: &mut [RigidBody], statics: &StaticGeometry, dt: Real, pairs: &[Pair]) {
    let mut totals: HashMap<(usize, Partner, usize), Vec3> = HashMap::new();
    let mut sweep = |bodies: &mut [RigidBody], pairs: &[Pair], frozen: &[bool]| {
        for &pair in pairs {
            let contacts = {
                let view = &*bodies;
                find_contacts(view, statics, pair, CONTACT_MARGIN * view[pair.0].bounding_radius, &|i| {
                    view[i].pose_after(dt, &Vec3::zeros())
                })
            };
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
