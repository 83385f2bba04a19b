//! Caches for other programs, read back by those programs' own libraries: OpenVDB volumes by
//! `pyopenvdb`, USD stages by `pxr` (`usd-core`). Where the library is not installed a test
//! says so loudly and checks nothing.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use tidepool::fluids::Fluid;
use tidepool::grid::{Array3, Sampled};
use tidepool::math::{Real, Vec3};
use tidepool::output::vdb::{self, HALF_WIDTH};
use tidepool::scene::AnyScene;
use tidepool::world::World;

/// Reads a `.vdb` file with pyopenvdb and prints, per grid: name, class, voxel size, the world
/// position of voxel (0, 0, 0), background, active voxel count, the value and active state at
/// each probe, the sum of the values over the active bounding box, and for a level set the
/// volume inside its zero set as OpenVDB's own mesher makes it.
const READ_VDB: &str = r#"
import json, sys
import numpy as np
import pyopenvdb as vdb
grids, meta = vdb.readAll(sys.argv[1])
probes = json.loads(sys.argv[2])
out = {"creator": meta.get("creator"), "grids": []}
for g in grids:
    acc = g.getConstAccessor()
    lo, hi = g.evalActiveVoxelBoundingBox()
    shape = [h - l + 1 for l, h in zip(lo, hi)]
    if g.valueTypeName == "vec3s":
        shape.append(3)
    values = np.zeros([max(n, 0) for n in shape], dtype=np.float64)
    if g.activeVoxelCount() > 0:
        g.copyToArray(values, ijk=lo)
    entry = {
        "name": g.name, "class": g.gridClass, "type": g.valueTypeName,
        "voxel_size": list(g.transform.voxelSize()), "origin": list(g.transform.indexToWorld((0, 0, 0))),
        "background": g.background, "active": g.activeVoxelCount(), "sum": float(values.sum()),
        "probes": [acc.probeValue(tuple(p)) for p in probes],
    }
    if g.gridClass == "level set":
        points, triangles, quads = g.convertToPolygons(isovalue=0.0)
        faces = [t for t in triangles] + [[q[0], q[1], q[2]] for q in quads] + [[q[0], q[2], q[3]] for q in quads]
        entry["volume"] = abs(sum(np.dot(points[a], np.cross(points[b], points[c])) for a, b, c in faces) / 6.0)
    out["grids"].append(entry)
print(json.dumps(out))
"#;

fn read_vdb(python: &str, path: &Path, probes: &[[usize; 3]]) -> Value {
    common::python_json(python, READ_VDB, &[path.to_str().unwrap(), &serde_json::to_string(probes).unwrap()])
}

fn grid<'a>(read: &'a Value, name: &str) -> &'a Value {
    read["grids"].as_array().unwrap().iter().find(|g| g["name"] == name).unwrap_or_else(|| panic!("no grid {name} in {read}"))
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

