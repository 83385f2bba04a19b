//! Tetrahedral meshes: generated from any closed shape on a body-centred cubic (BCC) lattice,
//! or read from TetGen (`.node` / `.ele`) and Gmsh (`.msh`, ASCII versions 2 and 4) files;
//! checked for inverted and degenerate elements and for disconnected pieces.

use crate::math::{Real, Vec3};
use std::collections::HashMap;
use std::path::Path;

/// A tetrahedral mesh. Tetrahedron `[a, b, c, d]` is positively oriented: `(b - a) x (c - a)`
/// points towards `d`, so its signed volume is positive.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TetMesh {
    /// Vertex positions (m).
    pub vertices: Vec<Vec3>,
    /// Vertex indices of each tetrahedron.
    pub tets: Vec<[u32; 4]>,
}

/// The share of its lattice volume every tetrahedron of a BCC mesh keeps when the boundary is
/// moved onto the surface ([`TetMesh::bcc`]): a tenth for modal bodies, whose step does not
/// depend on their elements.
pub const BCC_KEEP: Real = 0.1;
/// The share kept for bodies whose elastic forces are explicit (their stable step is
/// proportional to the thinnest tetrahedron's altitude).
pub const BCC_KEEP_EXPLICIT: Real = 0.5;

impl TetMesh {
    /// Signed volume of tetrahedron `t` (positive when positively oriented).
    pub fn tet_volume(&self, t: usize) -> Real {
        signed_volume(&self.tets[t].map(|i| self.vertices[i as usize]))
    }

    /// Total volume.
    pub fn volume(&self) -> Real {
        (0..self.tets.len()).map(|t| self.tet_volume(t)).sum()
    }

    /// A mesh filling the region where `signed_distance < 0` within the box `[lo, hi]`, from a
    /// BCC lattice of cube edge `spacing` with a cube corner at the origin (a shape symmetric
    /// about the origin gets a mesh with the same symmetries, up to the lattice's): the cube
    /// corners and the cube centres, each pair of
    /// face-neighbouring centres joined to the four edges of their shared face (four
    /// tetrahedra per pair, all congruent). Tetrahedra whose centroid is inside are kept, and
    /// vertices no kept tetrahedron uses are dropped; so are fragments cut off the main piece
    /// at thin tips and edges, when they hold less than 1% of the volume (else the mesh is left
    /// in pieces, which [`TetMesh::check`] refuses). The boundary's vertices are then moved
    /// onto the surface (along the distance's gradient), each as far as keeps every
    /// tetrahedron around it at least `keep` of its lattice volume, so the boundary follows the
    /// shape instead of the lattice's staircase: [`BCC_KEEP`] for modal bodies; a body whose
    /// elastic forces are explicit keeps more ([`BCC_KEEP_EXPLICIT`]), since its step is set by
    /// its thinnest tetrahedron.
    pub fn bcc(signed_distance: impl Fn(&Vec3) -> Real, lo: &Vec3, hi: &Vec3, spacing: Real, keep: Real) -> TetMesh {
        let mut mesh = Self::bcc_lattice(&signed_distance, lo, hi, spacing);
        mesh.drop_fragments(0.01);
        mesh.snap_boundary(&signed_distance, spacing, keep);
        mesh
    }

