//! Fixed benchmark workloads for `tidepool bench`. Results are JSON values; timing never
//! decides a test.

use crate::coupling::poisson;
use crate::fluids::flip::{FlipTimings, LcpSeconds, SolveReport};
use crate::grid::{Grid, Location, MacVelocity};
use crate::math::{Real, SplitMix64, Vec3};
use crate::pipeline::{FluidStep, PhaseTimings};
use crate::scene::{self, Boundary};
use crate::solids::StaticSolids;
use crate::world::World;
use serde_json::{json, Value};
use std::time::Instant;
use tidepool_linalg::{pcg, Mic0, Multigrid, PcgParams, Preconditioner};

/// Names of the benchmark cases.
pub const CASES: [&str; 15] = [
    "poisson-128",
    "dam-break-128",
    "dam-break-128-mic0",
    "two-phase-128",
    "buoyancy",
    "pool-of-bodies",
    "tori-pool",
    "starfish-150",
    "stack",
    "pile",
    "lattice-256",
    "lattice-1024",
    "flip-dam-break",
    "lcp-vs-poisson",
    "cloth-from-water",
];

/// Runs one case by name.
pub fn run_case(name: &str) -> Option<Value> {
    match name {
        "poisson-128" => Some(poisson(128)),
        "dam-break-128" => Some(scene_case("dam-break-128", DAM_BREAK_128, 0.0, 10)),
        "dam-break-sph-geometry" => Some(dam_break_sph_geometry()),
        "dam-break-128-mic0" => Some(scene_case("dam-break-128-mic0", &format!("{DAM_BREAK_128}[liquid]\npressure_preconditioner = \"mic0\"\n"), 0.0, 10)),
        "two-phase-128" => Some(two_phase(5)),
        "buoyancy" => Some(scene_case("buoyancy", &buoyancy_scene(), 0.0, 10)),
        // Timed once the bodies have fallen into the water.
        "pool-of-bodies" => Some(scene_case("pool-of-bodies", POOL_OF_BODIES, 0.5, 10)),
        "tori-pool" => Some(tori_pool(10)),
        // 5 M cells: two substeps, as the starfish start (in the air).
        "starfish-150" => Some(scene_case("starfish-150", STARFISH_150, 0.0, 2)),
        // Timed as the ball strikes the tower, at the rubber's stable step.
        "stack" => Some(scene_case("stack", STACK, 0.15, 100)),
        "pile" => Some(scene_case("pile", PILE, 0.3, 20)),
        "lattice-256" => Some(lattice(256, 200)),
        "lattice-1024" => Some(lattice(1024, 20)),
        "flip-dam-break" => Some(flip_dam_break(128, 3)),
        "lcp-vs-poisson" => Some(lcp_vs_poisson(64, 5)),
        "cloth-from-water" => Some(scene_case("cloth-from-water", CLOTH_FROM_WATER, 0.3, 20)),
        _ => None,
    }
}

