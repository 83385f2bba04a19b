//! Implicit shapes: boxes, spheres, capped cylinders, capsules, tori, closed triangle meshes
//! and thin-walled shells around (possibly open) triangle meshes, with exact signed distances
//! (negative inside), triangulated surfaces for previews and caches, and mass properties.

use super::sampled::SampledDistance;
use super::{MeshDistance, TriMesh};
use crate::math::{Mat3, Real, Vec3};
use std::f64::consts::PI;
use std::sync::Arc;

/// A solid region of space.
#[derive(Clone, Debug)]
pub enum Shape {
    /// Axis-aligned box between two corners.
    Box { min: Vec3, max: Vec3 },
    /// Ball.
    Sphere { center: Vec3, radius: Real },
    /// Cylinder with flat caps, its axis running from `from` to `to`.
    Cylinder { from: Vec3, to: Vec3, radius: Real },
    /// The points within `radius` of the segment from `from` to `to`.
    Capsule { from: Vec3, to: Vec3, radius: Real },
    /// Ring torus around `center`: its tube of radius `minor` circles the unit `axis` at
    /// distance `major`.
    Torus { center: Vec3, axis: Vec3, major: Real, minor: Real },
    /// A thin-walled tray open at the top (+y): the box from `min` to `max` less its inside,
    /// leaving side walls and a floor `wall` thick (a boat's hull, a cup).
    OpenBox { min: Vec3, max: Vec3, wall: Real },
    /// The inside of a closed triangle mesh (already placed in world space); its distance
    /// exact, or sampled on a lattice ([`Shape::sampled`]).
    Mesh { surface: Arc<TriMesh>, distance: Arc<MeshDistance>, sampled: Option<Arc<SampledDistance>> },
    /// A thin wall: the points within `thickness / 2` of a triangle mesh, which may be open (a
    /// hull, a cup) — its mid-surface, already placed in world space; its distance exact, or
    /// sampled on a lattice ([`Shape::sampled`]).
    Shell { surface: Arc<TriMesh>, distance: Arc<MeshDistance>, thickness: Real, sampled: Option<Arc<SampledDistance>> },
}

impl Shape {
    /// Builds a mesh shape; the mesh must be closed and outward-oriented.
    pub fn mesh(surface: TriMesh) -> Result<Shape, String> {
        let distance = MeshDistance::new(&surface)?;
        Ok(Shape::Mesh { surface: Arc::new(surface), distance: Arc::new(distance), sampled: None })
    }

    /// The same shape with its distance sampled at spacing `h` out to `margin` beyond its
    /// bounding box (see [`SampledDistance`]), where that is faster than the exact distance (a
    /// closed mesh, a shell; the analytic shapes are returned as they are). A shell is sampled
    /// at a quarter of its thickness where that is finer, so that the kink of the distance at
    /// its mid-surface stays two samples inside the wall and its faces are as smooth as a
    /// closed mesh's.
    pub fn sampled(&self, h: Real, margin: Real) -> Shape {
        match self {
            Shape::Mesh { surface, distance, sampled: None } => {
                let bounds = surface.bounds().unwrap_or((Vec3::zeros(), Vec3::zeros()));
                let sampled = SampledDistance::new(|p| distance.signed_distance(p), bounds, h, margin);
                Shape::Mesh { surface: Arc::clone(surface), distance: Arc::clone(distance), sampled: Some(Arc::new(sampled)) }
            }
            Shape::Shell { surface, distance, thickness, sampled: None } => {
                let half = 0.5 * thickness;
                let (lo, hi) = surface.bounds().unwrap_or((Vec3::zeros(), Vec3::zeros()));
                let bounds = (lo - Vec3::repeat(half), hi + Vec3::repeat(half));
                let sampled = SampledDistance::new(|p| distance.signed_distance(p) - half, bounds, h.min(0.25 * thickness), margin);
                Shape::Shell { surface: Arc::clone(surface), distance: Arc::clone(distance), thickness: *thickness, sampled: Some(Arc::new(sampled)) }
            }
            _ => self.clone(),
        }
    }

    /// Builds a shell of `thickness` around `surface` (open or closed, consistently oriented).
    pub fn shell(surface: TriMesh, thickness: Real) -> Result<Shape, String> {
        surface.boundary_edges()?;
        let distance = MeshDistance::unsigned(&surface)?;
        Ok(Shape::Shell { surface: Arc::new(surface), distance: Arc::new(distance), thickness, sampled: None })
    }