    /// The lattice's tetrahedra whose centroid is inside, before snapping (see [`TetMesh::bcc`]).
    fn bcc_lattice(signed_distance: impl Fn(&Vec3) -> Real, lo: &Vec3, hi: &Vec3, spacing: Real) -> TetMesh {
        // The cubes are those of the lattice with a corner at the coordinates' origin (so a
        // shape symmetric about the origin gets a symmetric mesh) that cover [lo, hi] with one
        // cube of margin, so centres next to the boundary exist.
        let first = lo.map(|v| (v / spacing).floor() - 1.0);
        let n = Vec3::from_fn(|a, _| (hi[a] / spacing).ceil() + 1.0 - first[a]).map(|v| v as usize);
        let origin = first * spacing;
        let corner = |i: usize, j: usize, k: usize| i + (n.x + 1) * (j + (n.y + 1) * k);
        let corners = (n.x + 1) * (n.y + 1) * (n.z + 1);
        let centre = |i: usize, j: usize, k: usize| corners + i + n.x * (j + n.y * k);
        let mut vertices = Vec::with_capacity(corners + n.x * n.y * n.z);
        for k in 0..=n.z {
            for j in 0..=n.y {
                for i in 0..=n.x {
                    vertices.push(origin + Vec3::new(i as Real, j as Real, k as Real) * spacing);
                }
            }
        }
        for k in 0..n.z {
            for j in 0..n.y {
                for i in 0..n.x {
                    vertices.push(origin + Vec3::new(i as Real + 0.5, j as Real + 0.5, k as Real + 0.5) * spacing);
                }
            }
        }
        let mut tets = Vec::new();
        for k in 0..n.z {
            for j in 0..n.y {
                for i in 0..n.x {
                    let here = [i, j, k];
                    for a in 0..3 {
                        if here[a] + 1 >= [n.x, n.y, n.z][a] {
                            continue;
                        }
                        let mut next = here;
                        next[a] += 1;
                        let (c0, c1) = (centre(i, j, k) as u32, centre(next[0], next[1], next[2]) as u32);
                        // The shared face's corners, in order around it.
                        let (u, v) = ((a + 1) % 3, (a + 2) % 3);
                        let face = |du: usize, dv: usize| {
                            let mut c = here;
                            c[a] += 1;
                            c[u] += du;
                            c[v] += dv;
                            corner(c[0], c[1], c[2]) as u32
                        };
                        let ring = [face(0, 0), face(1, 0), face(1, 1), face(0, 1)];
                        for e in 0..4 {
                            tets.push([c0, c1, ring[e], ring[(e + 1) % 4]]);
                        }
                    }
                }
            }
        }
        let mut mesh = TetMesh { vertices, tets };
        mesh.tets.retain(|t| {
            let centroid = t.iter().map(|&v| mesh.vertices[v as usize]).sum::<Vec3>() / 4.0;
            signed_distance(&centroid) < 0.0
        });
        mesh.orient();
        mesh.compact();
        mesh
    }

