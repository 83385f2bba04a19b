//! Mass-full FLIP with unilateral incompressibility: conservation, rest, separation, the
//! density bound, and agreement with the bilateral mode where nothing separates.

mod common;

use tidepool::driver::{FluidTotals, FrameRecord};
use tidepool::fluids::flip::{FlipLiquid, FlipTotals};
use tidepool::fluids::Fluid;
use tidepool::math::{Real, Vec3};
use tidepool::scene::AnyScene;
use tidepool::world::World;

/// A closed box from the origin to `max` with `resolution` cells along x, liquid in the box
/// `[lo, hi]`, FLIP in `mode`; `extra` goes into `[liquid.flip]`.
fn flip_box(max: [f64; 3], resolution: u32, lo: [f64; 3], hi: [f64; 3], mode: &str, extra: &str) -> World {
    let loaded = common::load(&format!(
        "[simulation]\nframes = 1\nfps = 30\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = {max:?}\nresolution = {resolution}\n\
         [liquid]\nmethod = \"flip\"\n[liquid.flip]\nincompressibility = \"{mode}\"\n{extra}\n\
         [[liquid.region]]\nshape.box = {{ min = {lo:?}, max = {hi:?} }}\n"
    ));
    World::build(&loaded).expect("the scene builds")
}

/// The world's FLIP liquid.
fn flip(world: &World) -> &FlipLiquid {
    world.flip().expect("a FLIP world")
}

/// The world's FLIP liquid, to change.
fn flip_mut(world: &mut World) -> &mut FlipLiquid {
    match &mut world.fluid {
        Fluid::Flip(f) => f,
        _ => panic!("not a FLIP world"),
    }
}

/// Simulates the next frame; its record and the FLIP solves' totals.
fn frame(world: &mut World) -> (FrameRecord, FlipTotals) {
    let record = tidepool::driver::advance_frame(world, u32::MAX, &mut |_| {}).unwrap();
    let FluidTotals::Flip(totals) = record.totals else { panic!("not a FLIP frame") };
    (record, totals)
}

fn centre_of_mass(world: &World) -> Vec3 {
    let f = flip(world);
    f.positions.iter().sum::<Vec3>() / f.positions.len() as Real
}

/// A dam break in a closed box: the particle count (so the mass, count times particle mass)
/// never changes, while the liquid moves fast and the density correction has work to do; no
/// cell is left above its maximum density by more than the tolerance after the correction.
#[test]
fn dam_break_conserves_mass_and_respects_the_density_bound() {
    let mut world = flip_box([0.8, 0.4, 0.2], 32, [0.0, 0.0, 0.0], [0.2, 0.3, 0.2], "unilateral", "");
    let (count, mass) = (flip(&world).positions.len(), flip(&world).liquid_mass());
    assert!(count > 5_000, "{count} particles");
    let mut corrected = 0;
    for _ in 0..12 {
        let (_, frame) = frame(&mut world);
        assert_eq!(flip(&world).positions.len(), count);
        assert_eq!(flip(&world).liquid_mass(), mass);
        assert!(frame.converged && frame.correction_converged, "{frame:?}");
        assert!(frame.excess_after_correction <= 1e-3, "density {} above the maximum after correction", frame.excess_after_correction);
        corrected += frame.correction_iterations;
    }
    assert!(corrected > 0, "the density correction never ran: the test does not test it");
    assert!(flip(&world).max_speed() > 1.0, "the dam did not break: {} m/s", flip(&world).max_speed());
}

/// A FLIP dam break gives bit-identical particles on one thread and on three: the
/// rasterization, the packed LCPs' reductions and the extrapolation sum in an order that does
/// not depend on the thread count.
#[test]
fn flip_is_bit_identical_on_any_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut world = flip_box([0.8, 0.4, 0.2], 32, [0.0, 0.0, 0.0], [0.2, 0.3, 0.2], "unilateral", "");
            for _ in 0..4 {
                frame(&mut world);
            }
            let f = flip(&world);
            (f.positions.clone(), f.velocities.clone())
        })
    };
    let (one, three) = (run(1), run(3));
    assert!(one.0.len() > 5_000);
    assert!(one == three, "the particles differ between 1 and 3 threads");
}