    /// Signed distance from `p` to the boundary: negative inside, positive outside.
    pub fn signed_distance(&self, p: &Vec3) -> Real {
        match self {
            Shape::Box { min, max } => {
                let center = 0.5 * (min + max);
                let half = 0.5 * (max - min);
                let q = (p - center).abs() - half;
                let outside = q.sup(&Vec3::zeros()).norm();
                outside + q.max().min(0.0)
            }
            Shape::Sphere { center, radius } => (p - center).norm() - radius,
            Shape::Cylinder { from, to, radius } => {
                let axis = to - from;
                let length = axis.norm();
                let along = (p - from).dot(&axis) / length;
                let radial = ((p - from) - axis * (along / length)).norm();
                let dr = radial - radius;
                let dz = (along - 0.5 * length).abs() - 0.5 * length;
                if dr <= 0.0 && dz <= 0.0 {
                    dr.max(dz)
                } else {
                    (dr.max(0.0).powi(2) + dz.max(0.0).powi(2)).sqrt()
                }
            }
            Shape::Capsule { from, to, radius } => {
                let axis = to - from;
                let t = ((p - from).dot(&axis) / axis.norm_squared()).clamp(0.0, 1.0);
                (p - (from + t * axis)).norm() - radius
            }
            Shape::Torus { center, axis, major, minor } => {
                let q = p - center;
                let h = q.dot(axis);
                let radial = (q - h * axis).norm();
                ((radial - major).powi(2) + h * h).sqrt() - minor
            }
            Shape::OpenBox { min, max, wall } => {
                let (inner_min, inner_max) = open_box_inside(min, max, *wall);
                let outer = Shape::Box { min: *min, max: *max }.signed_distance(p);
                let inside = Shape::Box { min: inner_min, max: inner_max + Vec3::new(0.0, *wall, 0.0) }.signed_distance(p);
                outer.max(-inside)
            }
            Shape::Mesh { sampled: Some(sampled), .. } => sampled.at(p),
            Shape::Mesh { distance, .. } => distance.signed_distance(p),
            Shape::Shell { sampled: Some(sampled), .. } => sampled.at(p),
            Shape::Shell { distance, thickness, .. } => distance.signed_distance(p) - 0.5 * thickness,
        }
    }

