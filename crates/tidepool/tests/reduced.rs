//! Reduced deformable bodies in water: Archimedes, the rigid limit, articulation.

mod common;

use nalgebra::Matrix3;
use tidepool::math::Real;
use tidepool::world::World;

/// The share of a reduced body's deformed tetrahedral mesh below height `level`: each
/// tetrahedron's volume times the share of a lattice of 286 barycentric points below it.
fn mesh_share_below(body: &tidepool::solids::reduced::body::ReducedBody, level: Real) -> Real {
    let x = body.positions();
    let k = 10;
    let lattice: Vec<[Real; 4]> =
        (0..=k).flat_map(|a| (0..=k - a).flat_map(move |b| (0..=k - a - b).map(move |c| [a, b, c, k - a - b - c].map(|n| n as Real / k as Real)))).collect();
    let (mut below, mut total) = (0.0, 0.0);
    for tet in &body.model.mesh.tets {
        let p = tet.map(|v| x[v as usize]);
        let volume = (p[1] - p[0]).cross(&(p[2] - p[0])).dot(&(p[3] - p[0])).abs() / 6.0;
        let share = lattice.iter().filter(|w| w.iter().zip(&p).map(|(w, p)| w * p.y).sum::<Real>() < level).count() as Real / lattice.len() as Real;
        below += volume * share;
        total += volume;
    }
    below / total
}

/// Archimedes for a reduced deformable ball (radius 0.1 m, 6 modes, soft enough to wobble,
/// its tetrahedral mesh cut from a 2 cm lattice, one cell) of half the water's density: half of its
/// mesh's volume is under water within 3%; and it deforms on the way.
#[test]
fn floating_reduced_ball_displaces_its_weight_of_water() {
    let loaded = common::tank(
        "frames = 72",
        [1.0, 0.5, 0.6],
        50,
        0.3,
        r#"
[[body]]
name = "soft ball"
shape.sphere = { center = [0.5, 0.31, 0.3], radius = 0.1 }
density = 500.0
deformable = { young = 2e5, modes = 6, damping = 0.005, spacing = 0.02 }
"#,
    );
    let mut fractions = Vec::new();
    let mut energy: Real = 0.0;
    common::each_frame(&loaded, 72, |world, record| {
        if record.frame > 0 {
            let body = &world.solids.reduced[0].bodies[0];
            fractions.push(mesh_share_below(body, common::surface_height(world, 0.05, 0.05)));
            energy = energy.max(body.modal_energy());
        }
    });
    let mean = common::settled(&fractions);
    assert!((mean - 0.5).abs() < 0.03 * 0.5, "submerged fraction {mean}, frames {fractions:?}");
    assert!(energy > 0.0, "the ball never deformed");
}

/// With no modes a reduced body is a rigid body (Lu, Jin, Fedkiw sec. 5.3: with `S = 0`, eq. 45
/// is the rigid-body system): a ball made as a reduced body with zero modes and a rigid body
/// with the same surface (the tetrahedral mesh's boundary, its distance sampled alike), mass
/// and inertia (the lumped particles') are released in the same tank and stepped with the same
/// substeps; their positions, velocities and orientations agree to round-off throughout.
#[test]
fn reduced_body_without_modes_moves_as_the_rigid_body() {
    use tidepool::solids::rigid::{BodyKind, Material, RigidBody};
    let loaded = common::tank(
        "frames = 12",
        [0.6, 0.5, 0.6],
        24,
        0.3,
        r#"
[[body]]
name = "ball"
shape.sphere = { center = [0.31, 0.33, 0.29], radius = 0.08 }
density = 600.0
deformable = { young = 1e5, modes = 0, spacing = 0.025 }
"#,
    );
    let mut reduced = World::build(&loaded).expect("the scene builds");
    let mut rigid = World::build(&loaded).expect("the scene builds");
    let body = rigid.solids.reduced[0].bodies[0].clone();
    let model = &body.model;
    let mut twin = RigidBody::new("ball", BodyKind::Dynamic, &model.surface.translated(&body.position), 600.0, Material { restitution: 0.0, friction: 0.5 }, 0.0125);
    twin.shape = model.surface.clone();
    twin.position = body.position;
    twin.mass = model.mass;
    twin.volume = model.mesh.volume();
    twin.inertia = model.mesh.vertices.iter().zip(&model.masses).map(|(r, m)| *m * (r.norm_squared() * Matrix3::identity() - r * r.transpose())).sum();
    rigid.solids = tidepool::solids::Solids::new(rigid.solids.statics.clone());
    rigid.solids.rigid.insert(twin);
    let dt = 1.0 / 120.0;
    for step in 0..36 {
        tidepool::pipeline::step(&mut reduced, dt).unwrap();
        tidepool::pipeline::step(&mut rigid, dt).unwrap();
        let (a, b) = (&reduced.solids.reduced[0].bodies[0], &rigid.solids.rigid[0]);
        let apart = [
            (a.position - b.position).norm(),
            (a.velocity - b.velocity).norm(),
            (a.angular_velocity() - b.angular_velocity()).norm() * 0.08,
            a.orientation.angle_to(&b.orientation) * 0.08,
        ];
        assert!(apart.iter().all(|d| *d < 1e-9), "step {step}: apart by {apart:?}");
    }
    assert!(reduced.solids.reduced[0].bodies[0].velocity.norm() > 0.01, "the ball never moved");
}

