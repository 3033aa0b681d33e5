"""Fixtures of the wctrain tests: the small tinywm several of them train or probe."""

from __future__ import annotations

from typing import Callable

import pytest
import torch

from wctrain.models.tinywm import TinyWM


@pytest.fixture(scope="session")
def make_small_tinywm() -> Callable[[], TinyWM]:
    """A small tinywm (three narrow levels), seeded: ``make_small_tinywm()``."""

    def make() -> TinyWM:
        torch.manual_seed(0)
        return TinyWM(block_out_channels=(16, 32, 32), cond_embed_dim=32, attention_heads=2)

    return make
