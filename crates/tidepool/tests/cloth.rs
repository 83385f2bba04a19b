//! Cloth and thin shells (`deformable.method = "cloth"`): the time integration's energy and
//! momenta, a sheet hanging from two corners, a sheet folded onto itself, and a rigid ball
//! striking a free sheet.

mod common;

use std::sync::Arc;
use tidepool::geometry::TriMesh;
use tidepool::math::{Real, Vec3};
use tidepool::solids::deformable::{DeformableBody, DeformableModel};
use tidepool::solids::rigid::Material;
use tidepool::solids::Solid;
use tidepool::world::World;

/// A free 0.3 x 0.3 m sheet 1 mm thick (E = 100 kPa, 300 kg/m^3, 5 cm triangles, undamped)
/// stretched by 5%, rolled to a curvature of 2 /m and spinning, without gravity: over 1000
/// steps of half the stable step its linear momentum and its angular momentum about the origin
/// stay within 1e-8 of their sizes, and its energy within 1% of the start while the stretch
/// and the bending, most of it at the start, turn into motion (the kinetic energy reaches over
/// a third of it) and back.
#[test]
fn a_free_sheet_keeps_its_energy_and_momenta() {
    let sheet = TriMesh::sheet(0.3, 0.3, 0.05);
    let model = Arc::new(DeformableModel::sheet(&sheet, 1e-3, 1e5, 0.3, 0.0, 300.0).unwrap());
    let positions = sheet
        .vertices
        .iter()
        .map(|p| {
            let angle = 1.05 * p.x * 2.0;
            Vec3::new(0.5 * angle.sin(), 0.5 * (1.0 - angle.cos()), p.z)
        })
        .collect();
    let mut body = DeformableBody::new("sheet", model, positions, Material { restitution: 0.0, friction: 0.0 });
    let omega = Vec3::new(0.4, 1.0, -0.3);
    body.velocities = body.positions.iter().map(|x| Vec3::new(0.1, 0.0, -0.2) + omega.cross(x)).collect();
    let momenta = |b: &DeformableBody| {
        let linear: Vec3 = b.velocities.iter().zip(&b.model.masses).map(|(v, m)| *m * v).sum();
        let angular: Vec3 = b.positions.iter().zip(&b.velocities).zip(&b.model.masses).map(|((x, v), m)| *m * x.cross(v)).sum();
        (linear, angular)
    };
    let energy = |b: &DeformableBody| b.kinetic_energy() + b.elastic_energy();
    let ((p0, l0), e0) = (momenta(&body), energy(&body));
    let spin = body.kinetic_energy();
    let dt = 0.5 * body.max_time_step();
    let (mut worst, mut most_kinetic): (Real, Real) = (0.0, 0.0);
    for _ in 0..1000 {
        body.step(dt, &Vec3::zeros());
        worst = worst.max((energy(&body) - e0).abs() / e0);
        most_kinetic = most_kinetic.max(body.kinetic_energy() / e0);
    }
    let (p1, l1) = momenta(&body);
    println!(
        "energy within {worst:.2e}; momenta off by {:.2e} and {:.2e}; kinetic energy up to {most_kinetic:.3} of the total (the spin {:.3})",
        (p1 - p0).norm() / p0.norm(),
        (l1 - l0).norm() / l0.norm(),
        spin / e0
    );
    assert!((p1 - p0).norm() <= 1e-8 * p0.norm(), "linear momentum {p0:?} became {p1:?}");
    assert!((l1 - l0).norm() <= 1e-8 * l0.norm(), "angular momentum {l0:?} became {l1:?}");
    assert!(worst < 0.01, "the energy strayed by {worst:.3e} of the start");
    assert!(most_kinetic > 0.33, "the sheet hardly moved: kinetic energy at most {most_kinetic:.3} of the total");
}

/// The scene of a sheet hanging: `extra` lines appended.
fn hanging(extra: &str) -> String {
    format!(
        "[simulation]\nframes = 96\nfps = 24\n[domain]\nmin = [-0.4, -0.6, -0.4]\nmax = [0.4, 0.3, 0.4]\nresolution = 8\n\
         [[body]]\nname = \"cloth\"\nshape.sheet = {{ center = [0.0, 0.0, 0.0], size = [0.4, 0.4], thickness = 0.001 }}\nrotate = [90.0, 0.0, 0.0]\ndensity = 300.0\ndamping = 2.0\n\
         deformable = {{ method = \"cloth\", young = 5e4, damping = 0.1, spacing = 0.05 }}\n{extra}"
    )
}

/// A square of cloth held up by two corners in its own vertical plane sags between them (the
/// top edge buckles out of the plane into a fold as it does) and, with its stretch and bending
/// damped and a drag of 2/s (`damping`, like still air's), comes to rest within four seconds:
/// every particle slower than 1 mm/s, the top edge's middle and the bottom hanging lower than
/// they started, the held corners where they were.
#[test]
fn cloth_hanging_from_two_corners_comes_to_rest() {
    let pins = "[[body.pin]]\nshape.sphere = { center = [-0.2, 0.2, 0.0], radius = 0.01 }\n[[body.pin]]\nshape.sphere = { center = [0.2, 0.2, 0.0], radius = 0.01 }\n";
    let loaded = common::load(&hanging(pins));
    let start = World::build(&loaded).unwrap().solids.deformable[0].positions.clone();
    let world = common::each_frame(&loaded, 96, |_, _| {});
    let cloth = &world.solids.deformable[0];
    let held: Vec<usize> = (0..start.len()).filter(|&i| cloth.pinned[i]).collect();
    assert_eq!(held.len(), 2, "one particle at each top corner");
    assert!(held.iter().all(|&i| cloth.positions[i] == start[i]), "the held corners moved");
    let middle =
        (0..start.len()).filter(|&i| start[i].x.abs() < 1e-9 && start[i].y > 0.199).map(|i| cloth.positions[i].y).next().expect("a particle in the middle of the top edge");
    let lowest = cloth.positions.iter().map(|x| x.y).fold(Real::INFINITY, Real::min);
    println!("top edge's middle {middle:.4} m, lowest point {lowest:.4} m (started at 0.2 and -0.2), fastest particle {:.2e} m/s", cloth.max_point_speed());
    assert!(middle < 0.2 - 0.005 && lowest < -0.2 - 0.005, "the cloth did not sag: the top edge's middle is {middle} m up, the lowest point {lowest} m");
    assert!(cloth.max_point_speed() < 1e-3, "the cloth still moves at {} m/s", cloth.max_point_speed());
}

