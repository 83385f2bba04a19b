"""Load a tidepool run into Blender as cached sequences with motion blur.

    blender [FILE.blend] --python tools/blender_import.py -- RUN_DIR [--save OUT.blend]

Creates a collection "tidepool" holding, under an empty that turns tidepool's Y-up axes into
Blender's Z-up ones (+90 degrees about X):

- "liquid": the liquid surface, its mesh swapped for surface_NNNN.ply as the frame changes;
- "bodies": the bodies' surfaces (bodies_NNNN.ply), if the run has bodies;
- "particles": FLIP's particles as a point cloud mesh (particles_NNNN.ply), if present;
- "tracers": the passive tracers (plankton) as a point cloud mesh (tracers_NNNN.ply), if any;
- "obstacles": the static obstacles (obstacles.ply), if present;
- "volume": the OpenVDB sequence volume_NNNN.vdb (grids surface, density, vel), if present
  (Blender looks for a file on every frame: with output.every > 1 it is empty between them).

Every sequence mesh carries the PLY's per-vertex velocity (vx, vy, vz, m/s) as a vector
attribute "velocity" on points, which Cycles reads for motion blur (Render Properties > Motion
Blur). Between written frames (output.every > 1) the last written frame is shown. The scene's
frame range and rate are set from the run (frame N of the run is Blender frame N).

The sequences are swapped by a frame-change handler. The script stores itself in the .blend as
the text "tidepool_import.py" set to run on load, so a saved file plays again when reopened
with Trusted Source (Auto Run Python Scripts) enabled.

Needs only Blender's bundled Python and numpy; reads the binary PLY that tidepool writes.
"""

import os
import re
import sys

import bpy
import numpy as np

STEMS = ("surface", "bodies", "particles", "tracers")
OBJECTS = {"surface": "liquid", "bodies": "bodies", "particles": "particles", "tracers": "tracers"}


def read_ply(path):
    """Vertices (n x 3), velocities (n x 3 or None) and triangles (m x 3) of a binary PLY."""
    with open(path, "rb") as f:
        header = []
        while True:
            line = f.readline().decode("ascii").strip()
            header.append(line)
            if line == "end_header":
                break
        body = f.read()
    if "format binary_little_endian 1.0" not in header:
        raise ValueError(f"{path}: expected tidepool's binary little-endian PLY")
    counts, properties, element = {}, {}, None
    for line in header:
        words = line.split()
        if words[:1] == ["element"]:
            element = words[1]
            counts[element] = int(words[2])
            properties[element] = []
        elif words[:1] == ["property"] and words[1] != "list":
            properties[element].append(words[2])
    names = properties["vertex"]
    vertices = np.frombuffer(body, dtype="<f4", count=counts["vertex"] * len(names)).reshape(-1, len(names))
    positions = vertices[:, [names.index(a) for a in "xyz"]]
    velocities = vertices[:, [names.index(a) for a in ("vx", "vy", "vz")]] if "vx" in names else None
    faces = np.zeros((0, 3), dtype=np.int32)
    if counts.get("face", 0):
        offset = vertices.nbytes
        face = np.dtype([("n", "u1"), ("i", "<i4", 3)])
        faces = np.frombuffer(body, dtype=face, count=counts["face"], offset=offset)["i"]
    return positions, velocities, faces


def fill_mesh(mesh, positions, velocities, faces):
    """Replaces `mesh`'s geometry (and its velocity attribute)."""
    mesh.clear_geometry()
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
    if len(faces):
        mesh.loops.add(3 * len(faces))
        mesh.polygons.add(len(faces))
        mesh.loops.foreach_set("vertex_index", np.ascontiguousarray(faces, dtype=np.int32).ravel())
        mesh.polygons.foreach_set("loop_start", np.arange(0, 3 * len(faces), 3, dtype=np.int32))
        mesh.polygons.foreach_set("loop_total", np.full(len(faces), 3, dtype=np.int32))
    if velocities is not None:
        attribute = mesh.attributes.get("velocity") or mesh.attributes.new("velocity", "FLOAT_VECTOR", "POINT")
        attribute.data.foreach_set("vector", np.ascontiguousarray(velocities, dtype=np.float32).ravel())
    mesh.update()


def frames_of(run, stem, ext):
    """The frame numbers of `stem_NNNN.ext` files in `run`, sorted."""
    pattern = re.compile(rf"^{stem}_(\d+)\.{ext}$")
    return sorted(int(m.group(1)) for m in map(pattern.match, os.listdir(run)) if m)


