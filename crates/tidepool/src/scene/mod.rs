//! Scene files: the serde schema ([`schema`]), parsing with line:column errors, and validation
//! into a [`LoadedScene`] whose shapes are resolved (meshes read) and whose grid is laid out.
//! Nothing here simulates.

pub mod schema;
pub mod surface;
mod validate;

pub use schema::*;
pub(crate) use validate::region_index;
pub use validate::{BodySetup, ModelMesh, ModelSetup, PartSetup, PinSetup, ReducedSetup};

use crate::error::SceneError;
use crate::geometry::Shape;
use crate::grid::Grid;
use crate::math::Vec3;
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};

/// The built-in default scene: a column of water breaking over a block in a closed tank.
pub const DEFAULT_SCENE: &str = include_str!("../../../../scenes/default.toml");

/// Label used in errors about the built-in scene.
pub const DEFAULT_SCENE_LABEL: &str = "<built-in default scene>";

/// A parsed and validated scene with everything resolved that the simulation needs.
#[derive(Clone, Debug)]
pub struct LoadedScene {
    /// The scene as written.
    pub scene: Scene,
    /// The scene file's text (copied into the output directory).
    pub text: String,
    /// Short name (file stem, or `default`), used for the default output directory.
    pub name: String,
    /// Where the scene came from (`None` for the built-in scene).
    pub path: Option<PathBuf>,
    /// The simulation grid laid out from `[domain]`.
    pub grid: Grid,
    /// Initial liquid regions with their operations and the index of the phase each adds
    /// (0 for one liquid), in order.
    pub regions: Vec<(Operation, Shape, usize)>,
    /// Source shapes, in the order of `liquid.source`.
    pub sources: Vec<Shape>,
    /// The shapes of `smoke.region`, in order.
    pub smoke_regions: Vec<Shape>,
    /// The shapes of `smoke.source`, in order.
    pub smoke_sources: Vec<Shape>,
    /// Obstacles with their names, in order.
    pub obstacles: Vec<(String, Shape)>,
    /// Bodies.
    pub bodies: Vec<BodySetup>,
    /// The models of the deformable bodies' parts.
    pub models: Vec<ModelSetup>,
    /// The tracers' starting points.
    pub tracers: Vec<Vec3>,
    /// The scene file as errors name it.
    pub label: String,
}

impl LoadedScene {
    /// An error at the value of the dotted `key` (found when the scene is built into a world).
    pub fn error(&self, key: &str, message: impl Into<String>) -> SceneError {
        located(&self.label, &self.text, key, &message.into())
    }

    /// Whether `x` is within `reach` (m) of the initial liquid: inside the union of the
    /// `Add` regions less the `Subtract` ones, applied in order.
    pub fn in_initial_liquid(&self, x: &crate::math::Vec3, reach: crate::math::Real) -> bool {
        in_regions(&self.regions, x, reach)
    }

    /// The scene's liquid sources.
    pub fn liquid_sources(&self) -> Vec<crate::fluids::eulerian::LiquidSource> {
        liquid_sources(&self.scene.liquid, &self.sources)
    }
}

/// Whether `x` is within `reach` of the union of the `Add` regions less the `Subtract` ones,
/// applied in order.
fn in_regions(regions: &[(Operation, Shape, usize)], x: &crate::math::Vec3, reach: crate::math::Real) -> bool {
    regions.iter().fold(false, |inside, (op, shape, _)| match op {
        Operation::Add => inside || shape.signed_distance(x) < reach,
        Operation::Subtract => inside && shape.signed_distance(x) >= -reach,
    })
}

/// Liquid sources from their specs and resolved shapes.
fn liquid_sources(liquid: &schema::Liquid, shapes: &[Shape]) -> Vec<crate::fluids::eulerian::LiquidSource> {
    liquid
        .source
        .iter()
        .zip(shapes)
        .map(|(s, shape)| crate::fluids::eulerian::LiquidSource {
            shape: shape.clone(),
            velocity: crate::math::vec3(s.velocity),
            start: s.start,
            end: s.end.unwrap_or(crate::math::Real::INFINITY),
            phase: s.phase.as_ref().and_then(|name| liquid.phase.iter().position(|p| &p.name == name)).unwrap_or(0),
        })
        .collect()
}

/// Reads, parses and validates a scene file. Mesh paths are relative to the scene's directory.
pub fn load(path: &Path) -> Result<LoadedScene, SceneError> {
    let file = SceneFile::read(path)?;
    parse(&file.text, &file.label, &file.name, Some(path.to_path_buf()), &file.base_dir)
}

