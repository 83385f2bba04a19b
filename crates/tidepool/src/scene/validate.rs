//! Scene validation: every value checked, shapes resolved, the grid laid out.

use super::located;
use super::schema::*;
use crate::error::SceneError;
use crate::fluids::eulerian::estimate_memory_bytes;
use crate::geometry::creatures::{self, Creature};
use crate::geometry::TetMesh;
use crate::geometry::{mesh_io, Shape, TriMesh};
use crate::grid::Grid;
use crate::math::{vec3, Quat, Real, Vec3};
use crate::solids::deformable::skeleton::{Drive, Joint};
use crate::solids::reduced::articulated::Profile;
use crate::solids::reduced::fem::ElasticMaterial;
use nalgebra::Rotation3;
use std::path::Path;

pub(super) struct Context<'a> {
    pub text: &'a str,
    pub label: &'a str,
    pub base_dir: &'a Path,
}

impl Context<'_> {
    pub(super) fn error(&self, key: &str, message: impl Into<String>) -> SceneError {
        located(self.label, self.text, key, &message.into())
    }

    pub(super) fn check(&self, ok: bool, key: &str, message: impl FnOnce() -> String) -> Result<(), SceneError> {
        if ok {
            Ok(())
        } else {
            Err(self.error(key, message()))
        }
    }

    pub(super) fn finite3(&self, v: &[f64; 3], key: &str) -> Result<(), SceneError> {
        self.check(v.iter().all(|c| c.is_finite()), key, || format!("expected three finite numbers, got {v:?}"))
    }

    pub(super) fn positive(&self, v: f64, key: &str, what: &str) -> Result<(), SceneError> {
        self.check(v.is_finite() && v > 0.0, key, || format!("expected a positive {what}, got {}", number(v)))
    }

    /// An output directory: a path, not an empty string (which would write into the current
    /// directory).
    pub(super) fn directory(&self, directory: &Option<String>, key: &str) -> Result<(), SceneError> {
        let empty = directory.as_ref().is_some_and(|d| d.trim().is_empty());
        self.check(!empty, key, || "expected a directory path, got an empty string (leave the key out for out/<scene name>)".into())
    }

    /// `v` within `[lo, hi]` (the bounds `docs/scene-format.md` states for the key).
    pub(super) fn within(&self, v: f64, lo: f64, hi: f64, key: &str, what: &str) -> Result<(), SceneError> {
        self.check(v >= lo && v <= hi, key, || format!("expected {what} from {} to {}, got {}", number(lo), number(hi), number(v)))
    }
}

