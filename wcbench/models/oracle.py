"""The oracle world model: renders the synthetic scene exactly as commanded, plus degraded
variants that break one thing each, so the scorers can be seen to notice."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, Action
from wcbench.core.camera import trajectory_from_actions
from wcbench.models.base import CaseInfo
from wcbench.models.registry import register_model
from wcbench.data.scenes.synthetic import render


class OracleModel:
    """Renders the case's synthetic scene along the actions it is given.

    variant: ``exact``; ``static`` (never moves); ``lag`` (carries out each action
    ``lag_steps`` latent steps late); ``mirror`` (yaw reversed); ``noisy`` (exact motion,
    Gaussian pixel noise of ``noise_sigma``).
    """

    fps = 16
    resolution = None
    reports_speed = False  # it renders what was commanded: its frames/s say nothing about a world model

    def __init__(self, variant: str = "exact", lag_steps: int = 2, noise_sigma: float = 12.0):
        if variant not in ("exact", "static", "lag", "mirror", "noisy"):
            raise ValueError(f"unknown oracle variant {variant!r}; known: exact, static, lag, mirror, noisy")
        self.variant = variant
        self.name = "oracle" if variant == "exact" else f"oracle-{variant}"
        self.lag_steps = lag_steps
        self.noise_sigma = noise_sigma
        self._info: CaseInfo | None = None

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> np.ndarray:
        if info.scene is None:
            raise ValueError(f"case {info.id}: the oracle renders synthetic scenes only; this case has a "
                             "real start image (use a real world model or videos:DIR)")
        self._info = info
        self._pose = info.commanded_poses[0]
        self._first = image
        self._pending: list[Action] = [Action()] * self.lag_steps
        self.rendered_poses = [self._pose]  # what the frames really show (for the gt estimator)
        self._rng = np.random.default_rng(seed)
        return self._degrade(image[None])[0]

    def step(self, actions: list[Action]) -> np.ndarray:
        if self._info is None:
            raise RuntimeError("call reset() before step()")
        executed = self._executed(actions)
        frame_actions = [a for a in executed for _ in range(FRAMES_PER_LATENT)]
        if self.variant == "static":
            self.rendered_poses.extend([self._pose] * len(frame_actions))
            return self._degrade(np.repeat(self._first[None], len(frame_actions), axis=0))
        poses = trajectory_from_actions(frame_actions, self._info.steps, start=self._pose)[1:]
        self._pose = poses[-1]
        self.rendered_poses.extend(poses)
        width, height = self._info.resolution
        frames = np.stack([render(self._info.scene, pose, self._info.K, width, height) for pose in poses])
        return self._degrade(frames)

    def _executed(self, actions: list[Action]) -> list[Action]:
        if self.variant == "mirror":
            return [replace(a, yaw=-a.yaw) for a in actions]
        if self.variant == "lag":
            queue = self._pending + list(actions)
            self._pending = queue[len(actions):]
            return queue[:len(actions)]
        return list(actions)

    def _degrade(self, frames: np.ndarray) -> np.ndarray:
        if self.variant != "noisy":
            return frames
        noise = self._rng.normal(0.0, self.noise_sigma, frames.shape)
        return np.clip(frames + noise, 0, 255).astype(np.uint8)


for _variant in ("exact", "static", "lag", "mirror", "noisy"):
    register_model("oracle" if _variant == "exact" else f"oracle-{_variant}")(partial(OracleModel, variant=_variant))
