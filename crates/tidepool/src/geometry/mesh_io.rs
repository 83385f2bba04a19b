//! Reading triangle meshes from OBJ and PLY files.

use super::TriMesh;
use crate::input::{read_limited, DATA_LIMIT};
use crate::math::Vec3;
use ply_rs_bw::parser::Parser;
use ply_rs_bw::ply::{DefaultElement, Property};
use std::path::Path;

/// Reads a closed triangle mesh (`.obj` or `.ply`, ASCII or binary), triangulating polygons and
/// orienting it outwards. The error says what is wrong, without the path (the caller adds it).
pub fn read_closed_mesh(path: &Path) -> Result<TriMesh, String> {
    let mut mesh = read_mesh(path)?;
    mesh.check_closed().map_err(|e| format!("the mesh must be closed to have an inside: {e}"))?;
    if mesh.signed_volume() < 0.0 {
        mesh.flip();
    }
    // A closed mesh whose faces cancel (a flat tetrahedron, a two-sided triangle) has no
    // inside: as a solid or liquid it would be nothing, or everything.
    let (lo, hi) = mesh.bounds().expect("a closed mesh has vertices");
    let extent = (hi - lo).max();
    if mesh.signed_volume() <= 1e-9 * extent.powi(3) {
        return Err(format!("the mesh encloses no volume ({:e} m^3 inside a box {extent} m across): it is flat, or its faces cancel", mesh.signed_volume()));
    }
    Ok(mesh)
}

/// Reads a triangle mesh (`.obj` or `.ply`, ASCII or binary; or the boundary of a tetrahedral
/// mesh, TetGen `.node`/`.ele` or Gmsh `.msh`), open or closed, triangulating polygons; checks that it has triangles, valid vertex indices and finite coordinates, and
/// does not intersect itself.
pub fn read_mesh(path: &Path) -> Result<TriMesh, String> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let mesh = match ext.as_deref() {
        Some("obj") => read_obj(path)?,
        Some("ply") => read_ply(path)?,
        _ if super::tetmesh::is_tetrahedral_file(path) => {
            let tets = super::tetmesh::read_tetrahedra(path)?;
            TriMesh { triangles: tets.boundary_faces(), vertices: tets.vertices }
        }
        _ => return Err("expected a mesh file ending in .obj or .ply (or a tetrahedral mesh: .node, .ele, .msh)".into()),
    };
    if mesh.triangles.is_empty() {
        return Err("the file holds no triangles".into());
    }
    let n = mesh.vertices.len() as u32;
    if let Some(t) = mesh.triangles.iter().find(|t| t.iter().any(|&i| i >= n)) {
        return Err(format!("a face refers to vertex {} but the file has {n} vertices", t.iter().max().unwrap()));
    }
    if mesh.vertices.iter().any(|v| !v.iter().all(|c| c.is_finite())) {
        return Err("a vertex coordinate is not a finite number".into());
    }
    if let Some((t, u)) = mesh.find_self_intersection() {
        return Err(format!("the mesh intersects itself: triangles {t} and {u} (counting from 0) cross"));
    }
    Ok(mesh)
}

fn read_obj(path: &Path) -> Result<TriMesh, String> {
    let options = tobj::LoadOptions { triangulate: true, single_index: false, ..Default::default() };
    let bytes = read_limited(path, DATA_LIMIT)?;
    // Materials are not used: an `mtllib` line is skipped rather than opened.
    let (models, _) = tobj::load_obj_buf(&mut std::io::Cursor::new(bytes), &options, |_| Err(tobj::LoadError::OpenFileFailed)).map_err(|e| format!("cannot read OBJ: {e}"))?;
    let mut mesh = TriMesh::default();
    for model in models {
        let m = model.mesh;
        let part = TriMesh {
            vertices: m.positions.chunks_exact(3).map(|p| Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64)).collect(),
            triangles: m.indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect(),
        };
        mesh.append(&part);
    }
    Ok(mesh)
}

fn read_ply(path: &Path) -> Result<TriMesh, String> {
    let mut reader = std::io::Cursor::new(read_limited(path, DATA_LIMIT)?);
    let ply = Parser::<DefaultElement>::new().read_ply(&mut reader).map_err(|e| format!("cannot read PLY: {e}"))?;
    let number = |p: &Property| -> Option<f64> {
        Some(match *p {
            Property::Char(v) => v as f64,
            Property::UChar(v) => v as f64,
            Property::Short(v) => v as f64,
            Property::UShort(v) => v as f64,
            Property::Int(v) => v as f64,
            Property::UInt(v) => v as f64,
            Property::Float(v) => v as f64,
            Property::Double(v) => v,
            _ => return None,
        })
    };
    let indices = |p: &Property| -> Option<Vec<i64>> {
        Some(match p {
            Property::ListChar(v) => v.iter().map(|&x| x as i64).collect(),
            Property::ListUChar(v) => v.iter().map(|&x| x as i64).collect(),
            Property::ListShort(v) => v.iter().map(|&x| x as i64).collect(),
            Property::ListUShort(v) => v.iter().map(|&x| x as i64).collect(),
            Property::ListInt(v) => v.iter().map(|&x| x as i64).collect(),
            Property::ListUInt(v) => v.iter().map(|&x| x as i64).collect(),
            _ => return None,
        })
    };
    let vertices = ply.payload.get("vertex").ok_or("the PLY file has no `vertex` element")?;
    let faces = ply.payload.get("face").ok_or("the PLY file has no `face` element")?;
    let mut mesh = TriMesh::default();
    for (n, v) in vertices.iter().enumerate() {
        let coord = |key: &str| v.get(key).and_then(number).ok_or_else(|| format!("vertex {n} has no numeric `{key}` property"));
        mesh.vertices.push(Vec3::new(coord("x")?, coord("y")?, coord("z")?));
    }
    for (n, f) in faces.iter().enumerate() {
        let list = f.get("vertex_indices").or_else(|| f.get("vertex_index")).and_then(indices).ok_or_else(|| format!("face {n} has no integer list `vertex_indices`"))?;
        if list.len() < 3 || list.iter().any(|&i| i < 0 || i > u32::MAX as i64) {
            return Err(format!("face {n} is not a polygon of valid vertex indices"));
        }
        for m in 1..list.len() - 1 {
            mesh.triangles.push([list[0] as u32, list[m] as u32, list[m + 1] as u32]);
        }
    }
    Ok(mesh)
}
