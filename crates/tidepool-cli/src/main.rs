//! The `tidepool` command: parses arguments and calls the library.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tidepool::driver::{Event, RunOutcome};
use tidepool::fluids::Fluid;
use tidepool::output::{self, RunInfo};
use tidepool::scene::{self, AnyScene};
use tidepool::session;
use tidepool::world::World;
use tidepool::{Error, SceneError};

mod movie;

/// Exit status: the run completed.
const EXIT_OK: u8 = 0;
/// Exit status: an output or checkpoint file could not be written or read.
const EXIT_FAILURE: u8 = 1;
/// Exit status: invalid scene, mesh or command line.
const EXIT_INVALID_INPUT: u8 = 2;
/// Exit status: the simulation became numerically unstable.
const EXIT_UNSTABLE: u8 = 3;
/// Exit status: stopped by Ctrl-C after writing the frame in progress.
const EXIT_INTERRUPTED: u8 = 130;

/// Two-way coupled fluid-solid simulation for animation.
#[derive(Parser, Debug)]
#[command(name = "tidepool", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a scene and write its frames (no SCENE: the built-in default scene).
    Run(RunArgs),
    /// Validate a scene and print its size, memory and time-step estimates.
    Check {
        /// Scene file (TOML).
        scene: PathBuf,
    },
    /// Assemble a run's previews (preview_NNNN.png) into DIR/movie.mp4 with ffmpeg.
    Movie {
        /// The run's output directory.
        dir: PathBuf,
        /// Frames per second (default: the run's own rate, from its stats.jsonl).
        #[arg(long)]
        fps: Option<f64>,
    },
    /// Run fixed benchmark workloads on one thread and on all (or `--threads`) and print JSON with the speed-ups.
    Bench {
        /// Cases to run (default: all). Known: poisson-128, dam-break-128, dam-break-128-mic0, dam-break-sph-geometry, two-phase-128, buoyancy, pool-of-bodies, tori-pool, starfish-150, lattice-256, lattice-1024, flip-dam-break, lcp-vs-poisson.
        #[arg(long = "case")]
        cases: Vec<String>,
        /// Worker threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
    },
}

#[derive(clap::Args, Debug, Default)]
struct RunArgs {
    /// Scene file (TOML); the built-in default scene when omitted.
    scene: Option<PathBuf>,
    /// Output directory (default: the scene's `output.directory`, else `out/<scene name>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Simulate this many frames instead of the scene's `simulation.frames`.
    #[arg(long)]
    frames: Option<u32>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// No progress bar or summary.
    #[arg(long)]
    quiet: bool,
    /// Continue from the newest checkpoint in the output directory.
    #[arg(long)]
    resume: bool,
    /// When the run completes, assemble its previews into movie.mp4 with ffmpeg (the scene
    /// must write "png").
    #[arg(long)]
    movie: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => run(RunArgs::default()),
        Some(Command::Run(args)) => run(args),
        Some(Command::Check { scene }) => check(&scene),
        Some(Command::Movie { dir, fps }) => make_movie(&dir, fps, false),
        Some(Command::Bench { cases, threads }) => bench(&cases, threads),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            let code = match err.downcast_ref::<Error>() {
                Some(Error::Scene(_)) => EXIT_INVALID_INPUT,
                Some(Error::BlowUp { .. }) => EXIT_UNSTABLE,
                _ if err.is::<SceneError>() || err.is::<UsageError>() => EXIT_INVALID_INPUT,
                _ => EXIT_FAILURE,
            };
            ExitCode::from(code)
        }
    }
}

/// A command-line value that cannot be used.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The most worker threads `--threads` may ask for.
const MAX_THREADS: usize = 256;

/// Stack of each worker thread: the whole command runs on one (see [`tidepool::on_pool`]), so
/// it gets what a main thread has.
const WORKER_STACK_BYTES: usize = 8 << 20;

