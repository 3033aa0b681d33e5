"""``--model text-actions``: models conditioned on key strings or action sentences
(Yume; Hunyuan-GameCraft's w/a/s/d action ids).

The pipeline receives ``segments``: one dict per run of equal latent steps with its
``steps`` and ``frames`` (inclusive), ``keys`` (``W``, ``W+A``, ..., ``None``), ``mouse``
(``→``, ``↑←``, ..., ``·``) and ``text``, Yume's action sentences ("Person moves forward
(W).Camera turns left (←)."), which Yume appends to the scene caption
(:func:`wcbench.core.controls.to_text_actions`). A model that generates fixed-length chunks (33
frames for Yume and GameCraft) splits or merges the runs in its loader.
"""

from __future__ import annotations

from typing import Any

from wcbench.core.controls import to_text_actions
from wcbench.models.base import CaseInfo
from wcbench.models.native import NativeModel
from wcbench.models.registry import register_model


@register_model("text-actions")
class TextActionModel(NativeModel):
    """A text/key-action model through a loader: options as in NativeModel."""
    family = "text-actions"

    def controls(self, info: CaseInfo) -> dict[str, Any]:
        return {"segments": to_text_actions(info.script)}
