//! Level-set advection: a slotted sphere (Zalesak) carried once around by a rigid rotation.

use tidepool::fluids::eulerian::{LevelSetLiquid, LiquidParams};
use tidepool::geometry::Shape;
use tidepool::grid::advection::AdvectionScheme;
use tidepool::grid::level_set::volume_inside;
use tidepool::grid::{Grid, Location, MacVelocity};
use tidepool::math::{Real, Vec3};
use tidepool::scene::Boundary;
use tidepool::solids::StaticSolids;
use tidepool_linalg::PcgParams;

fn run(n: usize, particles_per_cell: usize, advection: AdvectionScheme) -> (Real, Real, Real) {
    // The sphere sweeps the annulus 0.1 < r < 0.4 around the axis, 0.35 < z < 0.65.
    let dx = 1.0 / n as Real;
    let cells = |len: Real| (len / dx).round() as usize;
    let grid = Grid { dims: [cells(0.84), cells(0.84), cells(0.36)], dx, origin: Vec3::new(0.08, 0.08, 0.32) };
    let solids = StaticSolids::new(&grid, [[Boundary::Wall; 2]; 3], Vec::new());
    let centre = Vec3::new(0.5, 0.75, 0.5);
    let radius = 0.15;
    let sphere = Shape::Sphere { center: centre, radius };
    let slot = Shape::Box {
        min: Vec3::new(0.5 - 0.025, 0.6 - 0.01, 0.0),
        max: Vec3::new(0.5 + 0.025, 0.85, 1.0),
    };
    let phi = grid.sample_fn(Location::Cell, |x| sphere.signed_distance(&x).max(-slot.signed_distance(&x)));
    let params = LiquidParams {
        density: 1000.0,
        advection,
        pressure: PcgParams { tolerance: 1e-6, max_iterations: 100 },
        particles_per_cell,
        reseed_every: 20,
        seed: 1,
        volume_correction: false,
    };
    let mut liquid = LevelSetLiquid::new(&grid, params, phi, &solids);
    let v0 = volume_inside(&grid, &liquid.phi, None);
    // Rigid rotation about the z axis through the domain centre, one turn in time T = 2 pi.
    let mut velocity = MacVelocity::zeros(&grid);
    for a in 0..2 {
        velocity.faces[a].par_fill_with(|i, j, k| {
            let x = grid.position(Location::Face(a), i, j, k);
            if a == 0 { -(x.y - 0.5) } else { x.x - 0.5 }
        });
    }
    liquid.velocity = velocity;
    let period = 2.0 * std::f64::consts::PI;
    let max_speed = 0.4;
    let steps = (period * max_speed / grid.dx).ceil() as u64;
    let dt = period / steps as Real;
    let mut worst: Real = 0.0;
    for step in 0..steps {
        liquid.advect_surface(&grid, &solids, dt, step);
        let v = volume_inside(&grid, &liquid.phi, None);
        worst = worst.max((v - v0).abs() / v0);
    }
    let v1 = volume_inside(&grid, &liquid.phi, None);
    (v0, (v1 - v0) / v0, worst)
}

#[test]
fn slotted_sphere_survives_a_full_turn() {
    for (n, ppc, adv) in [(64, 0, AdvectionScheme::MacCormack), (64, 32, AdvectionScheme::MacCormack), (100, 0, AdvectionScheme::MacCormack)] {
        let t = std::time::Instant::now();
        let (v0, change, worst) = run(n, ppc, adv);
        eprintln!("n {n} ppc {ppc} {adv:?}: v0 {v0:.5} change {change:.4} worst {worst:.4} in {:.1}s", t.elapsed().as_secs_f64());
    }
}

#[test]
fn repeated_reinit() {
    let n = 48;
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let c = Vec3::new(0.5, 0.75, 0.5);
    let mut phi = grid.sample_fn(Location::Cell, |x| (x - c).norm() - 0.15);
    let v0 = volume_inside(&grid, &phi, None);
    for i in 0..300 {
        tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx);
        if i % 50 == 0 { eprintln!("reinit {i}: {}", volume_inside(&grid, &phi, None) / v0 - 1.0); }
    }
    let mut vel = MacVelocity::zeros(&grid);
    for a in 0..2 {
        vel.faces[a].par_fill_with(|i, j, k| {
            let x = grid.position(Location::Face(a), i, j, k);
            if a == 0 { -(x.y - 0.5) } else { x.x - 0.5 }
        });
    }
    let mut phi = grid.sample_fn(Location::Cell, |x| (x - c).norm() - 0.15);
    for i in 0..300 {
        phi = tidepool::grid::advection::advect(&grid, &vel, &phi, Location::Cell, 0.02, AdvectionScheme::MacCormack);
        if i % 50 == 0 { eprintln!("advect {i}: {}", volume_inside(&grid, &phi, None) / v0 - 1.0); }
    }
}

