"""The scorers a results header names, built again: the one way to build the estimator, quality
scorer and mode that ``wcbench run`` and ``wcbench score`` score with (from their settings),
that ``submit`` and ``verify`` re-score with (from results.json), and that the trainer's
evaluation runs with.

A header is what :meth:`wcbench.scoring.case.Scorers.header` records: ``{"estimator": {"name",
"version", "thresholds", "options"}, "quality": {"name", "version", "options"}, "mode"}``. Only
the names are required; options and mode default to none and ``default``, thresholds to the
estimator's own (those in ``wcbench/conf/estimator/<name>.yaml``). Versions are not checked
here: ``submit`` refuses other versions, ``verify`` finds what they change by re-scoring.
"""

from __future__ import annotations

from typing import Any

from wcbench.core.camera import Thresholds
from wcbench.pose import build_estimator
from wcbench.scoring.case import Scorers
from wcbench.scoring.following import MODES
from wcbench.scoring.quality import build_quality_scorer


def build_scorers(header: dict[str, Any]) -> Scorers:
    """The :class:`Scorers` ``header`` names, with the thresholds and options it records, so that
    ``build_scorers(scorers.header()).header() == scorers.header()``. Raises ValueError on an
    unknown mode or an option a scorer does not take."""
    mode = header.get("mode", "default")
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {', '.join(MODES)}")
    estimator_options = dict(header["estimator"].get("options") or {})
    quality_options = dict(header["quality"].get("options") or {})
    try:
        estimator = build_estimator(header["estimator"]["name"], **estimator_options)
        quality = build_quality_scorer(header["quality"]["name"], **quality_options)
    except TypeError as err:  # an option the constructor does not take
        raise ValueError(f"bad scorer option: {err}") from err
    if header["estimator"].get("thresholds"):
        estimator.thresholds = Thresholds(**header["estimator"]["thresholds"])
    return Scorers(estimator, quality, mode, options={"estimator": estimator_options, "quality": quality_options})