    /// Axis-aligned bounds `(min, max)`.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        match self {
            Shape::Box { min, max } => (*min, *max),
            Shape::Sphere { center, radius } => (center.add_scalar(-radius), center.add_scalar(*radius)),
            Shape::Cylinder { from, to, radius } => {
                let axis = (to - from).normalize();
                // Extent of the cap discs along each world axis: r * sqrt(1 - axis_a^2).
                let e = Vec3::from_fn(|a, _| radius * (1.0 - axis[a] * axis[a]).max(0.0).sqrt());
                (from.inf(to) - e, from.sup(to) + e)
            }
            Shape::Capsule { from, to, radius } => (from.inf(to).add_scalar(-radius), from.sup(to).add_scalar(*radius)),
            Shape::Torus { center, axis, major, minor } => {
                // The tube's centre circle reaches major * sqrt(1 - axis_a^2) along each axis.
                let e = Vec3::from_fn(|a, _| major * (1.0 - axis[a] * axis[a]).max(0.0).sqrt() + minor);
                (center - e, center + e)
            }
            Shape::OpenBox { min, max, .. } => (*min, *max),
            Shape::Mesh { surface, .. } => surface.bounds().unwrap_or((Vec3::zeros(), Vec3::zeros())),
            Shape::Shell { surface, thickness, .. } => {
                let (lo, hi) = surface.bounds().unwrap_or((Vec3::zeros(), Vec3::zeros()));
                (lo.add_scalar(-0.5 * thickness), hi.add_scalar(0.5 * thickness))
            }
        }
    }

    /// A triangulated surface of the shape (outward-facing), for previews and caches.
    pub fn surface_mesh(&self) -> TriMesh {
        match self {
            Shape::Box { min, max } => box_mesh(min, max),
            Shape::Sphere { center, radius } => sphere_mesh(center, *radius, 32, 16),
            Shape::Cylinder { from, to, radius } => cylinder_mesh(from, to, *radius, 40),
            Shape::Capsule { from, to, radius } => capsule_mesh(from, to, *radius, 32, 8),
            Shape::Torus { center, axis, major, minor } => torus_mesh(center, axis, *major, *minor, 48, 16),
            Shape::OpenBox { min, max, wall } => open_box_mesh(min, max, *wall),
            Shape::Mesh { surface, .. } => (**surface).clone(),
            Shape::Shell { surface, thickness, .. } => shell_mesh(surface, *thickness),
        }
    }

    /// The same shape moved by `offset`.
    pub fn translated(&self, offset: &Vec3) -> Shape {
        match self {
            Shape::Box { min, max } => Shape::Box { min: min + offset, max: max + offset },
            Shape::Sphere { center, radius } => Shape::Sphere { center: center + offset, radius: *radius },
            Shape::Cylinder { from, to, radius } => Shape::Cylinder { from: from + offset, to: to + offset, radius: *radius },
            Shape::Capsule { from, to, radius } => Shape::Capsule { from: from + offset, to: to + offset, radius: *radius },
            Shape::Torus { center, axis, major, minor } => Shape::Torus { center: center + offset, axis: *axis, major: *major, minor: *minor },
            Shape::OpenBox { min, max, wall } => Shape::OpenBox { min: min + offset, max: max + offset, wall: *wall },
            Shape::Mesh { surface, sampled, .. } => {
                let mut moved = (**surface).clone();
                moved.vertices.iter_mut().for_each(|v| *v += offset);
                let distance = MeshDistance::new(&moved).expect("a translated valid mesh stays valid");
                let sampled = sampled.as_ref().map(|s| Arc::new(s.translated(offset)));
                Shape::Mesh { surface: Arc::new(moved), distance: Arc::new(distance), sampled }
            }
            Shape::Shell { surface, thickness, sampled, .. } => {
                let mut moved = (**surface).clone();
                moved.vertices.iter_mut().for_each(|v| *v += offset);
                let distance = MeshDistance::unsigned(&moved).expect("a translated valid mesh stays valid");
                let sampled = sampled.as_ref().map(|s| Arc::new(s.translated(offset)));
                Shape::Shell { surface: Arc::new(moved), distance: Arc::new(distance), thickness: *thickness, sampled }
            }
        }
    }

    /// Points on the surface about `spacing` apart or closer (the surface mesh's vertices, and for
    /// boxes a grid on each face), for contact tests against other shapes.
    pub fn surface_samples(&self, spacing: Real) -> Vec<Vec3> {
        match self {
            Shape::Box { min, max } => {
                let e = max - min;
                let n = e.map(|l| ((l / spacing).ceil() as usize).max(1));
                let mut points = Vec::new();
                for k in 0..=n.z {
                    for j in 0..=n.y {
                        for i in 0..=n.x {
                            let on_face = i == 0 || i == n.x || j == 0 || j == n.y || k == 0 || k == n.z;
                            if on_face {
                                let t = Vec3::new(i as Real / n.x as Real, j as Real / n.y as Real, k as Real / n.z as Real);
                                points.push(min + e.component_mul(&t));
                            }
                        }
                    }
                }
                points
            }
            _ => self.surface_mesh().vertices,
        }
    }

    /// Volume, centroid and inertia tensor about the centroid of the shape filled with unit
    /// density (multiply by the density for a body's mass and inertia).
    pub fn mass_properties(&self) -> MassProperties {
        let about_axis = |center: Vec3, axis: Vec3, volume: Real, along: Real, across: Real| MassProperties {
            volume,
            centroid: center,
            inertia: Mat3::identity() * across + axis * axis.transpose() * (along - across),
        };
        match self {
            Shape::Box { min, max } => {
                let e = max - min;
                let volume = e.x * e.y * e.z;
                let inertia = Mat3::from_diagonal(&Vec3::new(e.y * e.y + e.z * e.z, e.x * e.x + e.z * e.z, e.x * e.x + e.y * e.y)) * (volume / 12.0);
                MassProperties { volume, centroid: 0.5 * (min + max), inertia }
            }
            Shape::Sphere { center, radius } => {
                let volume = 4.0 / 3.0 * PI * radius.powi(3);
                MassProperties { volume, centroid: *center, inertia: Mat3::identity() * (0.4 * volume * radius * radius) }
            }
            Shape::Cylinder { from, to, radius } => {
                let (h, r2) = ((to - from).norm(), radius * radius);
                let volume = PI * r2 * h;
                about_axis(0.5 * (from + to), (to - from) / h, volume, 0.5 * volume * r2, volume * (3.0 * r2 + h * h) / 12.0)
            }
            Shape::Capsule { from, to, radius } => {
                // A cylinder plus two half balls whose centroids sit 3r/8 beyond its ends.
                let (h, r) = ((to - from).norm(), *radius);
                let cylinder = PI * r * r * h;
                let ball = 4.0 / 3.0 * PI * r.powi(3);
                let along = 0.5 * cylinder * r * r + 0.4 * ball * r * r;
                let across = cylinder * (h * h / 12.0 + r * r / 4.0) + ball * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0);
                about_axis(0.5 * (from + to), (to - from) / h, cylinder + ball, along, across)
            }
            Shape::Torus { center, axis, major, minor } => {
                let (big, small) = (major * major, minor * minor);
                let volume = 2.0 * PI * PI * major * small;
                about_axis(*center, *axis, volume, volume * (big + 0.75 * small), volume * (0.5 * big + 0.625 * small))
            }
            Shape::OpenBox { min, max, wall } => {
                let (inner_min, inner_max) = open_box_inside(min, max, *wall);
                let outer = Shape::Box { min: *min, max: *max }.mass_properties();
                let inside = Shape::Box { min: inner_min, max: inner_max }.mass_properties();
                outer.minus(&inside)
            }
            Shape::Mesh { surface, .. } => surface.mass_properties(),
            Shape::Shell { surface, thickness, .. } => shell_mass_properties(surface, *thickness),
        }
    }
}