/// A napkin (0.3 x 0.15 m, 4 mm thick, soft) lying on the floor is folded in half by a pin
/// carrying one short edge up and over onto the other, and left to settle: the folded half
/// comes to lie on the lower one, a thickness above it — every particle of the moved half
/// that lies over the lower half has its middle at least 0.9 thickness above the lower half's
/// (which lies on the floor, half a thickness up; measured: 0.98) — and no two of its
/// triangles cross at any frame. Without the sheet's contact with itself the moved half falls
/// through the lower one (checked when this test was written).
#[test]
fn a_folded_sheet_lies_on_itself_without_passing_through() {
    let h = 0.004;
    let loaded = common::load(&format!(
        "[simulation]\nframes = 36\nfps = 24\n[domain]\nmin = [-0.3, 0.0, -0.2]\nmax = [0.3, 0.3, 0.2]\nresolution = 8\n\
         [[body]]\nname = \"napkin\"\nshape.sheet = {{ center = [0.0, {half}, 0.0], size = [0.3, 0.15], thickness = {h} }}\ndensity = 300.0\nfriction = 0.3\n\
         deformable = {{ method = \"cloth\", young = 1e4, damping = 0.01, spacing = 0.025 }}\n\
         [[body.pin]]\nshape.box = {{ min = [0.14, -0.01, -0.1], max = [0.16, 0.02, 0.1] }}\npath = [[0.0, 0.0, 0.0, 0.0], [0.3, -0.15, 0.08, 0.0], [0.6, -0.285, {lift}, 0.0]]\n",
        half = 0.5 * h,
        lift = 1.5 * h
    ));
    let start = World::build(&loaded).unwrap().solids.deformable[0].positions.clone();
    let mut crossings = Vec::new();
    let world = common::each_frame(&loaded, 36, |world, record| {
        if let Some(pair) = world.solids.deformable[0].surface().0.find_self_intersection() {
            crossings.push((record.frame, pair));
        }
    });
    assert!(crossings.is_empty(), "triangles cross at (frame, pair): {crossings:?}");
    let napkin = &world.solids.deformable[0];
    let over: Vec<usize> = (0..start.len()).filter(|&i| start[i].x > 0.02 && napkin.positions[i].x < -0.02).collect();
    assert!(over.len() > 10, "the moved half did not come over: {} of its particles lie over the lower half", over.len());
    let lowest = over.iter().map(|&i| napkin.positions[i].y).fold(Real::INFINITY, Real::min);

    println!("{} particles of the moved half over the lower one, the lowest {lowest:.4} m up", over.len());
    assert!(lowest > 0.5 * h + 0.9 * h, "a particle of the moved half is {lowest} m up, too close to the lower half (whose middle is {} m up)", 0.5 * h);
}

/// Without gravity a rigid ball thrown at a free sheet bounces off it: the contact's
/// impulses are equal and opposite, so the total momentum stays what the ball brought, to
/// 1e-8 of it, and the sheet carries some of it away.
#[test]
fn a_rigid_ball_and_a_free_sheet_exchange_momentum_exactly() {
    let loaded = common::load(
        "[simulation]\nframes = 6\nfps = 24\ngravity = [0.0, 0.0, 0.0]\n[domain]\nmin = [-0.5, -0.5, -0.5]\nmax = [0.5, 0.5, 0.5]\nresolution = 8\n\
         [[body]]\nname = \"sheet\"\nshape.sheet = { center = [0.0, 0.0, 0.0], size = [0.3, 0.3], thickness = 0.002 }\ndensity = 500.0\n\
         deformable = { method = \"cloth\", young = 1e5, damping = 0.01, spacing = 0.05 }\n\
         [[body]]\nname = \"ball\"\nshape.sphere = { center = [0.02, 0.15, -0.01], radius = 0.05 }\ndensity = 300.0\nvelocity = [0.0, -2.0, 0.0]\nrestitution = 0.5\n",
    );
    let start = World::build(&loaded).unwrap().solids.momentum();
    let mut worst: Real = 0.0;
    let world = common::each_frame(&loaded, 6, |world, _| worst = worst.max((world.solids.momentum() - start).norm() / start.norm()));
    let sheet = world.solids.deformable[0].momenta().1;
    println!("momentum off by at most {worst:.2e} of the ball's; the sheet took {:.3} of it", sheet.y / start.y);
    assert!(worst < 1e-8, "the total momentum changed by {worst:.3e} of the start");
    assert!(sheet.y / start.y > 0.3, "the sheet took only {} of the momentum", sheet.y / start.y);
}