/// Starts the thread pool (`threads` workers, or one per core) and returns how many it has.
fn set_threads(threads: Option<usize>) -> anyhow::Result<usize> {
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK_BYTES);
    if let Some(n) = threads {
        if !(1..=MAX_THREADS).contains(&n) {
            return Err(UsageError(format!("--threads must be from 1 to {MAX_THREADS}, got {n}")).into());
        }
        pool = pool.num_threads(n);
    }
    pool.build_global().context("cannot start the thread pool")?;
    Ok(rayon::current_num_threads())
}

fn run(args: RunArgs) -> anyhow::Result<u8> {
    let threads = set_threads(args.threads)?;
    tidepool::on_pool(|| run_on(args, threads))
}

fn run_on(args: RunArgs, threads: usize) -> anyhow::Result<u8> {
    let mut scene = match args.scene.as_deref() {
        Some(path) => scene::load_any(path)?,
        None => AnyScene::Liquid(Box::new(scene::load_default()?)),
    };
    if let Some(frames) = args.frames {
        if frames == 0 {
            return Err(UsageError("--frames must be at least 1".into()).into());
        }
        scene.set_frames(frames);
    }
    if args.movie && !scene.writes_previews() {
        return Err(UsageError("--movie needs the previews: add \"png\" to the scene's output.formats".into()).into());
    }
    if args.out.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
        return Err(UsageError("--out must name a directory, got an empty path".into()).into());
    }
    let dir = session::output_directory(&scene, args.out.as_deref());
    let last_frame = scene.frames();
    let info = RunInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        command_line: std::env::args().collect(),
        threads,
        start_time: output::utc_now_rfc3339(),
        scene: scene.path().map(|p| p.display().to_string()),
        resumed_after_frame: None,
    };
    let (mut driver, resumed) = session::start(&scene, &dir, args.resume, info)?;
    if !args.quiet {
        let what = scene.path().map_or("the built-in default scene".to_string(), |p| p.display().to_string());
        eprintln!("tidepool: simulating {what} ({}, {threads} threads)", describe(&driver.world));
        eprintln!("tidepool: writing frames to {}", dir.display());
        if let Some(f) = resumed {
            eprintln!("tidepool: resuming after frame {f}");
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Without a handler (e.g. one is already installed) Ctrl-C simply ends the process.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                std::process::exit(EXIT_INTERRUPTED as i32);
            }
        });
    }
    let first = driver.world.clock.frame;
    let bar =
        ProgressBar::with_draw_target(Some((last_frame - first.min(last_frame)) as u64), if args.quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() });
    bar.set_style(
        ProgressStyle::with_template("frame {msg} [{bar:28.cyan/blue}] {pos}/{len} | {elapsed_precise} elapsed, ETA {eta}").expect("valid template").progress_chars("=> "),
    );
    let outcome = driver.run(last_frame, &stop, &mut |event| match event {
        Event::Substep(p) => {
            bar.set_position((p.frame - 1 - first) as u64);
            bar.set_message(format!("{}/{}, substep {}, t = {:.3} s, dt = {:.2} ms", p.frame, p.last_frame, p.substeps, p.time, p.dt * 1e3));
            if stop.load(Ordering::SeqCst) {
                bar.set_message(format!("{}/{} (finishing this frame, then stopping)", p.frame, p.last_frame));
            }
        }
        Event::Frame(record) => {
            if let Some(what) = record.totals.unconverged() {
                bar.suspend(|| eprintln!("tidepool: warning: frame {}: a {what} did not converge within liquid.pressure_max_iterations (see stats.jsonl)", record.frame));
            }
        }
    });
    bar.finish_and_clear();
    match outcome? {
        RunOutcome::Completed => {
            if !args.quiet {
                let peak = tidepool::bench::peak_resident_bytes().map_or(String::new(), |bytes| format!("; peak memory {:.1} MiB", bytes as f64 / 1048576.0));
                eprintln!("tidepool: wrote frames 0..={last_frame} to {}{peak}", dir.display());
            }
            if args.movie {
                return make_movie(&dir, None, args.quiet);
            }
            Ok(EXIT_OK)
        }
        RunOutcome::Interrupted { frame } => {
            eprintln!("tidepool: interrupted; frames up to {frame} are in {}. Continue with `--resume`.", dir.display());
            Ok(EXIT_INTERRUPTED)
        }
    }
}

