//! Bad scenes give one clear error naming the file, the line and column or key, and what was
//! expected; never a panic.

mod common;

use std::path::Path;
use tidepool::scene;

const HEAD: &str = "[simulation]\nframes = 2\n\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 1.0, 1.0]\nresolution = 8\n";

/// (name, scene text, expected line, text the message must contain)
fn cases(dir: &Path) -> Vec<(&'static str, String, Option<usize>, &'static str)> {
    let open_mesh = dir.join("open.obj");
    std::fs::write(&open_mesh, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let corrupt = dir.join("corrupt.ply");
    std::fs::write(&corrupt, b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nend_header\n\x01\x02").unwrap();
    let crossing = dir.join("crossing.obj");
    let tetrahedron = |o: f64| format!("v {o} {o} {o}\nv {} {o} {o}\nv {o} {} {o}\nv {o} {o} {}\n", o + 1.0, o + 1.0, o + 1.0);
    std::fs::write(&crossing, format!("{}{}f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\nf 5 7 6\nf 5 6 8\nf 5 8 7\nf 6 7 8\n", tetrahedron(0.0), tetrahedron(0.2))).unwrap();
    let twisted = dir.join("twisted.obj");
    std::fs::write(&twisted, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 3 4\n").unwrap();
    let fan = dir.join("fan.obj");
    std::fs::write(&fan, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n").unwrap();
    let mesh = |path: &Path| format!("{HEAD}\n[[obstacle]]\nshape.mesh = {{ path = \"{}\" }}\n", path.display());
    let sheet = |shape: &str, deformable: &str| format!("{HEAD}\n[[body]]\nshape.{shape}\ndensity = 500.0\ndeformable = {{ {deformable} }}\n");
    let cloth_file = |path: &Path, spacing: &str| {
        format!(
            "{HEAD}\n[[body]]\nshape.shell = {{ path = \"{}\", thickness = 0.002, translate = [0.5, 0.5, 0.5], scale = 0.2 }}\ndensity = 500.0\ndeformable = {{ method = \"cloth\", young = 1e5{spacing} }}\n",
            path.display()
        )
    };
    let shell = |path: &Path, thickness: f64| {
        format!("{HEAD}\n[[body]]\nshape.shell = {{ path = \"{}\", thickness = {thickness}, translate = [0.5, 0.5, 0.5], scale = 0.2 }}\ndensity = 500.0\n", path.display())
    };
    let phases = |rest: &str| format!("{HEAD}\n[[liquid.phase]]\nname = \"water\"\ndensity = 1000.0\n\n[[liquid.phase]]\nname = \"oil\"\ndensity = 800.0\n{rest}");
    let reaction = |between: &str, product: &str, rest: &str| format!("\n[[liquid.reaction]]\nbetween = {between}\nproduct = \"{product}\"\nrate = 0.01\n{rest}");
    let region = |phase: &str| format!("\n[[liquid.region]]\n{phase}shape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.2 }}\n");
    vec![
        ("malformed toml", "[simulation\nframes = 2\n".into(), Some(1), "expected `]`"),
        ("unknown key", "[simulation]\nframez = 2\n".into(), Some(2), "unknown field `framez`"),
        ("missing key", "[simulation]\nfps = 24\n[domain]\nmin = [0,0,0]\nmax = [1,1,1]\nresolution = 8\n".into(), Some(1), "missing field `frames`"),
        ("wrong type", "[simulation]\nframes = \"ten\"\n".into(), Some(2), "invalid type"),
        ("zero resolution", HEAD.replace("resolution = 8", "resolution = 0"), Some(7), "at least 2 cells"),
        ("inverted domain", HEAD.replace("max = [1.0, 1.0, 1.0]", "max = [1.0, -1.0, 1.0]"), Some(6), "greater than domain.min.y"),
        ("both grid sizes", HEAD.replace("resolution = 8", "resolution = 8\ncell_size = 0.1"), Some(4), "not both"),
        ("no grid size", HEAD.replace("resolution = 8", ""), Some(4), "missing the grid size"),
        ("negative radius", format!("{HEAD}\n[[liquid.region]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = -1.0 }}\n"), Some(10), "positive radius"),
        ("region outside", format!("{HEAD}\n[[liquid.region]]\nshape.box = {{ min = [2.0, 2.0, 2.0], max = [3.0, 3.0, 3.0] }}\n"), Some(10), "entirely outside the domain"),
        ("unknown shape", format!("{HEAD}\n[[liquid.region]]\nshape.cone = {{ radius = 1.0 }}\n"), Some(10), "unknown variant `cone`"),
        ("unknown boundary", HEAD.replace("resolution = 8", "resolution = 8\nboundary = { y_max = \"sticky\" }"), Some(8), "unknown variant `sticky`"),
        ("source ends first", format!("{HEAD}\n[[liquid.source]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\nstart = 1.0\nend = 0.5\n"), Some(12), "end time after the start"),
        ("negative viscosity", format!("{HEAD}\n[liquid]\nviscosity = -1.0\n"), Some(10), "dynamic viscosity in Pa s"),
        ("negative surface tension", format!("{HEAD}\n[liquid]\nsurface_tension = -0.07\n"), Some(10), "surface tension in N/m"),
        ("phase named twice", phases("\n[[liquid.phase]]\nname = \"oil\"\ndensity = 900.0\n"), Some(18), "given twice"),
        ("phase name with a space", phases("\n[[liquid.phase]]\nname = \"olive oil\"\ndensity = 900.0\n"), Some(18), "letters, digits"),
        ("region of no phase", phases(&region("phase = \"honey\"\n")), Some(18), "no phase is named \"honey\"; the phases are \"water\", \"oil\""),
        ("region without its phase", phases(&region("")), Some(17), "expected the phase it adds"),
        ("phase without phases", format!("{HEAD}{}", region("phase = \"water\"\n")), Some(10), "the liquid has one phase"),
        ("viscosity beside phases", phases("\n[liquid]\nviscosity = 0.1\n"), Some(18), "each phase has its own viscosity"),
        ("interface with itself", phases("\n[[liquid.interface]]\nbetween = [\"oil\", \"oil\"]\nsurface_tension = 0.02\n"), Some(18), "two different phases"),
        ("phases in FLIP", phases("\n[liquid]\nmethod = \"flip\"\n"), Some(9), "need the level-set liquid"),
        ("phase named air", phases("\n[[liquid.phase]]\nname = \"air\"\ndensity = 1.2\n"), Some(18), "names the empty region"),
        ("reaction of no phase", phases(&reaction("[\"water\", \"honey\"]", "oil", "")), Some(18), "no phase is named \"honey\"; expected one of \"water\", \"oil\" or \"air\""),
        ("reaction into a pocket of air", phases(&reaction("[\"water\", \"oil\"]", "air", "")), Some(19), "make the product a light phase"),
        ("reaction without phases", format!("{HEAD}{}", reaction("[\"water\", \"oil\"]", "oil", "")), Some(9), "give [[liquid.phase]] first"),
        ("reaction bubble under a cell", phases(&reaction("[\"water\", \"oil\"]", "oil", "bubble_radius = 0.01\n")), Some(21), "at least one cell"),
        ("phase change out of order", phases("\n[[liquid.phase.change]]\ntime = 2.0\ndensity = 900.0\n\n[[liquid.phase.change]]\ntime = 1.0\nviscosity = 1.0\n"), Some(22), "after the previous change's (2 s)"),
        ("phase change of nothing", phases("\n[[liquid.phase.change]]\ntime = 2.0\n"), Some(17), "expected what changes"),
        ("phase change elastic true", phases("\n[[liquid.phase.change]]\ntime = 2.0\nelastic = true\n"), Some(19), "expected false (no elasticity from then on)"),
        ("air expanding", phases(&reaction("[\"oil\", \"air\"]", "air", "expansion = 2.0\n")), Some(21), "remove expansion"),
        ("surface tension in FLIP", format!("{HEAD}\n[liquid]\nmethod = \"flip\"\nsurface_tension = 0.07\n"), Some(11), "needs the level-set liquid"),
        ("negative elastic modulus", format!("{HEAD}\n[liquid.elastic]\nmodulus = -5.0\n"), Some(10), "elastic modulus in Pa"),
        ("elastic FLIP", format!("{HEAD}\n[liquid]\nmethod = \"flip\"\n[liquid.elastic]\nmodulus = 100.0\n"), Some(11), "viscoelastic liquid needs the level-set liquid"),
        ("unknown slip", format!("{HEAD}\n[liquid]\nviscosity = 1.0\nslip = \"sticky\"\n"), Some(11), "unknown variant `sticky`"),
        ("camera fov", format!("{HEAD}\n[output]\ncamera = {{ fov = 0.0 }}\n"), Some(10), "field of view"),
        ("tracer spacing", format!("{HEAD}\n[[tracers]]\nshape.box = {{ min = [0.1, 0.1, 0.1], max = [0.5, 0.5, 0.5] }}\nspacing = -0.01\n"), Some(11), "positive spacing"),
        ("tracers too many", format!("{HEAD}\n[[tracers]]\nshape.box = {{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }}\nspacing = 1e-4\n"), Some(11), "more than 1e7"),
        ("duplicate format", format!("{HEAD}\n[output]\nformats = [\"png\", \"png\"]\n"), Some(10), "listed twice"),
        ("missing mesh", mesh(&dir.join("nowhere.obj")), Some(10), "nowhere.obj"),
        ("open mesh", mesh(&open_mesh), Some(10), "must be closed"),
        ("corrupt mesh", mesh(&corrupt), Some(10), "cannot read PLY"),
        ("self-intersecting mesh", mesh(&crossing), Some(10), "crossing.obj`: the mesh intersects itself"),
        ("shell thickness", shell(&open_mesh, 0.0), Some(10), "wall thickness"),
        ("twisted shell", shell(&twisted, 0.05), Some(10), "twisted.obj`: edge between vertices 1 and 2 is used 2 times in the same direction"),
        ("too much memory", HEAD.replace("resolution = 8", "resolution = 20000"), Some(7), "GiB"),
        ("body without mass", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\n"), Some(9), "needs a density"),
        ("body mass and density", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\ndensity = 500.0\nmass = 2.0\n"), Some(12), "either density or mass"),
        ("body restitution", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\ndensity = 500.0\nrestitution = 1.5\n"), Some(12), "between 0 and 1"),
        ("body damping", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\ndensity = 500.0\ndamping = -1.0\n"), Some(12), "decay rate"),
        ("damped static body", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\nkind = \"static\"\ndamping = 1.0\n"), Some(12), "only a dynamic rigid body or one simulated in full is damped"),
        ("thin torus ring", format!("{HEAD}\n[[body]]\nshape.torus = {{ center = [0.5, 0.5, 0.5], major = 0.05, minor = 0.1 }}\ndensity = 500.0\n"), Some(10), "larger than the tube radius"),
        ("overlapping bodies", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.2 }}\ndensity = 500.0\n[[body]]\nname = \"second\"\nshape.sphere = {{ center = [0.6, 0.5, 0.5], radius = 0.2 }}\ndensity = 500.0\n"), Some(10), "overlapping body `second`"),
        ("body through the floor", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, -0.2, 0.4], max = [0.6, 0.2, 0.6] }}\ndensity = 500.0\n"), Some(10), "through a closed side"),
        ("solid open box", format!("{HEAD}\n[[body]]\nshape.open-box = {{ min = [0.2, 0.2, 0.2], max = [0.6, 0.4, 0.6], wall = 0.3 }}\ndensity = 500.0\n"), Some(10), "leaves a hollow"),
        ("path on a dynamic body", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\ndensity = 500.0\npath = [[0.0, 0.0, 0.0, 0.0]]\n"), Some(12), "only a kinematic body"),
        ("flip ratio", format!("{HEAD}[liquid]\nmethod = \"flip\"\nflip.flip_ratio = 1.5\n"), Some(10), "between 0 and 1"),
        ("flip explosion radius", format!("{HEAD}[liquid]\nmethod = \"flip\"\n[[liquid.flip.explosion]]\ncenter = [0.5, 0.5, 0.5]\nradius = 0.0\nspeed = 1.0\ntime = 0.0\n"), Some(12), "positive radius"),
        ("flip too many particles", format!("{HEAD}[liquid]\nmethod = \"flip\"\nflip.particles_per_cell = 64\n[[liquid.region]]\nshape.box = {{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }}\n").replace("resolution = 8", "resolution = 300"), Some(7), "million particles"),
        ("fem body with modes", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5, modes = 4 }}\n"), Some(12), "only a modal body has modes"),
        ("pin on a modal body", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ young = 1e5 }}\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\n"), Some(13), "only a body simulated in full"),
        ("pin on a rigid body", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\n"), Some(12), "only a body simulated in full"),
        ("pin path out of order", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\npath = [[1.0, 0.0, 0.0, 0.0], [0.5, 0.1, 0.0, 0.0]]\n"), Some(15), "increasing order"),
        ("pin damping without stiffness", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\ndamping = 3.0\n"), Some(15), "only a soft pin"),
        ("cloth on a box", sheet("box = { min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }", "method = \"cloth\", young = 1e5"), Some(10), "cloth is a `sheet` or a `shell` shape"),
        ("sheet in full", sheet("sheet = { center = [0.5, 0.5, 0.5], size = [0.4, 0.4], thickness = 0.002 }", "method = \"fem\", young = 1e5"), Some(10), "simulated as cloth"),
        ("sheet thickness", sheet("sheet = { center = [0.5, 0.5, 0.5], size = [0.4, 0.4], thickness = 0.0 }", "method = \"cloth\", young = 1e5"), Some(10), "expected a thickness > 0"),
        ("sheet size", sheet("sheet = { center = [0.5, 0.5, 0.5], size = [0.4, -0.4], thickness = 0.002 }", "method = \"cloth\", young = 1e5"), Some(10), "expected two sides > 0"),
        ("modal body made incompressible", sheet("box = { min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }", "young = 1e5, incompressible = true"), Some(12), "or a closed cloth bag (method = \"cloth\") is made incompressible"),
        ("cloth too fine", sheet("sheet = { center = [0.5, 0.5, 0.5], size = [0.4, 0.4], thickness = 0.002 }", "method = \"cloth\", young = 1e5, spacing = 1e-4"), Some(12), "more than 2e5"),
        ("non-manifold cloth", cloth_file(&fan, ""), Some(10), "fan.obj`: edge between vertices 0 and 1 is used 2 times in the same direction (non-manifold"),
        ("cloth file with spacing", cloth_file(&open_mesh, ", spacing = 0.01"), Some(12), "remove spacing"),
        ("pin bound to a missing body", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nbody = \"nobody\"\n"), Some(15), "no body is named `nobody`"),
        ("pin bound to a dynamic body", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nbody = \"ball\"\n[[body]]\nname = \"ball\"\nshape.sphere = {{ center = [0.2, 0.2, 0.2], radius = 0.05 }}\ndensity = 500.0\n"), Some(15), "body `ball` is not kinematic"),
        ("pin bound with a path", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.pin]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nbody = \"frame\"\npath = [[0.0, 0.0, 0.0, 0.0]]\n[[body]]\nname = \"frame\"\nkind = \"kinematic\"\nshape.sphere = {{ center = [0.2, 0.2, 0.2], radius = 0.05 }}\n"), Some(15), "remove the pin's path"),
        ("bone on cloth", format!("{HEAD}\n[[body]]\nshape.sheet = {{ center = [0.5, 0.5, 0.5], size = [0.4, 0.4], thickness = 0.002 }}\ndensity = 500.0\ndeformable = {{ method = \"cloth\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\n"), Some(13), "only a volume simulated in full"),
        ("bone parent missing", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nparent = \"spine\"\npivot = [0.5, 0.5, 0.5]\naxis = [0.0, 0.0, 1.0]\n"), Some(16), "no bone named `spine` is defined before this one"),
        ("free bone with a pivot", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\npivot = [0.5, 0.5, 0.5]\n"), Some(13), "a bone without a parent is free"),
        ("drive on a ball joint", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nparent = \"world\"\npivot = [0.5, 0.5, 0.5]\ndrive = {{ stiffness = 1.0 }}\n"), Some(18), "a drive turns a hinge"),
        ("joined bone without a pivot", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nparent = \"world\"\n"), Some(13), "needs its joint's pivot"),
        ("bone drive stiffness", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\nparent = \"world\"\npivot = [0.5, 0.5, 0.5]\naxis = [0.0, 0.0, 1.0]\ndrive = {{ stiffness = -1.0 }}\n"), Some(19), "a stiffness in N m/rad"),
        ("bone names repeated", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5 }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\n[[body.bone]]\nname = \"b\"\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.5, 0.6, 0.6] }}\n"), Some(17), "another bone of the body is named `b`"),
        ("deformable method", format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"mass-spring\", young = 1e5 }}\n"), Some(12), "unknown variant `mass-spring`"),
        ("smoke with a liquid", format!("{HEAD}\n[smoke]\n{}", region("")), Some(11), "a smoke scene's fluid is the air"),
        ("thin smoke air", format!("{HEAD}\n[smoke]\nair_density = 0.0\n"), Some(10), "a density in kg/m^3 (air 1.2)"),
        ("smoke below absolute zero", format!("{HEAD}\n[smoke]\n[[smoke.source]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\ntemperature = -300.0\n"), Some(12), "not below absolute zero"),
        ("smoke tolerance", format!("{HEAD}\n[smoke]\npressure_tolerance = 2.0\n"), Some(10), "relative tolerance in (0, 1)"),
        ("path too fast", format!("{HEAD}\n[[body]]\nkind = \"kinematic\"\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\npath = [[0.0, 0.0, 0.0, 0.0], [0.1, 1e9, 0.0, 0.0]]\n"), Some(12), "keyframes 0 and 1 move at"),
        ("body kind", format!("{HEAD}\n[[body]]\nshape.sphere = {{ center = [0.5, 0.5, 0.5], radius = 0.1 }}\nkind = \"floating\"\n"), Some(11), "unknown variant `floating`"),
    ]
}