/// Two balls (one across the boundary between two internal nodes of the tree) on a lattice of
/// 150 × 40 × 36 voxels, written as a level set, a fog volume and a vector field: OpenVDB reads
/// back the names, classes, transform, background, every probed value and active state, the
/// active counts and the fog's sum exactly (to float rounding), and its own mesher finds the
/// balls' volume within 1.5% — so the tiles inside the balls carry the right sign.
#[test]
fn volumes_read_back_in_openvdb() {
    let Some(python) = common::python_with("pyopenvdb", "apt install python3-openvdb") else { return };
    let (h, origin) = (0.02, Vec3::new(-1.5, -0.4, -0.36));
    let (centres, radius) = ([Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.06, 0.0, 0.0)], 0.3);
    let position = |i: usize, j: usize, k: usize| origin + Vec3::new(i as Real, j as Real, k as Real) * h;
    let mut phi = Array3::filled([150, 40, 36], 0.0);
    phi.par_fill_with(|i, j, k| centres.iter().map(|c| (position(i, j, k) - c).norm() - radius).fold(Real::MAX, Real::min));
    let velocity = phi.par_map(|i, j, k, _| {
        let x = position(i, j, k);
        Vec3::new(-x.y, x.x, 0.5)
    });
    let phi = Sampled { values: phi, origin, spacing: h };
    let velocity = Sampled { values: velocity, origin, spacing: h };
    let surface = vdb::Grid::level_set("surface", &phi, HALF_WIDTH);
    let density = vdb::Grid::fog_volume("density", &phi);
    let vel = vdb::Grid::vector("vel", &velocity);
    let dir = common::temp_dir("vdb-balls");
    let path = dir.join("balls.vdb");
    std::fs::write(&path, vdb::file(&[&surface, &density, &vel], "test")).unwrap();

    // Probes: in the first ball's core, on its surface, just outside, far outside, in the second
    // ball on either side of voxel 128, and the lattice's corners.
    let probes = [[75, 20, 18], [90, 20, 18], [91, 20, 18], [5, 5, 5], [127, 20, 18], [128, 20, 18], [0, 0, 0], [149, 39, 35]];
    let read = read_vdb(&python, &path, &probes);
    assert_eq!(read["creator"], "test");
    let band = (HALF_WIDTH * h) as f32;
    let expect_phi = |p: [usize; 3]| phi.values.get(p[0], p[1], p[2]) as f32;
    for g in read["grids"].as_array().unwrap() {
        assert!(f64s(&g["voxel_size"]).iter().all(|&v| (v - h).abs() < 1e-12), "{g}");
        assert!(f64s(&g["origin"]).iter().zip([origin.x, origin.y, origin.z]).all(|(a, b)| (a - b).abs() < 1e-12), "{g}");
    }

    let s = grid(&read, "surface");
    assert_eq!((s["class"].as_str(), s["type"].as_str()), (Some("level set"), Some("float")));
    assert_eq!(s["background"].as_f64().unwrap() as f32, band);
    let in_band = phi.values.as_slice().iter().filter(|&&v| (v as f32).abs() < band).count();
    assert_eq!(s["active"].as_u64().unwrap() as usize, in_band);
    for (p, probe) in probes.iter().zip(s["probes"].as_array().unwrap()) {
        let v = expect_phi(*p);
        assert_eq!(probe[0].as_f64().unwrap() as f32, v.clamp(-band, band), "surface at {p:?}");
        assert_eq!(probe[1].as_bool().unwrap(), v.abs() < band, "surface active at {p:?}");
    }
    let exact = 2.0 * 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3);
    let volume = s["volume"].as_f64().unwrap();
    assert!((volume / exact - 1.0).abs() < 0.015, "OpenVDB's mesh encloses {volume} m³, the balls {exact} m³");

    let d = grid(&read, "density");
    assert_eq!(d["class"], "fog volume");
    let fraction = |v: Real| (0.5 - v / h).clamp(0.0, 1.0) as f32;
    let sum: f64 = phi.values.as_slice().iter().map(|&v| fraction(v) as f64).sum();
    assert!((d["sum"].as_f64().unwrap() / sum - 1.0).abs() < 1e-6, "{} vs {sum}", d["sum"]);
    assert!((sum * h.powi(3) / exact - 1.0).abs() < 0.015, "the fog holds {} m³", sum * h.powi(3));
    for (p, probe) in probes.iter().zip(d["probes"].as_array().unwrap()) {
        let v = fraction(expect_phi(*p) as Real);
        assert_eq!((probe[0].as_f64().unwrap() as f32, probe[1].as_bool().unwrap()), (v, v > 0.0), "density at {p:?}");
    }

    let v = grid(&read, "vel");
    assert_eq!((v["type"].as_str(), v["active"].as_u64()), (Some("vec3s"), Some(150 * 40 * 36)));
    for (p, probe) in probes.iter().zip(v["probes"].as_array().unwrap()) {
        let x = velocity.values.get(p[0], p[1], p[2]);
        let read: Vec<f32> = f64s(&probe[0]).iter().map(|&c| c as f32).collect();
        assert_eq!(read, vec![x.x as f32, x.y as f32, x.z as f32], "vel at {p:?}");
    }
}

