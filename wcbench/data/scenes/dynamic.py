"""Content that moves on its own in a synthetic scene: movers (people, animals, vehicles) with
their own paths and gaits, swaying foliage, rippling water and drifting clouds.

Generated video is full of them, and a camera-motion estimator must not read them as the
camera's motion. Each is pure data with a time argument (in frames), so a scene still renders
the same pixels from its seed at every frame. :mod:`wcbench.data.scenes.render` draws them;
:mod:`wcbench.data.scenes.stressors` places them around a camera path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MoverPart:
    """One box of a mover, relative to the mover's origin (its ground contact point), with a
    periodic swing (a leg's stride, a crown's sway): ``swing`` (3,) units of amplitude at
    ``phase`` radians of the gait cycle."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    texture: int
    tile: float = 1.0
    swing: tuple[float, float, float] = (0.0, 0.0, 0.0)
    phase: float = 0.0


@dataclass(frozen=True)
class Mover:
    """A rigid group of boxes moving along a straight path at ``velocity`` (units per frame)
    from ``start`` (its position at frame 0), its parts swinging ``gait`` cycles per frame."""

    kind: str
    start: tuple[float, float, float]
    velocity: tuple[float, float, float]
    parts: tuple[MoverPart, ...]
    gait: float = 0.0

    def position(self, time: float) -> np.ndarray:
        return np.asarray(self.start, float) + time * np.asarray(self.velocity, float)

    def boxes_at(self, time: float) -> list[tuple[np.ndarray, np.ndarray, int, float]]:
        """(lo, hi, texture, tile) of every part at ``time`` (frames)."""
        origin = self.position(time)
        cycle = 2.0 * np.pi * self.gait * time
        boxes = []
        for part in self.parts:
            shift = origin + np.asarray(part.swing, float) * np.sin(cycle + part.phase)
            boxes.append((np.asarray(part.lo, float) + shift, np.asarray(part.hi, float) + shift, part.texture,
                          part.tile))
        return boxes


@dataclass(frozen=True)
class Pond:
    """A patch of water on the ground plane (x and z ranges, world units) whose texture ripples:
    its texture coordinates are displaced by travelling waves of ``amplitude`` units."""

    x: tuple[float, float]
    z: tuple[float, float]
    texture: int
    tile: float = 2.0
    amplitude: float = 0.08
    wavelength: float = 1.5
    speed: float = 0.04  # wave travel, units per frame

    def contains(self, points: np.ndarray) -> np.ndarray:
        return ((points[:, 0] >= self.x[0]) & (points[:, 0] <= self.x[1])
                & (points[:, 2] >= self.z[0]) & (points[:, 2] <= self.z[1]))

    def ripple(self, points: np.ndarray, time: float) -> tuple[np.ndarray, np.ndarray]:
        """Texture-coordinate offsets (world units) at ground ``points`` (N, 3) at ``time``."""
        k = 2.0 * np.pi / self.wavelength
        phase = k * (points[:, 2] + 0.6 * points[:, 0]) - k * self.speed * time
        cross = k * (points[:, 0] - 0.5 * points[:, 2]) - 0.7 * k * self.speed * time
        return self.amplitude * np.sin(phase), self.amplitude * np.cos(cross)


@dataclass(frozen=True)
class Dynamics:
    """Everything in a scene that moves on its own; empty by default (a static scene)."""

    movers: tuple[Mover, ...] = ()
    ponds: tuple[Pond, ...] = ()
    cloud_drift: float = 0.0  # radians of azimuth the clouds travel per frame