/// `tidepool movie` and `run --movie`: the previews in `dir` into `movie.mp4`.
fn make_movie(dir: &Path, fps: Option<f64>, quiet: bool) -> anyhow::Result<u8> {
    if let Some(fps) = fps.filter(|f| !(f.is_finite() && *f > 0.0)) {
        return Err(UsageError(format!("--fps must be a positive number, got {fps}")).into());
    }
    let made = movie::make(dir, fps)?;
    if !quiet {
        eprintln!("tidepool: wrote {} ({} previews at {:.3} frames per second)", made.path.display(), made.frames, made.fps);
    }
    Ok(EXIT_OK)
}

/// The size of a world's fluid, for the log.
fn describe(world: &World) -> String {
    match &world.fluid {
        Fluid::LevelSet(f) => {
            let [nx, ny, nz] = f.grid.dims;
            format!("{nx} x {ny} x {nz} cells")
        }
        Fluid::Flip(f) => {
            let [nx, ny, nz] = f.grid.dims;
            format!("FLIP, {nx} x {ny} x {nz} cells")
        }
        Fluid::Surface(f) => {
            let [nx, nz] = f.sheet.dims;
            format!("{nx} x {nz} nodes, {} particles", f.gas.total())
        }
        Fluid::Smoke(f) => {
            let [nx, ny, nz] = f.grid.dims;
            format!("smoke, {nx} x {ny} x {nz} cells")
        }
    }
}