/// A number as a person reads it: very large and very small ones in exponent notation.
pub(super) fn number(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

pub(super) struct Resolved {
    pub scene: Scene,
    pub grid: Grid,
    pub regions: Vec<(Operation, Shape, usize)>,
    pub sources: Vec<Shape>,
    pub smoke_regions: Vec<Shape>,
    pub smoke_sources: Vec<Shape>,
    pub obstacles: Vec<(String, Shape)>,
    pub bodies: Vec<BodySetup>,
    pub models: Vec<ModelSetup>,
    pub tracers: Vec<Vec3>,
}

/// Most tracers a scene may seed.
const MAX_TRACERS: f64 = 1e7;

/// A rigid body as the scene sets it up.
#[derive(Clone, Debug)]
pub struct BodySetup {
    /// Name used in outputs.
    pub name: String,
    /// Dynamic or static.
    pub kind: BodyKind,
    /// The shape before it is turned (see `orientation`).
    pub shape: Shape,
    /// The initial orientation: the shape turned about its centre of mass.
    pub orientation: Quat,
    /// Density (kg/m^3), from `density` or `mass / volume`.
    pub density: Real,
    /// Initial velocity (m/s).
    pub velocity: Vec3,
    /// Initial angular velocity (rad/s).
    pub angular_velocity: Vec3,
    /// A kinematic body's keyframes: time (s) and displacement from the start (m).
    pub path: Vec<(Real, Vec3)>,
    /// Restitution.
    pub restitution: Real,
    /// Friction coefficient.
    pub friction: Real,
    /// Decay rate of the velocities (1/s; not physical).
    pub damping: Real,
    /// A reduced deformable body's sub-bodies, joints and actuation.
    pub reduced: Option<ReducedSetup>,
}

impl BodySetup {
    /// The signed distance from `x` to the body where the scene places it: its shape turned by
    /// its orientation about the shape's centroid `centre`.
    pub fn placed_distance(&self, centre: &Vec3, x: &Vec3) -> Real {
        self.shape.signed_distance(&(centre + self.orientation.inverse() * (x - centre)))
    }
}

/// A reduced deformable body as the scene sets it up: one sub-body, or several joined.
#[derive(Clone, Debug)]
pub struct ReducedSetup {
    /// The body's key in the scene (`body[n]`), where errors found when it is built point.
    pub key: String,
    /// Modal, or simulated in full (one part, no joints or actuation).
    pub method: DeformableMethod,
    /// A full body's pins.
    pub pins: Vec<PinSetup>,
    /// A full volume's bones.
    pub bones: Vec<BoneSetup>,
    /// Whether a full volume keeps its volume.
    pub incompressible: bool,
    /// The sub-bodies.
    pub parts: Vec<PartSetup>,
    /// Joints `(p, c, x)`: world point `x` of part `p` held on part `c`.
    pub joints: Vec<(usize, usize, Vec3)>,
    /// Actuation forces `(part, world point, force)` and their time profile.
    pub actuators: Vec<(usize, Vec3, Vec3)>,
    pub profile: Profile,
    /// Skin width (m; 0 for none).
    pub skin: Real,
}

/// A pin of a body simulated in full: the particles inside `shape` where the body starts,
/// displaced along `path` (keyframes: time in s, displacement in m, piecewise linear) and
/// turned at `angular_velocity` (rad/s) about their centroid.
#[derive(Clone, Debug)]
pub struct PinSetup {
    pub shape: Shape,
    pub path: Vec<(Real, Vec3)>,
    pub angular_velocity: Vec3,
    /// The kinematic body the particles are bound to, by index in [`LoadedScene::bodies`]
    /// (its motion replaces `path` and `angular_velocity`).
    pub body: Option<usize>,
    /// A soft pin's spring stiffness (N/m) and damping (N s/m; `None`: critical).
    pub spring: Option<(Real, Option<Real>)>,
}

/// A bone of a volume simulated in full: the particles inside `shape` where the body starts
/// are bound to it; its joint's parent is an index among the body's bones.
#[derive(Clone, Debug)]
pub struct BoneSetup {
    pub name: String,
    pub shape: Shape,
    pub joint: Joint,
}

/// One sub-body of a reduced deformable body.
#[derive(Clone, Debug)]
pub struct PartSetup {
    /// Name used in outputs.
    pub name: String,
    /// Its model: an index into [`LoadedScene::models`](super::LoadedScene::models).
    pub model: usize,
    /// Where the origin of the model's mesh starts (m).
    pub position: Vec3,
}

/// A deformable model as the scene defines it: a rest mesh, placed about the shape's
/// centroid, and its material. The world runs the modal analysis of a modal one; copies of one
/// shape share one model.
#[derive(Clone, Debug)]
pub struct ModelSetup {
    pub mesh: ModelMesh,
    pub material: ElasticMaterial,
    /// Modal (the world runs the modal analysis), simulated in full, or cloth.
    pub method: DeformableMethod,
    /// Modes kept, and the stiffness-proportional damping (s).
    pub modes: usize,
    pub damping: Real,
    /// The key of the `deformable` table that defines it, where its errors point.
    pub key: String,
}

/// The mesh of a deformable model.
#[derive(Clone, Debug)]
pub enum ModelMesh {
    /// Tetrahedra, with the smooth surface of the shape they were cut from (in the mesh's
    /// frame), written as the body's surface; `None` for a tetrahedral mesh file or a box,
    /// whose boundary is its surface.
    Volume { tets: TetMesh, surface: Option<TriMesh> },
    /// A sheet's triangles (its mid-surface) and thickness (m).
    Sheet { triangles: TriMesh, thickness: Real },
}

impl ModelMesh {
    /// The tetrahedra of a volume (a modal model's mesh).
    pub fn tets(&self) -> Option<&TetMesh> {
        match self {
            ModelMesh::Volume { tets, .. } => Some(tets),
            ModelMesh::Sheet { .. } => None,
        }
    }

    /// Its size in words, for errors: "1200 tetrahedra", "800 triangles".
    pub fn size(&self) -> String {
        match self {
            ModelMesh::Volume { tets, .. } => format!("{} tetrahedra", tets.tets.len()),
            ModelMesh::Sheet { triangles, .. } => format!("{} triangles", triangles.triangles.len()),
        }
    }
}

/// The models of a scene's deformable bodies, and their indices by local shape, material
/// and spacing.
#[derive(Default)]
struct Models {
    setups: Vec<ModelSetup>,
    index: std::collections::HashMap<String, usize>,
}

/// Meshes (or takes from `models`, keyed by local shape, material and spacing) the models of
/// a deformable body's parts, and sets up its joints and actuation.
#[allow(clippy::too_many_arguments)]
fn reduced_setup(
    body: &crate::scene::schema::Body,
    bodies: &[crate::scene::schema::Body],
    d: &crate::scene::schema::Deformable,
    creature: &Creature,
    density: Real,
    grid: &Grid,
    body_key: &str,
    models: &mut Models,
    cx: &Context,
) -> Result<ReducedSetup, SceneError> {
    let key = format!("{body_key}.deformable");
    cx.check(body.kind == BodyKind::Dynamic, &key, || "only a dynamic body can be deformable".into())?;
    cx.positive(d.young, &format!("{key}.young"), "Young's modulus in Pa")?;
    cx.check((0.0..0.5).contains(&d.poisson), &format!("{key}.poisson"), || format!("expected a Poisson's ratio in [0, 0.5), got {}", d.poisson))?;
    let modes = d.modes.unwrap_or(DEFAULT_MODES);
    cx.check(modes <= 64, &format!("{key}.modes"), || format!("expected at most 64 modes, got {modes}"))?;
    cx.check(body.bone.is_empty() || d.method == DeformableMethod::Fem, &format!("{body_key}.bone"), || {
        "only a volume simulated in full (deformable.method = \"fem\") has bones".into()
    })?;
    cx.check(!d.incompressible || d.method != DeformableMethod::Modal, &format!("{key}.incompressible"), || {
        "only a volume simulated in full (method = \"fem\") or a closed cloth bag (method = \"cloth\") is made incompressible".into()
    })?;
    let bones = body.bone.iter().enumerate().map(|(n, bone)| bone_setup(bone, &format!("{body_key}.bone[{n}]"), &body.bone[..n], cx)).collect::<Result<_, _>>()?;
    let pins = match d.method {
        DeformableMethod::Modal => {
            cx.check(body.pin.is_empty(), &format!("{body_key}.pin"), || "only a body simulated in full (deformable.method = \"fem\" or \"cloth\") has pinned particles".into())?;
            Vec::new()
        }
        DeformableMethod::Fem | DeformableMethod::Cloth => {
            cx.check(d.modes.is_none(), &format!("{key}.modes"), || "only a modal body has modes: remove modes, or use method = \"modal\"".into())?;
            let sheet = matches!(body.shape, ShapeSpec::Sheet { .. } | ShapeSpec::Shell { .. });
            cx.check(sheet == (d.method == DeformableMethod::Cloth), &format!("{body_key}.shape"), || match d.method {
                DeformableMethod::Cloth => "cloth is a `sheet` or a `shell` shape".into(),
                _ => "a sheet or a shell is simulated as cloth: use deformable.method = \"cloth\"".into(),
            })?;
            cx.check(creature.parts.len() == 1, &format!("{body_key}.shape"), || "a jellyfish is a modal body with joints; a body simulated in full is one piece".into())?;
            cx.check(body.actuation.is_none(), &format!("{body_key}.actuation"), || "only a modal deformable body is actuated".into())?;
            body.pin.iter().enumerate().map(|(n, pin)| pin_setup(pin, &format!("{body_key}.pin[{n}]"), bodies, cx)).collect::<Result<_, _>>()?
        }
    };
    cx.check(d.damping.is_finite() && d.damping >= 0.0, &format!("{key}.damping"), || format!("expected a damping >= 0 s, got {}", d.damping))?;
    cx.within(d.young, 1.0, 1e12, &format!("{key}.young"), "Young's modulus in Pa")?;
    if let Some(s) = d.spacing {
        cx.positive(s, &format!("{key}.spacing"), "lattice spacing in m")?;
    }
    let name = body.name.clone().unwrap_or_default();
    // The parts' models are built from the shape placed at the origin, so that copies of one
    // shape placed anywhere have identical meshes and share one model.
    let (anchor, at_origin) = body.shape.split_placement();
    let canonical = resolve_creature(&at_origin, &format!("{body_key}.shape"), cx)?;
    let mut parts = Vec::new();
    for ((part, _, relative), (_, shape, _)) in creature.parts.iter().zip(&canonical.parts) {
        let density = density * relative;
        let centroid = shape.mass_properties().centroid;
        let local = shape.translated(&-centroid);
        let (lo, hi) = local.bounds();
        let cache_key = format!("{local:?}|{d:?}|{density}");
        let model = match models.index.get(&cache_key) {
            Some(&model) => model,
            None => {
                let mesh = match (&at_origin, &local) {
                    (ShapeSpec::Sheet { size, .. }, Shape::Shell { thickness, .. }) => {
                        let spacing = d.spacing.unwrap_or_else(|| grid.dx.min(0.25 * size[0].min(size[1])));
                        let triangles = 2.0 * (size[0] / spacing).ceil() * (size[1] / (spacing * 0.75f64.sqrt())).ceil();
                        cx.check(triangles <= MAX_SHEET_TRIANGLES, &format!("{key}.spacing"), || {
                            let finest = (2.0 * size[0] * size[1] / 0.75f64.sqrt() / MAX_SHEET_TRIANGLES).sqrt();
                            format!("a spacing of {spacing} m cuts the sheet into about {triangles:.3e} triangles, more than {MAX_SHEET_TRIANGLES:e}; use a spacing of at least {finest:.4} m")
                        })?;
                        let mut triangles = TriMesh::sheet(size[0], size[1], spacing);
                        triangles.vertices.iter_mut().for_each(|v| *v -= centroid);
                        ModelMesh::Sheet { triangles, thickness: *thickness }
                    }
                    (_, Shape::Shell { surface, thickness, .. }) => {
                        cx.check(d.spacing.is_none(), &format!("{key}.spacing"), || "cloth from a mesh file is simulated on the file's triangles: remove spacing".into())?;
                        ModelMesh::Sheet { triangles: (**surface).clone(), thickness: *thickness }
                    }
                    _ => {
                        let spacing = d.spacing.unwrap_or_else(|| grid.dx.min(0.25 * (hi - lo).min()));
                        let lattice = (hi - lo).iter().map(|e| (e / spacing).ceil() + 1.0).product::<Real>();
                        cx.check(lattice <= MAX_LATTICE, &format!("{key}.spacing"), || {
                            let finest = ((hi - lo).product() / MAX_LATTICE).cbrt();
                            format!("a spacing of {spacing} m cuts the shape from {lattice:.3e} lattice points, more than {MAX_LATTICE:e}; use a spacing of at least {finest:.4} m")
                        })?;
                        volume_mesh(&at_origin, &local, d, spacing, centroid, body_key, cx)?
                    }
                };
                let material = ElasticMaterial { young: d.young, poisson: d.poisson, density };
                models.setups.push(ModelSetup { mesh, material, method: d.method, modes: modes as usize, damping: d.damping, key: key.clone() });
                models.index.insert(cache_key, models.setups.len() - 1);
                models.setups.len() - 1
            }
        };
        let part_name = if creature.parts.len() == 1 { name.clone() } else { format!("{name}.{part}") };
        parts.push(PartSetup { name: part_name, model, position: vec3(anchor) + centroid });
    }
    let (actuators, profile) = match &body.actuation {
        None => (Vec::new(), Profile::Constant),
        Some(a) => {
            let key = format!("{body_key}.actuation");
            cx.positive(a.frequency, &format!("{key}.frequency"), "frequency in Hz")?;
            let profile = match a.profile {
                ActuationProfile::Constant => Profile::Constant,
                ActuationProfile::Sine => Profile::Sine { frequency: a.frequency },
            };
            let actuators: Vec<(usize, Vec3, Vec3)> = if creature.actuators.is_empty() {
                cx.check(a.force.is_none(), &format!("{key}.force"), || "only a starfish or a jellyfish has built-in actuation points; give points and forces".into())?;
                cx.check(!a.points.is_empty() && a.points.len() == a.forces.len(), &format!("{key}.points"), || {
                    format!("expected as many points as forces, at least one (got {} and {})", a.points.len(), a.forces.len())
                })?;
                for (i, (x, f)) in a.points.iter().zip(&a.forces).enumerate() {
                    cx.finite3(x, &format!("{key}.points[{i}]"))?;
                    cx.finite3(f, &format!("{key}.forces[{i}]"))?;
                    cx.check(creature.parts[0].1.signed_distance(&vec3(*x)) <= 0.0, &format!("{key}.points[{i}]"), || format!("the point {x:?} is outside the body"))?;
                }
                a.points.iter().zip(&a.forces).map(|(x, f)| (0, vec3(*x), vec3(*f))).collect()
            } else {
                cx.check(a.points.is_empty() && a.forces.is_empty(), &format!("{key}.points"), || {
                    "a starfish or a jellyfish is actuated at its built-in points: give force, not points and forces".into()
                })?;
                let force = a.force.ok_or_else(|| cx.error(&format!("{key}.force"), "expected the force at each built-in actuation point (N)"))?;
                cx.check(force.is_finite(), &format!("{key}.force"), || "expected a finite force in N".into())?;
                creature.actuators.iter().map(|&(p, x, dir)| (p, x, force * dir)).collect()
            };
            (actuators, profile)
        }
    };
    Ok(ReducedSetup {
        key: body_key.to_string(),
        method: d.method,
        pins,
        bones,
        incompressible: d.incompressible,
        parts,
        joints: creature.joints.clone(),
        actuators,
        profile,
        skin: creature.skin,
    })
}

/// The tetrahedra of a deformable volume of shape `local` (`at_origin` as written, placed at
/// the origin, `local` that shape moved by `-centroid`), cut at `spacing`.
fn volume_mesh(at_origin: &ShapeSpec, local: &Shape, d: &Deformable, spacing: Real, centroid: Vec3, body_key: &str, cx: &Context) -> Result<ModelMesh, SceneError> {
    let (lo, hi) = local.bounds();
    let (tets, surface) = match at_origin {
        // A tetrahedral mesh file is simulated as it is, placed like the shape.
        ShapeSpec::Mesh { path, scale, rotate, .. } if crate::geometry::tetmesh::is_tetrahedral_file(std::path::Path::new(path)) => {
            let file = cx.base_dir.join(path);
            let mut mesh =
                crate::geometry::tetmesh::read_tetrahedra(&file).map_err(|e| cx.error(&format!("{body_key}.shape.mesh.path"), format!("mesh `{}`: {e}", file.display())))?;
            let turn = rotation(rotate);
            mesh.vertices.iter_mut().for_each(|v| *v = turn * (*v * *scale) - centroid);
            (mesh, None)
        }
        // A box simulated in full is cut into cubes: exactly the box, with no thin elements at
        // its faces to shorten the explicit elastic step; an even number along each side keeps
        // the box's mirror symmetries.
        ShapeSpec::Box { .. } if d.method == DeformableMethod::Fem => {
            let cells = [0, 1, 2].map(|a| 2 * ((0.5 * (hi[a] - lo[a]) / spacing).round().max(1.0) as usize));
            (TetMesh::box_grid(&lo, &hi, cells), None)
        }
        _ => {
            let keep = if d.method == DeformableMethod::Fem { crate::geometry::tetmesh::BCC_KEEP_EXPLICIT } else { crate::geometry::tetmesh::BCC_KEEP };
            (TetMesh::bcc(|x| local.signed_distance(x), &lo, &hi, spacing, keep), Some(local.surface_mesh()))
        }
    };
    tets.check().map_err(|e| cx.error(&format!("{body_key}.deformable.spacing"), format!("the tetrahedral mesh of the shape at spacing {spacing} m: {e}")))?;
    Ok(ModelMesh::Volume { tets, surface })
}

/// A bone at `key`, after the body's bones `earlier`: its shape resolved, its parent found
/// among them (or the world), a joint's pivot given (and a hinge's axis; without one, a ball
/// joint), a drive only on a hinge, its gains sensible.
fn bone_setup(bone: &Bone, key: &str, earlier: &[Bone], cx: &Context) -> Result<BoneSetup, SceneError> {
    let shape = resolve_shape(&bone.shape, &format!("{key}.shape"), cx)?;
    cx.check(!bone.name.is_empty() && bone.name != "world", &format!("{key}.name"), || "expected a name other than \"world\"".into())?;
    cx.check(earlier.iter().all(|b| b.name != bone.name), &format!("{key}.name"), || format!("another bone of the body is named `{}`", bone.name))?;
    let Some(parent) = &bone.parent else {
        cx.check(bone.pivot.is_none() && bone.axis.is_none() && bone.drive.is_none(), &format!("{key}.parent"), || {
            "a bone without a parent is free: a pivot, an axis or a drive needs `parent` (a bone's name or \"world\")".into()
        })?;
        return Ok(BoneSetup { name: bone.name.clone(), shape, joint: Joint::Free });
    };
    let parent = match parent.as_str() {
        "world" => None,
        name => Some(
            earlier
                .iter()
                .position(|b| b.name == name)
                .ok_or_else(|| cx.error(&format!("{key}.parent"), format!("no bone named `{name}` is defined before this one (expected an earlier bone's name, or \"world\")")))?,
        ),
    };
    let pivot = bone.pivot.ok_or_else(|| cx.error(&format!("{key}.pivot"), "a bone with a parent needs its joint's pivot [x, y, z] (m)"))?;
    cx.finite3(&pivot, &format!("{key}.pivot"))?;
    let Some(axis) = bone.axis else {
        cx.check(bone.drive.is_none(), &format!("{key}.drive"), || "a drive turns a hinge: give the bone an `axis` (without one its joint is a ball joint)".into())?;
        return Ok(BoneSetup { name: bone.name.clone(), shape, joint: Joint::Ball { parent, pivot: vec3(pivot) } });
    };
    cx.finite3(&axis, &format!("{key}.axis"))?;
    cx.check(vec3(axis).norm() > 0.0, &format!("{key}.axis"), || "expected a non-zero axis".into())?;
    let drive = match &bone.drive {
        None => None,
        Some(d) => {
            let dkey = format!("{key}.drive");
            cx.within(d.stiffness, 0.0, 1e9, &format!("{dkey}.stiffness"), "a stiffness in N m/rad")?;
            cx.within(d.damping, 0.0, 1e9, &format!("{dkey}.damping"), "a damping in N m s/rad")?;
            cx.within(d.frequency, 0.0, 1e3, &format!("{dkey}.frequency"), "a frequency in Hz")?;
            for (value, field) in [(d.amplitude, "amplitude"), (d.phase, "phase"), (d.offset, "offset")] {
                cx.within(value, -3600.0, 3600.0, &format!("{dkey}.{field}"), "an angle in degrees")?;
            }
            Some(Drive {
                stiffness: d.stiffness,
                damping: d.damping,
                amplitude: d.amplitude.to_radians(),
                frequency: d.frequency,
                phase: d.phase.to_radians(),
                offset: d.offset.to_radians(),
            })
        }
    };
    Ok(BoneSetup { name: bone.name.clone(), shape, joint: Joint::Hinge { parent, pivot: vec3(pivot), axis: vec3(axis).normalize(), drive } })
}

/// A pin at `key`: its shape resolved (its path is checked with the body's, [`keyframes`]).
fn pin_setup(pin: &Pin, key: &str, bodies: &[crate::scene::schema::Body], cx: &Context) -> Result<PinSetup, SceneError> {
    let shape = resolve_shape(&pin.shape, &format!("{key}.shape"), cx)?;
    cx.finite3(&pin.angular_velocity, &format!("{key}.angular_velocity"))?;
    if let Some(k) = pin.stiffness {
        cx.within(k, 1e-6, 1e12, &format!("{key}.stiffness"), "a spring stiffness in N/m")?;
    }
    if let Some(b) = pin.damping {
        cx.check(pin.stiffness.is_some(), &format!("{key}.damping"), || "only a soft pin (with a stiffness) has a spring damping".into())?;
        cx.within(b, 0.0, 1e12, &format!("{key}.damping"), "a spring damping in N s/m")?;
    }
    let spring = pin.stiffness.map(|k| (k, pin.damping));
    let body = match &pin.body {
        None => None,
        Some(name) => {
            cx.check(pin.path.is_empty() && pin.angular_velocity == [0.0; 3], &format!("{key}.body"), || {
                "a pin bound to a body moves with it: remove the pin's path and angular_velocity".into()
            })?;
            let found = bodies.iter().position(|b| b.name.as_deref() == Some(name.as_str()));
            let index = found.ok_or_else(|| cx.error(&format!("{key}.body"), format!("no body is named `{name}`")))?;
            cx.check(bodies[index].kind == BodyKind::Kinematic, &format!("{key}.body"), || {
                format!("body `{name}` is not kinematic: a pin binds particles to a body whose motion is prescribed")
            })?;
            Some(index)
        }
    };
    Ok(PinSetup { shape, path: pin.path.iter().map(|k| (k[0], Vec3::new(k[1], k[2], k[3]))).collect(), angular_velocity: vec3(pin.angular_velocity), spring, body })
}

/// A viscoelastic liquid's or phase's `[.elastic]` table at `key`.
fn validate_elastic(elastic: &Elastic, key: &str, cx: &Context) -> Result<(), SceneError> {
    cx.within(elastic.modulus, 1e-6, 1e9, &format!("{key}.modulus"), "an elastic modulus in Pa (a soft jelly about 100)")?;
    if let Some(strain) = elastic.yield_strain {
        cx.within(strain, 0.0, 1e6, &format!("{key}.yield_strain"), "a strain (0.1 yields at a tenth)")?;
    }
    if let Some(rate) = elastic.plastic_rate {
        cx.within(rate, 1e-6, 1e9, &format!("{key}.plastic_rate"), "a rate in 1/s")?;
    }
    Ok(())
}

/// The phases and the interfaces between them (`[[liquid.phase]]`, `[[liquid.interface]]`).
fn validate_phases(liquid: &Liquid, cx: &Context) -> Result<(), SceneError> {
    if liquid.phase.is_empty() {
        return cx.check(liquid.interface.is_empty(), "liquid.interface", || "an interface is between two of the liquid's phases; give [[liquid.phase]] first".into());
    }
    cx.check(liquid.method == LiquidMethod::LevelSet, "liquid.phase", || "several liquid phases need the level-set liquid (method = \"level-set\")".into())?;
    cx.check(liquid.density == default_density(), "liquid.density", || "with [[liquid.phase]] each phase has its own density; remove liquid.density".into())?;
    cx.check(liquid.surface_tension == 0.0, "liquid.surface_tension", || {
        "with [[liquid.phase]] each phase has its own surface tension against the air (liquid.phase[n].surface_tension); remove liquid.surface_tension".into()
    })?;
    cx.check(liquid.viscosity == 0.0, "liquid.viscosity", || "with [[liquid.phase]] each phase has its own viscosity (liquid.phase[n].viscosity); remove liquid.viscosity".into())?;
    cx.check(liquid.elastic.is_none(), "liquid.elastic", || "with [[liquid.phase]] each phase has its own elasticity ([liquid.phase.elastic]); remove [liquid.elastic]".into())?;
    cx.check(liquid.phase.len() <= 32, "liquid.phase", || format!("expected at most 32 phases, got {}", liquid.phase.len()))?;
    for (n, phase) in liquid.phase.iter().enumerate() {
        let key = format!("liquid.phase[{n}]");
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        cx.check(!phase.name.is_empty() && phase.name.chars().all(allowed), &format!("{key}.name"), || {
            format!("expected a name of letters, digits, '_' and '-' (it names the phase's files), got \"{}\"", phase.name)
        })?;
        cx.check(!liquid.phase[..n].iter().any(|p| p.name == phase.name), &format!("{key}.name"), || format!("a phase named \"{}\" is given twice", phase.name))?;
        cx.check(phase.name != AIR, &format!("{key}.name"), || "\"air\" names the empty region above the liquid; give the phase another name".into())?;
        validate_phase_properties(Some(phase.density), Some(phase.viscosity), Some(phase.surface_tension), &key, cx)?;
        if let Some(elastic) = &phase.elastic {
            validate_elastic(elastic, &format!("{key}.elastic"), cx)?;
        }
        for (m, change) in phase.change.iter().enumerate() {
            let key = format!("{key}.change[{m}]");
            let after = if m == 0 { 0.0 } else { phase.change[m - 1].time };
            cx.check(change.time.is_finite() && (change.time > after || m == 0 && change.time >= 0.0), &format!("{key}.time"), || {
                format!("expected a time in s after the previous change's ({after} s), got {}", change.time)
            })?;
            let given = [change.density, change.viscosity, change.surface_tension].iter().any(Option::is_some) || change.elastic.is_some();
            cx.check(given, &key, || "expected what changes: density, viscosity, surface_tension or elastic".into())?;
            validate_phase_properties(change.density, change.viscosity, change.surface_tension, &key, cx)?;
            match &change.elastic {
                Some(ElasticChange::Off(on)) => {
                    cx.check(!on, &format!("{key}.elastic"), || "expected false (no elasticity from then on) or a table of the new elasticity".into())?
                }
                Some(ElasticChange::To(elastic)) => validate_elastic(elastic, &format!("{key}.elastic"), cx)?,
                None => {}
            }
        }
    }
    for (n, interface) in liquid.interface.iter().enumerate() {
        let key = format!("liquid.interface[{n}]");
        for name in &interface.between {
            phase_named(liquid, &Some(name.clone()), &format!("{key}.between"), cx)?;
        }
        let [a, b] = &interface.between;
        cx.check(a != b, &format!("{key}.between"), || format!("expected two different phases, got \"{a}\" twice"))?;
        let same = |i: &InterfaceSpec| (&i.between[0] == a && &i.between[1] == b) || (&i.between[0] == b && &i.between[1] == a);
        cx.check(!liquid.interface[..n].iter().any(same), &format!("{key}.between"), || format!("the interface between \"{a}\" and \"{b}\" is given twice"))?;
        cx.within(interface.surface_tension, 0.0, 1e3, &format!("{key}.surface_tension"), "a surface tension in N/m (oil on water about 0.02)")?;
    }
    Ok(())
}

/// A phase's density, viscosity and surface tension against the air at `key`, or those a
/// change gives it (each where given).
fn validate_phase_properties(density: Option<f64>, viscosity: Option<f64>, surface_tension: Option<f64>, key: &str, cx: &Context) -> Result<(), SceneError> {
    if let Some(density) = density {
        cx.within(density, 0.01, 1e5, &format!("{key}.density"), "a density in kg/m^3 (water 1000, air 1.2)")?;
    }
    if let Some(viscosity) = viscosity {
        cx.within(viscosity, 0.0, 1e6, &format!("{key}.viscosity"), "a dynamic viscosity in Pa s (water 0.001, honey about 10)")?;
    }
    if let Some(tension) = surface_tension {
        cx.within(tension, 0.0, 1e3, &format!("{key}.surface_tension"), "a surface tension against the air in N/m (water 0.072)")?;
    }
    Ok(())
}

/// What reactions call the empty region above the liquid.
const AIR: &str = "air";

/// The reactions (`[[liquid.reaction]]`) on a grid of cells `dx` wide.
fn validate_reactions(liquid: &Liquid, dx: f64, cx: &Context) -> Result<(), SceneError> {
    for (n, reaction) in liquid.reaction.iter().enumerate() {
        let key = format!("liquid.reaction[{n}]");
        cx.check(!liquid.phase.is_empty(), &key, || "a reaction is between the liquid's phases; give [[liquid.phase]] first".into())?;
        let named = reaction.between.iter().map(|name| (name, "between")).chain([(&reaction.product, "product")]);
        for (name, field) in named {
            let known = name == AIR || liquid.phase.iter().any(|p| &p.name == name);
            cx.check(known, &format!("{key}.{field}"), || format!("no phase is named \"{name}\"; expected one of {} or \"air\"", phase_list(liquid)))?;
        }
        let [a, b] = &reaction.between;
        cx.check(a != b, &format!("{key}.between"), || format!("expected two different reactants, got \"{a}\" twice"))?;
        let with_air = a == AIR || b == AIR;
        cx.check(reaction.product != AIR || with_air, &format!("{key}.product"), || {
            "the air is an empty region (a pocket of it under the liquid collapses); it can be the product only of a reaction with the air, \
             so make the product a light phase (a gas)"
                .into()
        })?;
        cx.within(reaction.rate, 1e-9, 100.0, &format!("{key}.rate"), "a rate in m/s (reactant volume per contact area and second)")?;
        if let Some(radius) = reaction.bubble_radius {
            cx.within(radius, dx, 1e3, &format!("{key}.bubble_radius"), "a radius in m of at least one cell (the level sets lose smaller spheres)")?;
        }
        cx.within(reaction.expansion, 1e-3, 1e3, &format!("{key}.expansion"), "a ratio of product to reactant volume")?;
        cx.check(reaction.product != AIR || reaction.expansion == 1.0, &format!("{key}.expansion"), || "the air as product has no volume to keep; remove expansion".into())?;
    }
    Ok(())
}

/// The region a reaction names: a phase's index, or the air's (after the phases').
pub(crate) fn region_index(liquid: &Liquid, name: &str) -> usize {
    liquid.phase.iter().position(|p| p.name == name).unwrap_or(liquid.phase.len())
}

/// The index of the phase a region or source names at `key`: required with `[[liquid.phase]]`
/// and one of theirs, refused without (0).
pub(super) fn phase_named(liquid: &Liquid, name: &Option<String>, key: &str, cx: &Context) -> Result<usize, SceneError> {
    match name {
        None => cx.check(liquid.phase.is_empty(), key, || format!("expected the phase it adds, one of {}", phase_list(liquid))).map(|_| 0),
        Some(name) => {
            cx.check(!liquid.phase.is_empty(), key, || "the liquid has one phase: give phases as [[liquid.phase]], or remove this key".into())?;
            liquid.phase.iter().position(|p| &p.name == name).ok_or_else(|| cx.error(key, format!("no phase is named \"{name}\"; the phases are {}", phase_list(liquid))))
        }
    }
}

/// The phases' names, quoted, for messages.
fn phase_list(liquid: &Liquid) -> String {
    liquid.phase.iter().map(|p| format!("\"{}\"", p.name)).collect::<Vec<_>>().join(", ")
}

pub(super) fn validate(scene: Scene, cx: &Context) -> Result<Resolved, SceneError> {
    let sim = &scene.simulation;
    cx.check(sim.frames >= 1, "simulation.frames", || "expected at least 1 frame, got 0".into())?;
    cx.within(sim.fps, 0.01, 10000.0, "simulation.fps", "frames per second")?;
    cx.within(sim.cfl, 0.01, 10.0, "simulation.cfl", "a CFL number (cells travelled per substep)")?;
    cx.finite3(&sim.gravity, "simulation.gravity")?;
    cx.check(vec3(sim.gravity).norm() <= 1000.0, "simulation.gravity", || format!("expected an acceleration of at most 1000 m/s^2, got {:?}", sim.gravity))?;
    cx.within(sim.max_speed, 1e-3, 1e5, "simulation.max_speed", "a speed in m/s")?;

    let grid = layout_grid(&scene.domain, cx)?;

    let liquid = &scene.liquid;
    cx.within(liquid.density, 1.0, 1e5, "liquid.density", "a density in kg/m^3")?;
    pressure_solve(liquid.pressure_tolerance, liquid.pressure_max_iterations, "liquid", cx)?;
    cx.within(liquid.viscosity, 0.0, 1e6, "liquid.viscosity", "a dynamic viscosity in Pa s (water 0.001, honey about 10)")?;
    cx.within(liquid.surface_tension, 0.0, 1e3, "liquid.surface_tension", "a surface tension in N/m (water 0.072)")?;
    cx.check(liquid.surface_tension == 0.0 || liquid.method == LiquidMethod::LevelSet, "liquid.surface_tension", || {
        "surface tension needs the level-set liquid (method = \"level-set\"); FLIP liquids have none".into()
    })?;
    if let Some(elastic) = &liquid.elastic {
        validate_elastic(elastic, "liquid.elastic", cx)?;
        cx.check(liquid.method == LiquidMethod::LevelSet, "liquid.elastic", || "a viscoelastic liquid needs the level-set liquid (method = \"level-set\")".into())?;
    }
    cx.check(liquid.reseed_every >= 1, "liquid.reseed_every", || "expected at least 1 substep".into())?;
    cx.check(liquid.particles_per_cell <= 512, "liquid.particles_per_cell", || format!("expected at most 512 particles per cell, got {}", liquid.particles_per_cell))?;

    let grid_key = if scene.domain.resolution.is_some() { "domain.resolution" } else { "domain.cell_size" };
    if liquid.method == LiquidMethod::LevelSet {
        let memory = estimate_memory_bytes(&grid, liquid.particles_per_cell as usize, !scene.bodies.is_empty());
        if let Some(available) = machine_memory_bytes() {
            cx.check(memory < available, grid_key, || {
                format!(
                    "{} x {} x {} cells need about {:.1} GiB, more than this machine's {:.1} GiB; \
                     use a coarser grid",
                    grid.dims[0],
                    grid.dims[1],
                    grid.dims[2],
                    memory as f64 / GIB,
                    available as f64 / GIB
                )
            })?;
        }
    }
    let flip = &liquid.flip;
    cx.check((0.0..=1.0).contains(&flip.flip_ratio), "liquid.flip.flip_ratio", || format!("expected a share of FLIP between 0 and 1, got {}", flip.flip_ratio))?;
    cx.check((1..=64).contains(&flip.particles_per_cell), "liquid.flip.particles_per_cell", || format!("expected 1 to 64 particles per cell, got {}", flip.particles_per_cell))?;
    let widest = *grid.dims.iter().max().expect("three axes");
    cx.check(flip.suction_depth as usize <= widest, "liquid.flip.suction_depth", || {
        format!("expected a depth of at most {widest} cells (the grid's longest side), got {}", flip.suction_depth)
    })?;
    for (n, e) in flip.explosion.iter().enumerate() {
        let key = format!("liquid.flip.explosion[{n}]");
        cx.finite3(&e.center, &format!("{key}.center"))?;
        cx.positive(e.radius, &format!("{key}.radius"), "radius in m")?;
        cx.within(e.speed, -sim.max_speed, sim.max_speed, &format!("{key}.speed"), "a speed in m/s (within simulation.max_speed)")?;
        cx.check(e.time.is_finite() && e.time >= 0.0, &format!("{key}.time"), || format!("expected a time >= 0 s, got {}", e.time))?;
    }

    validate_phases(liquid, cx)?;
    validate_reactions(liquid, grid.dx, cx)?;
    let mut regions = Vec::new();
    for (n, region) in liquid.region.iter().enumerate() {
        let key = format!("liquid.region[{n}].shape");
        let shape = resolve_shape(&region.shape, &key, cx)?;
        inside_domain(&shape, &grid, &key, "liquid region", cx)?;
        let phase = phase_named(liquid, &region.phase, &format!("liquid.region[{n}].phase"), cx)?;
        regions.push((region.operation, shape, phase));
    }
    let mut sources = Vec::new();
    for (n, source) in liquid.source.iter().enumerate() {
        let key = format!("liquid.source[{n}]");
        let shape = resolve_shape(&source.shape, &format!("{key}.shape"), cx)?;
        inside_domain(&shape, &grid, &format!("{key}.shape"), "liquid source", cx)?;
        speed(&source.velocity, sim.max_speed, &format!("{key}.velocity"), cx)?;
        emitting(source.start, source.end, &key, cx)?;
        phase_named(liquid, &source.phase, &format!("{key}.phase"), cx)?;
        sources.push(shape);
    }
    if liquid.method == LiquidMethod::Flip {
        let emitters = super::liquid_sources(liquid, &sources);
        let inside = |x: &Vec3, reach: Real| super::in_regions(&regions, x, reach);
        let (particles, memory) = crate::fluids::flip::estimate_memory(&grid, inside, &emitters, flip.particles_per_cell as usize, sim.frames as f64 / sim.fps);
        if let Some(available) = machine_memory_bytes() {
            cx.check(memory < available, grid_key, || {
                format!(
                    "{} x {} x {} cells and about {:.1} million particles need about {:.1} GiB, more than \
                     this machine's {:.1} GiB; use a coarser grid, fewer particles per cell or less liquid",
                    grid.dims[0],
                    grid.dims[1],
                    grid.dims[2],
                    particles as f64 * 1e-6,
                    memory as f64 / GIB,
                    available as f64 / GIB
                )
            })?;
        }
    }
    let mut obstacles = Vec::new();
    for (n, obstacle) in scene.obstacles.iter().enumerate() {
        let key = format!("obstacle[{n}].shape");
        let shape = resolve_shape(&obstacle.shape, &key, cx)?;
        inside_domain(&shape, &grid, &key, "obstacle", cx)?;
        let name = obstacle.name.clone().unwrap_or_else(|| format!("obstacle_{n}"));
        obstacles.push((name, shape));
    }

    let out = &scene.output;
    cx.directory(&out.directory, "output.directory")?;
    cx.check(out.every >= 1, "output.every", || "expected at least 1 (write every N frames)".into())?;
    for (n, f) in out.formats.iter().enumerate() {
        cx.check(!out.formats[..n].contains(f), &format!("output.formats[{n}]"), || format!("format {f:?} is listed twice"))?;
    }
    let cam = &out.camera;
    cx.check(cam.fov > 1.0 && cam.fov < 170.0, "output.camera.fov", || format!("expected a vertical field of view in degrees between 1 and 170, got {}", cam.fov))?;
    for (value, key) in [(cam.width, "output.camera.width"), (cam.height, "output.camera.height")] {
        cx.check((16..=8192).contains(&value), key, || format!("expected 16 to 8192 pixels, got {value}"))?;
    }
    if let Some(p) = &cam.position {
        cx.finite3(p, "output.camera.position")?;
    }
    if let Some(p) = &cam.look_at {
        cx.finite3(p, "output.camera.look_at")?;
    }
    if let (Some(p), Some(l)) = (&cam.position, &cam.look_at) {
        cx.check(p != l, "output.camera.look_at", || "the camera cannot look at its own position".into())?;
    }
    let mut bodies = Vec::new();
    // Reduced models by shape (about its centroid) and material: copies share one.
    let mut models = Models::default();
    for (n, body) in scene.bodies.iter().enumerate() {
        let key = format!("body[{n}]");
        // A creature is built from its size: it is bounded before it is built.
        if let ShapeSpec::Starfish { radius, .. } | ShapeSpec::Jellyfish { radius, .. } = &body.shape {
            let longest = (grid.max_corner() - grid.origin).max();
            cx.check(*radius <= longest, &format!("{key}.shape"), || format!("expected a creature no larger than the domain ({longest} m across), got a radius of {radius} m"))?;
        }
        let creature = resolve_creature(&body.shape, &format!("{key}.shape"), cx)?;
        for (_, part, _) in &creature.parts {
            body_in_domain(part, &grid, &format!("{key}.shape"), cx)?;
        }
        let shape = creature.parts[0].1.clone();
        // The volume a given mass is spread over, each part weighted by its relative density.
        let volume: Real = creature.parts.iter().map(|(_, part, relative)| relative * part.mass_properties().volume).sum();
        let density = match (body.density, body.mass) {
            (Some(d), None) => {
                cx.within(d, MIN_BODY_DENSITY, MAX_BODY_DENSITY, &format!("{key}.density"), "a density in kg/m^3")?;
                d
            }
            (None, Some(m)) => {
                cx.positive(m, &format!("{key}.mass"), "mass in kg")?;
                let d = m / volume;
                cx.check((MIN_BODY_DENSITY..=MAX_BODY_DENSITY).contains(&d), &format!("{key}.mass"), || {
                    format!("{m} kg in the body's {volume:.4e} m^3 is {d:.4e} kg/m^3; expected a density from {MIN_BODY_DENSITY} to {MAX_BODY_DENSITY}")
                })?;
                d
            }
            (Some(_), Some(_)) => return Err(cx.error(&format!("{key}.mass"), "give either density or mass, not both")),
            (None, None) if body.kind != BodyKind::Dynamic => 1.0,
            (None, None) => return Err(cx.error(&key, "a dynamic body needs a density (kg/m^3) or a mass (kg)")),
        };
        cx.finite3(&body.rotate, &format!("{key}.rotate"))?;
        speed(&body.velocity, sim.max_speed, &format!("{key}.velocity"), cx)?;
        cx.finite3(&body.angular_velocity, &format!("{key}.angular_velocity"))?;
        let (lo, hi) = shape.bounds();
        let spin = vec3(body.angular_velocity).norm() * 0.5 * (hi - lo).norm();
        cx.check(spin <= sim.max_speed, &format!("{key}.angular_velocity"), || {
            format!("the body's rim would move at {spin:.4} m/s, above simulation.max_speed = {} m/s", sim.max_speed)
        })?;
        cx.check((0.0..=1.0).contains(&body.restitution), &format!("{key}.restitution"), || format!("expected a restitution between 0 and 1, got {}", body.restitution))?;
        cx.within(body.friction, 0.0, 10.0, &format!("{key}.friction"), "a friction coefficient")?;
        cx.within(body.damping, 0.0, 1000.0, &format!("{key}.damping"), "a decay rate in 1/s")?;
        keyframes(&body.path, sim.max_speed, &format!("{key}.path"), cx)?;
        for (m, pin) in body.pin.iter().enumerate() {
            keyframes(&pin.path, sim.max_speed, &format!("{key}.pin[{m}].path"), cx)?;
        }
        let modal = body.deformable.as_ref().is_some_and(|d| d.method == DeformableMethod::Modal);
        cx.check(body.damping == 0.0 || (body.kind == BodyKind::Dynamic && !modal), &format!("{key}.damping"), || {
            "only a dynamic rigid body or one simulated in full is damped (a modal body's modes take deformable.damping)".into()
        })?;
        let reduced = match &body.deformable {
            None => {
                cx.check(creature.parts.len() == 1, &format!("{key}.shape"), || "a jellyfish must be deformable: give it deformable = { young = ... }".into())?;
                cx.check(body.pin.is_empty(), &format!("{key}.pin"), || "only a body simulated in full (deformable.method = \"fem\" or \"cloth\") has pinned particles".into())?;
                cx.check(body.actuation.is_none(), &format!("{key}.actuation"), || "only a deformable body can be actuated".into())?;
                None
            }
            Some(d) => Some(reduced_setup(body, &scene.bodies, d, &creature, density, &grid, &key, &mut models, cx)?),
        };
        if !body.path.is_empty() {
            let key = format!("{key}.path");
            cx.check(body.kind == BodyKind::Kinematic, &key, || "only a kinematic body follows a path".into())?;
        }
        bodies.push(BodySetup {
            name: body.name.clone().unwrap_or_else(|| format!("body_{n}")),
            kind: body.kind,
            shape,
            orientation: Quat::from_rotation_matrix(&rotation(&body.rotate)),
            density,
            velocity: vec3(body.velocity),
            angular_velocity: vec3(body.angular_velocity),
            path: body.path.iter().map(|k| (k[0], Vec3::new(k[1], k[2], k[3]))).collect(),
            restitution: body.restitution,
            friction: body.friction,
            damping: body.damping,
            reduced,
        });
    }
    for (n, body) in bodies.iter().enumerate() {
        if let Some(m) = bodies[..n].iter().position(|b| b.name == body.name) {
            return Err(cx.error(&format!("body[{n}].name"), format!("body[{m}] is already named `{}`; names must be unique (outputs are keyed by them)", body.name)));
        }
    }
    for (n, (name, _)) in obstacles.iter().enumerate() {
        if let Some(m) = obstacles[..n].iter().position(|(other, _)| other == name) {
            return Err(cx.error(&format!("obstacle[{n}].name"), format!("obstacle[{m}] is already named `{name}`; names must be unique")));
        }
    }
    check_body_overlaps(&bodies, &obstacles, &grid, &scene.domain, cx)?;
    let tracers = seed_tracers(&scene.tracers, &grid, &obstacles, &bodies, cx)?;
    let (smoke_regions, smoke_sources) = match &scene.smoke {
        Some(smoke) => validate_smoke(smoke, &scene, &grid, cx)?,
        None => Default::default(),
    };
    Ok(Resolved { scene, grid, regions, sources, smoke_regions, smoke_sources, obstacles, bodies, models: models.setups, tracers })
}

/// Checks the `pressure_tolerance` and `pressure_max_iterations` of `table`.
fn pressure_solve(tolerance: f64, iterations: u32, table: &str, cx: &Context) -> Result<(), SceneError> {
    cx.check(tolerance > 0.0 && tolerance < 1.0, &format!("{table}.pressure_tolerance"), || format!("expected a relative tolerance in (0, 1), got {tolerance}"))?;
    cx.check((1..=100_000).contains(&iterations), &format!("{table}.pressure_max_iterations"), || format!("expected 1 to 100000 iterations, got {iterations}"))
}

/// Checks a path's keyframes `[t, dx, dy, dz]` under `key`: finite, in increasing time, and no
/// faster between two than `max_speed` (a keyframe a billion metres off made the substeps so
/// short that the run never ended).
fn keyframes(path: &[[f64; 4]], max_speed: f64, key: &str, cx: &Context) -> Result<(), SceneError> {
    cx.check(path.iter().all(|k| k.iter().all(|v| v.is_finite())), key, || "expected keyframes [t, dx, dy, dz] of finite numbers".into())?;
    cx.check(path.windows(2).all(|w| w[1][0] > w[0][0]), key, || "expected keyframe times in increasing order".into())?;
    for (n, w) in path.windows(2).enumerate() {
        let speed = (vec3([w[1][1], w[1][2], w[1][3]]) - vec3([w[0][1], w[0][2], w[0][3]])).norm() / (w[1][0] - w[0][0]);
        cx.check(speed <= max_speed, key, || format!("keyframes {n} and {} move at {speed:.4} m/s, above simulation.max_speed = {max_speed} m/s", n + 1))?;
    }
    Ok(())
}

/// Checks an emitter's `start` and `end` times under `key`.
fn emitting(start: f64, end: Option<f64>, key: &str, cx: &Context) -> Result<(), SceneError> {
    cx.check(start.is_finite() && start >= 0.0, &format!("{key}.start"), || format!("expected a start time >= 0 s, got {start}"))?;
    if let Some(end) = end {
        cx.check(end.is_finite() && end > start, &format!("{key}.end"), || format!("expected an end time after the start ({start} s), got {end}"))?;
    }
    Ok(())
}

/// Checks `[smoke]` (the scene then has no liquid) and resolves the shapes of its regions and
/// sources.
fn validate_smoke(smoke: &Smoke, scene: &Scene, grid: &Grid, cx: &Context) -> Result<(Vec<Shape>, Vec<Shape>), SceneError> {
    let liquid = &scene.liquid;
    let no_liquid = || "a smoke scene's fluid is the air: it has no liquid (remove [[liquid.region]], [[liquid.source]] and liquid.method)".to_string();
    cx.check(liquid.region.is_empty(), "liquid.region", no_liquid)?;
    cx.check(liquid.source.is_empty(), "liquid.source", no_liquid)?;
    cx.check(liquid.method == LiquidMethod::LevelSet, "liquid.method", no_liquid)?;
    cx.within(smoke.air_density, 0.01, 1e4, "smoke.air_density", "a density in kg/m^3 (air 1.2)")?;
    cx.within(smoke.ambient_temperature, 1.0, 1e4, "smoke.ambient_temperature", "a temperature in K (a room 293)")?;
    cx.within(smoke.weight, -1e3, 1e3, "smoke.weight", "an acceleration in m/s^2 per unit of smoke density")?;
    cx.within(smoke.vorticity, 0.0, 10.0, "smoke.vorticity", "a vorticity confinement strength (0 is none, 0.2 the default)")?;
    pressure_solve(smoke.pressure_tolerance, smoke.pressure_max_iterations, "smoke", cx)?;
    // A region's or a source's shape, inside the domain, and what it holds.
    let placed = |spec: &ShapeSpec, density: f64, temperature: f64, key: &str, what: &str| -> Result<Shape, SceneError> {
        let shape = resolve_shape(spec, &format!("{key}.shape"), cx)?;
        inside_domain(&shape, grid, &format!("{key}.shape"), what, cx)?;
        cx.within(density, 0.0, 1e3, &format!("{key}.density"), "a smoke density (dimensionless, 0 to 1000)")?;
        cx.within(temperature, -smoke.ambient_temperature, 1e4, &format!("{key}.temperature"), "kelvin above the ambient temperature (not below absolute zero)")?;
        Ok(shape)
    };
    let mut regions = Vec::new();
    for (n, region) in smoke.region.iter().enumerate() {
        regions.push(placed(&region.shape, region.density, region.temperature, &format!("smoke.region[{n}]"), "smoke region")?);
    }
    let mut sources = Vec::new();
    for (n, source) in smoke.source.iter().enumerate() {
        let key = format!("smoke.source[{n}]");
        let shape = placed(&source.shape, source.density, source.temperature, &key, "smoke source")?;
        speed(&source.velocity, scene.simulation.max_speed, &format!("{key}.velocity"), cx)?;
        emitting(source.start, source.end, &key, cx)?;
        sources.push(shape);
    }
    Ok((regions, sources))
}

/// The tracers' starting points: per `[[tracers]]` table, the points of a lattice of its
/// spacing (aligned with the shape's bounds, offset by half a spacing) inside its shape and
/// the domain and outside every obstacle and body.
fn seed_tracers(tables: &[Tracers], grid: &Grid, obstacles: &[(String, Shape)], bodies: &[BodySetup], cx: &Context) -> Result<Vec<Vec3>, SceneError> {
    let centres: Vec<Vec3> = bodies.iter().map(|b| b.shape.mass_properties().centroid).collect();
    let in_solid = |x: &Vec3| obstacles.iter().any(|(_, shape)| shape.signed_distance(x) < 0.0) || bodies.iter().zip(&centres).any(|(b, c)| b.placed_distance(c, x) < 0.0);
    let mut points = Vec::new();
    for (n, table) in tables.iter().enumerate() {
        let key = format!("tracers[{n}]");
        let shape = resolve_shape(&table.shape, &format!("{key}.shape"), cx)?;
        inside_domain(&shape, grid, &format!("{key}.shape"), "tracer region", cx)?;
        let spacing = table.spacing.unwrap_or(0.5 * grid.dx);
        cx.positive(spacing, &format!("{key}.spacing"), "spacing in m")?;
        let (lo, hi) = shape.bounds();
        let (lo, hi) = (lo.sup(&grid.origin), hi.inf(&grid.max_corner()));
        let counts = (hi - lo).map(|e| (e / spacing).floor().max(0.0));
        cx.check(counts.product() <= MAX_TRACERS, &format!("{key}.spacing"), || {
            format!("a spacing of {spacing} m seeds up to {:.3e} tracers, more than {MAX_TRACERS:e}; use a larger spacing", counts.product())
        })?;
        let [nx, ny, nz] = [0, 1, 2].map(|a| counts[a] as usize);
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let x = lo + Vec3::new(i as Real + 0.5, j as Real + 0.5, k as Real + 0.5) * spacing;
                    if shape.signed_distance(&x) < 0.0 && !in_solid(&x) {
                        points.push(x);
                    }
                }
            }
        }
    }
    Ok(points)
}

