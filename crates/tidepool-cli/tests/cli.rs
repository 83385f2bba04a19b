//! The `tidepool` command: exit codes, messages, Ctrl-C and resume.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn tidepool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidepool")).args(args).output().expect("runs")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tidepool-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_scene(dir: &Path, frames: u32, extra: &str) -> PathBuf {
    let path = dir.join("scene.toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nframes = {frames}\n{extra}\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 0.6, 0.4]\nresolution = 20\n\n\
             [[liquid.region]]\nshape.box = {{ min = [0.0, 0.0, 0.0], max = [0.35, 0.45, 0.4] }}\n\n\
             [output]\nformats = [\"ply\"]\n"
        ),
    )
    .unwrap();
    path
}

fn stats_lines(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("stats.jsonl")).map_or(0, |s| s.lines().count())
}

#[test]
fn check_prints_the_grid_and_estimates() {
    let dir = temp("check");
    let scene = write_scene(&dir, 2, "");
    let out = tidepool(&["check", scene.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["20 x 12 x 8 = 1920 cells", "memory", "time step"] {
        assert!(text.contains(needle), "{text}");
    }
}

/// `check` on a scene of several liquids lists each phase with its volume and each reaction.
#[test]
fn check_lists_the_phases_and_their_reactions() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes/reacting_liquids.toml");
    let out = tidepool(&["check", scene.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in
        ["phase      acid: 1300 kg/m^3, 0.0018 m^3, 0.02 Pa s", "phase      gas: 20 kg/m^3, 0.0000 m^3", "reaction   acid + base -> gas at 0.01 m/s", "reaction   gas + air -> air"]
    {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

#[test]
fn check_lists_deformable_bodies_simulated_in_full() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes/stack.toml");
    let out = tidepool(&["check", scene.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let needle = "body       rubber_1 (deformable in full: 245 particles, 0 pinned, 864 tetrahedra, stable step";
    assert!(text.contains(needle), "{needle}: {text}");
}

#[test]
fn invalid_input_exits_with_2_and_a_located_message() {
    let dir = temp("invalid");
    let scene = dir.join("bad.toml");
    std::fs::write(&scene, "[simulation]\nframes = 2\nspeed = 3\n").unwrap();
    for args in [vec!["check", scene.to_str().unwrap()], vec!["run", scene.to_str().unwrap(), "--quiet"]] {
        let out = tidepool(&args);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bad.toml:3:1") && err.contains("unknown field `speed`"), "{err}");
    }
    let out = tidepool(&["run", scene.to_str().unwrap(), "--threads", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = tidepool(&["bench", "--case", "no-such-case"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("poisson-128"));
    let out = tidepool(&["run", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_writes_frames_where_it_says() {
    let dir = temp("run");
    let scene = write_scene(&dir, 3, "");
    let out_dir = dir.join("frames");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--frames", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains(out_dir.to_str().unwrap()));
    assert_eq!(stats_lines(&out_dir), 3);
    assert!(out_dir.join("surface_0002.ply").exists() && !out_dir.join("surface_0003.ply").exists());
}

#[test]
fn instability_exits_with_3() {
    let dir = temp("unstable");
    let scene = write_scene(&dir, 10, "max_speed = 0.5");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unstable in frame"));
}

/// Sends SIGINT to a run of `scene` once it has written three frames: it finishes the frame
/// in progress, writes it and exits with 130; every written frame is complete (its stats line
/// and its `stem` mesh); `--resume` then completes the run.
fn interrupt_and_resume(dir: &Path, scene: &Path, stem: &str) {
    let out_dir = dir.join("o");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidepool")).args(["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--quiet"]).spawn().unwrap();
    let start = Instant::now();
    while stats_lines(&out_dir) < 3 {
        assert!(start.elapsed() < Duration::from_secs(60), "{}: no frames written", scene.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", scene.display());
    let written = stats_lines(&out_dir);
    assert!((3..401).contains(&written), "{}: {written} frames", scene.display());
    // Every written frame is complete: its stats line parses and its mesh exists.
    let last = written - 1;
    let stats = std::fs::read_to_string(out_dir.join("stats.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(stats.lines().last().unwrap()).unwrap();
    assert_eq!(line["frame"], last as u64);
    assert!(out_dir.join(format!("{stem}_{last:04}.ply")).exists(), "{}: no {stem} for frame {last}", scene.display());
    // Resume the remaining frames (fewer, to keep the test short).
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--quiet", "--resume", "--frames", &(last + 2).to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stats_lines(&out_dir), last + 3);
}

#[test]
fn ctrl_c_finishes_the_frame_and_resume_completes_the_run() {
    let dir = temp("interrupt");
    interrupt_and_resume(&dir, &write_scene(&dir, 400, ""), "surface");
}

#[test]
fn ctrl_c_and_resume_work_for_flip_with_a_body() {
    let dir = temp("interrupt-flip");
    let extra = "[liquid]\nmethod = \"flip\"\nflip.incompressibility = \"bilateral\"\n[[body]]\nshape.box = { min = [0.5, 0.2, 0.1], max = [0.7, 0.3, 0.3] }\ndensity = 400.0\n";
    interrupt_and_resume(&dir, &write_scene(&dir, 400, extra), "particles");
}

#[test]
fn ctrl_c_and_resume_work_for_surface_flow() {
    let dir = temp("interrupt-surface");
    let scene = dir.join("surface.toml");
    std::fs::write(&scene, "[simulation]\nframes = 400\nsteps_per_frame = 20\n\n[surface]\nnodes = [192, 192]\nstiffness = 1.0\n\n[water]\ninitial.uniform = { particles = 3 }\n")
        .unwrap();
    interrupt_and_resume(&dir, &scene, "water");
}

/// A checkpoint with a flipped byte is refused: exit 1, a message naming the file, and the
/// file left for the user to inspect.
#[test]
fn a_corrupted_checkpoint_is_refused_with_exit_1() {
    let dir = temp("corrupt");
    let scene = write_scene(&dir, 2, "");
    let out_dir = dir.join("o");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let checkpoint = out_dir.join("checkpoint").join("checkpoint_0002.bin");
    let mut bytes = std::fs::read(&checkpoint).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&checkpoint, &bytes).unwrap();
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--quiet", "--resume", "--frames", "4"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let message = String::from_utf8_lossy(&out.stderr);
    assert!(message.contains("checkpoint_0002.bin") && message.contains("corrupt"), "{message}");
    assert_eq!(std::fs::read(&checkpoint).unwrap(), bytes);
    assert_eq!(stats_lines(&out_dir), 3, "nothing was written past the refused checkpoint");
}

/// A FLIP scene: `check` reports particles and memory; `run` writes particle caches, and a
/// solve capped below what it needs is reported on the log and in the stats, not silently.
#[test]
fn flip_scenes_run_and_report_unconverged_solves() {
    let dir = temp("flip");
    let scene = write_scene(&dir, 2, "[liquid]\nmethod = \"flip\"\npressure_max_iterations = 2");
    let out = tidepool(&["check", scene.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FLIP, unilateral") && text.contains("particles") && text.contains("memory"), "{text}");
    let out_dir = dir.join("frames");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not converge"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stats_lines(&out_dir), 3);
    let stats = std::fs::read_to_string(out_dir.join("stats.jsonl")).unwrap();
    assert!(stats.lines().last().unwrap().contains("\"lcp_converged\":false"), "{stats}");
    assert!(out_dir.join("particles_0002.ply").exists() && out_dir.join("surface_0002.ply").exists());
    // FLIP runs write checkpoints too: resuming a finished run has nothing left to do.
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--resume"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("resuming after frame 2"));
    assert_eq!(stats_lines(&out_dir), 3);
}

/// `--threads 4096` started thousands of workers and hung; the count is bounded.
#[test]
fn thread_counts_are_bounded() {
    let dir = temp("threads");
    let scene = write_scene(&dir, 1, "");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--threads", "4096", "--out", dir.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads must be from 1 to 256, got 4096"));
}

/// A full disk (a write to `/dev/full`, through the temporary file of frame 1's mesh) stops
/// the run with exit 1 and one clear message; the temporary file is gone, and with no
/// checkpoints `stats.jsonl` and `tidepool.pvd` list only the frame whose files are complete.
#[test]
fn a_full_disk_stops_cleanly_and_lists_no_failed_frame() {
    let dir = temp("full-disk");
    let scene = write_scene(&dir, 2, "").to_str().unwrap().to_string();
    std::fs::write(&scene, std::fs::read_to_string(&scene).unwrap().replace("formats = [\"ply\"]", "formats = [\"ply\", \"vtk\"]\ncheckpoint_every = 0")).unwrap();
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let tmp = out_dir.join(".surface_0001.ply.tmp");
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let out = tidepool(&["run", &scene, "--out", out_dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("surface_0001.ply") && err.matches("No space left on device").count() == 1, "{err}");
    assert!(!err.contains("os error"), "{err}");
    assert!(tmp.symlink_metadata().is_err(), "the temporary file is left behind");
    assert_eq!(stats_lines(&out_dir), 1, "stats.jsonl lists the failed frame");
    let pvd = std::fs::read_to_string(out_dir.join("tidepool.pvd")).unwrap();
    assert!(!pvd.contains("_0001"), "tidepool.pvd lists the failed frame: {pvd}");
}

/// `run --movie` assembles the previews (every second frame of a 30 fps run, so 15 per second)
/// into `movie.mp4` with ffmpeg; where ffmpeg is not installed it says so, exits with 1, and
/// the previews stay. Without ffmpeg on `PATH`, `tidepool movie` says how to install it.
#[test]
fn movie_assembles_the_previews_with_ffmpeg() {
    let dir = temp("movie");
    let scene = dir.join("scene.toml");
    std::fs::write(
        &scene,
        "[simulation]\nframes = 4\nfps = 30\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 0.6, 0.4]\nresolution = 20\n\
         [[liquid.region]]\nshape.box = { min = [0.0, 0.0, 0.0], max = [0.35, 0.45, 0.4] }\n\
         [output]\nformats = [\"png\"]\nevery = 2\ncamera = { width = 63, height = 47 }\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--movie"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let movie = out_dir.join("movie.mp4");
    if Command::new("ffmpeg").arg("-version").output().is_ok() {
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("3 previews at 15.000 frames per second"), "{err}");
        let probe = Command::new("ffprobe")
            .args(["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames,width,height,codec_name", "-of", "default=nw=1"])
            .arg(&movie)
            .output()
            .expect("ffprobe comes with ffmpeg");
        let streams = String::from_utf8_lossy(&probe.stdout);
        for needle in ["codec_name=h264", "width=64", "height=48", "nb_read_frames=3"] {
            assert!(streams.contains(needle), "{streams}");
        }
    } else {
        eprintln!("ffmpeg is not installed: checking only the message that says so");
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("ffmpeg was not found on PATH") && !movie.exists(), "{err}");
    }
    assert!(out_dir.join("preview_0004.png").is_file());
    let without = Command::new(env!("CARGO_BIN_EXE_tidepool")).args(["movie", out_dir.to_str().unwrap()]).env("PATH", "").output().unwrap();
    assert_eq!(without.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&without.stderr).contains("install it (Debian, Ubuntu: `apt install ffmpeg`"));
}

/// `--movie` on a scene that writes no previews is refused before anything runs.
#[test]
fn movie_needs_previews() {
    let dir = temp("movie-without-previews");
    let scene = write_scene(&dir, 2, "");
    let out_dir = dir.join("out");
    let out = tidepool(&["run", scene.to_str().unwrap(), "--out", out_dir.to_str().unwrap(), "--movie"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--movie needs the previews: add \"png\""));
    assert!(!out_dir.join("stats.jsonl").exists());
}

/// `tidepool check`'s memory estimate for the default scene is within 30% of the peak its run
/// reaches, as the run reports it (measured: 43.4 MiB estimated, 45-48 MiB peak; before the
/// preview renderer kept single-precision depths and 8-bit colours and the estimate counted
/// it, 15.8 MiB estimated against a 151 MiB peak). Linux only: the peak is read from `/proc`.
#[test]
fn check_estimates_the_peak_memory_of_a_run() {
    if !Path::new("/proc/self/status").exists() {
        eprintln!("no /proc/self/status: the peak memory is not measured on this system");
        return;
    }
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes/default.toml");
    let check = tidepool(&["check", scene.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&check.stdout);
    let number_after = |text: &str, key: &str| -> f64 {
        text.split(key).nth(1).and_then(|rest| rest.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no `{key}` in {text}"))
    };
    let estimate = number_after(&text, "memory     about ");
    let dir = temp("peak");
    let run = tidepool(&["run", scene.to_str().unwrap(), "--out", dir.to_str().unwrap(), "--frames", "1"]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    let peak = number_after(&err, "peak memory ");
    assert!((estimate / peak - 1.0).abs() < 0.3, "estimated {estimate} MiB, peak {peak} MiB");
}