    /// Moves each boundary vertex towards the surface of `signed_distance` by `-d grad d`,
    /// the whole way or a half, a quarter, an eighth of it, or not at all: all vertices start
    /// the whole way, and of every tetrahedron left with less than `keep` of its volume in the
    /// lattice the vertex whose move lost it most volume (all of them, if equal) steps back to
    /// the next share, simultaneously, until none is left. The result does not depend on the
    /// vertices' order (symmetric lattices stay symmetric).
    fn snap_boundary(&mut self, signed_distance: &impl Fn(&Vec3) -> Real, spacing: Real, keep: Real) {
        const SHARES: [Real; 5] = [1.0, 0.5, 0.25, 0.125, 0.0];
        let (boundary, _) = self.boundary_surface();
        let step = 1e-3 * spacing;
        let lattice: Vec<Real> = (0..self.tets.len()).map(|t| self.tet_volume(t)).collect();
        // Each boundary vertex's lattice position, its full move onto the surface, and the
        // index of its current share.
        let mut moves: Vec<(u32, Vec3, Vec3, usize)> = boundary
            .into_iter()
            .filter_map(|v| {
                let x = self.vertices[v as usize];
                let d = signed_distance(&x);
                super::unit_gradient(signed_distance, &x, step).map(|normal| (v, x, -d * normal, 0))
            })
            .collect();
        let mut slot = vec![usize::MAX; self.vertices.len()];
        for (m, &(v, ..)) in moves.iter().enumerate() {
            slot[v as usize] = m;
        }
        loop {
            for &(v, x, full, share) in &moves {
                self.vertices[v as usize] = x + SHARES[share] * full;
            }
            let mut back = vec![false; moves.len()];
            for (t, tet) in self.tets.iter().enumerate() {
                if self.tet_volume(t) < keep * lattice[t] {
                    // Each moving vertex's share of the loss: the volume gained by putting it
                    // back on the lattice alone.
                    let corners = tet.map(|v| self.vertices[v as usize]);
                    let loss: Vec<(usize, Real)> = (0..4)
                        .filter_map(|c| {
                            let m = slot[tet[c] as usize];
                            (m != usize::MAX && moves[m].3 + 1 < SHARES.len()).then(|| {
                                let mut p = corners;
                                p[c] = moves[m].1;
                                (m, signed_volume(&p) - signed_volume(&corners))
                            })
                        })
                        .collect();
                    let worst = loss.iter().map(|l| l.1).fold(Real::NEG_INFINITY, Real::max);
                    for (m, l) in loss {
                        back[m] |= l >= worst - 1e-9 * lattice[t];
                    }
                }
            }
            let mut changed = false;
            for (m, back) in moves.iter_mut().zip(back) {
                if back {
                    m.3 += 1;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The box `[lo, hi]` divided into `cells` cubes (cuboids) per axis, each split into six
    /// tetrahedra around a main diagonal (Kuhn's split), mirrored from cube to cube (the
    /// diagonal starts at the corner whose offsets along each axis are the cube's index
    /// parities), so that neighbours conform and the mesh has the box's mirror symmetries
    /// where the cube counts allow (one diagonal everywhere made a stack of soft boxes lean
    /// along it): exactly the box, unlike a lattice cut by a distance.
    pub fn box_grid(lo: &Vec3, hi: &Vec3, cells: [usize; 3]) -> TetMesh {
        let [nx, ny, nz] = cells;
        let step = Vec3::new((hi.x - lo.x) / nx as Real, (hi.y - lo.y) / ny as Real, (hi.z - lo.z) / nz as Real);
        let index = |i: usize, j: usize, k: usize| (i + (nx + 1) * (j + (ny + 1) * k)) as u32;
        let mut vertices = Vec::with_capacity((nx + 1) * (ny + 1) * (nz + 1));
        for k in 0..=nz {
            for j in 0..=ny {
                for i in 0..=nx {
                    vertices.push(lo + Vec3::new(i as Real, j as Real, k as Real).component_mul(&step));
                }
            }
        }
        let mut tets = Vec::with_capacity(6 * nx * ny * nz);
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let start = [i % 2, j % 2, k % 2];
                    for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
                        let mut c = [i + start[0], j + start[1], k + start[2]];
                        let mut tet = [index(c[0], c[1], c[2]); 4];
                        for (s, axis) in order.into_iter().enumerate() {
                            c[axis] = if start[axis] == 1 { c[axis] - 1 } else { c[axis] + 1 };
                            tet[s + 1] = index(c[0], c[1], c[2]);
                        }
                        tets.push(tet);
                    }
                }
            }
        }
        let mut mesh = TetMesh { vertices, tets };
        mesh.orient();
        mesh
    }

    /// Swaps two vertices of every negatively oriented tetrahedron.
    fn orient(&mut self) {
        for t in 0..self.tets.len() {
            if self.tet_volume(t) < 0.0 {
                self.tets[t].swap(2, 3);
            }
        }
    }

    /// Drops vertices no tetrahedron uses, renumbering the rest in order.
    fn compact(&mut self) {
        let mut map = vec![u32::MAX; self.vertices.len()];
        let mut vertices = Vec::new();
        for t in &mut self.tets {
            for v in t.iter_mut() {
                if map[*v as usize] == u32::MAX {
                    map[*v as usize] = vertices.len() as u32;
                    vertices.push(self.vertices[*v as usize]);
                }
                *v = map[*v as usize];
            }
        }
        self.vertices = vertices;
    }