const GIB: f64 = (1u64 << 30) as f64;

fn layout_grid(domain: &Domain, cx: &Context) -> Result<Grid, SceneError> {
    cx.finite3(&domain.min, "domain.min")?;
    cx.finite3(&domain.max, "domain.max")?;
    let (min, max) = (vec3(domain.min), vec3(domain.max));
    let size = max - min;
    for (a, axis) in ["x", "y", "z"].iter().enumerate() {
        cx.check(size[a] > 0.0, "domain.max", || format!("expected domain.max.{axis} ({}) to be greater than domain.min.{axis} ({})", max[a], min[a]))?;
    }
    let dx = match (domain.resolution, domain.cell_size) {
        (Some(_), Some(_)) => {
            return Err(cx.error("domain", "give either `resolution` or `cell_size`, not both"));
        }
        (None, None) => {
            return Err(cx.error("domain", "missing the grid size: give `resolution` (cells along the longest side) or `cell_size` (m)"));
        }
        (Some(n), None) => {
            cx.check(n >= 2, "domain.resolution", || format!("expected at least 2 cells, got {n}"))?;
            size.max() / n as Real
        }
        (None, Some(h)) => {
            cx.positive(h, "domain.cell_size", "cell size in m")?;
            h
        }
    };
    let key = if domain.resolution.is_some() { "domain.resolution" } else { "domain.cell_size" };
    let mut dims = [0usize; 3];
    for (a, axis) in ["x", "y", "z"].iter().enumerate() {
        let n = (size[a] / dx).round();
        cx.check(n >= 2.0, key, || format!("the domain is only {n} cell(s) along {axis}; it needs at least 2 (use a finer grid)"))?;
        cx.check(n <= 1e5, key, || format!("{n} cells along {axis} is beyond any machine's memory"))?;
        dims[a] = n as usize;
    }
    Ok(Grid { dims, dx, origin: min })
}