/// A scene of either kind.
#[derive(Clone, Debug)]
pub enum AnyScene {
    /// Liquid in a box, with obstacles and bodies.
    Liquid(Box<LoadedScene>),
    /// Water as a lattice gas on an elastic sheet (a file with a `[surface]` table).
    Surface(Box<surface::LoadedSurfaceScene>),
}

impl AnyScene {
    /// The scene file's text (copied into the output directory).
    pub fn text(&self) -> &str {
        match self {
            AnyScene::Liquid(l) => &l.text,
            AnyScene::Surface(s) => &s.text,
        }
    }

    /// Short name (file stem, or `default`), used for the default output directory.
    pub fn name(&self) -> &str {
        match self {
            AnyScene::Liquid(l) => &l.name,
            AnyScene::Surface(s) => &s.name,
        }
    }

    /// Where the scene came from (`None` for the built-in scene).
    pub fn path(&self) -> Option<&Path> {
        match self {
            AnyScene::Liquid(l) => l.path.as_deref(),
            AnyScene::Surface(s) => s.path.as_deref(),
        }
    }

    /// The scene's `output.directory`, if set.
    pub fn output_directory(&self) -> Option<&str> {
        match self {
            AnyScene::Liquid(l) => l.scene.output.directory.as_deref(),
            AnyScene::Surface(s) => s.scene.output.directory.as_deref(),
        }
    }

    /// Frames to simulate after frame 0.
    pub fn frames(&self) -> u32 {
        match self {
            AnyScene::Liquid(l) => l.scene.simulation.frames,
            AnyScene::Surface(s) => s.scene.simulation.frames,
        }
    }

    /// Simulates `frames` frames instead of the scene's own count.
    pub fn set_frames(&mut self, frames: u32) {
        match self {
            AnyScene::Liquid(l) => l.scene.simulation.frames = frames,
            AnyScene::Surface(s) => s.scene.simulation.frames = frames,
        }
    }

    /// Whether a run writes `preview_NNNN.png` (a surface-flow run always does).
    pub fn writes_previews(&self) -> bool {
        match self {
            AnyScene::Liquid(l) => l.scene.output.formats.contains(&Format::Png),
            AnyScene::Surface(_) => true,
        }
    }

    /// Write a checkpoint every this many frames (0: never).
    pub fn checkpoint_every(&self) -> u32 {
        match self {
            AnyScene::Liquid(l) => l.scene.output.checkpoint_every,
            AnyScene::Surface(s) => s.scene.output.checkpoint_every,
        }
    }

    /// A fingerprint of everything in the scene that affects the simulated state (the output
    /// settings and the frame count may change between a run and its resumption).
    pub fn fingerprint(&self) -> u64 {
        let text = match self {
            AnyScene::Liquid(l) => {
                let mut physics = l.scene.clone();
                physics.output = Default::default();
                physics.simulation.frames = 0;
                serde_json::to_string(&physics)
            }
            AnyScene::Surface(s) => {
                let mut physics = s.scene.clone();
                physics.output = Default::default();
                physics.simulation.frames = 0;
                serde_json::to_string(&physics)
            }
        };
        let text = text.expect("scene serialises");
        text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
    }
}

/// Reads a scene file once and parses it as the kind it is (see [`surface::is_surface_scene`]).
pub fn load_any(path: &Path) -> Result<AnyScene, SceneError> {
    let file = SceneFile::read(path)?;
    parse_any(&file.text, &file.label, &file.name, Some(path.to_path_buf()), &file.base_dir)
}

/// Parses and validates scene text of either kind (see [`parse`]).
pub fn parse_any(text: &str, label: &str, name: &str, path: Option<PathBuf>, base_dir: &Path) -> Result<AnyScene, SceneError> {
    Ok(if surface::is_surface_scene(text) {
        AnyScene::Surface(Box::new(surface::parse_surface(text, label, name, path, base_dir)?))
    } else {
        AnyScene::Liquid(Box::new(parse(text, label, name, path, base_dir)?))
    })
}

/// A scene file's text and what errors and relative paths need.
pub(crate) struct SceneFile {
    pub text: String,
    /// The path as shown in errors.
    pub label: String,
    /// The file's stem.
    pub name: String,
    /// The file's directory.
    pub base_dir: PathBuf,
}

impl SceneFile {
    pub(crate) fn read(path: &Path) -> Result<Self, SceneError> {
        let label = path.display().to_string();
        let text = crate::input::read_text(path, crate::input::SCENE_LIMIT).map_err(|e| SceneError::new(&label, None, None, &format!("cannot read the scene file: {e}")))?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scene").to_string();
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(SceneFile { text, label, name, base_dir })
    }
}

