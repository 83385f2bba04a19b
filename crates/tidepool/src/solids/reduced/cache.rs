//! An on-disk cache of modal bases: the modal analysis of a model takes seconds to minutes,
//! and the same mesh and material come back in every run of a scene. A basis is stored under a
//! key hashed from the mesh (every coordinate and index), the material and the modes asked
//! for, in the directory `TIDEPOOL_CACHE_DIR` names (by default `$XDG_CACHE_HOME/tidepool`,
//! else `~/.cache/tidepool`; an empty value turns the cache off). Files are written atomically
//! (a temporary file, then a rename); one that cannot be read back whole is ignored.

use super::fem::ElasticMaterial;
use super::modes::ModalBasis;
use crate::geometry::TetMesh;
use crate::math::{Real, SplitMix64};
use std::path::{Path, PathBuf};

/// The first bytes of a cache file (the format's version).
const MAGIC: &[u8; 8] = b"TPMODES1";

/// The cache directory from the environment (`None`: no cache).
pub fn directory() -> Option<PathBuf> {
    match std::env::var_os("TIDEPOOL_CACHE_DIR") {
        Some(dir) if dir.is_empty() => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|d| d.join("tidepool")),
    }
}

/// The key of the basis of `count` modes of `mesh` made of `material` (`consistent`: with the
/// consistent mass matrix).
pub fn key(mesh: &TetMesh, material: &ElasticMaterial, count: usize, consistent: bool) -> u64 {
    let words = mesh
        .vertices
        .iter()
        .flat_map(|x| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
        .chain(mesh.tets.iter().flat_map(|t| t.map(u64::from)))
        .chain([material.young, material.poisson, material.density].map(Real::to_bits))
        .chain([mesh.vertices.len() as u64, mesh.tets.len() as u64, count as u64, u64::from(consistent)]);
    SplitMix64::keyed(&words.collect::<Vec<u64>>()).next_u64()
}

fn file(dir: &Path, key: u64) -> PathBuf {
    dir.join(format!("modes-{key:016x}.bin"))
}

/// The basis stored under `key` in `dir`, if it is there whole with `count` modes over `dofs`
/// displacements.
pub fn load(dir: &Path, key: u64, dofs: usize, count: usize) -> Option<ModalBasis> {
    let bytes = std::fs::read(file(dir, key)).ok()?;
    let (magic, rest) = bytes.split_at_checked(MAGIC.len())?;
    if magic != MAGIC || rest.len() != 8 * (3 + count * (1 + dofs)) {
        return None;
    }
    let mut words = rest.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
    let (stored_count, stored_dofs, iterations) = (words.next()?, words.next()?, words.next()?);
    if stored_count != count as u64 || stored_dofs != dofs as u64 {
        return None;
    }
    let mut values = words.map(Real::from_bits);
    let eigenvalues: Vec<Real> = values.by_ref().take(count).collect();
    let modes: Vec<Vec<Real>> = (0..count).map(|_| values.by_ref().take(dofs).collect()).collect();
    let finite = eigenvalues.iter().chain(modes.iter().flatten()).all(|v| v.is_finite());
    finite.then_some(ModalBasis { eigenvalues, modes, iterations: iterations as usize })
}

/// Stores `basis` under `key` in `dir` (created if missing).
pub fn store(dir: &Path, key: u64, basis: &ModalBasis) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let dofs = basis.modes.first().map_or(0, Vec::len);
    let mut bytes = MAGIC.to_vec();
    for word in [basis.modes.len() as u64, dofs as u64, basis.iterations as u64] {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    for v in basis.eigenvalues.iter().chain(basis.modes.iter().flatten()) {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let target = file(dir, key);
    let temporary = target.with_extension(format!("{}.{:?}.tmp", std::process::id(), std::thread::current().id()).replace(['(', ')'], ""));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, &target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Vec3;
    use crate::solids::reduced::body::ReducedModel;

    /// A model built twice with a cache directory: the second reads the first's basis back
    /// bit for bit; a truncated file is ignored (the basis recomputed and stored again, the
    /// same); another material has another key.
    #[test]
    fn stored_basis_reads_back_exactly_and_a_damaged_one_is_recomputed() {
        let dir = std::env::temp_dir().join(format!("tidepool-modes-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mesh = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.3, 0.1, 0.1), [6, 2, 2]);
        let material = ElasticMaterial { young: 1e5, poisson: 0.3, density: 900.0 };
        let first = ReducedModel::new(&mesh, &material, 4, 0.0, false, Some(&dir)).unwrap();
        let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1, "one basis stored: {files:?}");
        let second = ReducedModel::new(&mesh, &material, 4, 0.0, false, Some(&dir)).unwrap();
        assert_eq!((&first.modes, &first.eigenvalues), (&second.modes, &second.eigenvalues));
        let bytes = std::fs::read(&files[0]).unwrap();
        std::fs::write(&files[0], &bytes[..bytes.len() / 2]).unwrap();
        let centred = first.mesh.clone();
        assert!(load(&dir, key(&centred, &material, 4, false), 3 * centred.vertices.len(), 4).is_none());
        let third = ReducedModel::new(&mesh, &material, 4, 0.0, false, Some(&dir)).unwrap();
        assert_eq!((&first.modes, &first.eigenvalues), (&third.modes, &third.eigenvalues));
        assert_eq!(std::fs::read(&files[0]).unwrap(), bytes, "the damaged file was not rewritten");
        let softer = ElasticMaterial { young: 5e4, ..material };
        assert_ne!(key(&centred, &material, 4, false), key(&centred, &softer, 4, false));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