/// Runs `frames` frames of a column of water 0.3 × 0.35 × 0.3 m in a tank 0.8 × 0.5 × 0.3 m
/// (16 cells along x) with the liquid `method`, with a floating ball and a block on the floor
/// when `solids`, writing `formats` (TOML array items) into a fresh directory `name`; returns
/// the directory and the final world.
fn run_column(name: &str, method: &str, frames: u32, solids: bool, formats: &str) -> (PathBuf, World) {
    let dir = common::temp_dir(name);
    let solids = if solids {
        "[[obstacle]]\nshape.box = { min = [0.6, 0.0, 0.1], max = [0.7, 0.1, 0.2] }\n\
         [[body]]\nname = \"ball\"\nshape.sphere = { center = [0.5, 0.3, 0.15], radius = 0.06 }\ndensity = 500.0\n"
    } else {
        ""
    };
    let scene = common::load(&format!(
        "[simulation]\nframes = {frames}\nfps = 30\n[domain]\nmin = [0.0, 0.0, 0.0]\nmax = [0.8, 0.5, 0.3]\nresolution = 16\n\
         [liquid]\nmethod = \"{method}\"\n[[liquid.region]]\nshape.box = {{ min = [0.0, 0.0, 0.0], max = [0.3, 0.35, 0.3] }}\n\
         {solids}[output]\nformats = [{formats}]\n"
    ));
    let world = common::run_into(&AnyScene::Liquid(Box::new(scene)), &dir, frames, false).unwrap();
    (dir, world)
}