/// Mass properties of a thin wall of `thickness` around the mid-surface `surface`: the points
/// within `t/2` of it, a layer over its triangles and half a round rod along its open edges.
/// Integrated as volume `A t` with first and second moments `t ∫ x dA`, `t ∫ x xᵀ dA`
/// (`∫ x xᵀ dA = A/12 (a aᵀ + b bᵀ + c cᵀ + s sᵀ)` over a triangle with corners `a, b, c` and
/// `s = a + b + c`), plus the rods as weighted segments (cross-section `π t²/8`,
/// `∫ x xᵀ dl = L/6 (2 a aᵀ + 2 b bᵀ + a bᵀ + b aᵀ)`). Exact as the thickness goes to zero; a
/// flat plate's moments lack the `t²/12` of its thickness.
fn shell_mass_properties(surface: &TriMesh, thickness: Real) -> MassProperties {
    let (mut volume, mut first, mut second) = (0.0, Vec3::zeros(), Mat3::zeros());
    for t in &surface.triangles {
        let [a, b, c] = t.map(|i| surface.vertices[i as usize]);
        let dv = 0.5 * (b - a).cross(&(c - a)).norm() * thickness;
        let sum = a + b + c;
        volume += dv;
        first += sum * (dv / 3.0);
        second += (a * a.transpose() + b * b.transpose() + c * c.transpose() + sum * sum.transpose()) * (dv / 12.0);
    }
    let rod = PI * thickness * thickness / 8.0;
    for (i, j) in surface.boundary_edges().expect("a shell's surface was checked when it was built") {
        let (a, b) = (surface.vertices[i as usize], surface.vertices[j as usize]);
        let dv = rod * (b - a).norm();
        volume += dv;
        first += (a + b) * (dv / 2.0);
        second += (2.0 * a * a.transpose() + 2.0 * b * b.transpose() + a * b.transpose() + b * a.transpose()) * (dv / 6.0);
    }
    let centroid = first / volume;
    let central = second - centroid * centroid.transpose() * volume;
    MassProperties { volume, centroid, inertia: Mat3::identity() * central.trace() - central }
}

/// The closed surface of a shell: the mid-surface moved half the thickness out and in along
/// its vertex normals (the inner copy turned inside out), its open edges joined by a strip.
fn shell_mesh(surface: &TriMesh, thickness: Real) -> TriMesh {
    let n = surface.vertices.len() as u32;
    let normals = surface.vertex_normals();
    let half = 0.5 * thickness;
    let mut mesh = TriMesh {
        vertices: surface.vertices.iter().zip(&normals).map(|(v, n)| v + half * n).chain(surface.vertices.iter().zip(&normals).map(|(v, n)| v - half * n)).collect(),
        triangles: surface.triangles.iter().flat_map(|&[a, b, c]| [[a, b, c], [a + n, c + n, b + n]]).collect(),
    };
    for (a, b) in surface.boundary_edges().expect("a shell's surface was checked when it was built") {
        mesh.triangles.push([b, a, a + n]);
        mesh.triangles.push([b, a + n, b + n]);
    }
    mesh
}

/// The hollow of an open box: `wall` in from the sides and the bottom, up to the top.
fn open_box_inside(min: &Vec3, max: &Vec3, wall: Real) -> (Vec3, Vec3) {
    (min + Vec3::new(wall, wall, wall), Vec3::new(max.x - wall, max.y, max.z - wall))
}

impl MassProperties {
    /// The properties of this solid with `hole` (inside it) taken away: volumes and first
    /// moments subtract, and both inertias move to the new centroid (parallel axes).
    fn minus(&self, hole: &MassProperties) -> MassProperties {
        let volume = self.volume - hole.volume;
        let centroid = (self.centroid * self.volume - hole.centroid * hole.volume) / volume;
        let shifted = |m: &MassProperties| {
            let d = m.centroid - centroid;
            m.inertia + (Mat3::identity() * d.norm_squared() - d * d.transpose()) * m.volume
        };
        MassProperties { volume, centroid, inertia: shifted(self) - shifted(hole) }
    }
}

/// What a shape weighs at unit density: volume (m^3), centroid (m) and inertia tensor about the
/// centroid (m^5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassProperties {
    /// Volume.
    pub volume: Real,
    /// Centre of volume.
    pub centroid: Vec3,
    /// Inertia tensor about the centroid, per unit density.
    pub inertia: Mat3,
}

fn box_mesh(min: &Vec3, max: &Vec3) -> TriMesh {
    let vertices = (0..8).map(|c| Vec3::new(if c & 1 == 0 { min.x } else { max.x }, if c & 2 == 0 { min.y } else { max.y }, if c & 4 == 0 { min.z } else { max.z })).collect();
    // Quads (counter-clockwise from outside) for faces -x, +x, -y, +y, -z, +z.
    let quads = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
    let triangles = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
    TriMesh { vertices, triangles }
}