def shown_frame(frames, frame):
    """The last written frame at or before `frame` (the first one before the run starts)."""
    earlier = [f for f in frames if f <= frame]
    return earlier[-1] if earlier else frames[0]


@bpy.app.handlers.persistent
def tidepool_frame_change(scene, *_):
    """Swaps every tidepool sequence mesh for the file of the current frame."""
    run = scene.get("tidepool_run")
    if not run or not os.path.isdir(run):
        return
    for stem in STEMS:
        obj = bpy.data.objects.get(f"tidepool {OBJECTS[stem]}")
        frames = frames_of(run, stem, "ply")
        if obj is None or not frames:
            continue
        frame = shown_frame(frames, scene.frame_current)
        if obj.data.get("tidepool_frame") == frame:
            continue
        fill_mesh(obj.data, *read_ply(os.path.join(run, f"{stem}_{frame:04d}.ply")))
        obj.data["tidepool_frame"] = frame


def register_handler():
    handlers = bpy.app.handlers.frame_change_pre
    for h in [h for h in handlers if getattr(h, "__name__", "") == "tidepool_frame_change"]:
        handlers.remove(h)
    handlers.append(tidepool_frame_change)


def import_run(run):
    """Builds the collection, objects and handler for the run in directory `run`."""
    run = os.path.abspath(run)
    if not os.path.isdir(run):
        raise SystemExit(f"tidepool: {run} is not a directory")
    scene = bpy.context.scene
    scene["tidepool_run"] = run
    collection = bpy.data.collections.new("tidepool")
    scene.collection.children.link(collection)
    axes = bpy.data.objects.new("tidepool (Y up)", None)
    axes.rotation_euler = (np.pi / 2, 0.0, 0.0)
    collection.objects.link(axes)

    def add(name, data):
        obj = bpy.data.objects.new(f"tidepool {name}", data)
        obj.parent = axes
        collection.objects.link(obj)
        return obj

    last = 0
    for stem in STEMS:
        frames = frames_of(run, stem, "ply")
        if frames:
            add(OBJECTS[stem], bpy.data.meshes.new(f"tidepool {OBJECTS[stem]}"))
            last = max(last, frames[-1])
    if os.path.exists(os.path.join(run, "obstacles.ply")):
        mesh = bpy.data.meshes.new("tidepool obstacles")
        fill_mesh(mesh, *read_ply(os.path.join(run, "obstacles.ply")))
        add("obstacles", mesh)
    volumes = frames_of(run, "volume", "vdb")
    if volumes:
        volume = bpy.data.volumes.new("tidepool volume")
        volume.filepath = os.path.join(run, f"volume_{volumes[0]:04d}.vdb")
        volume.is_sequence = len(volumes) > 1
        # Blender numbers a sequence's files from 1 at frame_start, plus frame_offset.
        volume.frame_start = volumes[0]
        volume.frame_offset = volumes[0] - 1
        volume.frame_duration = volumes[-1] - volumes[0] + 1
        volume.sequence_mode = "EXTEND"
        add("volume", volume)
        last = max(last, volumes[-1])
    fps = 24
    scene_toml = os.path.join(run, "scene.toml")
    if os.path.exists(scene_toml):
        match = re.search(r"^\s*fps\s*=\s*([0-9.]+)", open(scene_toml).read(), re.MULTILINE)
        fps = float(match.group(1)) if match else fps
    scene.render.fps, scene.render.fps_base = round(fps), round(fps) / fps
    scene.frame_start, scene.frame_end = 0, last
    text = bpy.data.texts.get("tidepool_import.py") or bpy.data.texts.new("tidepool_import.py")
    # Marked so that, run on load, it only registers the handler.
    text.from_string("TIDEPOOL_FROM_BLEND = True\n" + open(__file__).read())
    text.use_module = True
    register_handler()
    tidepool_frame_change(scene)


def main():
    args = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if not args:
        raise SystemExit("usage: blender [FILE.blend] --python tools/blender_import.py -- RUN_DIR [--save OUT.blend]")
    import_run(args[0])
    if "--save" in args:
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args[args.index("--save") + 1]))


if globals().get("TIDEPOOL_FROM_BLEND"):
    # Run on load from the text block saved in the .blend: only the handler is needed.
    register_handler()
else:
    main()
