//! `tidepool movie` and `tidepool run --movie`: a run's previews (`preview_NNNN.png`) assembled
//! into `movie.mp4` (H.264, yuv420p, which every player opens) by `ffmpeg`, found on `PATH`.

use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The movie's name in the output directory.
pub const MOVIE: &str = "movie.mp4";

/// Frames per second where the run's `stats.jsonl` does not tell the previews' times.
const DEFAULT_FPS: f64 = 24.0;

/// What [`make`] wrote.
pub struct Movie {
    pub path: PathBuf,
    pub frames: usize,
    pub fps: f64,
}

/// The previews in `dir` with their frame numbers, in frame order.
fn previews(dir: &Path) -> anyhow::Result<Vec<u32>> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot read the output directory `{}`", dir.display()))?;
    let mut frames: Vec<u32> = entries.filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("preview_")?.strip_suffix(".png")?.parse().ok()).collect();
    frames.sort_unstable();
    Ok(frames)
}

/// The previews' rate: their count less one over the simulated time from the first to the last,
/// the frames' times read from `stats.jsonl` (previews every `output.every` frames play at the
/// scene's speed); [`DEFAULT_FPS`] where it has no two of them.
fn preview_rate(dir: &Path, frames: &[u32]) -> f64 {
    let times: std::collections::HashMap<u64, f64> = std::fs::read_to_string(dir.join("stats.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).ok()?;
            Some((record["frame"].as_u64()?, record["time"].as_f64()?))
        })
        .collect();
    let time = |f: Option<&u32>| f.and_then(|f| times.get(&u64::from(*f)).copied());
    match (time(frames.first()), time(frames.last())) {
        (Some(first), Some(last)) if last > first => (frames.len() - 1) as f64 / (last - first),
        _ => DEFAULT_FPS,
    }
}

/// Assembles the previews in `dir` into `dir/movie.mp4` at `fps` (default: the run's own
/// rate), written under a temporary name and renamed into place.
pub fn make(dir: &Path, fps: Option<f64>) -> anyhow::Result<Movie> {
    let frames = previews(dir)?;
    if frames.is_empty() {
        bail!("no previews (preview_NNNN.png) in `{}`: a movie needs a run whose scene has \"png\" in output.formats", dir.display());
    }
    let fps = fps.unwrap_or_else(|| preview_rate(dir, &frames));
    let tmp = format!(".{MOVIE}.tmp");
    // Run in `dir` with a relative glob, so that no character of the directory's path is read
    // as a pattern; the padding makes odd picture sizes even, which yuv420p needs.
    let output = Command::new("ffmpeg")
        .current_dir(dir)
        .args(["-y", "-loglevel", "error", "-framerate", &format!("{fps}"), "-pattern_type", "glob", "-i", "preview_*.png"])
        .args(["-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-f", "mp4", &tmp])
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "ffmpeg was not found on PATH; install it (Debian, Ubuntu: `apt install ffmpeg`; macOS: `brew install ffmpeg`) and run \
             `tidepool movie {}`: the previews are there",
            dir.display()
        ),
        Err(e) => return Err(e).context("cannot start ffmpeg"),
    };
    let tmp = dir.join(tmp);
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        bail!("ffmpeg failed ({}) making a movie of the previews in `{}`: {}", output.status, dir.display(), String::from_utf8_lossy(&output.stderr).trim());
    }
    let path = dir.join(MOVIE);
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot rename the movie into place as `{}`", path.display()))?;
    Ok(Movie { path, frames: frames.len(), fps })
}