fn sphere_mesh(center: &Vec3, radius: Real, segments: u32, rings: u32) -> TriMesh {
    let mut mesh = TriMesh::default();
    mesh.vertices.push(center + Vec3::new(0.0, radius, 0.0));
    for r in 1..rings {
        let theta = PI * r as Real / rings as Real;
        for s in 0..segments {
            let phi = 2.0 * PI * s as Real / segments as Real;
            let dir = Vec3::new(theta.sin() * phi.cos(), theta.cos(), -theta.sin() * phi.sin());
            mesh.vertices.push(center + radius * dir);
        }
    }
    mesh.vertices.push(center - Vec3::new(0.0, radius, 0.0));
    let bottom = mesh.vertices.len() as u32 - 1;
    let at = |r: u32, s: u32| 1 + (r - 1) * segments + s % segments;
    for s in 0..segments {
        mesh.triangles.push([0, at(1, s), at(1, s + 1)]);
        mesh.triangles.push([bottom, at(rings - 1, s + 1), at(rings - 1, s)]);
        for r in 1..rings - 1 {
            let (a, b, c, d) = (at(r, s), at(r + 1, s), at(r + 1, s + 1), at(r, s + 1));
            mesh.triangles.push([a, b, c]);
            mesh.triangles.push([a, c, d]);
        }
    }
    mesh
}

fn cylinder_mesh(from: &Vec3, to: &Vec3, radius: Real, segments: u32) -> TriMesh {
    let axis = (to - from).normalize();
    let (e1, e2) = perpendicular_frame(&axis);
    let mut mesh = TriMesh { vertices: vec![*from, *to], triangles: vec![] };
    let mut rings: Vec<Vec<u32>> = side_stations(from, to, radius, segments).map(|centre| ring(&mut mesh, &centre, radius, segments, &e1, &e2)).collect();
    let (bottom, top) = (&rings[0], &rings[rings.len() - 1]);
    let n = segments as usize;
    for s in 0..n {
        let t = (s + 1) % n;
        mesh.triangles.push([0, bottom[t], bottom[s]]);
        mesh.triangles.push([1, top[s], top[t]]);
    }
    // Joined from the top down, the side faces point outwards.
    rings.reverse();
    join_rings(&mut mesh, &rings, false);
    mesh
}

/// The centres of the rings along a round side from `from` to `to`, both ends included: about
/// two of its segments' widths apart, so that the side has vertices all along it (a deformable
/// body's surface collides at its vertices).
fn side_stations(from: &Vec3, to: &Vec3, radius: Real, segments: u32) -> impl Iterator<Item = Vec3> {
    let width = 2.0 * PI * radius / segments as Real;
    let count = ((to - from).norm() / (2.0 * width)).ceil().max(1.0) as usize;
    let (from, to) = (*from, *to);
    (0..=count).map(move |k| from + (to - from) * (k as Real / count as Real))
}

/// A ring of `segments` vertices of radius `radius` about `centre` in the plane of `e1`, `e2`.
fn ring(mesh: &mut TriMesh, centre: &Vec3, radius: Real, segments: u32, e1: &Vec3, e2: &Vec3) -> Vec<u32> {
    (0..segments)
        .map(|s| {
            let a = 2.0 * PI * s as Real / segments as Real;
            mesh.vertices.push(centre + radius * (a.cos() * e1 + a.sin() * e2));
            mesh.vertices.len() as u32 - 1
        })
        .collect()
}

fn open_box_mesh(min: &Vec3, max: &Vec3, wall: Real) -> TriMesh {
    let (inner_min, inner_max) = open_box_inside(min, max, wall);
    let corner = |lo: &Vec3, hi: &Vec3, c: usize| Vec3::new(if c & 1 == 0 { lo.x } else { hi.x }, if c & 2 == 0 { lo.y } else { hi.y }, if c & 4 == 0 { lo.z } else { hi.z });
    // Vertices 0-7: outer box corners; 8-15: the hollow's corners.
    let vertices: Vec<Vec3> = (0..8).map(|c| corner(min, max, c)).chain((0..8).map(|c| corner(&inner_min, &inner_max, c))).collect();
    // Outer faces except the top (counter-clockwise from outside), the hollow's faces except
    // its top (seen from inside the hollow, so reversed), and the rim between the two tops.
    let outer = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [0, 2, 3, 1], [4, 5, 7, 6]];
    let mut quads: Vec<[u32; 4]> = outer.to_vec();
    quads.extend(outer.iter().map(|q| [q[3] + 8, q[2] + 8, q[1] + 8, q[0] + 8]));
    // Top corners: outer 2, 3, 7, 6 (y = max) around, hollow 10, 11, 15, 14.
    quads.extend([[2, 6, 14, 10], [6, 7, 15, 14], [7, 3, 11, 15], [3, 2, 10, 11]]);
    let triangles = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
    TriMesh { vertices, triangles }
}

