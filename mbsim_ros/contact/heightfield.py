"""Heightfield terrain: a grid of heights over a rectangle, two triangles per cell
(docs/COMPLIANT.md#terrain). Detection (detection.py) takes it packed in one float vector,
``terrain``: columns (along x), rows (along y), the grid's corner (x, y) at its least x and y,
the cell's x and y extents, then the heights row by row (row 0 at the least y), the
heightfield's position z added; an empty vector: no heightfield.

Cell (i, j) with local coordinates (u, v) in [0, 1]^2 is split along the diagonal from
(1, 0) to (0, 1): the triangle u + v <= 1 holds the corner (i, j), the other (i + 1, j + 1).
A point's gap is its signed distance to the plane of the triangle under it, along that
triangle's upward normal; a point outside the rectangle meets nothing.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .._jit import kernel, step

T_COLUMNS, T_ROWS, T_X, T_Y, T_DX, T_DY, T_HEIGHTS = range(7)


def pack(heights: np.ndarray, size, position) -> np.ndarray:
    """The terrain vector of heights (rows along y, columns along x; at least 2 x 2) spread
    over size (x, y) m, centred at position (x, y, z)."""
    heights = np.asarray(heights, dtype=float)
    rows, columns = heights.shape
    header = [columns, rows, position[0] - 0.5 * size[0], position[1] - 0.5 * size[1],
              size[0] / (columns - 1), size[1] / (rows - 1)]
    return np.concatenate([header, (heights + position[2]).ravel()])


def grid(terrain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x (columns,), y (rows,), z (rows, columns)): the grid's points of a terrain vector."""
    columns, rows = int(terrain[T_COLUMNS]), int(terrain[T_ROWS])
    x = terrain[T_X] + terrain[T_DX] * np.arange(columns)
    y = terrain[T_Y] + terrain[T_DY] * np.arange(rows)
    return x, y, terrain[T_HEIGHTS:].reshape(rows, columns)


def mesh(terrain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (rows * columns, 3), faces (2 (rows - 1) (columns - 1), 3)): the triangles
    detection uses, counter-clockwise seen from above."""
    x, y, z = grid(terrain)
    rows, columns = z.shape
    X, Y = np.meshgrid(x, y)
    vertices = np.stack([X.ravel(), Y.ravel(), z.ravel()], axis=1)
    corner = (np.arange(rows - 1)[:, None] * columns + np.arange(columns - 1)[None, :]).ravel()
    a, b, c, d = corner, corner + 1, corner + columns, corner + columns + 1
    faces = np.concatenate([np.stack([a, b, c], axis=1), np.stack([d, c, b], axis=1)])
    return vertices, faces.astype(np.int64)


def read_heights(path: Path, max_height: float) -> np.ndarray:
    """Heights from a .npy file (m, as stored) or an 8- or 16-bit grey PNG (pixel / full
    scale * max_height; image row 0 is the grid's last row, at the greatest y)."""
    if path.suffix.lower() == ".npy":
        return np.load(path, allow_pickle=False)
    if path.suffix.lower() != ".png":
        raise ValueError(f"{path}: expected a .npy or .png file")
    from PIL import Image

    with Image.open(path) as image:
        pixels = np.array(image)
    if pixels.ndim != 2 or pixels.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"{path}: expected an 8- or 16-bit grey PNG, got {image.mode}")
    full = 255.0 if pixels.dtype == np.uint8 else 65535.0
    return pixels[::-1].astype(float) / full * max_height


@step
def terrain_surface(terrain, x, y) -> tuple:
    """(found, z, slope x, slope y): the plane of the triangle under (x, y), z at (x, y);
    found false outside the grid."""
    columns, rows = int(terrain[T_COLUMNS]), int(terrain[T_ROWS])
    dx, dy = terrain[T_DX], terrain[T_DY]
    u, v = (x - terrain[T_X]) / dx, (y - terrain[T_Y]) / dy
    if not (0.0 <= u <= columns - 1 and 0.0 <= v <= rows - 1):
        return False, 0.0, 0.0, 0.0
    i, j = min(int(u), columns - 2), min(int(v), rows - 2)
    fu, fv = u - i, v - j
    k = T_HEIGHTS + j * columns + i
    h00, h10, h01, h11 = terrain[k], terrain[k + 1], terrain[k + columns], \
        terrain[k + columns + 1]
    if fu + fv <= 1.0:
        su, sv = h10 - h00, h01 - h00
        return True, h00 + fu * su + fv * sv, su / dx, sv / dy
    su, sv = h11 - h01, h11 - h10
    return True, h11 - (1.0 - fu) * su - (1.0 - fv) * sv, su / dx, sv / dy


@step
def terrain_gap(terrain, x) -> tuple:
    """(gap, normal x, y, z) of point x against the terrain: the signed distance to the plane
    of the triangle under it along its upward unit normal; gap inf outside the grid."""
    found, z, gx, gy = terrain_surface(terrain, x[0], x[1])
    if not found:
        return math.inf, 0.0, 0.0, 1.0
    nz = 1.0 / math.sqrt(gx * gx + gy * gy + 1.0)
    return (x[2] - z) * nz, -gx * nz, -gy * nz, nz


@kernel
def terrain_gaps(terrain, points, gaps, normals) -> None:
    """gaps (n,) and normals (n, 3) of points (n, 3) against the terrain (terrain_gap)."""
    for k in range(points.shape[0]):
        gaps[k], normals[k, 0], normals[k, 1], normals[k, 2] = terrain_gap(terrain, points[k])
