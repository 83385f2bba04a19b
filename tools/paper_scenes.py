#!/usr/bin/env python3
"""Writes the paper-scale scenes with many bodies, scenes/starfish_rocks_150.toml and
scenes/tori_pool_50.toml (after Lu, Jin and Fedkiw, Figures 10 and 7): the same bodies as
scenes/starfish_rocks.toml and scenes/tori_pool.toml, placed on jittered lattices in layers with
random turns from a fixed seed, so the files come out the same on every run.

    tools/paper_scenes.py          # rewrites both files
"""
import math
import random
from pathlib import Path

# How long each scene takes (measured; see docs/gallery.md).
STARFISH_TIME = (
    "# Time on 2 cores (2-core Xeon, 2026-11-27): 20 s a substep while the starfish fall, 2-4\n"
    "# substeps a frame (measured over the first frames; not yet run to the end), so an estimated\n"
    "# 3-4 hours for the fall. Once they lie stacked, contact costs more: in starfish_rocks.toml\n"
    "# at 42 cells a frame with the twelve stacked takes about 8 times one while they sink (12.7\n"
    "# against 1.5 s), so plan on a night for the 6 s; 1.5 GB of memory."
)
TORI_TIME = (
    "# Time on 2 cores (2-core Xeon, 2026-11-27): 12 s a substep as the tori fall, 2-4 substeps a\n"
    "# frame (measured over the first frames; not yet run to the end), so an estimated 2 hours\n"
    "# for the 5 s; 1.3 GB of memory."
)

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def lattice(rng, nx, nz, size_x, size_z, jitter, offset=(0.0, 0.0)):
    """`nx` x `nz` points filling a `size_x` x `size_z` floor, each moved by up to `jitter`."""
    for i in range(nx):
        for k in range(nz):
            x = (i + 0.5 + offset[0]) * size_x / nx + rng.uniform(-jitter, jitter)
            z = (k + 0.5 + offset[1]) * size_z / nz + rng.uniform(-jitter, jitter)
            yield x, z


def starfish_rocks_150():
    rng = random.Random(150)
    size_x, size_z = 3.5, 5.5
    out = [
        "# 150 starfish fall into a tank and settle onto rocks (Lu, Jin and Fedkiw, Figure 10, at the",
        "# paper's scale: a 3.5 m x 5.5 m tank with water 0.5 m deep on a 224 x 64 x 352 grid). Made by",
        "# tools/paper_scenes.py. The starfish are scenes/starfish_rocks.toml's: reduced deformable bodies",
        "# sharing one model (one mesh, one modal analysis); each copy holds only its frame and its 20",
        "# modal coordinates. They start in the air in three layers at random turns, fall in one after",
        "# another, collide with each other and 24 rocks, and come to rest stacked on the rocks and",
        "# the floor. Balanced forces flex their arms in a slow sine.",
        STARFISH_TIME,
        "",
        "[simulation]",
        "frames = 144        # 6 seconds",
        "fps = 24",
        "",
        "[domain]",
        "min = [0.0, 0.0, 0.0]",
        f"max = [{size_x}, 1.0, {size_z}]",
        "resolution = 352    # 224 x 64 x 352 cells of 1.56 cm",
        "",
        "[[liquid.region]]",
        f"shape.box = {{ min = [0.0, 0.0, 0.0], max = [{size_x}, 0.5, {size_z}] }}",
    ]
    for n, (x, z) in enumerate(lattice(rng, 4, 6, size_x, size_z, 0.15), start=1):
        scale = rng.uniform(0.16, 0.24)
        out += [
            "",
            "[[obstacle]]",
            f'name = "rock {n}"',
            f'shape.mesh = {{ path = "meshes/rock.obj", scale = {scale:.3f}, rotate = [0.0, {rng.uniform(0, 360):.1f}, 0.0], '
            f"translate = [{x:.3f}, {0.868 * scale:.3f}, {z:.3f}] }}",
        ]
    layers = [(0.62, (0.0, 0.0)), (0.76, (0.5, 0.0)), (0.90, (0.0, 0.5))]
    n = 0
    for height, offset in layers:
        for x, z in lattice(rng, 5, 10, size_x, size_z, 0.06, offset):
            x, z = min(max(x, 0.18), size_x - 0.18), min(max(z, 0.18), size_z - 0.18)
            n += 1
            out += [
                "",
                "[[body]]",
                f'name = "starfish_{n:03}"',
                f"shape.starfish = {{ center = [{x:.3f}, {height:.2f}, {z:.3f}], radius = 0.15, thickness = 0.06 }}",
                f"rotate = [{rng.uniform(-25, 25):.1f}, {rng.uniform(0, 360):.1f}, {rng.uniform(-25, 25):.1f}]",
                "density = 1400.0",
                "deformable = { young = 3e4, modes = 20, damping = 0.01, spacing = 0.0125 }",
                'actuation = { profile = "sine", frequency = 1.0, force = 0.05 }',
            ]
    out += ["", "[output]", 'formats = ["ply", "png"]', "camera = { position = [6.5, 4.5, 7.5], look_at = [1.75, 0.2, 2.75] }"]
    return out


def tori_pool_50():
    rng = random.Random(50)
    size = 4.0
    out = [
        "# 50 soft tori fall into a pool (Lu, Jin and Fedkiw, Figure 7, at the paper's scale: a 4 m x 4 m",
        "# pool with water 0.4 m deep on a 256 x 64 x 256 grid). Made by tools/paper_scenes.py. The tori",
        "# are scenes/tori_pool.toml's: reduced deformable bodies sharing one model, each holding only",
        "# its frame and its ten modal coordinates. Two waves of 25 at random tilts: the lower hits the",
        "# water first, the upper lands among it; they splash, collide, get squeezed and bent, and",
        "# settle floating.",
        TORI_TIME,
        "",
        "[simulation]",
        "frames = 120        # 5 seconds",
        "fps = 24",
        "",
        "[domain]",
        "min = [0.0, 0.0, 0.0]",
        f"max = [{size}, 1.0, {size}]",
        "resolution = 256    # 256 x 64 x 256 cells of 1.56 cm",
        "",
        "[[liquid.region]]",
        f"shape.box = {{ min = [0.0, 0.0, 0.0], max = [{size}, 0.4, {size}] }}",
    ]
    n = 0
    for height, offset in [(0.6, (0.0, 0.0)), (0.85, (0.5, 0.5))]:
        for x, z in lattice(rng, 5, 5, size, size, 0.1, offset):
            x, z = min(max(x, 0.25), size - 0.25), min(max(z, 0.25), size - 0.25)
            n += 1
            tilt = rng.uniform(0, 30)
            out += [
                "",
                "[[body]]",
                f'name = "torus_{n:02}"',
                f"shape.torus = {{ center = [{x:.3f}, {height:.2f}, {z:.3f}], axis = [0.0, 1.0, 0.0], major = 0.14, minor = 0.05 }}",
                f"rotate = [{tilt * math.cos(n):.1f}, {rng.uniform(0, 360):.1f}, {tilt * math.sin(n):.1f}]",
                "density = 500.0",
                "deformable = { young = 8e4, modes = 10, damping = 0.005, spacing = 0.025 }",
            ]
    out += ["", "[output]", 'formats = ["ply", "png"]', "camera = { position = [5.5, 3.8, 6.5], look_at = [2.0, 0.2, 2.0] }"]
    return out


def main():
    for name, lines in [("starfish_rocks_150", starfish_rocks_150()), ("tori_pool_50", tori_pool_50())]:
        path = SCENES / f"{name}.toml"
        path.write_text("\n".join(lines) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