/// A velocity at `key`: finite, no faster than `max_speed` (m/s).
fn speed(v: &[f64; 3], max_speed: f64, key: &str, cx: &Context) -> Result<(), SceneError> {
    cx.finite3(v, key)?;
    cx.check(vec3(*v).norm() <= max_speed, key, || format!("expected a speed of at most simulation.max_speed = {max_speed} m/s, got {:.4} m/s", vec3(*v).norm()))
}

/// Densities a body may have (kg/m^3): from a light foam to beyond the densest metal.
const MIN_BODY_DENSITY: f64 = 0.1;
const MAX_BODY_DENSITY: f64 = 1e5;
/// The most lattice points a deformable part's tetrahedral mesh may be cut from.
const MAX_LATTICE: f64 = 1e6;
/// The most triangles a cloth sheet is cut into.
const MAX_SHEET_TRIANGLES: f64 = 2e5;

/// A body's shape: it must overlap the domain and reach no farther out than the domain's own
/// size (its surface is sampled at the grid's spacing).
fn body_in_domain(shape: &Shape, grid: &Grid, key: &str, cx: &Context) -> Result<(), SceneError> {
    inside_domain(shape, grid, key, "body", cx)?;
    let (lo, hi) = shape.bounds();
    let (dlo, dhi) = (grid.origin, grid.max_corner());
    let size = dhi - dlo;
    let near = (0..3).all(|a| lo[a] >= dlo[a] - size[a] && hi[a] <= dhi[a] + size[a]);
    cx.check(near, key, || format!("the body (bounds {:?} to {:?}) reaches far outside the domain ({:?} to {:?})", lo.as_slice(), hi.as_slice(), dlo.as_slice(), dhi.as_slice()))
}

