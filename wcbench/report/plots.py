"""Matplotlib figures for the report, returned as PNG bytes.

Figures are built with ``matplotlib.figure.Figure`` (the Agg canvas), never pyplot, so no
global state or display backend is touched and the report renders headless.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from wcbench.core.actions import Action

HIT_COLOUR, MISS_COLOUR = "#2e9d5b", "#d64541"
# Colour per track, line style per horizon: groups stay distinguishable in the curves.
_TRACK_COLOURS = {"basic": "#1f6fb4", "combined": "#e07b12", "external": "#6b4c9a"}
_HORIZON_STYLES = {"short": ":", "mid": "--", "long": "-"}


def figure_png(fig: Figure, dpi: int = 110) -> bytes:
    """Encode a figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def short_label(label: int) -> str:
    """A full label in script tokens (``w+left``, ``none``): short enough to caption a frame."""
    return Action.from_label(int(label)).format()


def plot_clip_curves(curves: pd.DataFrame) -> bytes:
    """IF accuracy and VQ against clip index, one line per track x horizon."""
    fig = Figure(figsize=(11, 3.6))
    axes = fig.subplots(1, 2)
    for (track, horizon), group in curves.groupby(["track", "horizon"], sort=False):
        style = dict(color=_TRACK_COLOURS.get(track, "#555555"), linestyle=_HORIZON_STYLES.get(horizon, "-"),
                     marker="o", markersize=3, linewidth=1.6, label=f"{track}/{horizon}")
        axes[0].plot(group["clip"], group["if_acc"], **style)
        axes[1].plot(group["clip"], group["vq"], **style)
    if curves["vq"].isna().all():
        axes[1].text(0.5, 0.5, "no VQ recorded", transform=axes[1].transAxes, ha="center", color="#888888")
    axes[0].set_ylim(-0.02, 1.02)
    axes[0].set_title("IF accuracy per clip (higher = follows commands)")
    axes[1].set_title("VQ per clip (higher = better looking)")
    for ax in axes:
        ax.set_xlabel("clip index (time →)")
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    axes[0].set_ylabel("mean IF accuracy")
    axes[1].set_ylabel("mean VQ")
    if len(curves):
        axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False, fontsize=9)
    fig.tight_layout()
    return figure_png(fig)


def plot_confusion(matrix: pd.DataFrame, title: str) -> bytes:
    """A labelled heatmap: colour = share of the commanded row, text = count."""
    counts = matrix.to_numpy()
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros(counts.shape, dtype=float), where=totals > 0)
    fig = Figure(figsize=(5.6, 5.0))
    ax = fig.subplots()
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    for i, j in zip(*np.nonzero(counts)):
        ax.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize=7,
                color="white" if shares[i, j] > 0.55 else "black")
    names = list(matrix.index)
    ax.set_xticks(range(len(names)), names, rotation=50, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), [f"{n} ({int(t)})" for n, t in zip(names, totals[:, 0])], fontsize=8)
    ax.set_xlabel("detected in the video")
    ax.set_ylabel("commanded (transitions)")
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of commanded row")
    fig.tight_layout()
    return figure_png(fig)