/// A pool at rest stays at rest in both modes over a second: no particle speeds up beyond a
/// few cm/s and the surface (the highest particle) stays put. In the unilateral mode the top
/// row of cells starts 7/8 full (the kernel spreads an eighth of its particles' mass into the
/// air above) and gravity may fill it: with two particle layers per cell the top layer sinks
/// by up to a quarter cell, and no further. With suction allowed deep in the liquid, too.
#[test]
fn resting_pool_stays_at_rest() {
    for (mode, extra, settling) in [("unilateral", "", 0.25), ("unilateral", "suction_depth = 2", 0.25), ("bilateral", "", 0.0)] {
        let mut world = flip_box([0.4, 0.4, 0.2], 16, [0.0, 0.0, 0.0], [0.4, 0.2, 0.2], mode, extra);
        let top = |w: &World| flip(w).positions.iter().map(|x| x.y).fold(0.0, Real::max);
        let start = top(&world);
        for _ in 0..30 {
            frame(&mut world);
        }
        let dx = flip(&world).grid.dx;
        let sank = start - top(&world);
        assert!(flip(&world).max_speed() < 0.05, "{mode}: a particle moves at {} m/s", flip(&world).max_speed());
        assert!(sank > -0.01 * dx && sank < (settling + 0.01) * dx, "{mode}: the surface sank by {} cells", sank / dx);
    }
}

/// A blob of liquid against the ceiling, at rest: in the unilateral mode nothing holds it
/// there (no negative pressure), so it falls freely. With `n` steps of `dt` (gravity, then
/// the move) its centre of mass falls `g dt^2 n (n + 1) / 2`, the discrete free fall.
#[test]
fn blob_under_a_ceiling_falls_freely_in_unilateral_mode() {
    let mut world = flip_box([0.4, 0.8, 0.4], 16, [0.1, 0.6, 0.1], [0.3, 0.8, 0.3], "unilateral", "");
    let start = centre_of_mass(&world);
    let (dt, n) = (0.004, 50);
    for _ in 0..n {
        tidepool::pipeline::step(&mut world, dt).unwrap();
    }
    let fall = start.y - centre_of_mass(&world).y;
    let free = 9.81 * dt * dt * (n * (n + 1)) as Real / 2.0;
    assert!((fall / free - 1.0).abs() < 0.01, "fell {fall} m in {} s; free fall {free} m", n as Real * dt);
}

/// A closed box full of liquid stirred slowly (a swirl about z, PIC so that particle noise
/// does not blur the comparison): nothing can separate and the pressure is positive below the
/// ceiling row, so the unilateral solve acts like the bilateral one. They differ only where
/// the walls are: blurred for the unilateral mode, sharp for the bilateral one, an O(dx)
/// band. The grid velocities agree within 2% (relative, L2) over three frames, and the
/// difference shrinks when the grid is refined.
#[test]
fn unilateral_and_bilateral_agree_on_a_slow_filled_flow() {
    let difference = |resolution: u32| {
        let make = |mode: &str| {
            let mut world = flip_box([0.4, 0.4, 0.2], resolution, [0.0, 0.0, 0.0], [0.4, 0.4, 0.2], mode, "flip_ratio = 0.0");
            let centre = Vec3::new(0.2, 0.2, 0.1);
            let f = flip_mut(&mut world);
            for (x, v) in f.positions.iter().zip(f.velocities.iter_mut()) {
                let r = x - centre;
                *v = Vec3::new(-r.y, r.x, 0.0) * 0.05;
            }
            world
        };
        let (mut uni, mut bi) = (make("unilateral"), make("bilateral"));
        let mut worst: Real = 0.0;
        for _ in 0..3 {
            frame(&mut uni);
            frame(&mut bi);
            let faces = |w: &World| flip(w).velocity.faces.iter().flat_map(|f| f.as_slice().to_vec()).collect::<Vec<Real>>();
            let (u, b) = (faces(&uni), faces(&bi));
            let difference = u.iter().zip(&b).map(|(p, q)| (p - q) * (p - q)).sum::<Real>().sqrt();
            assert!(flip(&bi).max_speed() > 0.005, "the flow stopped");
            worst = worst.max(difference / b.iter().map(|q| q * q).sum::<Real>().sqrt());
        }
        worst
    };
    let (coarse, fine) = (difference(16), difference(32));
    assert!(coarse < 0.02, "the modes differ by {coarse} (relative) at 16 cells");
    assert!(fine < coarse, "refining did not bring the modes closer: {coarse} at 16 cells, {fine} at 32");
}

