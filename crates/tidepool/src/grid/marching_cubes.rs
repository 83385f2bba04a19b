//! Marching cubes: the zero level set of a sampled function as a closed, consistently oriented
//! triangle mesh.
//!
//! The case table is built at first use rather than typed in: on each cube face the edge
//! crossings are paired so that negative corners are separated (the choice depends only on the
//! face's four values, so neighbouring cubes agree and the mesh is watertight), the face segments
//! are chained into loops, and each loop is fanned into triangles. Triangles face the positive
//! side (for a liquid level set: outwards, into the air).

use super::Array3;
use crate::geometry::TriMesh;
use crate::math::{Real, Vec3};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Corner `c` of a cube is at `(c & 1, (c >> 1) & 1, (c >> 2) & 1)`.
fn corner(c: usize) -> [usize; 3] {
    [c & 1, (c >> 1) & 1, (c >> 2) & 1]
}

/// The twelve cube edges as (lower corner, axis).
fn edges() -> [(usize, usize); 12] {
    let mut out = [(0, 0); 12];
    let mut n = 0;
    for axis in 0..3 {
        for rest in 0..4 {
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let c = ((rest & 1) << u) | (((rest >> 1) & 1) << v);
            out[n] = (c, axis);
            n += 1;
        }
    }
    out
}

fn edge_between(a: usize, b: usize) -> usize {
    let lo = a.min(b);
    let axis = (a ^ b).trailing_zeros() as usize;
    edges().iter().position(|&e| e == (lo, axis)).expect("corners share an edge")
}

/// Triangles (as cube-edge triples) for each of the 256 sign configurations; bit `c` of the
/// configuration is set when corner `c` is negative.
fn case_table() -> &'static Vec<Vec<[u8; 3]>> {
    static TABLE: OnceLock<Vec<Vec<[u8; 3]>>> = OnceLock::new();
    TABLE.get_or_init(|| (0..256).map(triangulate_case).collect())
}

fn triangulate_case(config: usize) -> Vec<[u8; 3]> {
    let negative = |c: usize| config & (1 << c) != 0;
    // next[e] = the crossing edge that follows e on the surface loop.
    let mut next = [usize::MAX; 12];
    for axis in 0..3 {
        for side in 0..2 {
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let at = |a: usize, b: usize| (side << axis) | (a << u) | (b << v);
            // Counter-clockwise as seen from outside the cube.
            let mut ring = [at(0, 0), at(1, 0), at(1, 1), at(0, 1)];
            if side == 0 {
                ring.reverse();
            }
            let crossings: Vec<(usize, bool)> =
                (0..4).filter(|&m| negative(ring[m]) != negative(ring[(m + 1) % 4])).map(|m| (edge_between(ring[m], ring[(m + 1) % 4]), negative(ring[(m + 1) % 4]))).collect();
            // Each crossing into a negative corner joins the crossing that follows it.
            for (n, &(edge, entering)) in crossings.iter().enumerate() {
                if entering {
                    next[edge] = crossings[(n + 1) % crossings.len()].0;
                }
            }
        }
    }
    let mut triangles = Vec::new();
    let mut used = [false; 12];
    for start in 0..12 {
        if next[start] == usize::MAX || used[start] {
            continue;
        }
        let mut polygon = vec![start];
        used[start] = true;
        let mut e = next[start];
        while e != start {
            polygon.push(e);
            used[e] = true;
            e = next[e];
        }
        for n in 1..polygon.len() - 1 {
            triangles.push([polygon[0] as u8, polygon[n] as u8, polygon[n + 1] as u8]);
        }
    }
    triangles
}

/// Extracts the zero level set of `values`, sampled at `origin + (i, j, k) spacing`.
/// Vertices are shared between neighbouring triangles.
pub fn marching_cubes(values: &Array3<Real>, origin: Vec3, spacing: Real) -> TriMesh {
    let [nx, ny, nz] = values.dims();
    let table = case_table();
    let cube_edges = edges();
    let mut mesh = TriMesh::default();
    let mut vertex_of_edge: HashMap<(usize, usize), u32> = HashMap::new();
    for k in 0..nz.saturating_sub(1) {
        for j in 0..ny.saturating_sub(1) {
            for i in 0..nx.saturating_sub(1) {
                let v: [Real; 8] = std::array::from_fn(|c| {
                    let o = corner(c);
                    values.get(i + o[0], j + o[1], k + o[2])
                });
                let config = (0..8).filter(|&c| v[c] < 0.0).fold(0, |m, c| m | (1 << c));
                if config == 0 || config == 255 {
                    continue;
                }
                for tri in &table[config] {
                    let ids = tri.map(|e| {
                        let (c0, axis) = cube_edges[e as usize];
                        let o = corner(c0);
                        let node = values.index(i + o[0], j + o[1], k + o[2]);
                        *vertex_of_edge.entry((node, axis)).or_insert_with(|| {
                            let (a, b) = (v[c0], v[c0 | (1 << axis)]);
                            let t = if a == b { 0.5 } else { a / (a - b) };
                            let mut p = Vec3::new((i + o[0]) as Real, (j + o[1]) as Real, (k + o[2]) as Real);
                            p[axis] += t;
                            mesh.vertices.push(origin + p * spacing);
                            (mesh.vertices.len() - 1) as u32
                        })
                    });
                    if ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2] {
                        mesh.triangles.push(ids);
                    }
                }
            }
        }
    }
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn every_case_gives_closed_loops() {
        for config in 1..255 {
            let tris = triangulate_case(config);
            assert!(!tris.is_empty(), "case {config}");
            // Each crossing edge appears in a triangle.
            let negative = |c: usize| config & (1 << c) != 0;
            for (e, &(c0, axis)) in edges().iter().enumerate() {
                let crosses = negative(c0) != negative(c0 | (1 << axis));
                assert_eq!(crosses, tris.iter().any(|t| t.contains(&(e as u8))), "case {config} edge {e}");
            }
        }
    }

    #[test]
    fn sphere_mesh_is_watertight_outward_and_encloses_the_volume() {
        let n = 24;
        let h = 1.0 / n as Real;
        let r = 0.33;
        let c = Vec3::new(0.5, 0.52, 0.49);
        let mut values = Array3::filled([n + 1; 3], 0.0);
        values.par_fill_with(|i, j, k| (Vec3::new(i as Real, j as Real, k as Real) * h - c).norm() - r);
        let mesh = marching_cubes(&values, Vec3::zeros(), h);
        // Watertight and consistently oriented: every directed edge has exactly one opposite.
        let mut directed: HashMap<(u32, u32), usize> = HashMap::new();
        for t in &mesh.triangles {
            for e in 0..3 {
                *directed.entry((t[e], t[(e + 1) % 3])).or_default() += 1;
            }
        }
        for (&(a, b), &count) in &directed {
            assert_eq!(count, 1, "edge ({a}, {b}) used twice in one direction");
            assert_eq!(directed.get(&(b, a)), Some(&1), "edge ({a}, {b}) has no twin");
        }
        let volume = mesh.signed_volume();
        let exact = 4.0 / 3.0 * std::f64::consts::PI * r.powi(3);
        assert!(volume > 0.0, "triangles face outwards");
        assert!((volume - exact).abs() / exact < 0.02, "{volume} vs {exact}");
    }
}
