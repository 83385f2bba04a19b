use tidepool::grid::Location;
use tidepool::math::Real;
use tidepool::scene;
use tidepool::world::World;

#[test]
fn stagnation_flow_volume() {
    let text = r#"
[simulation]
frames = 1
gravity = [0.0, 0.0, 0.0]
[domain]
min = [0.0, 0.0, 0.0]
max = [1.0, 1.0, 0.25]
resolution = 40
[liquid]
particles_per_cell = 0
[[liquid.region]]
shape.box = { min = [0.3, 0.0, 0.0], max = [0.7, 0.5, 0.25] }
"#;
    let loaded = scene::parse(text, "t", "t", None, std::path::Path::new(".")).unwrap();
    let mut world = World::build(&loaded);
    let grid = world.grid;
    for a in 0..2 {
        world.liquid.velocity.faces[a].par_fill_with(|i, j, k| {
            let x = grid.position(Location::Face(a), i, j, k);
            if a == 0 { x.x - 0.5 } else { -x.y }
        });
    }
    let v0 = world.liquid.measures(&grid, &world.solids).volume;
    let dt = 0.4 * grid.dx;
    for s in 0..40 {
        tidepool::pipeline::step(&mut world, dt).unwrap();
        if s % 10 == 9 {
            let v = world.liquid.measures(&grid, &world.solids).volume;
            eprintln!("step {s}: volume change {:.4}", v / v0 - 1.0);
        }
    }
    let _: Real = 0.0;
}