/// Deserialises scene text, with the position of the first error.
pub(crate) fn from_toml<T: serde::de::DeserializeOwned + serde::Serialize>(text: &str, label: &str) -> Result<T, SceneError> {
    let value: T = toml::from_str(text).map_err(|e| SceneError::new(label, e.span().map(|s| line_column(text, s.start)), None, e.message()))?;
    // Fixed-size arrays take their first elements and drop the rest silently; the value
    // written back out shows what was kept.
    if let (Ok(input), Ok(kept)) = (toml::from_str::<toml::Value>(text), toml::Value::try_from(&value)) {
        if let Some((key, expected, got)) = dropped(&input, &kept, String::new()) {
            return Err(located(label, text, &key, &format!("expected {expected} values, got {got}")));
        }
    }
    Ok(value)
}

/// The first array of `input` longer than its counterpart in `kept` (its key, the length
/// kept and the length given).
fn dropped(input: &toml::Value, kept: &toml::Value, key: String) -> Option<(String, usize, usize)> {
    match (input, kept) {
        (toml::Value::Array(given), toml::Value::Array(used)) => {
            if given.len() > used.len() {
                return Some((key, used.len(), given.len()));
            }
            given.iter().zip(used).enumerate().find_map(|(n, (g, u))| dropped(g, u, format!("{key}[{n}]")))
        }
        (toml::Value::Table(given), toml::Value::Table(used)) => given.iter().find_map(|(name, g)| {
            let key = if key.is_empty() { name.clone() } else { format!("{key}.{name}") };
            used.get(name).and_then(|u| dropped(g, u, key))
        }),
        _ => None,
    }
}

/// The built-in default scene.
pub fn load_default() -> Result<LoadedScene, SceneError> {
    parse(DEFAULT_SCENE, DEFAULT_SCENE_LABEL, "default", None, Path::new("."))
}

/// Parses and validates scene text. `label` names the text in errors; relative mesh paths are
/// resolved against `base_dir`.
pub fn parse(text: &str, label: &str, name: &str, path: Option<PathBuf>, base_dir: &Path) -> Result<LoadedScene, SceneError> {
    let scene: Scene = from_toml(text, label)?;
    let context = validate::Context { text, label, base_dir };
    validate::validate(scene, &context).map(|resolved| LoadedScene {
        scene: resolved.scene,
        text: text.to_string(),
        name: name.to_string(),
        path,
        grid: resolved.grid,
        regions: resolved.regions,
        sources: resolved.sources,
        smoke_regions: resolved.smoke_regions,
        smoke_sources: resolved.smoke_sources,
        obstacles: resolved.obstacles,
        bodies: resolved.bodies,
        models: resolved.models,
        tracers: resolved.tracers,
        label: label.to_string(),
    })
}

/// An error at the value of the dotted `key` in the scene `text` named `label`.
fn located(label: &str, text: &str, key: &str, message: &str) -> SceneError {
    SceneError::new(label, locate(text, key), Some(key.to_string()), message)
}

/// 1-based line and column of byte offset `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Position of the value at a dotted key path such as `liquid.region[1].shape.sphere.radius`,
/// or of its deepest existing ancestor.
fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    let root = DeTable::parse(text).ok()?;
    let mut span = None;
    let mut table = Some(root.get_ref());
    'walk: for part in key.split('.') {
        let (name, indices): (&str, Vec<&str>) = match part.find('[') {
            Some(b) => (&part[..b], part[b + 1..part.len() - 1].split("][").collect()),
            None => (part, vec![]),
        };
        let Some(mut value) = table.and_then(|t| t.get(name)) else { break };
        span = Some(value.span());
        for index in indices {
            let item = match (value.get_ref(), index.parse::<usize>()) {
                (DeValue::Array(items), Ok(n)) => items.get(n),
                _ => None,
            };
            let Some(item) = item else { break 'walk };
            value = item;
            span = Some(value.span());
        }
        table = match value.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    span.map(|s| line_column(text, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_nested_keys() {
        let text =
            "[simulation]\nframes = 3\n\n[[liquid.region]]\nshape.box = { min = [0,0,0], max = [1,1,1] }\n\n[[liquid.region]]\nshape.sphere = { center = [0,0,0], radius = -1 }\n";
        assert_eq!(locate(text, "simulation.frames"), Some((2, 10)));
        assert_eq!(locate(text, "liquid.region[1].shape.sphere.radius"), Some((8, 45)));
        // A missing key falls back to its deepest existing ancestor.
        assert_eq!(locate(text, "liquid.region[0].shape.box.nothing").map(|p| p.0), Some(5));
    }
}