#[test]
fn debug_pls() {
    use tidepool::fluids::eulerian::particles;
    use tidepool::grid::advection::advect;
    let n = 48;
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let c = Vec3::new(0.5, 0.75, 0.5);
    let sphere = Shape::Sphere { center: c, radius: 0.15 };
    let slot = Shape::Box { min: Vec3::new(0.5 - 0.025, 0.6 - 0.01, 0.0), max: Vec3::new(0.5 + 0.025, 0.85, 1.0) };
    let plain = std::env::var("PLAIN").is_ok();
    let mut phi = grid.sample_fn(Location::Cell, |x| if plain { sphere.signed_distance(&x) } else { sphere.signed_distance(&x).max(-slot.signed_distance(&x)) });
    tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx);
    let mut parts = particles::seed(&grid, &phi, 32, [1, 0]);
    let mut vel = MacVelocity::zeros(&grid);
    for a in 0..2 {
        vel.faces[a].par_fill_with(|i, j, k| {
            let x = grid.position(Location::Face(a), i, j, k);
            if a == 0 { -(x.y - 0.5) } else { x.x - 0.5 }
        });
    }
    let phi_start = phi.clone();
    let slot_now = |x: &Vec3, step: u64| {
        // Rotate x back by the angle travelled to the initial frame, then test the slot box.
        let angle = -(step as Real + 1.0) * 0.0294;
        let (s, c) = angle.sin_cos();
        let (dx0, dy0) = (x.x - 0.5, x.y - 0.5);
        let back = Vec3::new(0.5 + c * dx0 - s * dy0, 0.5 + s * dx0 + c * dy0, x.z);
        slot.signed_distance(&back) < 0.0
    };
    let v0 = volume_inside(&grid, &phi, None);
    let vol = |p: &tidepool::grid::Array3<Real>| volume_inside(&grid, p, None) / v0 - 1.0;
    let dt = 0.0294;
    let (mut a_adv, mut a_c1, mut a_re, mut a_c2) = (0.0, 0.0, 0.0, 0.0);
    for step in 0..214u64 {
        let _ = step;
        let before = vol(&phi);
        particles::advect(&grid, &vel, &mut parts, dt);
        phi = tidepool::grid::level_set::advect_level_set(&grid, &vel, &phi, dt, if std::env::var("FULLBAND").is_ok() { 1e9 } else { 5.0 * grid.dx });
        let v1 = vol(&phi);
        if step % 20 == 0 {
            let (mut pos, mut neg, mut pos_slot) = (0, 0, 0);
            for p in &parts {
                if (p.sign as Real) * grid.interpolate(&phi, Location::Cell, &p.x()) < -(p.radius as Real) {
                    if p.sign > 0.0 { pos += 1; if slot_now(&p.x(), step) { pos_slot += 1 } } else { neg += 1 }
                }
            }
            eprintln!("step {step} escaped pos {pos} (in slot region {pos_slot}) neg {neg}");
        }
        if std::env::var("NOPLS").is_err() { particles::correct(&grid, &mut phi, &parts); }
        let v2 = vol(&phi);
        if std::env::var("NOREINIT").is_err() { tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx); }
        let v3 = vol(&phi);
        if std::env::var("NOPLS").is_err() && std::env::var("ONECORR").is_err() { particles::correct(&grid, &mut phi, &parts); }
        let v4 = vol(&phi);
        particles::adjust_radii(&grid, &phi, &mut parts);
        if std::env::var("NORESEED").is_err() && (step + 1) % 20 == 0 {
            particles::reseed(&grid, &phi, &grid.sample_fn(Location::Cell, |_| 1.0), &mut parts, 32, [1, step + 1]);
        }
        a_adv += v1 - before; a_c1 += v2 - v1; a_re += v3 - v2; a_c2 += v4 - v3;
        if step == 0 || step == 100 || step == 213 {
            for j in (20..48).rev() {
                let row: String = (12..36).map(|i| { let v = phi.get(i, j, 24) / grid.dx; if v < -1.0 { '#' } else if v < 0.0 { '+' } else if v < 1.0 { '.' } else { ' ' } }).collect();
                let row0: String = (12..36).map(|i| { let v = phi_start.get(i, j, 24) / grid.dx; if v < -1.0 { '#' } else if v < 0.0 { '+' } else if v < 1.0 { '.' } else { ' ' } }).collect();
                let rowz: String = (12..36).map(|k| { let v = phi.get(24, j, k) / grid.dx; if v < -1.0 { '#' } else if v < 0.0 { '+' } else if v < 1.0 { '.' } else { ' ' } }).collect();
                let rowz0: String = (12..36).map(|k| { let v = phi_start.get(24, j, k) / grid.dx; if v < -1.0 { '#' } else if v < 0.0 { '+' } else if v < 1.0 { '.' } else { ' ' } }).collect();
                eprintln!("{row0} | {row} | {rowz0} | {rowz}");
            }
            let escaped = parts.iter().filter(|p| (p.sign as Real) * grid.interpolate(&phi, Location::Cell, &p.x()) < 0.0).count();
            eprintln!("escaped {escaped}");
            let (mut lost_slot, mut lost_rim, mut gained_slot, mut gained_rim) = (0, 0, 0, 0);
            for c in 0..grid.cell_count() {
                let [i, j, k] = phi.coords(c);
                let x = grid.position(Location::Cell, i, j, k);
                let near_slot = slot.signed_distance(&x) < 2.0 * grid.dx;
                let (a, b) = (phi_start.as_slice()[c] < 0.0, phi.as_slice()[c] < 0.0);
                if a && !b { if near_slot { lost_slot += 1 } else { lost_rim += 1 } }
                if !a && b { if near_slot { gained_slot += 1 } else { gained_rim += 1 } }
            }
            eprintln!("lost slot {lost_slot} rim {lost_rim}; gained slot {gained_slot} rim {gained_rim}");
        }
        if step % 10 == 0 { eprintln!("step {step}: total {v4:.4} advect {a_adv:.4} corr1 {a_c1:.4} reinit {a_re:.4} corr2 {a_c2:.4} particles {}", parts.len()); }
    }
}

