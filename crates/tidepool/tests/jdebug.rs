use tidepool::world::World;
use tidepool::grid::Location;
#[test]
fn jdebug() {
    let loaded = tidepool::scene::load(std::path::Path::new(&std::env::var("SCENE").unwrap())).unwrap();
    let mut world = World::build(&loaded);
    let steps: usize = std::env::var("STEPS").map(|s| s.parse().unwrap()).unwrap_or(40);
    for s in 0..steps {
        let dt = world.cfl_dt().min(1.0 / 24.0);
        let r = tidepool::pipeline::step(&mut world, dt);
        eprintln!("step {s} t {:.4} dt {dt:.4} ok {} liquid {:.3} its {} {:?}", world.clock.time, r.is_ok(), world.liquid.max_speed(), world.liquid.last_projection.iterations, r.as_ref().err());
        let g = world.grid;
        let mut best = (0.0, 0, [0usize; 3]);
        for a in 0..3 {
            let f = &world.liquid.velocity.faces[a];
            let d = f.dims();
            for k in 0..d[2] { for j in 0..d[1] { for i in 0..d[0] {
                let u = f.get(i, j, k).abs();
                if u > best.0 && world.solids.face_open[a].get(i, j, k) > 0.0 { best = (u, a, [i, j, k]); }
            }}}
        }
        let (u, a, [i, j, k]) = best;
        let x = g.position(Location::Face(a), i, j, k);
        let mut lo = [i, j, k]; if lo[a] > 0 { lo[a] -= 1; }
        let hi = [i.min(g.dims[0]-1), j.min(g.dims[1]-1), k.min(g.dims[2]-1)];
        let sb = world.liquid.solids_with_bodies.as_ref().map(|s| (s.get(lo[0], lo[1], lo[2]), s.get(hi[0], hi[1], hi[2])));
        eprintln!("   max |u| {u:.3} axis {a} at {:.3?} open {:.4} phi {:.4} {:.4} solid {:?}", x.as_slice(), world.solids.face_open[a].get(i, j, k), world.liquid.phi.get(lo[0], lo[1], lo[2]), world.liquid.phi.get(hi[0], hi[1], hi[2]), sb);
        if r.is_err() { break; }
    }
}