/// Copies of one shape placed and turned differently (`rotate`) share one model, so one modal
/// analysis and one mesh in memory: of two soft tori, the second turned 90 degrees about x,
/// both hold the same model, and the second's particles are the first's turned about its
/// centre of mass; two starfish (triangle meshes built where they are placed) share theirs.
#[test]
fn turned_copies_share_one_model() {
    let loaded = common::tank(
        "frames = 1",
        [1.0, 0.5, 0.6],
        25,
        0.2,
        r#"
[[body]]
name = "flat"
shape.torus = { center = [0.3, 0.3, 0.3], axis = [0.0, 1.0, 0.0], major = 0.1, minor = 0.04 }
density = 600.0
deformable = { young = 1e5, modes = 4, spacing = 0.03 }

[[body]]
name = "upright"
shape.torus = { center = [0.7, 0.3, 0.3], axis = [0.0, 1.0, 0.0], major = 0.1, minor = 0.04 }
rotate = [90.0, 0.0, 0.0]
density = 600.0
deformable = { young = 1e5, modes = 4, spacing = 0.03 }

[[body]]
name = "star one"
shape.starfish = { center = [0.25, 0.1, 0.3], radius = 0.1, thickness = 0.04 }
density = 1200.0
deformable = { young = 1e5, modes = 4, spacing = 0.02 }

[[body]]
name = "star two"
shape.starfish = { center = [0.71, 0.13, 0.33], radius = 0.1, thickness = 0.04 }
density = 1200.0
deformable = { young = 1e5, modes = 4, spacing = 0.02 }
"#,
    );
    let world = World::build(&loaded).expect("the scene builds");
    let (flat, upright) = (&world.solids.reduced[0].bodies[0], &world.solids.reduced[1].bodies[0]);
    assert!(std::sync::Arc::ptr_eq(&flat.model, &upright.model), "the tori hold different models");
    assert!(std::sync::Arc::ptr_eq(&world.solids.reduced[2].bodies[0].model, &world.solids.reduced[3].bodies[0].model), "the starfish hold different models");
    let turn = nalgebra::Rotation3::from_axis_angle(&nalgebra::Vector3::x_axis(), std::f64::consts::FRAC_PI_2);
    for (a, b) in flat.positions().iter().zip(upright.positions()) {
        let expected = upright.position + turn * (a - flat.position);
        assert!((b - expected).norm() < 1e-12, "particle at {b:?}, expected {expected:?}");
    }
}

/// Writes `mesh` as TetGen `.node` and `.ele` files at `stem` (indices from 0).
fn write_tetgen(mesh: &tidepool::geometry::TetMesh, stem: &std::path::Path) {
    let nodes: String = mesh.vertices.iter().enumerate().map(|(i, v)| format!("{i} {} {} {}\n", v.x, v.y, v.z)).collect();
    let eles: String = mesh.tets.iter().enumerate().map(|(i, t)| format!("{i} {} {} {} {}\n", t[0], t[1], t[2], t[3])).collect();
    std::fs::write(stem.with_extension("node"), format!("{} 3 0 0\n{nodes}", mesh.vertices.len())).unwrap();
    std::fs::write(stem.with_extension("ele"), format!("{} 4 0\n{eles}", mesh.tets.len())).unwrap();
}

/// A deformable body from a TetGen file is simulated on the file's own tetrahedra (not a
/// lattice cut from its surface), placed by `translate`; a file with an inverted tetrahedron
/// is refused with an error naming the key, the file and the tetrahedron.
#[test]
fn deformable_body_from_a_tetgen_file() {
    use tidepool::geometry::TetMesh;
    use tidepool::math::Vec3;
    let dir = common::temp_dir("tetgen");
    let block = TetMesh::box_grid(&Vec3::zeros(), &Vec3::new(0.2, 0.1, 0.1), [4, 2, 2]);
    write_tetgen(&block, &dir.join("block"));
    let scene = |file: &str| {
        format!(
            "[simulation]\nframes = 1\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [0.6, 0.5, 0.6]\nresolution = 24\n\
         [[body]]\nshape.mesh = {{ path = {:?}, translate = [0.2, 0.2, 0.25] }}\ndensity = 500.0\n\
         deformable = {{ young = 1e5, modes = 4 }}\n",
            dir.join(file).display().to_string()
        )
    };
    let loaded = common::load(&scene("block.node"));
    let world = World::build(&loaded).expect("the scene builds");
    let body = &world.solids.reduced[0].bodies[0];
    assert_eq!(body.model.mesh.tets.len(), block.tets.len());
    assert!((body.model.mass - 500.0 * 0.2 * 0.1 * 0.1).abs() < 1e-9, "mass {}", body.model.mass);
    assert!((body.position - Vec3::new(0.3, 0.25, 0.3)).norm() < 1e-9, "centre of mass at {:?}", body.position);
    let mut inverted = block.clone();
    inverted.tets[3].swap(0, 1);
    write_tetgen(&inverted, &dir.join("inverted"));
    let error = tidepool::scene::parse(&scene("inverted.node"), "test.toml", "test", None, &common::scenes_dir()).unwrap_err().to_string();
    assert!(error.contains("body[0].shape.mesh.path") && error.contains("inverted.node") && error.contains("tetrahedron 3 is inverted"), "{error}");
}