/// `tidepool check`: validates a scene, builds its initial state and prints its size, memory
/// and time step.
fn check(path: &Path) -> anyhow::Result<u8> {
    let scene = scene::load_any(path)?;
    let world = World::of(&scene)?;
    let mut out = String::new();
    let loaded = match &scene {
        AnyScene::Surface(loaded) => {
            let Fluid::Surface(flow) = &world.fluid else { unreachable!("a surface scene builds a surface flow") };
            let [nx, nz] = flow.sheet.dims;
            let sim = &loaded.scene.simulation;
            let _ = writeln!(out, "scene      {}: valid (surface flow)", path.display());
            let _ = writeln!(out, "lattice    {nx} x {nz} = {} nodes, spacing {} m", nx * nz, loaded.scene.surface.spacing);
            let _ = writeln!(out, "water      {} particles of {} m", flow.gas.total(), flow.gas.particle_height);
            let _ = writeln!(out, "steps      {} frames of {} steps of {} s", sim.frames, sim.steps_per_frame, sim.dt);
            let _ = writeln!(out, "memory     about {:.1} MiB", world.heap_bytes() as f64 / 1048576.0);
            print_stdout(&out)?;
            return Ok(EXIT_OK);
        }
        AnyScene::Liquid(loaded) => loaded,
    };
    let grid = loaded.grid;
    let sim = &loaded.scene.simulation;
    let [nx, ny, nz] = grid.dims;
    let hi = grid.max_corner();
    let (memory, liquid) = match &world.fluid {
        Fluid::Flip(f) => {
            let flip = &loaded.scene.liquid.flip;
            let duration = sim.frames as f64 / sim.fps;
            let inside = |x: &tidepool::math::Vec3, reach: f64| loaded.in_initial_liquid(x, reach);
            let (particles, memory) = tidepool::fluids::flip::estimate_memory(&grid, inside, &loaded.liquid_sources(), flip.particles_per_cell as usize, duration);
            let mode = serde_json::to_value(flip.incompressibility)?;
            let _ = writeln!(out, "scene      {}: valid (FLIP, {} incompressibility)", path.display(), mode.as_str().unwrap_or("?"));
            (memory, format!("{} particles of {:.4} kg ({:.3} kg) initially; up to about {particles} with the sources", f.positions.len(), f.particle_mass, f.liquid_mass()))
        }
        Fluid::Smoke(f) => {
            let _ = writeln!(out, "scene      {}: valid (smoke)", path.display());
            let memory = world.heap_bytes();
            (
                memory,
                format!("{} kg/m^3 at {} K, {:.4} m^3 of smoke initially, sources: {}", f.params.air_density, f.params.ambient_temperature, f.amount(&f.density), f.sources.len()),
            )
        }
        _ => {
            let with_bodies = !loaded.bodies.is_empty();
            let memory = tidepool::fluids::eulerian::estimate_memory_bytes(&grid, loaded.scene.liquid.particles_per_cell as usize, with_bodies);
            let particles = world.level_set().map_or(0, |f| f.liquid.particles.len() + f.liquid.phases.as_ref().map_or(0, |p| p.particles.iter().map(Vec::len).sum()));
            let _ = writeln!(out, "scene      {}: valid", path.display());
            (memory, format!("{:.4} m^3 initially, {particles} marker particles", world.fluid.measures().volume))
        }
    };
    let _ = writeln!(out, "grid       {nx} x {ny} x {nz} = {} cells of {:.4} m", grid.cell_count(), grid.dx);
    let _ = writeln!(out, "domain     [{:.3}, {:.3}, {:.3}] to [{:.3}, {:.3}, {:.3}] m", grid.origin.x, grid.origin.y, grid.origin.z, hi.x, hi.y, hi.z);
    let label = if matches!(world.fluid, Fluid::Smoke(_)) { "air   " } else { "liquid" };
    let _ = writeln!(out, "{label}     {liquid}");
    if let Some(f) = world.level_set().filter(|f| f.liquid.phases.is_some()) {
        let phases = f.liquid.phases.as_ref().expect("filtered on phases");
        for ((phase, volume), changes) in phases.phases.iter().zip(f.liquid.phase_volumes(&f.grid, &f.statics)).zip(phases.change_counts()) {
            let mut line = format!("phase      {}: {} kg/m^3, {volume:.4} m^3", phase.name, phase.density);
            if phase.viscosity > 0.0 {
                line += &format!(", {} Pa s", phase.viscosity);
            }
            if phase.elasticity.is_on() {
                line += &format!(", elastic {} Pa", phase.elasticity.modulus);
            }
            if changes > 0 {
                line += &format!(", {changes} change(s) over time");
            }
            let _ = writeln!(out, "{line}");
        }
        let name = |r: usize| phases.phases.get(r).map_or("air", |p| p.name.as_str());
        for r in &phases.reactions {
            let _ = writeln!(
                out,
                "reaction   {} + {} -> {} at {} m/s, in spheres of {:.4} m, expansion {}",
                name(r.reactants[0]),
                name(r.reactants[1]),
                name(r.product),
                r.rate,
                r.bubble_radius,
                r.expansion
            );
        }
    }
    for body in world.solids.rigid.iter() {
        let kind = format!("{:?}", body.kind).to_lowercase();
        let mass = if body.is_dynamic() { format!("{:.4} kg, ", body.mass) } else { String::new() };
        let c = body.position;
        let _ = writeln!(out, "body       {} ({kind}): {mass}centre of mass [{:.3}, {:.3}, {:.3}] m", body.name, c.x, c.y, c.z);
    }
    for body in world.reduced_bodies() {
        let m = &body.model;
        let c = body.position;
        let lowest = m.eigenvalues.first().map_or("rigid".to_string(), |l| format!("lowest mode {:.2} Hz", l.sqrt() / (2.0 * std::f64::consts::PI)));
        let _ = writeln!(
            out,
            "body       {} (deformable: {} modes, {} tetrahedra, {lowest}): {:.4} kg, centre of mass [{:.3}, {:.3}, {:.3}] m",
            body.name,
            m.modes.len(),
            m.mesh.tets.len(),
            m.mass,
            c.x,
            c.y,
            c.z
        );
    }
    for body in world.solids.deformable.iter() {
        let m = &body.model;
        let (c, _, _) = body.momenta();
        let pinned = body.pinned.iter().filter(|p| **p).count();
        let _ = writeln!(
            out,
            "body       {} (deformable in full: {} particles, {pinned} pinned, {}, stable step {:.3} ms): {:.4} kg, centre of mass [{:.3}, {:.3}, {:.3}] m",
            body.name,
            body.positions.len(),
            m.elements.summary(),
            m.max_time_step() * 1e3,
            m.mass,
            c.x,
            c.y,
            c.z
        );
    }
    for a in world.solids.reduced.iter() {
        if !a.joints.is_empty() {
            let _ = writeln!(
                out,
                "joints     {}: {} sub-bodies, {} point joints, {} actuation points, skin {:.3} m",
                a.name,
                a.bodies.len(),
                a.joints.len(),
                a.actuators.len(),
                a.skin
            );
        } else if !a.actuators.is_empty() {
            let _ = writeln!(out, "actuation  {}: {} points", a.name, a.actuators.len());
        }
    }
    let models = world.reduced_models();
    if !models.is_empty() {
        let plural = if models.len() == 1 { "" } else { "s" };
        let _ = writeln!(out, "models     {} deformable model{plural} shared by {} bodies", models.len(), world.reduced_bodies().count());
    }
    if !world.tracers.is_empty() {
        let _ = writeln!(out, "tracers    {} passive tracers (plankton)", world.tracers.len());
    }
    let previews = if scene.writes_previews() { output::preview::raster_bytes(&loaded.scene.output.camera, loaded.scene.liquid.phase.len().max(1)) } else { 0 };
    let mib = |bytes: usize| bytes as f64 / 1048576.0;
    let _ = writeln!(
        out,
        "memory     about {:.1} MiB (estimate: {:.1} MiB the simulation, {:.1} MiB drawing a preview); {:.1} MiB for the initial state",
        mib(memory + previews),
        mib(memory),
        mib(previews),
        mib(world.heap_bytes())
    );
    // Estimate with the speed of a fall through the domain height (the initial state is at rest).
    let dt = world.cfl_dt();
    let gravity = world.settings.gravity.norm();
    let fall_speed = (2.0 * gravity * grid.dims[1] as f64 * grid.dx).sqrt();
    // No longer than at rest either: the capillary limit of surface tension holds at any speed.
    let dt_moving = (sim.cfl * grid.dx / (fall_speed + (grid.dx * gravity).sqrt()).max(1e-12)).min(dt);
    let _ = writeln!(
        out,
        "time step  {} at rest; about {:.2} ms once liquid falls the domain height ({} frames of {:.2} ms)",
        if dt.is_finite() { format!("{:.2} ms", dt * 1e3) } else { "unbounded".into() },
        dt_moving * 1e3,
        sim.frames,
        1e3 / sim.fps
    );
    print_stdout(&out)?;
    Ok(EXIT_OK)
}

/// Writes `text` to standard output; a closed pipe (`tidepool check scene | head`) is not an
/// error.
fn print_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    match std::io::stdout().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn bench(cases: &[String], threads: Option<usize>) -> anyhow::Result<u8> {
    let threads = set_threads(threads)?;
    tidepool::on_pool(|| bench_on(cases, threads))
}

fn bench_on(cases: &[String], threads: usize) -> anyhow::Result<u8> {
    let names: Vec<String> = if cases.is_empty() { tidepool::bench::CASES.iter().map(|s| s.to_string()).collect() } else { cases.to_vec() };
    let mut results = Vec::new();
    for name in &names {
        let result = tidepool::bench::run_scaled(name).ok_or_else(|| UsageError(format!("unknown benchmark case `{name}`; known: {}", tidepool::bench::CASES.join(", "))))?;
        results.push(result);
    }
    let report = serde_json::json!({
        "tidepool_version": env!("CARGO_PKG_VERSION"),
        "threads": threads,
        "machine": tidepool::bench::machine(),
        "cases": results,
    });
    print_stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    Ok(EXIT_OK)
}