/// An orthonormal pair perpendicular to the unit vector `axis`.
fn perpendicular_frame(axis: &Vec3) -> (Vec3, Vec3) {
    let helper = if axis.x.abs() < 0.9 { Vec3::x() } else { Vec3::y() };
    let e1 = axis.cross(&helper).normalize();
    (e1, axis.cross(&e1))
}

/// Rings of vertices joined into quads: `rings[r][s]` are vertex indices, each ring running
/// counter-clockwise about the direction from ring `r` to ring `r + 1` seen from outside (so
/// the faces point outwards); with `closed` the last ring joins the first.
fn join_rings(mesh: &mut TriMesh, rings: &[Vec<u32>], closed: bool) {
    let count = if closed { rings.len() } else { rings.len() - 1 };
    for r in 0..count {
        let (a, b) = (&rings[r], &rings[(r + 1) % rings.len()]);
        let n = a.len();
        for s in 0..n {
            let t = (s + 1) % n;
            mesh.triangles.push([a[s], b[s], b[t]]);
            mesh.triangles.push([a[s], b[t], a[t]]);
        }
    }
}

fn capsule_mesh(from: &Vec3, to: &Vec3, radius: Real, segments: u32, cap_rings: u32) -> TriMesh {
    let axis = (to - from).normalize();
    let (e1, e2) = perpendicular_frame(&axis);
    let mut mesh = TriMesh { vertices: vec![from - radius * axis], triangles: vec![] };
    let mut rings = Vec::new();
    // Latitudes from the bottom pole to its equator, rings along the side to the top equator,
    // then latitudes to the top pole.
    for r in 1..cap_rings {
        let lat = -0.5 * PI + 0.5 * PI * r as Real / cap_rings as Real;
        let centre = from + radius * lat.sin() * axis;
        rings.push(ring(&mut mesh, &centre, radius * lat.cos(), segments, &e1, &e2));
    }
    for centre in side_stations(from, to, radius, segments) {
        rings.push(ring(&mut mesh, &centre, radius, segments, &e1, &e2));
    }
    for r in 1..cap_rings {
        let lat = 0.5 * PI * r as Real / cap_rings as Real;
        let centre = to + radius * lat.sin() * axis;
        rings.push(ring(&mut mesh, &centre, radius * lat.cos(), segments, &e1, &e2));
    }
    mesh.vertices.push(to + radius * axis);
    let top = mesh.vertices.len() as u32 - 1;
    let n = segments as usize;
    for s in 0..n {
        let t = (s + 1) % n;
        mesh.triangles.push([0, rings[0][t], rings[0][s]]);
        let last = &rings[rings.len() - 1];
        mesh.triangles.push([top, last[s], last[t]]);
    }
    // Joined from the top down, the side faces point outwards.
    rings.reverse();
    join_rings(&mut mesh, &rings, false);
    mesh
}