/// A short level-set run and a short FLIP run with `formats = ["vdb"]` write `volume_NNNN.vdb`
/// per frame with the grids `surface`, `density` and `vel` on the documented lattices (the
/// cell centres, and for FLIP's surface half a cell), and the fog volume holds the liquid's
/// volume (within 3%; the column stands against three walls, where FLIP's surface once drew
/// back by almost a cell).
#[test]
fn runs_write_volumes_per_frame() {
    let Some(python) = common::python_with("pyopenvdb", "apt install python3-openvdb") else { return };
    for method in ["level-set", "flip"] {
        let (dir, _) = run_column(&format!("vdb-run-{method}"), method, 1, false, "\"vdb\"");
        let dx = 0.05;
        for frame in 0..=1 {
            let read = read_vdb(&python, &dir.join(format!("volume_{frame:04}.vdb")), &[]);
            let mut names: Vec<&str> = read["grids"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
            names.sort_unstable();
            assert_eq!(names, ["density", "surface", "vel"]);
            let surface_spacing = if method == "flip" { dx / 2.0 } else { dx };
            for (name, spacing) in [("surface", surface_spacing), ("density", surface_spacing), ("vel", dx)] {
                assert!((f64s(&grid(&read, name)["voxel_size"])[0] - spacing).abs() < 1e-12, "{method} {name}");
            }
            let fog = grid(&read, "density")["sum"].as_f64().unwrap() * surface_spacing.powi(3);
            let liquid_volume = 0.3 * 0.35 * 0.3;
            assert!((fog / liquid_volume - 1.0).abs() < 0.03, "{method} frame {frame}: the fog holds {fog} m³ of {liquid_volume}");
            // Still water at frame 0 has no velocity to write; the released column has.
            assert_eq!(grid(&read, "vel")["active"].as_u64().unwrap() > 0, frame == 1, "{method} frame {frame}");
        }
    }
}

/// Opens a USD stage with `pxr` and prints its metadata and, per prim, the type, the points'
/// time samples and, at the last one, the counts of points, velocities and faces, the largest
/// face index and speed.
const READ_USD: &str = r#"
import json, sys
from pxr import Usd, UsdGeom
stage = Usd.Stage.Open(sys.argv[1])
out = {"up": UsdGeom.GetStageUpAxis(stage), "meters": UsdGeom.GetStageMetersPerUnit(stage),
       "end": stage.GetEndTimeCode(), "fps": stage.GetTimeCodesPerSecond(), "prims": {}}
for prim in stage.Traverse():
    entry = {"type": prim.GetTypeName()}
    g = UsdGeom.PointBased(prim)
    if g:
        times = list(g.GetPointsAttr().GetTimeSamples())
        t = times[-1] if times else Usd.TimeCode.Default()
        velocities = g.GetVelocitiesAttr().Get(t) or []
        entry.update(times=times, points=len(g.GetPointsAttr().Get(t) or []), velocities=len(velocities),
                     max_speed=max((v.GetLength() for v in velocities), default=0.0))
        if prim.GetTypeName() == "Mesh":
            indices = UsdGeom.Mesh(prim).GetFaceVertexIndicesAttr().Get(t) or []
            entry.update(faces=len(UsdGeom.Mesh(prim).GetFaceVertexCountsAttr().Get(t) or []),
                         max_index=max(indices) if len(indices) else -1)
    out["prims"][prim.GetName()] = entry
print(json.dumps(out))
"#;

/// A level-set run with a body and an obstacle, and a FLIP run, with `formats = ["usd"]`: the
/// stage opens in USD with Y up, metres and the scene's frame rate; the liquid, the body and
/// FLIP's particles are time-sampled at every frame with as many velocities as points and the
/// mesh and particle counts of the run; the obstacle is static.
#[test]
fn runs_write_a_usd_stage() {
    let Some(python) = common::python_with("pxr", "pip install usd-core") else { return };
    for method in ["level-set", "flip"] {
        let (dir, world) = run_column(&format!("usd-run-{method}"), method, 2, true, "\"usd\"");
        let read = common::python_json(&python, READ_USD, &[dir.join("tidepool.usda").to_str().unwrap()]);
        assert_eq!((read["up"].as_str(), read["meters"].as_f64(), read["end"].as_f64(), read["fps"].as_f64()), (Some("Y"), Some(1.0), Some(2.0), Some(30.0)));
        let prims = &read["prims"];
        let surface = world.fluid.surface();
        let (body, _) = world.solids.surface();
        for (name, points, faces) in [("Liquid", surface.mesh.vertices.len(), surface.mesh.triangles.len()), ("Bodies", body.vertices.len(), body.triangles.len())] {
            let prim = &prims[name];
            assert_eq!(prim["type"], "Mesh", "{method} {name}");
            assert_eq!(f64s(&prim["times"]), [0.0, 1.0, 2.0], "{method} {name}");
            assert_eq!(
                (prim["points"].as_u64(), prim["velocities"].as_u64(), prim["faces"].as_u64()),
                (Some(points as u64), Some(points as u64), Some(faces as u64)),
                "{method} {name}"
            );
            assert_eq!(prim["max_index"].as_u64(), Some(points as u64 - 1));
            assert!(prim["max_speed"].as_f64().unwrap() > 0.1, "{method} {name}: the liquid and the ball move");
        }
        assert_eq!((prims["Obstacles"]["points"].as_u64(), prims["Obstacles"]["times"].as_array().map(Vec::len)), (Some(8), Some(0)));
        if method == "flip" {
            let Fluid::Flip(f) = &world.fluid else { unreachable!() };
            let particles = &prims["Particles"];
            assert_eq!(
                (particles["type"].as_str(), particles["points"].as_u64(), particles["velocities"].as_u64()),
                (Some("Points"), Some(f.positions.len() as u64), Some(f.positions.len() as u64))
            );
        } else {
            assert!(prims.get("Particles").is_none());
        }
    }
}

/// Run inside Blender after `tools/blender_import.py`: prints, at frames 0 and 2, per object the
/// vertex and face counts, the `velocity` attribute's type and domain, its largest component,
/// the largest world coordinates, and a volume's grids and file.
const CHECK_BLENDER: &str = r#"
import bpy, json
import numpy as np
scene = bpy.context.scene
out = {"fps": scene.render.fps / scene.render.fps_base, "end": scene.frame_end, "frames": {}}
for frame in (0, 2):
    scene.frame_set(frame)
    graph = bpy.context.evaluated_depsgraph_get()
    entry = {}
    for ob in bpy.data.objects:
        if ob.type == "VOLUME":
            ob.data.grids.load()
            entry[ob.name] = {"grids": sorted(g.name for g in ob.data.grids), "file": ob.data.grids.frame_filepath}
        if ob.type != "MESH" or not ob.name.startswith("tidepool"):
            continue
        mesh = ob.evaluated_get(graph).data
        co = np.zeros(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", co)
        world = np.array(ob.matrix_world)
        points = co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]
        velocity = mesh.attributes.get("velocity")
        largest = None
        if velocity is not None:
            v = np.zeros(3 * len(mesh.vertices))
            velocity.data.foreach_get("vector", v)
            largest = float(np.abs(v).max())
        entry[ob.name] = {"vertices": len(mesh.vertices), "faces": len(mesh.polygons), "max": points.max(axis=0).tolist(),
                          "velocity": None if velocity is None else [velocity.data_type, velocity.domain], "largest": largest}
    out["frames"][str(frame)] = entry
print("TIDEPOOL " + json.dumps(out))
"#;

/// `tools/blender_import.py` loads a level-set run with a body, an obstacle and volumes into
/// Blender: the liquid and the body are meshes swapped per frame with the PLY's counts and a
/// point `velocity` vector attribute holding the run's velocities, turned Z-up (Blender's
/// height is tidepool's y), the obstacle is static, the VDB sequence follows the frames, and
/// the frame rate and range are the run's.
#[test]
fn blender_imports_a_run_with_velocity() {
    if std::process::Command::new("blender").arg("--version").output().is_err() {
        eprintln!("\n*** SKIPPED: Blender is not installed; install it (`apt install blender`) to check tools/blender_import.py ***\n");
        return;
    }
    let (dir, world) = run_column("blender-import", "level-set", 2, true, "\"ply\", \"vdb\"");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/blender_import.py");
    let out =
        std::process::Command::new("blender").args(["-b", "--factory-startup", "--python"]).arg(&script).args(["--python-expr", CHECK_BLENDER, "--"]).arg(&dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("TIDEPOOL ")).unwrap_or_else(|| panic!("no report from Blender:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let read: Value = serde_json::from_str(line).unwrap();
    assert_eq!((read["fps"].as_f64(), read["end"].as_u64()), (Some(30.0), Some(2)));
    let at_2 = &read["frames"]["2"];
    let surface = world.fluid.surface();
    let (body, body_velocities) = world.solids.surface();
    for (name, mesh, velocities) in [("tidepool liquid", &surface.mesh, &surface.velocities), ("tidepool bodies", &body, &body_velocities)] {
        let o = &at_2[name];
        assert_eq!((o["vertices"].as_u64(), o["faces"].as_u64()), (Some(mesh.vertices.len() as u64), Some(mesh.triangles.len() as u64)), "{name}");
        assert_eq!(o["velocity"], serde_json::json!(["FLOAT_VECTOR", "POINT"]), "{name}");
        let largest = velocities.iter().flat_map(|v| [v.x, v.y, v.z]).map(|c| (c as f32).abs()).fold(0.0, f32::max);
        assert!((o["largest"].as_f64().unwrap() as f32 - largest).abs() < 1e-6 && largest > 0.1, "{name}: {} vs {largest}", o["largest"]);
        let top = mesh.vertices.iter().map(|v| v.y).fold(Real::MIN, Real::max);
        assert!((f64s(&o["max"])[2] - top).abs() < 1e-5, "{name}: Blender's height {} is tidepool's y {top}", o["max"]);
    }
    let liquid_top = f64s(&read["frames"]["0"]["tidepool liquid"]["max"])[2];
    assert!((liquid_top - 0.35).abs() < 0.01, "the still column at frame 0 stands {liquid_top} m high");
    assert_eq!(at_2["tidepool obstacles"]["vertices"].as_u64(), Some(8));
    assert_eq!(at_2["tidepool volume"]["grids"], serde_json::json!(["density", "surface", "vel"]));
    assert!(at_2["tidepool volume"]["file"].as_str().unwrap().ends_with("volume_0002.vdb"));
}