    /// Faces used by one tetrahedron only, oriented outwards.
    pub fn boundary_faces(&self) -> Vec<[u32; 3]> {
        let mut count: HashMap<[u32; 3], ([u32; 3], usize)> = HashMap::new();
        for t in &self.tets {
            let [a, b, c, d] = *t;
            for face in [[a, c, b], [a, b, d], [a, d, c], [b, c, d]] {
                let mut key = face;
                key.sort_unstable();
                count.entry(key).or_insert((face, 0)).1 += 1;
            }
        }
        let mut faces: Vec<[u32; 3]> = count.into_values().filter(|(_, n)| *n == 1).map(|(f, _)| f).collect();
        faces.sort_unstable();
        faces
    }

    /// The boundary's vertices (sorted) and its faces ([`TetMesh::boundary_faces`]) numbered
    /// by their places in that list: the surface without the interior vertices.
    pub fn boundary_surface(&self) -> (Vec<u32>, Vec<[u32; 3]>) {
        let faces = self.boundary_faces();
        let mut vertices: Vec<u32> = faces.iter().flatten().copied().collect();
        vertices.sort_unstable();
        vertices.dedup();
        let renumber = |v: u32| vertices.binary_search(&v).expect("a boundary face's vertex is a boundary vertex") as u32;
        let faces = faces.iter().map(|f| f.map(renumber)).collect();
        (vertices, faces)
    }

    /// Checks that every tetrahedron has positive volume above `1e-12` of the mesh's average
    /// (inverted or degenerate elements are named, counted from 0), and that the mesh is one
    /// piece (tetrahedra connected through shared faces).
    pub fn check(&self) -> Result<(), String> {
        if self.tets.is_empty() {
            return Err("the mesh has no tetrahedra".into());
        }
        for (t, tet) in self.tets.iter().enumerate() {
            if let Some(v) = tet.iter().find(|&&v| v as usize >= self.vertices.len()) {
                return Err(format!("tetrahedron {t} uses vertex {v}, but there are only {} vertices", self.vertices.len()));
            }
        }
        let average = self.tets.iter().enumerate().map(|(t, _)| self.tet_volume(t).abs()).sum::<Real>() / self.tets.len() as Real;
        for t in 0..self.tets.len() {
            let v = self.tet_volume(t);
            if v.abs() <= 1e-12 * average {
                return Err(format!("tetrahedron {t} is degenerate (volume {v:e})"));
            }
            if v < 0.0 {
                return Err(format!("tetrahedron {t} is inverted (volume {v:e}; its vertices are ordered the wrong way round)"));
            }
        }
        let pieces = self.pieces();
        if pieces > 1 {
            return Err(format!("the mesh has {pieces} disconnected pieces; a body must be one piece"));
        }
        Ok(())
    }

    /// Number of pieces: classes of tetrahedra connected through shared faces.
    pub fn pieces(&self) -> usize {
        let piece = self.piece_of_each();
        (0..self.tets.len()).filter(|&t| piece[t] == t).count()
    }

    /// For each tetrahedron, a representative of its piece (tetrahedra connected through
    /// shared faces).
    fn piece_of_each(&self) -> Vec<usize> {
        let mut sets = crate::math::DisjointSets::new(self.tets.len());
        let mut first: HashMap<[u32; 3], usize> = HashMap::new();
        for (t, tet) in self.tets.iter().enumerate() {
            let [a, b, c, d] = *tet;
            for mut key in [[a, b, c], [a, b, d], [a, c, d], [b, c, d]] {
                key.sort_unstable();
                if let Some(&other) = first.get(&key) {
                    sets.join(t, other);
                } else {
                    first.insert(key, t);
                }
            }
        }
        (0..self.tets.len()).map(|t| sets.root(t)).collect()
    }

    /// Drops the pieces other than the largest when together they hold less than `share` of
    /// the volume (a lattice's fragments at thin tips and edges); otherwise keeps them all.
    fn drop_fragments(&mut self, share: Real) {
        let piece = self.piece_of_each();
        let mut volume: HashMap<usize, Real> = HashMap::new();
        for (t, p) in piece.iter().enumerate() {
            *volume.entry(*p).or_default() += self.tet_volume(t).abs();
        }
        let total: Real = volume.values().sum();
        let Some((&largest, &kept)) = volume.iter().max_by(|a, b| a.1.total_cmp(b.1)) else { return };
        if volume.len() > 1 && total - kept < share * total {
            let mut t = 0;
            self.tets.retain(|_| {
                t += 1;
                piece[t - 1] == largest
            });
            self.compact();
        }
    }
}

