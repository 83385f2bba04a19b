//! Points embedded in a tetrahedral mesh (Shinar's hard bindings, sec. 2.2): the tetrahedron
//! holding a point found through bins, material points (a tetrahedron and barycentric
//! weights, which move with its corners), and surfaces carried by the tetrahedra.

use crate::geometry::{TetMesh, TriMesh};
use crate::math::{Mat3, Real, Vec3};

/// A material point of a body: its rest tetrahedron and barycentric weights in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MaterialPoint {
    pub tet: [u32; 4],
    pub weights: [Real; 4],
}

impl MaterialPoint {
    /// Vertex `i` itself.
    pub fn particle(i: u32) -> Self {
        MaterialPoint { tet: [i; 4], weights: [1.0, 0.0, 0.0, 0.0] }
    }

    /// The values at the tetrahedron's corners (indexed by vertex) interpolated at the point.
    pub fn interpolate(&self, values: &[Vec3]) -> Vec3 {
        self.tet.iter().zip(self.weights).map(|(v, w)| w * values[*v as usize]).sum()
    }
}

/// A triangle mesh carried by the tetrahedra: each vertex a material point (its rest
/// tetrahedron and barycentric coordinates there, extrapolated for a vertex just outside).
#[derive(Clone, Debug)]
pub struct Skin {
    pub triangles: Vec<[u32; 3]>,
    pub vertices: Vec<MaterialPoint>,
}

impl Skin {
    /// `surface` bound to `mesh`'s tetrahedra: each vertex, moved by `offset` into the mesh's
    /// frame, to the tetrahedron it lies in (or least outside of).
    pub fn bind(surface: &TriMesh, mesh: &TetMesh, lookup: &TetLookup, offset: &Vec3) -> Self {
        let vertices = surface
            .vertices
            .iter()
            .map(|x| {
                let (t, weights) = lookup.locate(&(x + offset), None);
                MaterialPoint { tet: mesh.tets[t], weights }
            })
            .collect();
        Skin { triangles: surface.triangles.clone(), vertices }
    }

    /// The surface with its vertices where the mesh's vertices at `positions` carry them.
    pub fn carried(&self, positions: &[Vec3]) -> TriMesh {
        TriMesh { vertices: self.vertices.iter().map(|p| p.interpolate(positions)).collect(), triangles: self.triangles.clone() }
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.triangles.len() * 12 + self.vertices.len() * std::mem::size_of::<MaterialPoint>()
    }
}

/// The tetrahedra of a mesh binned twice over its bounding box — cells of about the mesh
/// spacing to find the tetrahedron holding a point, cells twice that (an empty one listing
/// those of the nearest that are not) to find the nearest outside the mesh — with each
/// tetrahedron's barycentric map.
#[derive(Clone, Debug)]
pub struct TetLookup {
    origin: Vec3,
    /// The coarse bins' cell (m).
    pub cell: Real,
    fine: Bins,
    coarse: Bins,
    /// Per tetrahedron: its first corner `p0` and the inverse of `[p1 - p0, p2 - p0, p3 - p0]`.
    pub maps: Vec<(Vec3, Mat3)>,
}

impl TetLookup {
    /// The lookup of `mesh` at rest.
    pub fn new(mesh: &TetMesh) -> Self {
        let (lo, hi) = crate::geometry::bounds(mesh.vertices.iter().copied()).expect("a model's mesh has vertices");
        let spacing = (mesh.volume() / mesh.tets.len() as Real).cbrt();
        let (fine, coarse) = (Bins::new(mesh, &lo, &(hi - lo), spacing), Bins::new(mesh, &lo, &(hi - lo), 2.0 * spacing).reaching_out());
        let maps = mesh
            .tets
            .iter()
            .map(|tet| {
                let p = tet.map(|v| mesh.vertices[v as usize]);
                let m = Mat3::from_columns(&[p[1] - p[0], p[2] - p[0], p[3] - p[0]]);
                (p[0], m.try_inverse().unwrap_or_else(Mat3::zeros))
            })
            .collect();
        TetLookup { origin: lo, cell: coarse.cell, fine, coarse, maps }
    }

    /// Barycentric coordinates of `x` in tetrahedron `t`.
    pub fn barycentric(&self, t: usize, x: &Vec3) -> [Real; 4] {
        let (p0, inverse) = &self.maps[t];
        let l = inverse * (x - p0);
        [1.0 - l.x - l.y - l.z, l.x, l.y, l.z]
    }

    /// The tetrahedron holding `x` (its index) and `x`'s barycentric coordinates in it, tried
    /// first in tetrahedron `hint`, then among those the fine bin at `x` lists (the first
    /// found where tetrahedra share `x`). Outside the mesh: the tetrahedron of `x`'s coarse
    /// bin (or of the nearest bins listing any) that `x` is least outside of, with the coordinates
    /// extrapolated (some negative), so that interpolation from the particles reproduces any
    /// affine field (a rigid motion) exactly there too.
    pub fn locate(&self, x: &Vec3, hint: Option<usize>) -> (usize, [Real; 4]) {
        let holding = |t: usize| Some(self.barycentric(t, x)).filter(|w| w.iter().all(|&v| v >= 0.0)).map(|w| (t, w));
        if let Some(found) = hint.and_then(holding) {
            return found;
        }
        if let Some(found) = self.fine.list(self.fine.index(&self.origin, x)).iter().find_map(|&t| holding(t as usize)) {
            return found;
        }
        let mut best: Option<(usize, [Real; 4], Real)> = None;
        for &t in self.coarse.list(self.coarse.index(&self.origin, x)) {
            let w = self.barycentric(t as usize, x);
            let outside = -w.iter().copied().fold(0.0, Real::min);
            if best.as_ref().is_none_or(|b| outside < b.2) {
                best = Some((t as usize, w, outside));
            }
        }
        let (t, w, _) = best.expect("a checked mesh has tetrahedra");
        (t, w)
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.maps.len() * std::mem::size_of::<(Vec3, Mat3)>() + self.fine.heap_bytes() + self.coarse.heap_bytes()
    }
}