#[test]
fn each_bad_scene_gets_a_located_error() {
    let dir = common::temp_dir("bad-input");
    for (name, text, line, needle) in cases(&dir) {
        let result = std::panic::catch_unwind(|| scene::parse(&text, "bad.toml", "bad", None, &dir));
        let err = match result {
            Ok(Ok(_)) => panic!("{name}: accepted"),
            Ok(Err(e)) => e,
            Err(_) => panic!("{name}: panicked"),
        };
        let message = err.to_string();
        assert!(message.contains(needle), "{name}: `{message}` does not mention `{needle}`");
        if let Some(line) = line {
            assert_eq!(err.position.map(|p| p.0), Some(line), "{name}: `{message}`");
            assert!(message.starts_with(&format!("bad.toml:{line}:")), "{name}: `{message}`");
        }
        assert!(!message.contains('\n'), "{name}: one paragraph, got `{message}`");
    }
}

#[test]
fn a_missing_scene_file_is_named() {
    let err = scene::load(Path::new("/nonexistent/scene.toml")).unwrap_err();
    assert!(err.to_string().starts_with("/nonexistent/scene.toml: cannot read the scene file"), "{err}");
}

#[test]
fn meshes_in_obj_and_ply_give_the_same_obstacle() {
    let volume = |file: &str| {
        let text = format!("{HEAD}\n[[obstacle]]\nshape.mesh = {{ path = \"meshes/{file}\", scale = 0.2, translate = [0.5, 0.5, 0.5] }}\n");
        let loaded = common::load(&text);
        match &loaded.obstacles[0].1 {
            tidepool::geometry::Shape::Mesh { surface, .. } => surface.signed_volume(),
            other => panic!("not a mesh: {other:?}"),
        }
    };
    let (obj, ply) = (volume("rock.obj"), volume("rock.ply"));
    assert!(obj > 0.0 && (obj - ply).abs() < 1e-6 * obj, "{obj} vs {ply}");
}