/// Signed volume of the tetrahedron with corners `p` (positive when positively oriented).
fn signed_volume(p: &[Vec3; 4]) -> Real {
    (p[1] - p[0]).cross(&(p[2] - p[0])).dot(&(p[3] - p[0])) / 6.0
}

/// Reads a tetrahedral mesh by its file's extension — TetGen (`.node` or `.ele`) or Gmsh
/// (`.msh`) — and checks it: inverted and degenerate tetrahedra are named by index, a mesh in
/// pieces is refused.
pub fn read_tetrahedra(path: &Path) -> Result<TetMesh, String> {
    let mesh = match extension(path).as_deref() {
        Some("node" | "ele") => read_tetgen(path)?,
        Some("msh") => read_gmsh(path)?,
        _ => return Err("expected a tetrahedral mesh file ending in .node, .ele or .msh".into()),
    };
    mesh.check()?;
    Ok(mesh)
}

/// Whether `path` names a tetrahedral mesh file (`.node`, `.ele`, `.msh`).
pub fn is_tetrahedral_file(path: &Path) -> bool {
    matches!(extension(path).as_deref(), Some("node" | "ele" | "msh"))
}

/// A file's extension in lower case.
fn extension(path: &Path) -> Option<String> {
    path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase)
}

/// Reads a TetGen mesh: `path` names the `.node` file (or the `.ele` file, or their common
/// stem); node indices may start at 0 or 1. Errors name the file and line.
pub fn read_tetgen(path: &Path) -> Result<TetMesh, String> {
    let stem = path.with_extension("");
    let (node_path, ele_path) = (stem.with_extension("node"), stem.with_extension("ele"));
    let read = |p: &Path| crate::input::read_text(p, crate::input::DATA_LIMIT).map_err(|e| format!("{}: {e}", p.display()));
    let (nodes, elements) = (read(&node_path)?, read(&ele_path)?);
    // Data lines: without comments (`#`) and blank lines, with their line numbers.
    let lines = |text: &str| -> Vec<(usize, Vec<String>)> {
        text.lines()
            .enumerate()
            .map(|(n, l)| (n + 1, l.split('#').next().unwrap_or("").split_whitespace().map(String::from).collect::<Vec<_>>()))
            .filter(|(_, w)| !w.is_empty())
            .collect()
    };
    let number =
        |file: &Path, line: usize, word: &str| -> Result<Real, String> { word.parse::<Real>().map_err(|_| format!("{}:{line}: expected a number, got `{word}`", file.display())) };
    let node_lines = lines(&nodes);
    let (header_line, header) = node_lines.first().ok_or_else(|| format!("{}: empty file", node_path.display()))?;
    let count = number(&node_path, *header_line, &header[0])? as usize;
    let mut ids = HashMap::new();
    // The header's count is not trusted with an allocation: the file's lines bound it.
    let mut vertices = Vec::with_capacity(count.min(node_lines.len()));
    for (line, words) in node_lines.iter().skip(1).take(count) {
        if words.len() < 4 {
            return Err(format!("{}:{line}: expected `index x y z`", node_path.display()));
        }
        ids.insert(words[0].clone(), vertices.len() as u32);
        vertices.push(Vec3::new(number(&node_path, *line, &words[1])?, number(&node_path, *line, &words[2])?, number(&node_path, *line, &words[3])?));
    }
    if vertices.len() != count {
        return Err(format!("{}: the header promises {count} nodes, the file has {}", node_path.display(), vertices.len()));
    }
    let ele_lines = lines(&elements);
    let (header_line, header) = ele_lines.first().ok_or_else(|| format!("{}: empty file", ele_path.display()))?;
    let count = number(&ele_path, *header_line, &header[0])? as usize;
    let mut tets = Vec::with_capacity(count.min(ele_lines.len()));
    for (line, words) in ele_lines.iter().skip(1).take(count) {
        if words.len() < 5 {
            return Err(format!("{}:{line}: expected `index n1 n2 n3 n4`", ele_path.display()));
        }
        let mut tet = [0u32; 4];
        for (slot, word) in tet.iter_mut().zip(&words[1..5]) {
            *slot = *ids.get(word).ok_or_else(|| format!("{}:{line}: node `{word}` is not in {}", ele_path.display(), node_path.display()))?;
        }
        tets.push(tet);
    }
    if tets.len() != count {
        return Err(format!("{}: the header promises {count} tetrahedra, the file has {}", ele_path.display(), tets.len()));
    }
    Ok(TetMesh { vertices, tets })
}