#[test]
fn reinit_accuracy() {
    let n = 48;
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let c = Vec3::new(0.5, 0.75, 0.5);
    let exact = grid.sample_fn(Location::Cell, |x| (x - c).norm() - 0.15);
    let mut phi = exact.clone();
    tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx);
    let mut by_band = [0.0f64; 7];
    let mut bias = [0.0f64; 7];
    let mut count = [0usize; 7];
    for (p, e) in phi.as_slice().iter().zip(exact.as_slice()) {
        if e.abs() < 5.5 * grid.dx {
            let b = (e.abs() / grid.dx) as usize;
            by_band[b] = by_band[b].max((p - e).abs() / grid.dx);
            bias[b] += (p.abs() - e.abs()) / grid.dx;
            count[b] += 1;
        }
    }
    for b in 0..6 { bias[b] /= count[b].max(1) as f64; }
    eprintln!("max err {by_band:?}\nmean bias {bias:?}");
}

#[test]
fn repeated_reinit_thin() {
    let n = 32;
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let dx = grid.dx;
    let cases: Vec<(&str, Box<dyn Fn(Vec3) -> Real + Sync>)> = vec![
        ("wall film 0.7", Box::new(move |x: Vec3| x.z - 0.7 * dx)),
        ("wall film 1.3", Box::new(move |x: Vec3| x.z - 1.3 * dx)),
        ("sheet 0.7", Box::new(move |x: Vec3| (x.z - 0.5).abs() - 0.35 * dx)),
        ("tilted film", Box::new(move |x: Vec3| x.z - 0.8 * dx - 0.1 * x.x)),
        ("cylinder r=1.5dx", Box::new(move |x: Vec3| ((x.x - 0.5).powi(2) + (x.y - 0.5).powi(2)).sqrt() - 1.5 * dx)),
    ];
    for (name, f) in cases {
        let mut phi = grid.sample_fn(Location::Cell, |x| f(x));
        let v0 = volume_inside(&grid, &phi, None);
        for _ in 0..50 {
            tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx);
        }
        eprintln!("{name}: {:.4}", volume_inside(&grid, &phi, None) / v0 - 1.0);
    }
}

#[test]
fn escaped_after_seeding() {
    use tidepool::fluids::eulerian::particles;
    let n = 64;
    let grid = Grid { dims: [n; 3], dx: 1.0 / n as Real, origin: Vec3::zeros() };
    let c = Vec3::new(0.5, 0.75, 0.5);
    let sphere = Shape::Sphere { center: c, radius: 0.15 };
    let slot = Shape::Box { min: Vec3::new(0.5 - 0.025, 0.6 - 0.01, 0.0), max: Vec3::new(0.5 + 0.025, 0.85, 1.0) };
    let mut phi = grid.sample_fn(Location::Cell, |x| sphere.signed_distance(&x).max(-slot.signed_distance(&x)));
    tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx);
    let parts = particles::seed(&grid, &phi, 32, [1, 0]);
    let esc = |phi: &tidepool::grid::Array3<Real>| {
        let (mut pos, mut neg) = (0, 0);
        for p in &parts {
            if (p.sign as Real) * grid.interpolate(phi, Location::Cell, &p.x()) < -(p.radius as Real) {
                if p.sign > 0.0 { pos += 1 } else { neg += 1 }
            }
        }
        (pos, neg)
    };
    eprintln!("after seeding: {:?} of {}", esc(&phi), parts.len());
    let v0 = volume_inside(&grid, &phi, None);
    for i in 0..5 {
        tidepool::grid::level_set::reinitialize(&grid, &mut phi, 6.0 * grid.dx);
        eprintln!("after reinit {i}: {:?} vol {:.5}", esc(&phi), volume_inside(&grid, &phi, None) / v0 - 1.0);
        particles::correct(&grid, &mut phi, &parts);
        eprintln!("after correct {i}: {:?} vol {:.5}", esc(&phi), volume_inside(&grid, &phi, None) / v0 - 1.0);
    }
}