fn torus_mesh(center: &Vec3, axis: &Vec3, major: Real, minor: Real, segments: u32, tube: u32) -> TriMesh {
    let (e1, e2) = perpendicular_frame(axis);
    let mut mesh = TriMesh::default();
    let rings: Vec<Vec<u32>> = (0..segments)
        .map(|s| {
            let a = 2.0 * PI * s as Real / segments as Real;
            let radial = a.cos() * e1 + a.sin() * e2;
            (0..tube)
                .map(|t| {
                    let b = 2.0 * PI * t as Real / tube as Real;
                    mesh.vertices.push(center + (major + minor * b.cos()) * radial + minor * b.sin() * axis);
                    mesh.vertices.len() as u32 - 1
                })
                .collect()
        })
        .collect();
    join_rings(&mut mesh, &rings, true);
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_match_closed_forms() {
        let b = Shape::Box { min: Vec3::zeros(), max: Vec3::new(2.0, 1.0, 1.0) };
        assert!((b.signed_distance(&Vec3::new(1.0, 0.5, 0.5)) + 0.5).abs() < 1e-15);
        assert!((b.signed_distance(&Vec3::new(3.0, 2.0, 0.5)) - 2f64.sqrt()).abs() < 1e-15);
        let c = Shape::Cylinder { from: Vec3::zeros(), to: Vec3::new(0.0, 2.0, 0.0), radius: 0.5 };
        assert!((c.signed_distance(&Vec3::new(0.0, 1.0, 0.0)) + 0.5).abs() < 1e-15);
        assert!((c.signed_distance(&Vec3::new(0.0, 1.9, 0.0)) + 0.1).abs() < 1e-12);
        assert!((c.signed_distance(&Vec3::new(1.5, 3.0, 0.0)) - 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn mass_properties_match_their_surface_meshes() {
        // Closed forms against the exact integral over each shape's (fine) surface mesh: equal
        // for the box, and within the meshes' faceting error for the curved shapes.
        let (from, to) = (Vec3::new(0.1, 0.2, -0.3), Vec3::new(0.5, 1.0, 0.2));
        let shapes = [
            (Shape::Box { min: Vec3::new(-1.0, 0.0, 0.5), max: Vec3::new(1.0, 0.5, 0.75) }, 1e-12),
            (Shape::Sphere { center: Vec3::new(1.0, 2.0, 3.0), radius: 0.5 }, 0.03),
            (Shape::Cylinder { from, to, radius: 0.3 }, 0.01),
            (Shape::Capsule { from, to, radius: 0.3 }, 0.03),
            (Shape::Torus { center: from, axis: (to - from).normalize(), major: 0.6, minor: 0.2 }, 0.03),
            (Shape::OpenBox { min: Vec3::new(0.0, 0.1, -0.2), max: Vec3::new(0.5, 0.3, 0.2), wall: 0.04 }, 1e-12),
        ];
        for (shape, tolerance) in shapes {
            let exact = shape.mass_properties();
            let mesh = shape.surface_mesh();
            mesh.check_closed().unwrap();
            let faceted = mesh.mass_properties();
            let scale = exact.volume.cbrt();
            assert!((faceted.volume - exact.volume).abs() < tolerance * exact.volume, "{shape:?}");
            assert!((faceted.centroid - exact.centroid).norm() < 1e-9 * scale + tolerance * 0.1 * scale, "{shape:?}");
            let inertia_error = (faceted.inertia - exact.inertia).norm() / exact.inertia.norm();
            assert!(inertia_error < 2.0 * tolerance, "{shape:?}: inertia off by {inertia_error}");
        }
    }

    /// A long capsule's and cylinder's sides have vertices all along them (a deformable body's
    /// surface collides at its vertices): no edge off the cylinder's caps is longer than 2.5
    /// widths of a segment.
    #[test]
    fn long_round_sides_have_vertices_along_them() {
        let (from, to, radius) = (Vec3::new(-0.4, 0.0, 0.0), Vec3::new(0.4, 0.1, 0.0), 0.025);
        let width = 2.0 * PI * radius / 32.0;
        for shape in [Shape::Capsule { from, to, radius }, Shape::Cylinder { from, to, radius }] {
            let mesh = shape.surface_mesh();
            mesh.check_closed().unwrap();
            let v = &mesh.vertices;
            let longest = mesh
                .triangles
                .iter()
                .filter(|t| t.iter().all(|&i| (v[i as usize] - from).norm() > 1e-12 && (v[i as usize] - to).norm() > 1e-12))
                .flat_map(|t| (0..3).map(move |k| (v[t[k] as usize] - v[t[(k + 1) % 3] as usize]).norm()))
                .fold(0.0, Real::max);
            assert!(longest < 2.5 * width, "{shape:?}: an edge {longest} m long, segments {width} m wide");
        }
    }

    #[test]
    fn surface_meshes_are_closed_and_match_volumes() {
        let shapes = [
            (Shape::Box { min: Vec3::zeros(), max: Vec3::new(2.0, 1.0, 0.5) }, 1.0, 1e-12),
            (Shape::Sphere { center: Vec3::new(1.0, 2.0, 3.0), radius: 0.5 }, PI / 6.0, 0.03),
            (Shape::Cylinder { from: Vec3::zeros(), to: Vec3::new(1.0, 1.0, 0.0), radius: 0.3 }, PI * 0.09 * 2f64.sqrt(), 0.01),
        ];
        for (shape, volume, tolerance) in shapes {
            let mesh = shape.surface_mesh();
            mesh.check_closed().unwrap();
            assert!((mesh.signed_volume() - volume).abs() / volume < tolerance, "{shape:?}");
            // The mesh distance agrees with the analytic one for the box.
            if let Shape::Box { .. } = shape {
                let m = Shape::mesh(mesh).unwrap();
                for p in [Vec3::new(0.3, 0.2, 0.1), Vec3::new(-1.0, 0.5, 0.2), Vec3::new(1.0, 0.5, 0.25)] {
                    assert!((m.signed_distance(&p) - shape.signed_distance(&p)).abs() < 1e-12);
                }
            }
        }
    }

    /// The open lower half of a sphere mesh: a bowl's mid-surface.
    fn bowl(radius: Real) -> TriMesh {
        let sphere = sphere_mesh(&Vec3::zeros(), radius, 96, 64);
        let below = |t: &[u32; 3]| t.iter().all(|&i| sphere.vertices[i as usize].y <= 1e-12);
        TriMesh { triangles: sphere.triangles.iter().copied().filter(below).collect(), vertices: sphere.vertices }
    }

    /// A bowl's wall 1 cm thick sampled at "1 cm" (so at a quarter of its thickness): within a
    /// sixteenth of the thickness of its faces (where no lattice cell reaches the distance's
    /// kink at the mid-surface) the sampled distance is within 0.5 mm of the exact one (the
    /// trilinear bound for the rim's curvature, `3 h^2 / 8 / (t/2)`, is 0.47 mm), and deeper in
    /// the wall it is inside everywhere: the wall never thins away between samples.
    #[test]
    fn sampled_shells_keep_their_walls() {
        let t = 0.01;
        let exact = Shape::shell(bowl(0.15), t).unwrap();
        let sampled = exact.sampled(0.01, 0.02);
        let mut near = 0;
        for i in 0..20000 {
            let s = i as Real / 20000.0;
            let p = Vec3::new(0.16 * (37.0 * s).sin() * (3.0 * s).cos(), -0.16 * (11.0 * s).sin().abs() + 0.005, 0.16 * (37.0 * s).cos() * (3.0 * s).cos());
            let (d, e) = (sampled.signed_distance(&p), exact.signed_distance(&p));
            if e.abs() < t / 16.0 {
                near += 1;
                assert!((d - e).abs() < 5e-4, "at {p:?}: sampled {d}, exact {e}");
            }
            assert!(e > -t / 16.0 || d < 0.0, "at {p:?}, in the wall: sampled {d}, exact {e}");
        }
        assert!(near > 100, "only {near} points near the wall's faces");
    }

    /// A thin wall around a mesh: its distance, its closed surface and its mass properties
    /// against closed forms — a flat plate (the volume of all points within `t/2` of a
    /// rectangle is `A t + π P t²/8 + π t³/6`, Steiner's formula with perimeter `P`; its
    /// inertia in the thin limit), a hemispherical bowl within its faceting.
    #[test]
    fn shells_match_closed_forms() {
        let rectangle =
            TriMesh { vertices: vec![Vec3::zeros(), Vec3::new(0.4, 0.0, 0.0), Vec3::new(0.4, 0.0, 0.2), Vec3::new(0.0, 0.0, 0.2)], triangles: vec![[0, 2, 1], [0, 3, 2]] };
        let (area, perimeter) = (0.08, 1.2);
        let t = 0.01;
        let plate = Shape::shell(rectangle.clone(), t).unwrap();
        let m = plate.mass_properties();
        let steiner = area * t + PI * perimeter * t * t / 8.0 + PI * t.powi(3) / 6.0;
        assert!((m.volume - steiner).abs() <= PI * t.powi(3) / 6.0 + 1e-15, "volume {} vs {steiner}", m.volume);
        assert!((m.centroid - Vec3::new(0.2, 0.0, 0.1)).norm() < 1e-15);
        assert!((plate.signed_distance(&Vec3::new(0.2, 0.0, 0.1)) + 0.5 * t).abs() < 1e-15);
        assert!((plate.signed_distance(&Vec3::new(0.2, 0.3, 0.1)) - (0.3 - 0.5 * t)).abs() < 1e-12);
        let thin = Shape::shell(rectangle, 1e-5).unwrap().mass_properties();
        let normal_axis = thin.volume * (0.4 * 0.4 + 0.2 * 0.2) / 12.0;
        assert!((thin.inertia[(1, 1)] / normal_axis - 1.0).abs() < 1e-3, "about the normal: {} vs {normal_axis}", thin.inertia[(1, 1)]);

        let t = 0.01;
        let r = 0.15;
        let bowl = Shape::shell(bowl(r), t).unwrap();
        let m = bowl.mass_properties();
        // A hemispherical shell (area 2 pi r^2, centroid r/2 below the rim's centre, inertia
        // about its axis (2/3) r^2 per volume) and the rim's half rod (at the rim, r^2).
        let (wall, rim) = (2.0 * PI * r * r * t, PI * t * t / 8.0 * 2.0 * PI * r);
        assert!((m.volume / (wall + rim) - 1.0).abs() < 2e-3, "volume {} vs {}", m.volume, wall + rim);
        let centroid = -0.5 * r * wall / (wall + rim);
        assert!((m.centroid - Vec3::new(0.0, centroid, 0.0)).norm() < 1e-3 * r, "centroid {:?} vs {centroid}", m.centroid);
        assert!((m.inertia[(1, 1)] / ((2.0 / 3.0 * wall + rim) * r * r) - 1.0).abs() < 2e-3);
        // Inside the wall, in the hollow, and outside below it.
        assert!((bowl.signed_distance(&Vec3::new(0.0, -r, 0.0)) + 0.5 * t).abs() < 1e-4);
        assert!((bowl.signed_distance(&Vec3::new(0.0, -0.5 * r, 0.0)) - (0.5 * r - 0.5 * t)).abs() < 1e-4);
        assert!((bowl.signed_distance(&Vec3::new(0.0, -1.5 * r, 0.0)) - (0.5 * r - 0.5 * t)).abs() < 1e-4);
        // The wall's surface (its rim cut flat) is closed, and holds the wall's volume.
        let surface = bowl.surface_mesh();
        surface.check_closed().unwrap();
        assert!((surface.signed_volume() / wall - 1.0).abs() < 0.01, "surface volume {} vs {wall}", surface.signed_volume());
    }
}