/// A kinematic paddle pushed through a pool: no particle is ever inside it, the mass stays,
/// and the liquid ahead of it is pushed along (its mean velocity points the paddle's way).
#[test]
fn a_kinematic_paddle_pushes_the_liquid_and_no_particle_enters_it() {
    let loaded = common::load(
        "[simulation]\nframes = 1\nfps = 30\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [0.8, 0.4, 0.3]\nresolution = 32\n\
         [liquid]\nmethod = \"flip\"\n[[liquid.region]]\nshape.box = { min = [0.0, 0.0, 0.0], max = [0.8, 0.15, 0.3] }\n\
         [[body]]\nkind = \"kinematic\"\nshape.box = { min = [0.1, 0.03, 0.05], max = [0.15, 0.3, 0.25] }\nvelocity = [0.6, 0.0, 0.0]\n",
    );
    let mut world = World::build(&loaded).expect("the scene builds");
    let count = flip(&world).positions.len();
    for _ in 0..9 {
        frame(&mut world);
        assert_eq!(flip(&world).positions.len(), count);
        let paddle = &world.solids.rigid[0];
        let inside = flip(&world).positions.iter().filter(|x| paddle.signed_distance_at(&paddle.pose(), x) < -1e-6).count();
        assert_eq!(inside, 0, "{inside} particles inside the paddle at t = {}", world.clock.time);
    }
    let f = flip(&world);
    let ahead: Vec<&Vec3> = f.positions.iter().zip(&f.velocities).filter(|(x, _)| x.x > world.solids.rigid[0].position.x + 0.05).map(|(_, v)| v).collect();
    let push = ahead.iter().map(|v| v.x).sum::<Real>() / ahead.len() as Real;
    assert!((world.solids.rigid[0].position.x - 0.305).abs() < 1e-9, "the paddle is at {}", world.solids.rigid[0].position.x);
    // A pool at rest moves at micrometres per second (the resting-pool test); pushed, the
    // liquid ahead of the paddle moves on at centimetres per second.
    assert!(push > 0.02, "the liquid ahead moves at {push} m/s along the push");
}