def plot_case_strip(frames: np.ndarray, indices: list[int], labels: dict | None) -> bytes:
    """Sampled frames captioned with the commanded / detected action into them, and below
    a timeline of translation / rotation hits over every frame transition. ``frames[k]`` is
    the video's frame ``indices[k]``."""
    has_labels = bool(labels and labels.get("commanded"))
    fig = Figure(figsize=(1.65 * len(indices), 2.5 if has_labels else 1.9))
    grid = fig.add_gridspec(2 if has_labels else 1, len(indices), height_ratios=[4, 1] if has_labels else [1],
                            hspace=0.55, wspace=0.05)
    for column, frame_index in enumerate(indices):
        ax = fig.add_subplot(grid[0, column])
        ax.imshow(frames[column])
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"frame {frame_index}", fontsize=8)
        if has_labels and frame_index >= 1 and frame_index - 1 < len(labels["commanded"]):
            commanded = labels["commanded"][frame_index - 1]
            detected = labels["detected"][frame_index - 1]
            colour = HIT_COLOUR if commanded == detected else MISS_COLOUR
            ax.set_xlabel(f"cmd {short_label(commanded)}\ndet {short_label(detected)}", fontsize=7.5,
                          color=colour)
        elif frame_index == 0:
            ax.set_xlabel("start image", fontsize=7.5)
    if has_labels:
        commanded = np.asarray(labels["commanded"])
        detected = np.asarray(labels["detected"])
        hits = np.stack([commanded // 9 == detected // 9, commanded % 9 == detected % 9]).astype(float)
        ax = fig.add_subplot(grid[1, :])
        ax.imshow(hits, aspect="auto", cmap=_hit_cmap(), vmin=0, vmax=1, interpolation="nearest",
                  extent=(0.5, len(commanded) + 0.5, 1.5, -0.5))
        ax.set_yticks([0, 1], ["translation", "rotation"], fontsize=7.5)
        ax.tick_params(axis="x", labelsize=7.5)
        ax.set_xlabel("frame transition (green = detected motion matches the command, red = miss)", fontsize=7.5)
    return figure_png(fig)


def _hit_cmap():
    return ListedColormap([MISS_COLOUR, HIT_COLOUR])


def normalise_path(points: np.ndarray) -> np.ndarray:
    """Shift a path to start at 0 and scale its largest distance from the start to 1.

    Estimators recover translation only up to scale, so only shapes are comparable."""
    points = np.asarray(points, dtype=float)
    points = points - points[0]
    extent = np.nanmax(np.linalg.norm(points, axis=1)) if len(points) else 0.0
    return points / extent if extent > 1e-12 else points


def plot_paths(commanded: list | None, estimated: list | None) -> bytes:
    """Top-down (x right, z forward) commanded and estimated camera paths side by side."""
    fig = Figure(figsize=(6.4, 3.3))
    axes = fig.subplots(1, 2)
    dots = None
    for ax, path, title in ((axes[0], commanded, "commanded path"), (axes[1], estimated, "estimated from video")):
        ax.set_title(title, fontsize=9)
        ax.set_aspect("equal", adjustable="box")
        ax.grid(alpha=0.3)
        ax.set_xlabel("x (right →)", fontsize=8)
        ax.set_ylabel("z (forward →)", fontsize=8)
        ax.tick_params(labelsize=7)
        if not path:
            ax.text(0.5, 0.5, "not available", transform=ax.transAxes, ha="center", va="center", color="#888")
            continue
        points = normalise_path(np.asarray(path, dtype=float))
        x, z = points[:, 0], points[:, 2]
        ax.plot(x, z, color="#bbbbbb", linewidth=1, zorder=1)
        dots = ax.scatter(x, z, c=np.arange(len(x)), cmap="viridis", s=6, zorder=2)
        ax.scatter([x[0]], [z[0]], marker="o", s=60, facecolor="none", edgecolor="black", linewidth=1.5,
                   zorder=3, label="start")
        ax.scatter([x[-1]], [z[-1]], marker="s", s=30, color="black", zorder=3, label="end")
        _square_limits(ax, x, z)
        ax.legend(fontsize=7, loc="best", framealpha=0.7)
    if dots is not None:
        fig.colorbar(dots, ax=list(axes), fraction=0.03, pad=0.02, label="frame")
    return figure_png(fig)


def _square_limits(ax, x: np.ndarray, z: np.ndarray) -> None:
    """Equal, square axis limits around the path, never tighter than +-0.35: a static camera
    stays a dot in a sensible box instead of a zoomed-in blur of noise."""
    centre_x, centre_z = (np.nanmin(x) + np.nanmax(x)) / 2, (np.nanmin(z) + np.nanmax(z)) / 2
    half = max(np.nanmax(x) - np.nanmin(x), np.nanmax(z) - np.nanmin(z), 0.7) / 2 + 0.08
    ax.set_xlim(centre_x - half, centre_x + half)
    ax.set_ylim(centre_z - half, centre_z + half)