/// Runs one case twice, on one thread and on the current pool's threads, and reports both
/// and the speed-up of every timing (each number whose key holds `seconds`: one thread's over
/// all threads'). On a one-thread pool the case runs once.
pub fn run_scaled(name: &str) -> Option<Value> {
    let threads = rayon::current_num_threads();
    let all = run_case(name)?;
    if threads == 1 {
        return Some(json!({ "case": name, "threads": 1, "one_thread": all }));
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().ok()?.install(|| run_case(name))?;
    Some(json!({ "case": name, "threads": threads, "one_thread": one, "all_threads": all, "speedup": speedup(&one, &all) }))
}

/// The ratios `one / all` of the timings in two reports of one case (see [`run_scaled`]):
/// the numbers under keys holding `seconds`, and everything inside such keys.
fn speedup(one: &Value, all: &Value) -> Value {
    ratios(one, all, false)
}

fn ratios(one: &Value, all: &Value, timing: bool) -> Value {
    match (one, all) {
        (Value::Object(a), Value::Object(b)) => {
            let each: serde_json::Map<String, Value> = a
                .iter()
                .filter_map(|(key, x)| {
                    let y = b.get(key)?;
                    let timing = timing || key.contains("seconds");
                    let ratio = match (x.as_f64(), y.as_f64()) {
                        (Some(x), Some(y)) if timing && y > 0.0 => json!(x / y),
                        _ if x.is_object() || x.is_array() => ratios(x, y, timing),
                        _ => return None,
                    };
                    (!ratio.is_null()).then(|| (key.clone(), ratio))
                })
                .collect();
            if each.is_empty() {
                Value::Null
            } else {
                Value::Object(each)
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            let each: Vec<Value> = a.iter().zip(b).map(|(x, y)| ratios(x, y, timing)).collect();
            if each.iter().all(Value::is_null) {
                Value::Null
            } else {
                Value::Array(each)
            }
        }
        _ => Value::Null,
    }
}

/// Pressure solve on an all-liquid `n^3` closed box: the divergence of a random velocity field
/// (a singular, consistent Neumann problem) solved to a 1e-6 relative residual.
pub fn poisson(n: usize) -> Value {
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let solids = StaticSolids::new(&grid, [[Boundary::Wall; 2]; 3], Vec::new());
    let phi = grid.sample_fn(Location::Cell, |_| -1.0);
    let mut velocity = MacVelocity::zeros(&grid);
    let mut rng = SplitMix64::keyed(&[42]);
    for f in &mut velocity.faces {
        f.as_mut_slice().iter_mut().for_each(|u| *u = rng.next_unit() - 0.5);
    }
    let start = Instant::now();
    let liquid = poisson::liquid_cells(&phi, &solids);
    let (a, b) = poisson::assemble(&grid, &phi, &liquid, &solids, &velocity);
    let assembly = start.elapsed().as_secs_f64();
    // Each preconditioner from a zero guess: its setup, its solve and its iterations.
    let timed = |name: &str, setup: f64, m: &dyn Preconditioner| {
        let mut x = vec![0.0; b.len()];
        let start = Instant::now();
        let info = pcg(&a, m, &b, &mut x, PcgParams { tolerance: 1e-6, max_iterations: 10_000 });
        let solve = start.elapsed().as_secs_f64();
        json!({
            "preconditioner": name,
            "preconditioner_seconds": setup,
            "solve_seconds": solve,
            "seconds": assembly + setup + solve,
            "iterations": info.iterations,
            "relative_residual": info.relative_residual,
            "converged": info.converged,
            "seconds_per_iteration": solve / info.iterations.max(1) as f64,
        })
    };
    let start = Instant::now();
    let mic = Mic0::new(&a);
    let mic = timed("mic0", start.elapsed().as_secs_f64(), &mic);
    let start = Instant::now();
    let multigrid = Multigrid::new(&a);
    let multigrid = timed("multigrid", start.elapsed().as_secs_f64(), &multigrid);
    json!({ "case": format!("poisson-{n}"), "cells": grid.cell_count(), "assembly_seconds": assembly, "mic0": mic, "multigrid": multigrid })
}

/// Surface flow on an `n x n` lattice (after Barcellos et al.'s Figure 5 configuration): a
/// flat sheet pinned at its edges under a Gaussian heap of water (up to 300 particles a node;
/// 2.7 million particles at 256, 44 million at 1024), pushed down by a vertical force.
/// After 10 steps of warm-up, the same `steps` steps are timed five times from that state;
/// the median is reported (with the fastest and slowest run, as the machine's noise).
pub fn lattice(n: usize, steps: u64) -> Value {
    use crate::fluids::lattice::{LatticeGas, SurfaceFlow, VerticalForce};
    use crate::solids::mass_spring::ElasticSheet;
    let mut sheet = ElasticSheet::new([n, n], 1.0, |_, _| 0.0, 1.0, 50.0, 0.05);
    sheet.pin_edges();
    let mut gas = LatticeGas::new([n, n], 0.001);
    let (centre, width) = (0.5 * n as Real, 0.15 * n as Real);
    for (c, counter) in gas.counters.iter_mut().enumerate() {
        let (x, z) = ((c % n) as Real - centre, (c / n) as Real - centre);
        *counter = (300.0 * (-(x * x + z * z) / (2.0 * width * width)).exp()) as u32;
    }
    let mut start = SurfaceFlow::new(sheet, gas, 0.1);
    start.particle_weight = 0.00005;
    start.forces = vec![VerticalForce { magnitude: -0.02, start: 0.0, end: Real::INFINITY }];
    for _ in 0..10 {
        start.step();
    }
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let mut flow = start.clone();
            let clock = Instant::now();
            for _ in 0..steps {
                flow.step();
            }
            clock.elapsed().as_secs_f64() / steps as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    let seconds_per_step = runs[2];
    json!({
        "case": format!("lattice-{n}"),
        "nodes": n * n,
        "particles": start.gas.total(),
        "steps": steps,
        "runs": runs.len(),
        "seconds_per_step": seconds_per_step,
        "steps_per_second": 1.0 / seconds_per_step,
        "steps_per_second_range": [1.0 / runs[4], 1.0 / runs[0]],
    })
}

/// The scene of the `dam-break-128` case: a 128 x 64 x 64 tank, a quarter of it filled.
pub const DAM_BREAK_128: &str = r#"
[simulation]
frames = 1
[domain]
min = [0.0, 0.0, 0.0]
max = [2.0, 1.0, 1.0]
resolution = 128
[[liquid.region]]
shape.box = { min = [0.0, 0.0, 0.0], max = [0.5, 0.8, 1.0] }
"#;

/// `dam-break-128` with its column of liquid in 1, 2 and 4 layers of different phases (the
/// densest at the bottom), `substeps` substeps each ([`scene_case`]), and the extra seconds
/// per substep each phase beyond the first costs.
pub fn two_phase(substeps: usize) -> Value {
    let column = "[[liquid.region]]\nshape.box = { min = [0.0, 0.0, 0.0], max = [0.5, 0.8, 1.0] }\n";
    assert!(DAM_BREAK_128.contains(column), "the dam break's column");
    let layered = |n: usize| {
        let mut text = DAM_BREAK_128.replace(column, "");
        for k in 0..n {
            let (bottom, top) = (0.8 * k as Real / n as Real, 0.8 * (k + 1) as Real / n as Real);
            text += &format!("[[liquid.phase]]\nname = \"layer{k}\"\ndensity = {}\n", 1000.0 - 100.0 * k as Real);
            text += &format!("[[liquid.region]]\nphase = \"layer{k}\"\nshape.box = {{ min = [0.0, {bottom}, 0.0], max = [0.5, {top}, 1.0] }}\n");
        }
        text
    };
    let one = scene_case("two-phase-128 (one liquid)", DAM_BREAK_128, 0.0, substeps);
    let two = scene_case("two-phase-128 (2 phases)", &layered(2), 0.0, substeps);
    let four = scene_case("two-phase-128 (4 phases)", &layered(4), 0.0, substeps);
    let seconds = |v: &Value| v["seconds_per_substep"].as_f64().unwrap_or(0.0);
    let extra = (seconds(&four) - seconds(&one)) / 3.0;
    json!({ "case": "two-phase-128", "one_liquid": one, "two_phases": two, "four_phases": four, "extra_seconds_per_phase": extra })
}

/// The scene of the `buoyancy` case: `scenes/buoyancy.toml` (five balls from cork to steel)
/// at 160 cells along x: 160 x 64 x 32.
pub fn buoyancy_scene() -> String {
    const SCENE: &str = include_str!("../../../scenes/buoyancy.toml");
    let at_64 = "resolution = 64";
    assert!(SCENE.contains(at_64), "scenes/buoyancy.toml sets {at_64}");
    SCENE.replacen(at_64, "resolution = 160", 1)
}

/// The scene of the `pool-of-bodies` case: `scenes/pool_of_bodies.toml` (24 bodies).
pub const POOL_OF_BODIES: &str = include_str!("../../../scenes/pool_of_bodies.toml");

/// The scene of the `tori-pool` case: `scenes/tori_pool.toml` (13 soft tori, one model).
pub const TORI_POOL: &str = include_str!("../../../scenes/tori_pool.toml");

/// The scene of the `starfish-150` case: `scenes/starfish_rocks_150.toml` (150 starfish sharing
/// one model, 24 mesh rocks, 224 x 64 x 352 cells).
pub const STARFISH_150: &str = include_str!("../../../scenes/starfish_rocks_150.toml");

/// `scenes/meshes/rock.obj`, the mesh of the starfish's rocks.
const ROCK_OBJ: &str = include_str!("../../../scenes/meshes/rock.obj");

/// `scenes/tori_pool.toml` timed over `substeps` substeps once the tori are in the water, as
/// reduced deformable bodies and again with the same tori rigid; and the modal analysis of the
/// torus (without the disk cache).
pub fn tori_pool(substeps: usize) -> Value {
    let rigid: String = TORI_POOL.lines().filter(|l| !l.starts_with("deformable")).map(|l| format!("{l}\n")).collect();
    let loaded = scene::parse(TORI_POOL, "tori-pool", "tori-pool", None, std::path::Path::new(".")).expect("benchmark scene is valid");
    let torus = &loaded.models[0];
    let start = Instant::now();
    let again = crate::solids::reduced::body::ReducedModel::new(torus.mesh.tets().expect("the torus is a volume"), &torus.material, torus.modes, torus.damping, false, None)
        .expect("the torus has modes");
    let modal_seconds = start.elapsed().as_secs_f64();
    json!({
        "case": "tori-pool",
        "torus": { "tetrahedra": again.mesh.tets.len(), "particles": again.particles(), "modes": again.modes.len(), "modal_analysis_seconds": modal_seconds, "model_bytes": again.heap_bytes() },
        "reduced": scene_case("tori-pool (reduced)", TORI_POOL, 0.6, substeps),
        "rigid": scene_case("tori-pool (rigid)", &rigid, 0.6, substeps),
    })
}

/// The scene of the `stack` case: `scenes/stack.toml` (rigid boxes, two rubber boxes simulated
/// in full, a ball; no liquid).
pub const STACK: &str = include_str!("../../../scenes/stack.toml");

/// The scene of the `pile` case: `scenes/pile.toml` (48 rigid and full deformable bodies
/// dropped onto pegs; no liquid), timed once the first layer is landing.
pub const PILE: &str = include_str!("../../../scenes/pile.toml");

/// The scene of the `cloth-from-water` case: `scenes/cloth_from_water.toml` (a rod lifts a
/// cloth out of a pool; the cost of the coupled solve with a sheet in water).
pub const CLOTH_FROM_WATER: &str = include_str!("../../../scenes/cloth_from_water.toml");

/// `substeps` substeps of a scene after warming up for `warmup` seconds (at least one
/// substep), with a fixed step of half a cell per the speed of a fall through the domain's
/// height, or the solids' own stable step where that is shorter: seconds per substep by phase,
/// pressure iterations, and memory per cell.
pub fn scene_case(name: &str, text: &str, warmup: Real, substeps: usize) -> Value {
    // The meshes the scenes name, from copies built into the binary, so the bench runs anywhere.
    let dir = std::env::temp_dir().join(format!("tidepool-bench-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("meshes")).and_then(|_| std::fs::write(dir.join("meshes/rock.obj"), ROCK_OBJ)).expect("the temporary directory is writable");
    let loaded = scene::parse(text, name, name, None, &dir);
    std::fs::remove_dir_all(&dir).ok();
    let loaded = loaded.expect("benchmark scene is valid");
    let start = Instant::now();
    let mut world = World::build(&loaded).expect("benchmark scene builds");
    let world = &mut world;
    let setup = start.elapsed().as_secs_f64();
    let grid = *world.fluid.grid().expect("benchmark scenes are liquid scenes");
    let height = grid.dims[1] as Real * grid.dx;
    let dt = (0.5 * grid.dx / (2.0 * 9.81 * height).sqrt()).min(world.solids.max_time_step());
    for _ in 0..((warmup / dt).ceil() as usize).max(1) {
        crate::pipeline::step(world, dt).expect("stable");
    }
    let mut total = PhaseTimings::default();
    let mut iterations = 0;
    let mut solve = poisson::SolveSeconds::default();
    for _ in 0..substeps {
        if let FluidStep::LevelSet { projection, timings, .. } = crate::pipeline::step(world, dt).expect("stable").fluid {
            total.accumulate(&timings);
            iterations += projection.iterations;
            solve.accumulate(&projection.seconds);
        }
    }
    let per = |s: f64| s / substeps as f64;
    let cells = grid.cell_count();
    json!({
        "case": name,
        "cells": cells,
        "grid": grid.dims,
        "bodies": world.solids.iter().count(),
        "tetrahedra": world.solids.deformable.iter().map(|b| b.model.elements.tetrahedra()).sum::<usize>(),
        "triangles": world.solids.deformable.iter().map(|b| b.model.elements.triangles()).sum::<usize>(),
        "setup_seconds": setup,
        "warmup_seconds": warmup,
        "substeps": substeps,
        "seconds_per_substep": per(total.total()),
        "phase_seconds_per_substep": {
            "surface": per(total.surface),
            "velocity_advection": per(total.velocity_advection),
            "forces": per(total.forces),
            "projection": per(total.projection),
            "extrapolation": per(total.extrapolation),
            "bodies": per(total.bodies),
        },
        "pressure_iterations_per_substep": iterations as f64 / substeps as f64,
        "velocity_solve_seconds_per_substep": { "assembly": per(solve.assembly), "setup": per(solve.setup), "iterations": per(solve.iterations), "update": per(solve.update) },
        "particles": world.level_set().map_or(0, |f| f.liquid.particles.len()),
        "state_bytes_per_cell": world.heap_bytes() as f64 / cells as f64,
        "deformable_model_bytes": world.reduced_models().iter().map(|m| m.heap_bytes()).sum::<usize>(),
        "deformable_bytes_per_body": world.reduced_bodies().map(|b| b.heap_bytes()).sum::<usize>() as f64 / world.reduced_bodies().count().max(1) as f64,
        "peak_resident_bytes_per_cell": peak_resident_bytes().map(|b| b as f64 / cells as f64),
    })
}

/// SPlisHSPlasH's DamBreakModel geometry: a 1 m cube of water in the corner of a closed
/// 4 x 3 x 1.5 m tank, run through the driver (CFL substeps): FLIP at 80 cells along x (64 000
/// particles, as SPlisHSPlasH's 59 000) and the level set at 80 for one simulated second, FLIP
/// at 160 (512 000 particles) for a tenth. Reports wall seconds per simulated second, the
/// figure to compare.
pub fn dam_break_sph_geometry() -> Value {
    let run = |method: &str, resolution: u32, duration: Real| {
        let text = format!(
            "[simulation]\nframes = 1\nfps = {}\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [4.0, 3.0, 1.5]\nresolution = {resolution}\n\
             [liquid]\nmethod = \"{method}\"\n[[liquid.region]]\nshape.box = {{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }}\n",
            1.0 / duration
        );
        let loaded = scene::parse(&text, "bench", "bench", None, std::path::Path::new(".")).expect("valid bench scene");
        let mut world = World::build(&loaded).expect("valid bench scene");
        let record = crate::driver::advance_frame(&mut world, 1, &mut |_| {}).expect("stable");
        let particles = world.flip().map(|f| f.positions.len()).or(world.level_set().map(|f| f.liquid.particles.len()));
        json!({
            "method": method,
            "grid": world.fluid.grid().map(|g| g.dims),
            "particles": particles,
            "simulated_time": duration,
            "substeps": record.substeps,
            "wall_seconds": record.wall_seconds,
            "wall_seconds_per_simulated_second": record.wall_seconds / duration,
        })
    };
    json!({ "case": "dam-break-sph-geometry", "runs": [run("flip", 80, 1.0), run("flip", 160, 0.1), run("level-set", 80, 1.0)] })
}

/// A FLIP dam break in a 2 x 1 x 1 m tank at `resolution` cells along x, unilateral or
/// bilateral: a 0.6 x 0.8 x 1 m column (at 128: 128 x 64 x 64 cells, about a million
/// particles).
fn flip_dam_break_world(resolution: u32, incompressibility: &str) -> World {
    let text = format!(
        "[simulation]\nframes = 1\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [2.0, 1.0, 1.0]\nresolution = {resolution}\n\
         [liquid]\nmethod = \"flip\"\nflip.incompressibility = \"{incompressibility}\"\n\
         [[liquid.region]]\nshape.box = {{ min = [0.0, 0.0, 0.0], max = [0.6, 0.8, 1.0] }}\n"
    );
    let loaded = scene::parse(&text, "bench", "bench", None, std::path::Path::new(".")).expect("valid bench scene");
    World::build(&loaded).expect("valid bench scene")
}

/// One substep of a FLIP world: its solves and phase timings.
fn flip_step(world: &mut World, dt: Real) -> (SolveReport, FlipTimings) {
    match crate::pipeline::step(world, dt).expect("stable").fluid {
        FluidStep::Flip { solve, timings } => (solve, timings),
        _ => unreachable!("the world is a FLIP world"),
    }
}

/// `steps` substeps of the FLIP dam break after 2 of warm-up (the column has started to fall),
/// with the seconds per substep of each phase.
pub fn flip_dam_break(resolution: u32, steps: usize) -> Value {
    let clock = Instant::now();
    let mut world = flip_dam_break_world(resolution, "unilateral");
    let setup = clock.elapsed().as_secs_f64();
    let dt = world.cfl_dt().min(1.0 / 60.0);
    for _ in 0..2 {
        flip_step(&mut world, dt);
    }
    let (mut total, mut iterations, mut correction, mut last) = (FlipTimings::default(), 0, 0, SolveReport::default());
    let mut lcp = LcpSeconds::default();
    for _ in 0..steps {
        let (solve, timings) = flip_step(&mut world, dt);
        total.accumulate(&timings);
        lcp.accumulate(&solve.lcp_seconds);
        iterations += solve.iterations;
        correction += solve.correction_iterations;
        last = solve;
    }
    let per = |s: f64| s / steps as f64;
    let flip = world.flip().expect("a FLIP world");
    json!({
        "case": "flip-dam-break",
        "grid": flip.grid.dims,
        "particles": flip.positions.len(),
        "setup_seconds": setup,
        "dt": dt,
        "steps": steps,
        "seconds_per_step": per(total.rasterize + total.solve + total.extrapolate + total.advect),
        "phase_seconds_per_step": { "rasterize": per(total.rasterize), "solve": per(total.solve), "extrapolate": per(total.extrapolate), "advect": per(total.advect) },
        "lcp_seconds_per_step": {
            "assembly": per(lcp.assembly), "norm": per(lcp.norm), "iterations": per(lcp.iterations),
            "factorisations": per(lcp.factorisations), "applications": per(lcp.applications), "update": per(lcp.update),
        },
        "lcp_iterations_per_step": iterations as f64 / steps as f64,
        "correction_iterations_per_step": correction as f64 / steps as f64,
        "active_set": last.active,
        "unknowns": last.unknowns,
        "peak_resident_bytes": peak_resident_bytes(),
    })
}

/// The unilateral solve (density correction and LCP, MPRGP + MIC(0)) against the bilateral
/// Poisson solve (PCG + MIC(0)) on the same FLIP dam break: solve seconds and iterations per
/// substep over `steps` substeps after 2 of warm-up.
pub fn lcp_vs_poisson(resolution: u32, steps: usize) -> Value {
    let run = |mode: &str| {
        let mut world = flip_dam_break_world(resolution, mode);
        let dt = world.cfl_dt().min(1.0 / 60.0);
        for _ in 0..2 {
            flip_step(&mut world, dt);
        }
        let (mut seconds, mut iterations, mut correction, mut unknowns) = (0.0, 0, 0, 0);
        for _ in 0..steps {
            let (solve, timings) = flip_step(&mut world, dt);
            seconds += timings.solve;
            iterations += solve.iterations;
            correction += solve.correction_iterations;
            unknowns = solve.unknowns;
        }
        json!({
            "solve_seconds_per_step": seconds / steps as f64,
            "iterations_per_step": iterations as f64 / steps as f64,
            "correction_iterations_per_step": correction as f64 / steps as f64,
            "unknowns": unknowns,
        })
    };
    json!({
        "case": "lcp-vs-poisson",
        "resolution": resolution,
        "steps": steps,
        "unilateral": run("unilateral"),
        "bilateral": run("bilateral"),
    })
}

/// Peak resident set size of this process (Linux), in bytes.
pub fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// A description of this machine for benchmark records.
pub fn machine() -> Value {
    let cpu =
        std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()));
    json!({
        "cpu": cpu,
        "logical_cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "os": std::env::consts::OS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Speed-ups are one thread's timings over all threads': every number under a key that
    /// holds `seconds`, nested ones included; counts and other numbers are left out.
    #[test]
    fn speedups_divide_timings_only() {
        let one = json!({ "seconds_per_substep": 4.0, "iterations": 28, "phase_seconds": { "surface": 3.0, "solve": 1.0 }, "cases": [{ "solve_seconds": 2.0 }] });
        let all = json!({ "seconds_per_substep": 1.0, "iterations": 28, "phase_seconds": { "surface": 1.0, "solve": 0.5 }, "cases": [{ "solve_seconds": 0.5 }] });
        let expected = json!({ "seconds_per_substep": 4.0, "phase_seconds": { "surface": 3.0, "solve": 2.0 }, "cases": [{ "solve_seconds": 4.0 }] });
        assert_eq!(speedup(&one, &all), expected);
    }
}
