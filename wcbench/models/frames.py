"""The one place where frames from a world model become the harness's video layout.

Models return frames the way their pipelines produce them: uint8 or float numpy arrays,
torch tensors (any device or float dtype, channels first or last, a batch of one), PIL
images or lists of any of these. :func:`to_video` turns all of them into ``(T, H, W, 3)``
uint8 RGB, the layout the harness stores and scores, or says exactly what is wrong.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Sequence, Union

import numpy as np

if TYPE_CHECKING:  # optional dependencies, named here for the type only
    import PIL.Image
    import torch

# What reset() and step() may return (see the README's model section).
Frames = Union[np.ndarray, "torch.Tensor", "PIL.Image.Image", Sequence[Any]]

_FLOAT_SLACK = 1e-3  # float frames may overshoot [0, 1] by this much (decoder round-off)


class FrameError(ValueError):
    """Frames that cannot be read as RGB video; the message says what was found."""


def _is_torch(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _is_pil(value: Any) -> bool:
    return type(value).__module__.startswith("PIL.")


def _as_array(value: Any) -> np.ndarray:
    """numpy view of one array-like (torch tensors: detached, on the CPU, float32 if low precision)."""
    if _is_torch(value):
        tensor = value.detach().cpu()
        if tensor.is_floating_point():
            tensor = tensor.float()  # bfloat16 has no numpy dtype
        return tensor.numpy()
    if _is_pil(value):
        return np.asarray(value.convert("RGB"))
    return np.asarray(value)


def portable_frames(frames: Any) -> Any:
    """Frames as a model returned them, with torch tensors (and PIL images) made numpy arrays,
    values untouched: what can cross a process boundary (a CUDA tensor cannot), to be checked
    and converted by :func:`to_video` on the other side, exactly as in one process."""
    if isinstance(frames, (list, tuple)):
        return [portable_frames(frame) for frame in frames]
    if _is_torch(frames) or _is_pil(frames):
        return _as_array(frames)
    return frames


def _channels_last(array: np.ndarray) -> np.ndarray:
    """(T, H, W, 3) from (T, H, W, 3), (T, 3, H, W) or (3, T, H, W); a leading batch of one is dropped."""
    if array.ndim == 5:
        if array.shape[0] != 1:
            raise FrameError(f"got a batch of {array.shape[0]} videos {array.shape}; return one video")
        array = array[0]
    if array.ndim != 4:
        raise FrameError(f"expected frames shaped (T, H, W, 3), got {array.shape}")
    if array.shape[-1] == 3:
        return array
    if array.shape[1] == 3:  # (T, C, H, W): torch / diffusers "pt" output
        return array.transpose(0, 2, 3, 1)
    if array.shape[0] == 3:  # (C, T, H, W): a video VAE's decode
        return array.transpose(1, 2, 3, 0)
    raise FrameError(f"expected RGB frames shaped (T, H, W, 3), (T, 3, H, W) or (3, T, H, W), got {array.shape}")


def _to_uint8(array: np.ndarray) -> np.ndarray:
    if array.dtype == np.uint8:
        return array
    if np.issubdtype(array.dtype, np.floating):
        if not np.isfinite(array).all():
            raise FrameError("frames contain NaN or infinity")
        low, high = float(array.min()), float(array.max())
        if low < -_FLOAT_SLACK or high > 1.0 + _FLOAT_SLACK:
            raise FrameError(f"float frames must lie in [0, 1], these span [{low:.3g}, {high:.3g}] "
                             "(for [-1, 1] output return (x + 1) / 2; for 0..255 return uint8)")
        return np.clip(np.round(array * 255.0), 0, 255).astype(np.uint8)
    if np.issubdtype(array.dtype, np.integer):
        if array.size and (array.min() < 0 or array.max() > 255):
            raise FrameError(f"integer frames must lie in 0..255, got {array.min()}..{array.max()} ({array.dtype})")
        return array.astype(np.uint8)
    raise FrameError(f"frames must be uint8 or float in [0, 1], got {array.dtype}")


def to_video(frames: Frames) -> np.ndarray:
    """Frames in any accepted form -> contiguous ``(T, H, W, 3)`` uint8 RGB.

    A single image (``(H, W, 3)``, ``(3, H, W)`` or a PIL image) becomes one frame, so
    ``reset`` may return frame 0 in any of these forms too. Raises :class:`FrameError`.
    """
    if isinstance(frames, (list, tuple)):
        if not frames:
            raise FrameError("got an empty list of frames")
        for frame in frames:
            if not (_is_pil(frame) or getattr(frame, "ndim", None) == 3):
                shape = getattr(frame, "shape", type(frame).__name__)
                raise FrameError("a list of frames must hold single images (H, W, 3), (3, H, W) or PIL images, "
                                 f"got {shape}")
        frames = np.stack([to_video(frame)[0] for frame in frames])
    array = _as_array(frames)
    if array.ndim == 3:  # one image, channels last or first
        array = array[None]
    return np.ascontiguousarray(_to_uint8(_channels_last(array)))