/// What only building the world finds is located in the scene like any other error: a 0.2 m
/// cube meshed at 0.15 m spacing has too few particles for 64 modes; a full deformable body's
/// pin beside it holds no particle; a sheet is as thick as its triangles are high; an open sheet
/// is made incompressible; a bone holds
/// no particle, holds pinned ones, or holds only a line of them.
#[test]
fn errors_found_when_the_world_is_built_are_located() {
    let text =
        format!("{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ young = 1e5, modes = 64, spacing = 0.15 }}\n");
    let loaded = scene::parse(&text, "bad.toml", "bad", None, Path::new(".")).expect("the scene itself is valid");
    let err = match tidepool::world::World::build(&loaded) {
        Ok(_) => panic!("64 modes of a coarse cube accepted"),
        Err(e) => e,
    };
    let message = err.to_string();
    assert!(message.starts_with("bad.toml:12:"), "{message}");
    assert!(message.contains("modes asked for"), "{message}");
    let text = format!(
        "{HEAD}\n[[body]]\nshape.box = {{ min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }}\ndensity = 500.0\ndeformable = {{ method = \"fem\", young = 1e5, spacing = 0.05 }}\n[[body.pin]]\nshape.box = {{ min = [0.7, 0.4, 0.4], max = [0.8, 0.6, 0.6] }}\n"
    );
    let loaded = scene::parse(&text, "bad.toml", "bad", None, Path::new(".")).expect("the scene itself is valid");
    let Err(err) = tidepool::world::World::build(&loaded) else { panic!("a pin holding nothing accepted") };
    let message = err.to_string();
    assert!(message.starts_with("bad.toml:14:") && message.contains("no particle of the body lies inside the pin"), "{message}");
    let text = format!(
        "{HEAD}\n[[body]]\nshape.sheet = {{ center = [0.5, 0.5, 0.5], size = [0.4, 0.4], thickness = 0.02 }}\ndensity = 500.0\ndeformable = {{ method = \"cloth\", young = 1e5, spacing = 0.02 }}\n"
    );
    let loaded = scene::parse(&text, "bad.toml", "bad", None, Path::new(".")).expect("the scene itself is valid");
    let Err(err) = tidepool::world::World::build(&loaded) else { panic!("a sheet as thick as its triangles accepted") };
    let message = err.to_string();
    assert!(message.starts_with("bad.toml:12:") && message.contains("the thickness must be under half"), "{message}");
    let text = format!(
        "{HEAD}\n[[body]]\nshape.sheet = {{ center = [0.5, 0.5, 0.5], size = [0.4, 0.4], thickness = 0.002 }}\ndensity = 500.0\ndeformable = {{ method = \"cloth\", young = 1e5, incompressible = true }}\n"
    );
    let loaded = scene::parse(&text, "bad.toml", "bad", None, Path::new(".")).expect("the scene itself is valid");
    let Err(err) = tidepool::world::World::build(&loaded) else { panic!("an open sheet made incompressible accepted") };
    let message = err.to_string();
    assert!(message.starts_with("bad.toml:12:") && message.contains("an open sheet encloses no volume"), "{message}");
    let full = "[[body]]\nshape.box = { min = [0.4, 0.4, 0.4], max = [0.6, 0.6, 0.6] }\ndensity = 500.0\ndeformable = { method = \"fem\", young = 1e5, spacing = 0.05 }\n";
    for (bones, line, expected) in [
        ("[[body.bone]]\nname = \"b\"\nshape.box = { min = [0.7, 0.4, 0.4], max = [0.8, 0.6, 0.6] }\n", 15, "no particle of the body lies inside the bone's shape"),
        ("[[body.pin]]\nshape.box = { min = [0.39, 0.39, 0.39], max = [0.45, 0.61, 0.61] }\n[[body.bone]]\nname = \"b\"\nshape.box = { min = [0.39, 0.39, 0.39], max = [0.5, 0.61, 0.61] }\n", 15, "bone `b` holds pinned particles"),
        ("[[body.bone]]\nname = \"thin\"\nshape.box = { min = [0.39, 0.49, 0.49], max = [0.61, 0.51, 0.51] }\n", 13, "bone `thin` cannot be held by its particles"),
    ] {
        let loaded = scene::parse(&format!("{HEAD}\n{full}{bones}"), "bad.toml", "bad", None, Path::new(".")).expect("the scene itself is valid");
        let Err(err) = tidepool::world::World::build(&loaded) else { panic!("accepted: {bones}") };
        let message = err.to_string();
        assert!(message.starts_with(&format!("bad.toml:{line}:")) && message.contains(expected), "{message}");
    }
}