fn inside_domain(shape: &Shape, grid: &Grid, key: &str, what: &str, cx: &Context) -> Result<(), SceneError> {
    let (lo, hi) = shape.bounds();
    let (dlo, dhi) = (grid.origin, grid.max_corner());
    let overlaps = (0..3).all(|a| lo[a] < dhi[a] && hi[a] > dlo[a]);
    cx.check(overlaps, key, || {
        format!("the {what} (bounds {:?} to {:?}) lies entirely outside the domain ({:?} to {:?})", lo.as_slice(), hi.as_slice(), dlo.as_slice(), dhi.as_slice())
    })
}

/// A body's shape as a creature: the built-in starfish and jellyfish with their parts, joints
/// and actuation points, any other shape as one part.
fn resolve_creature(spec: &ShapeSpec, key: &str, cx: &Context) -> Result<Creature, SceneError> {
    match spec {
        ShapeSpec::Jellyfish { center, radius } => {
            cx.finite3(center, &format!("{key}.jellyfish.center"))?;
            cx.positive(*radius, &format!("{key}.jellyfish.radius"), "bell radius in m")?;
            Ok(creatures::jellyfish(&vec3(*center), *radius))
        }
        ShapeSpec::Starfish { center, radius, thickness } => {
            cx.finite3(center, &format!("{key}.starfish.center"))?;
            cx.positive(*radius, &format!("{key}.starfish.radius"), "arm length in m")?;
            let thickness = thickness.unwrap_or(0.2 * radius);
            cx.check(thickness.is_finite() && thickness > 0.0 && thickness < *radius, &format!("{key}.starfish.thickness"), || {
                format!("expected a thickness in (0, radius), got {thickness}")
            })?;
            Ok(creatures::starfish(&vec3(*center), *radius, thickness))
        }
        _ => Ok(Creature { parts: vec![(String::new(), resolve_shape(spec, key, cx)?, 1.0)], joints: Vec::new(), actuators: Vec::new(), skin: 0.0 }),
    }
}

