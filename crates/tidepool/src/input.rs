//! Reading input files (scenes, meshes, height maps) safely. A file is read only if it is a
//! regular file no larger than a limit: a device such as `/dev/zero` or a FIFO would otherwise
//! be read forever or block, and a huge file would exhaust memory.

use std::io::Read;
use std::path::Path;

/// Scene files: text, at most 16 MiB.
pub const SCENE_LIMIT: u64 = 16 << 20;
/// Meshes and images: at most 1 GiB.
pub const DATA_LIMIT: u64 = 1 << 30;

/// The bytes of the regular file at `path`, of at most `limit` bytes. The error says what is
/// wrong, without the path (the caller adds it).
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot open: {}", io_reason(&e)))?;
    if !meta.is_file() {
        return Err("not a regular file (a directory, device or pipe cannot be read as input)".into());
    }
    if meta.len() > limit {
        return Err(format!("the file is {:.1} MiB, more than the {:.0} MiB an input may be", meta.len() as f64 / 1048576.0, limit as f64 / 1048576.0));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {}", io_reason(&e)))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may have grown since; read no more than the limit allows.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {}", io_reason(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(format!("the file grew past the {:.0} MiB an input may be while it was read", limit as f64 / 1048576.0));
    }
    Ok(bytes)
}

/// The text of the regular file at `path` (see [`read_limited`]), which must be UTF-8.
pub fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    String::from_utf8(read_limited(path, limit)?).map_err(|e| format!("not UTF-8 text (byte {} is not valid)", e.utf8_error().valid_up_to()))
}

/// An I/O error in words, without the OS error number (`No such file or directory`).
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