/// Reads the tetrahedra (element type 4) of an ASCII Gmsh file, format 2 or 4. Errors name the
/// file and line.
pub fn read_gmsh(path: &Path) -> Result<TetMesh, String> {
    let text = crate::input::read_text(path, crate::input::DATA_LIMIT).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let at = |n: usize| format!("{}:{}", path.display(), n + 1);
    let section = |name: &str| lines.iter().position(|l| l.trim() == name);
    let format = section("$MeshFormat").ok_or_else(|| format!("{}: not a Gmsh file (no $MeshFormat)", path.display()))?;
    let header: Vec<&str> = lines.get(format + 1).map_or(vec![], |l| l.split_whitespace().collect());
    let version: Real = header.first().and_then(|v| v.parse().ok()).ok_or_else(|| format!("{}: expected a version number", at(format + 1)))?;
    if header.get(1) != Some(&"0") {
        return Err(format!("{}: binary Gmsh files are not supported; save as ASCII", at(format + 1)));
    }
    let words = |n: usize| -> Vec<&str> { lines.get(n).map_or(vec![], |l| l.split_whitespace().collect()) };
    let int = |n: usize, w: Option<&&str>| -> Result<usize, String> { w.and_then(|w| w.parse().ok()).ok_or_else(|| format!("{}: expected an integer", at(n))) };
    let real = |n: usize, w: Option<&&str>| -> Result<Real, String> { w.and_then(|w| w.parse().ok()).ok_or_else(|| format!("{}: expected a number", at(n))) };
    let nodes_at = section("$Nodes").ok_or_else(|| format!("{}: no $Nodes section", path.display()))?;
    let elements_at = section("$Elements").ok_or_else(|| format!("{}: no $Elements section", path.display()))?;
    let mut ids: HashMap<usize, u32> = HashMap::new();
    let mut vertices = Vec::new();
    let mut tets = Vec::new();
    if (2.0..3.0).contains(&version) {
        let count = int(nodes_at + 1, words(nodes_at + 1).first())?;
        for n in nodes_at + 2..nodes_at + 2 + count {
            let w = words(n);
            ids.insert(int(n, w.first())?, vertices.len() as u32);
            vertices.push(Vec3::new(real(n, w.get(1))?, real(n, w.get(2))?, real(n, w.get(3))?));
        }
        let count = int(elements_at + 1, words(elements_at + 1).first())?;
        for n in elements_at + 2..elements_at + 2 + count {
            let w = words(n);
            if int(n, w.get(1))? != 4 {
                continue;
            }
            let tags = int(n, w.get(2))?;
            let mut tet = [0u32; 4];
            for (s, slot) in tet.iter_mut().enumerate() {
                let id = int(n, w.get(3 + tags + s))?;
                *slot = *ids.get(&id).ok_or_else(|| format!("{}: node {id} is not in $Nodes", at(n)))?;
            }
            tets.push(tet);
        }
    } else if (4.0..5.0).contains(&version) {
        let blocks = int(nodes_at + 1, words(nodes_at + 1).first())?;
        let mut n = nodes_at + 2;
        for _ in 0..blocks {
            let w = words(n);
            let count = int(n, w.get(3))?;
            let parametric = int(n, w.get(2))? != 0;
            if parametric {
                return Err(format!("{}: parametric nodes are not supported", at(n)));
            }
            let tags: Vec<usize> = (0..count).map(|i| int(n + 1 + i, words(n + 1 + i).first())).collect::<Result<_, _>>()?;
            for (i, tag) in tags.iter().enumerate() {
                let c = n + 1 + count + i;
                let w = words(c);
                ids.insert(*tag, vertices.len() as u32);
                vertices.push(Vec3::new(real(c, w.first())?, real(c, w.get(1))?, real(c, w.get(2))?));
            }
            n += 1 + 2 * count;
        }
        let blocks = int(elements_at + 1, words(elements_at + 1).first())?;
        let mut n = elements_at + 2;
        for _ in 0..blocks {
            let w = words(n);
            let (kind, count) = (int(n, w.get(2))?, int(n, w.get(3))?);
            for e in n + 1..n + 1 + count {
                if kind == 4 {
                    let w = words(e);
                    let mut tet = [0u32; 4];
                    for (s, slot) in tet.iter_mut().enumerate() {
                        let id = int(e, w.get(1 + s))?;
                        *slot = *ids.get(&id).ok_or_else(|| format!("{}: node {id} is not in $Nodes", at(e)))?;
                    }
                    tets.push(tet);
                }
            }
            n += 1 + count;
        }
    } else {
        return Err(format!("{}: Gmsh format {version} is not supported (2.x or 4.x ASCII)", at(format + 1)));
    }
    if tets.is_empty() {
        return Err(format!("{}: no tetrahedra (element type 4) in $Elements", path.display()));
    }
    Ok(TetMesh { vertices, tets })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit ball meshed on the BCC lattice: positively oriented, one piece, closed surface;
    /// snapping brings its boundary vertices at least twice as close to the sphere (root mean
    /// square distance; measured 0.29 -> 0.04-0.10 spacings), and its volume is within the
    /// error of a polyhedron inscribed in the sphere with edges `spacing` long, `3 spacing^2 / 8`
    /// (three times the sag `spacing^2 / 8` of such an edge).
    #[test]
    fn bcc_ball_is_valid_and_close_to_the_sphere() {
        let ball = |x: &Vec3| x.norm() - 1.0;
        let exact = 4.0 / 3.0 * std::f64::consts::PI;
        for spacing in [0.4, 0.2, 0.1] {
            let mesh = TetMesh::bcc(ball, &Vec3::repeat(-1.0), &Vec3::repeat(1.0), spacing, BCC_KEEP);
            mesh.check().unwrap();
            // A closed surface: every edge of the boundary is shared by two of its faces.
            let mut edges: HashMap<(u32, u32), i32> = HashMap::new();
            for f in mesh.boundary_faces() {
                for e in 0..3 {
                    *edges.entry((f[e], f[(e + 1) % 3])).or_default() += 1;
                    *edges.entry((f[(e + 1) % 3], f[e])).or_default() -= 1;
                }
            }
            assert!(edges.values().all(|&n| n == 0), "open or inconsistently oriented boundary");
            let rms = |mesh: &TetMesh| {
                let b: Vec<u32> = mesh.boundary_faces().into_iter().flatten().collect();
                (b.iter().map(|&v| ball(&mesh.vertices[v as usize]).powi(2)).sum::<Real>() / b.len() as Real).sqrt()
            };
            let lattice = TetMesh::bcc_lattice(ball, &Vec3::repeat(-1.0), &Vec3::repeat(1.0), spacing);
            assert!(rms(&mesh) < 0.5 * rms(&lattice), "snapped {} vs lattice {} at spacing {spacing}", rms(&mesh), rms(&lattice));
            let error = (mesh.volume() / exact - 1.0).abs();
            assert!(error < 0.375 * spacing * spacing, "volume error {error} at spacing {spacing}");
        }
    }

    /// A ball with a needle too thin for the lattice: the needle's loose tetrahedra (a
    /// fraction of a percent of the volume) are dropped and the mesh is one piece; two balls
    /// apart stay two pieces (refused by the check).
    #[test]
    fn bcc_drops_fragments_but_not_pieces() {
        let needle = |x: &Vec3| (x.norm() - 1.0).min(Vec3::new(x.x.clamp(1.0, 2.0), 0.0, 0.0).metric_distance(x) - 0.06);
        let with_fragments = TetMesh::bcc_lattice(needle, &Vec3::repeat(-1.0), &Vec3::new(2.0, 1.0, 1.0), 0.2);
        assert!(with_fragments.pieces() > 1, "the lattice left no fragments to drop");
        let mesh = TetMesh::bcc(needle, &Vec3::repeat(-1.0), &Vec3::new(2.0, 1.0, 1.0), 0.2, BCC_KEEP);
        mesh.check().unwrap();
        let two = |x: &Vec3| ((x - Vec3::new(-1.5, 0.0, 0.0)).norm() - 1.0).min((x - Vec3::new(1.5, 0.0, 0.0)).norm() - 1.0);
        let apart = TetMesh::bcc(two, &Vec3::new(-2.5, -1.0, -1.0), &Vec3::new(2.5, 1.0, 1.0), 0.2, BCC_KEEP);
        assert_eq!(apart.pieces(), 2);
        assert!(apart.check().is_err());
    }

    /// Inverted, degenerate and disconnected meshes are refused with the element named.
    #[test]
    fn bad_meshes_are_refused() {
        let base = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let mut mesh = TetMesh { vertices: base.to_vec(), tets: vec![[0, 1, 2, 3]] };
        assert!(mesh.check().is_ok());
        mesh.tets[0] = [0, 2, 1, 3];
        assert!(mesh.check().unwrap_err().contains("tetrahedron 0 is inverted"));
        mesh.vertices[3] = Vec3::new(0.5, 0.5, 0.0);
        mesh.tets[0] = [0, 1, 2, 3];
        assert!(mesh.check().unwrap_err().contains("tetrahedron 0 is degenerate"));
        let shifted: Vec<Vec3> = base.iter().map(|v| v + Vec3::repeat(5.0)).collect();
        let two = TetMesh { vertices: [base.to_vec(), shifted].concat(), tets: vec![[0, 1, 2, 3], [4, 5, 6, 7]] };
        assert!(two.check().unwrap_err().contains("2 disconnected pieces"));
    }

    /// The same two tetrahedra written as TetGen and as Gmsh 2 and 4 files read back alike;
    /// a missing node is named with its file and line.
    #[test]
    fn tetgen_and_gmsh_files_read_alike() {
        let dir = std::env::temp_dir().join(format!("tidepool-tetmesh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("two.node"), "# nodes\n5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n").unwrap();
        std::fs::write(dir.join("two.ele"), "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n").unwrap();
        std::fs::write(
            dir.join("two2.msh"),
            "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n5\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1\n$EndNodes\n\
             $Elements\n3\n1 2 2 0 1 1 2 3\n2 4 2 0 1 1 2 3 4\n3 4 2 0 1 2 3 4 5\n$EndElements\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("two4.msh"),
            "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 5 1 5\n3 1 0 5\n1\n2\n3\n4\n5\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n1 1 1\n$EndNodes\n\
             $Elements\n1 2 1 2\n3 1 4 2\n1 1 2 3 4\n2 2 3 4 5\n$EndElements\n",
        )
        .unwrap();
        let tetgen = read_tetgen(&dir.join("two.node")).unwrap();
        assert_eq!(tetgen.tets, vec![[0, 1, 2, 3], [1, 2, 3, 4]]);
        assert_eq!(read_gmsh(&dir.join("two2.msh")).unwrap(), tetgen);
        assert_eq!(read_gmsh(&dir.join("two4.msh")).unwrap(), tetgen);
        std::fs::write(dir.join("two.ele"), "2 4 0\n1 1 2 3 4\n2 2 3 4 9\n").unwrap();
        let err = read_tetgen(&dir.join("two.node")).unwrap_err();
        assert!(err.contains("two.ele:3: node `9`"), "{err}");
    }
}