fn resolve_shape(spec: &ShapeSpec, key: &str, cx: &Context) -> Result<Shape, SceneError> {
    match spec {
        ShapeSpec::Starfish { .. } => Ok(resolve_creature(spec, key, cx)?.parts.remove(0).1),
        ShapeSpec::Jellyfish { .. } => Err(cx.error(&format!("{key}.jellyfish"), "a jellyfish can only be a deformable body")),
        ShapeSpec::Box { min, max } => {
            let (min, max) = corners(min, max, &format!("{key}.box"), cx)?;
            Ok(Shape::Box { min, max })
        }
        ShapeSpec::Sphere { center, radius } => {
            cx.finite3(center, &format!("{key}.sphere.center"))?;
            cx.positive(*radius, &format!("{key}.sphere.radius"), "radius in m")?;
            Ok(Shape::Sphere { center: vec3(*center), radius: *radius })
        }
        ShapeSpec::Cylinder { from, to, radius } => {
            let (from, to) = segment(from, to, *radius, &format!("{key}.cylinder"), cx)?;
            Ok(Shape::Cylinder { from, to, radius: *radius })
        }
        ShapeSpec::Capsule { from, to, radius } => {
            let (from, to) = segment(from, to, *radius, &format!("{key}.capsule"), cx)?;
            Ok(Shape::Capsule { from, to, radius: *radius })
        }
        ShapeSpec::Torus { center, axis, major, minor } => {
            cx.finite3(center, &format!("{key}.torus.center"))?;
            cx.finite3(axis, &format!("{key}.torus.axis"))?;
            let axis = vec3(*axis).try_normalize(1e-12).ok_or_else(|| cx.error(&format!("{key}.torus.axis"), "expected a non-zero axis"))?;
            cx.positive(*minor, &format!("{key}.torus.minor"), "tube radius in m")?;
            cx.check(major.is_finite() && *major > *minor, &format!("{key}.torus.major"), || {
                format!("expected a ring radius larger than the tube radius ({minor} m), got {major}")
            })?;
            Ok(Shape::Torus { center: vec3(*center), axis, major: *major, minor: *minor })
        }
        ShapeSpec::OpenBox { min, max, wall } => {
            let (lo, hi) = corners(min, max, &format!("{key}.open-box"), cx)?;
            let thin_enough = 2.0 * wall < (max[0] - min[0]).min(max[2] - min[2]) && *wall < max[1] - min[1];
            cx.check(wall.is_finite() && *wall > 0.0 && thin_enough, &format!("{key}.open-box.wall"), || {
                format!("expected a wall thickness > 0 that leaves a hollow inside the box, got {wall}")
            })?;
            Ok(Shape::OpenBox { min: lo, max: hi, wall: *wall })
        }
        ShapeSpec::Mesh { path, scale, rotate, translate } => {
            let placement = Placement { key: format!("{key}.mesh"), path, scale: *scale, rotate, translate };
            placement.build(cx, mesh_io::read_closed_mesh, Shape::mesh)
        }
        ShapeSpec::Sheet { center, size, thickness } => {
            cx.finite3(center, &format!("{key}.sheet.center"))?;
            cx.check(size.iter().all(|s| s.is_finite() && *s > 0.0), &format!("{key}.sheet.size"), || format!("expected two sides > 0 in m, got {size:?}"))?;
            cx.check(thickness.is_finite() && *thickness > 0.0 && *thickness < size[0].min(size[1]), &format!("{key}.sheet.thickness"), || {
                format!("expected a thickness > 0 and thinner than the sheet is wide, got {thickness}")
            })?;
            let mut mid = TriMesh::sheet(size[0], size[1], size[0].min(size[1]));
            mid.vertices.iter_mut().for_each(|v| *v += vec3(*center));
            Shape::shell(mid, *thickness).map_err(|e| cx.error(&format!("{key}.sheet"), e))
        }
        ShapeSpec::Shell { path, thickness, scale, rotate, translate } => {
            cx.positive(*thickness, &format!("{key}.shell.thickness"), "wall thickness in m")?;
            let placement = Placement { key: format!("{key}.shell"), path, scale: *scale, rotate, translate };
            placement.build(cx, mesh_io::read_mesh, |mesh| Shape::shell(mesh, *thickness))
        }
    }
}