/// A FLIP run writes its files: particles as PLY points (as many as in the stats) and VTK poly
/// data listed in the series, the surface mesh, the preview, and a stats line per frame.
#[test]
fn a_flip_run_writes_its_outputs() {
    let loaded = common::load(
        "[simulation]\nframes = 2\nfps = 30\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [0.4, 0.3, 0.2]\nresolution = 16\n\
         [liquid]\nmethod = \"flip\"\n[[liquid.region]]\nshape.box = { min = [0.0, 0.0, 0.0], max = [0.15, 0.2, 0.2] }\n\
         [output]\nformats = [\"ply\", \"obj\", \"vtk\", \"png\"]\ncamera = { width = 64, height = 48 }\n",
    );
    let dir = common::temp_dir("flip-outputs");
    common::run_into(&AnyScene::Liquid(Box::new(loaded)), &dir, 2, false).unwrap();
    let stats = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = stats.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    let count = lines[2]["particle_count"].as_u64().unwrap();
    assert!(lines[2]["lcp_converged"].as_bool().unwrap() && lines[2]["liquid_mass"].as_f64().unwrap() > 0.0);
    let ply = std::fs::read(dir.join("particles_0002.ply")).unwrap();
    let header = String::from_utf8_lossy(&ply[..ply.windows(10).position(|w| w == b"end_header").unwrap()]).to_string();
    assert!(header.contains(&format!("element vertex {count}\n")) && header.contains("property float vx"), "{header}");
    assert!(header.contains("comment units: metres; up axis: +Y"), "{header}");
    let obj = std::fs::read_to_string(dir.join("surface_0002.obj")).unwrap();
    assert!(obj.lines().take(2).any(|l| l.starts_with("# units: metres; up axis: +Y")), "{}", &obj[..200.min(obj.len())]);
    for file in ["particles_0002.vtp", "surface_0002.vtp", "surface_0002.ply", "surface_0002.obj", "preview_0002.png", "tidepool.pvd", "scene.toml", "run.json"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    // The particles and the surface of every frame, in ParaView's time series.
    let pvd = std::fs::read_to_string(dir.join("tidepool.pvd")).unwrap();
    assert_eq!(pvd.matches("<DataSet").count(), 6);
    assert!(pvd.contains("part=\"1\" file=\"surface_0002.vtp\""), "{pvd}");
}

/// A FLIP tank in `mode`, 0.6 x 0.4 x 0.4 m at 2 cm cells, water 0.2 m deep, with `body`.
fn flip_tank(mode: &str, simulation: &str, body: &str) -> World {
    World::build(&common::load(&format!(
        "[simulation]\n{simulation}\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [0.6, 0.4, 0.4]\nresolution = 30\n\
         [liquid]\nmethod = \"flip\"\nflip.incompressibility = \"{mode}\"\n\
         [[liquid.region]]\nshape.box = {{ min = [-1.0, -1.0, -1.0], max = [2.0, 0.2, 2.0] }}\n{body}"
    )))
    .expect("the scene builds")
}

/// Archimedes in FLIP water, in both modes: a box (0.2 x 0.12 x 0.2 m, 6 cells tall) of half
/// the water's density, released a centimetre above its floating depth, settles with half its
/// height below the surface far from it (the mean of the last two seconds, within 3%;
/// measured 0.501 in both modes). Under water the pressure is positive, so the unilateral bound
/// does not act there.
#[test]
fn floating_box_in_flip_water_settles_at_its_archimedes_depth() {
    let height = 0.12;
    for mode in ["bilateral", "unilateral"] {
        let mut world = flip_tank(mode, "frames = 72\nfps = 24", "[[body]]\nshape.box = { min = [0.2, 0.15, 0.1], max = [0.4, 0.27, 0.3] }\ndensity = 500.0\n");
        let mut fractions = Vec::new();
        for _ in 0..72 {
            let (_, totals) = frame(&mut world);
            assert!(totals.converged, "{mode}: the velocity solve did not converge");
            let bottom = world.solids.rigid[0].position.y - 0.5 * height;
            fractions.push((common::surface_height(&world, 0.05, 0.05) - bottom) / height);
        }
        let mean = common::settled(&fractions);
        eprintln!("{mode}: submerged fraction {mean:.4}");
        assert!((mean - 0.5).abs() < 0.03 * 0.5, "{mode}: submerged fraction {mean}, frames {fractions:?}");
        let body = &world.solids.rigid[0];
        assert!(body.velocity.norm() < 0.02 && body.angular_velocity().norm() < 0.2, "{mode}: still moving: {:?} {:?}", body.velocity, body.angular_velocity());
    }
}

/// Without gravity, a ball moving through FLIP water changes its momentum only through the
/// coupled solves: by minus the impulse they gave the liquid, to round-off, every substep;
/// and it does feel the water. In both modes.
#[test]
fn ball_and_flip_water_exchange_equal_and_opposite_impulses_every_substep() {
    for mode in ["bilateral", "unilateral"] {
        let body = "[[body]]\nshape.sphere = { center = [0.2, 0.1, 0.2], radius = 0.05 }\ndensity = 700.0\nvelocity = [0.6, 0.2, 0.0]\n";
        let mut world = flip_tank(mode, "frames = 1\ngravity = [0.0, 0.0, 0.0]", body);
        let exchanged = common::exchanged_impulse(&mut world, 30, mode);
        assert!(exchanged > 0.1 * world.solids.rigid[0].mass * 0.6, "{mode}: the ball hardly felt the water: {exchanged} N s");
    }
}

/// The unilateral mode's pressures never pull: a heavy ball shot upwards out of the water
/// (no gravity) leaves the liquid behind instead of dragging it by suction, every pressure of
/// its steps at least zero, where the bilateral mode, which may pull, has negative ones.
#[test]
fn unilateral_pressures_never_pull_on_a_body() {
    let mut lowest = Vec::new();
    for mode in ["bilateral", "unilateral"] {
        let body = "[[body]]\nshape.sphere = { center = [0.3, 0.12, 0.2], radius = 0.05 }\ndensity = 2000.0\nvelocity = [0.0, 1.5, 0.0]\n";
        let mut world = flip_tank(mode, "frames = 1\ngravity = [0.0, 0.0, 0.0]", body);
        let mut least: Real = 0.0;
        for _ in 0..6 {
            tidepool::pipeline::step(&mut world, 0.005).unwrap();
            least = least.min(flip(&world).pressure.as_slice().iter().copied().fold(0.0, Real::min));
        }
        lowest.push(least);
    }
    assert!(lowest[0] < -1.0, "the bilateral mode never pulled ({} Pa): the test does not test the bound", lowest[0]);
    assert!(lowest[1] >= 0.0, "the unilateral mode pulled with {} Pa", lowest[1]);
}