/// A uniform grid over a mesh's bounding box listing the tetrahedra whose bounding boxes
/// overlap each cell.
#[derive(Clone, Debug)]
struct Bins {
    cell: Real,
    dims: [usize; 3],
    /// Bin `b` lists `items[starts[b]..starts[b + 1]]`.
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl Bins {
    fn new(mesh: &TetMesh, origin: &Vec3, size: &Vec3, cell: Real) -> Self {
        let dims = [0, 1, 2].map(|a| ((size[a] / cell).ceil() as usize).max(1));
        let empty = Bins { cell, dims, starts: vec![0; dims[0] * dims[1] * dims[2] + 1], items: Vec::new() };
        let mut lists = vec![Vec::new(); dims[0] * dims[1] * dims[2]];
        for (t, tet) in mesh.tets.iter().enumerate() {
            let (a, b) = crate::geometry::bounds(tet.iter().map(|&v| mesh.vertices[v as usize])).expect("a tetrahedron has corners");
            let (i0, i1) = (empty.index(origin, &a), empty.index(origin, &b));
            for k in i0[2]..=i1[2] {
                for j in i0[1]..=i1[1] {
                    for i in i0[0]..=i1[0] {
                        lists[empty.at([i, j, k])].push(t as u32);
                    }
                }
            }
        }
        empty.with_lists(lists)
    }

    /// These bins' lattice listing `lists`, one per bin.
    fn with_lists(&self, lists: Vec<Vec<u32>>) -> Self {
        let starts = std::iter::once(0).chain(lists.iter().scan(0, |end, l| {
            *end += l.len() as u32;
            Some(*end)
        }));
        Bins { cell: self.cell, dims: self.dims, starts: starts.collect(), items: lists.concat() }
    }

    fn list(&self, c: [usize; 3]) -> &[u32] {
        let b = self.at(c);
        &self.items[self.starts[b] as usize..self.starts[b + 1] as usize]
    }

    /// These bins with each empty one listing instead the tetrahedra of the nearest shell of
    /// bins around it that lists any (in shell order, each once).
    fn reaching_out(&self) -> Self {
        let dims = self.dims;
        let nearest = |c: [usize; 3]| -> Vec<u32> {
            for reach in 1..=dims.iter().max().copied().unwrap_or(1) {
                let range = |a: usize| c[a].saturating_sub(reach)..=(c[a] + reach).min(dims[a] - 1);
                let mut found: Vec<u32> = Vec::new();
                for k in range(2) {
                    for j in range(1) {
                        for i in range(0) {
                            if [i, j, k].iter().zip(&c).any(|(n, m)| n.abs_diff(*m) == reach) {
                                for &t in self.list([i, j, k]) {
                                    if !found.contains(&t) {
                                        found.push(t);
                                    }
                                }
                            }
                        }
                    }
                }
                if !found.is_empty() {
                    return found;
                }
            }
            Vec::new()
        };
        let cells = (0..dims[2]).flat_map(|k| (0..dims[1]).flat_map(move |j| (0..dims[0]).map(move |i| [i, j, k])));
        self.with_lists(cells.map(|c| if self.list(c).is_empty() { nearest(c) } else { self.list(c).to_vec() }).collect())
    }

    fn index(&self, origin: &Vec3, x: &Vec3) -> [usize; 3] {
        [0, 1, 2].map(|a| (((x[a] - origin[a]) / self.cell).floor().max(0.0) as usize).min(self.dims[a] - 1))
    }

    fn at(&self, c: [usize; 3]) -> usize {
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }

    fn heap_bytes(&self) -> usize {
        (self.starts.len() + self.items.len()) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::tetmesh::BCC_KEEP_EXPLICIT;
    use crate::geometry::Shape;

    /// A sphere's smooth surface bound to its BCC mesh moves exactly as any affine map of the
    /// mesh moves it (barycentric weights reproduce affine fields, extrapolated ones outside the
    /// mesh too): stretched, sheared, turned and moved, every vertex is where the map puts it
    /// to 1e-12.
    #[test]
    fn a_bound_skin_follows_affine_motions_of_its_mesh_exactly() {
        let sphere = Shape::Sphere { center: Vec3::zeros(), radius: 0.1 };
        let mesh = TetMesh::bcc(|x| sphere.signed_distance(x), &Vec3::repeat(-0.1), &Vec3::repeat(0.1), 0.03, BCC_KEEP_EXPLICIT);
        let surface = sphere.surface_mesh();
        let skin = Skin::bind(&surface, &mesh, &TetLookup::new(&mesh), &Vec3::zeros());
        let map = |x: &Vec3| Mat3::new(1.2, 0.3, 0.0, -0.1, 0.9, 0.2, 0.05, 0.0, 1.1) * x + Vec3::new(0.5, -0.2, 1.0);
        let moved: Vec<Vec3> = mesh.vertices.iter().map(map).collect();
        let carried = skin.carried(&moved);
        let outside = skin.vertices.iter().filter(|p| p.weights.iter().any(|w| *w < 0.0)).count();
        assert!(outside > 0, "some of the smooth surface lies outside the mesh and is extrapolated");
        let worst = carried.vertices.iter().zip(&surface.vertices).map(|(c, x)| (c - map(x)).norm()).fold(0.0, Real::max);
        assert!(worst < 1e-12, "a skin vertex is {worst:e} m from where the map puts it");
        assert_eq!(carried.triangles, surface.triangles);
    }
}