/// Refuses bodies that start inside each other, inside an obstacle or through a closed domain
/// side by more than half a cell (surface samples of each tested against the others' signed
/// distance): contact would have to pull them apart violently. Only the samples inside the
/// other's bounds are tested, so a scene of many bodies is checked in about the time of its
/// neighbouring pairs.
fn check_body_overlaps(bodies: &[BodySetup], obstacles: &[(String, Shape)], grid: &Grid, domain: &Domain, cx: &Context) -> Result<(), SceneError> {
    let tolerance = 0.5 * grid.dx;
    let (lo, hi) = (grid.origin, grid.origin + Vec3::from_fn(|a, _| grid.dims[a] as Real * grid.dx));
    let walls = domain.boundary.sides();
    // Bodies are turned about their shapes' centroids.
    let centres: Vec<Vec3> = bodies.iter().map(|b| b.shape.mass_properties().centroid).collect();
    // Each body's surface samples where it starts, and the centroid where it is inside the body
    // (not in a cup's hollow), which finds a body inside an equal one; their bounds grown by a
    // sample spacing hold the whole body.
    let samples: Vec<Vec<Vec3>> = bodies
        .iter()
        .zip(&centres)
        .map(|(body, c)| {
            let solid_centre = (body.shape.signed_distance(c) < 0.0).then_some(c);
            body.shape.surface_samples(grid.dx).iter().chain(solid_centre).map(|x| c + body.orientation * (x - c)).collect()
        })
        .collect();
    let grown = |(lo, hi): (Vec3, Vec3), by: Real| (lo.add_scalar(-by), hi.add_scalar(by));
    let bounds: Vec<(Vec3, Vec3)> = samples.iter().map(|s| grown(crate::geometry::bounds(s.iter().copied()).expect("a shape has surface samples"), grid.dx)).collect();
    let within = |x: &Vec3, (lo, hi): &(Vec3, Vec3)| (0..3).all(|a| x[a] >= lo[a] && x[a] <= hi[a]);
    for (n, body) in bodies.iter().enumerate() {
        let key = format!("body[{n}].shape");
        for (m, other) in bodies.iter().enumerate().filter(|(m, _)| *m != n) {
            if samples[n].iter().any(|x| within(x, &bounds[m]) && other.placed_distance(&centres[m], x) < -tolerance) {
                return Err(cx.error(&key, format!("body `{}` starts overlapping body `{}`; move them apart", body.name, other.name)));
            }
        }
        for (name, obstacle) in obstacles {
            let near = grown(obstacle.bounds(), tolerance);
            if samples[n].iter().any(|x| within(x, &near) && obstacle.signed_distance(x) < -tolerance) {
                return Err(cx.error(&key, format!("body `{}` starts inside obstacle `{name}`; move it out", body.name)));
            }
        }
        for a in 0..3 {
            let closed = |side: usize| walls[a][side] == Boundary::Wall;
            let through = samples[n].iter().any(|x| (closed(0) && x[a] < lo[a] - tolerance) || (closed(1) && x[a] > hi[a] + tolerance));
            if through {
                return Err(cx.error(&key, format!("body `{}` starts through a closed side of the domain; move it inside", body.name)));
            }
        }
    }
    Ok(())
}

/// The corners `min`, `max` of a box-like shape at `key`: finite, `max` above `min` on every
/// axis.
fn corners(min: &[f64; 3], max: &[f64; 3], key: &str, cx: &Context) -> Result<(Vec3, Vec3), SceneError> {
    cx.finite3(min, &format!("{key}.min"))?;
    cx.finite3(max, &format!("{key}.max"))?;
    cx.check((0..3).all(|a| max[a] > min[a]), &format!("{key}.max"), || format!("expected every component of max {max:?} to exceed min {min:?}"))?;
    Ok((vec3(*min), vec3(*max)))
}

/// The ends of a shape around a segment (cylinder, capsule) at `key`: finite, distinct, with a
/// positive radius.
fn segment(from: &[f64; 3], to: &[f64; 3], radius: f64, key: &str, cx: &Context) -> Result<(Vec3, Vec3), SceneError> {
    cx.finite3(from, &format!("{key}.from"))?;
    cx.finite3(to, &format!("{key}.to"))?;
    cx.check(from != to, &format!("{key}.to"), || "the two ends coincide".into())?;
    cx.positive(radius, &format!("{key}.radius"), "radius in m")?;
    Ok((vec3(*from), vec3(*to)))
}

/// A mesh file and how to place it (`shape.mesh`, `shape.shell`).
struct Placement<'a> {
    /// The shape's key, e.g. `body[0].shape.mesh`.
    key: String,
    path: &'a str,
    scale: f64,
    rotate: &'a [f64; 3],
    translate: &'a [f64; 3],
}

impl Placement<'_> {
    /// Reads the mesh with `read` (path relative to the scene), places it and makes it a shape
    /// with `make`; errors name the key and the file.
    fn build(&self, cx: &Context, read: fn(&std::path::Path) -> Result<TriMesh, String>, make: impl FnOnce(TriMesh) -> Result<Shape, String>) -> Result<Shape, SceneError> {
        let key = &self.key;
        cx.positive(self.scale, &format!("{key}.scale"), "scale factor")?;
        cx.finite3(self.rotate, &format!("{key}.rotate"))?;
        cx.finite3(self.translate, &format!("{key}.translate"))?;
        let file = cx.base_dir.join(self.path);
        let fail = |e: String| cx.error(&format!("{key}.path"), format!("mesh `{}`: {e}", file.display()));
        let mut mesh = read(&file).map_err(fail)?;
        place(&mut mesh, self.scale, self.rotate, self.translate);
        make(mesh).map_err(fail)
    }
}

/// Scales, rotates (degrees about x, then y, then z) and translates a mesh.
fn place(mesh: &mut TriMesh, scale: f64, rotate: &[f64; 3], translate: &[f64; 3]) {
    let rotation = rotation(rotate);
    for v in &mut mesh.vertices {
        *v = rotation * (*v * scale) + vec3(*translate);
    }
}

/// The rotation by `degrees` about x, then y, then z.
fn rotation(degrees: &[f64; 3]) -> Rotation3<Real> {
    let r = degrees.map(f64::to_radians);
    Rotation3::from_axis_angle(&Vec3::z_axis(), r[2]) * Rotation3::from_axis_angle(&Vec3::y_axis(), r[1]) * Rotation3::from_axis_angle(&Vec3::x_axis(), r[0])
}

/// Total physical memory, from `/proc/meminfo` (None where unavailable).
fn machine_memory_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
