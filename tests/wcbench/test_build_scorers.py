"""build_scorers: the scorers a results header names, built again with the thresholds, options and
mode it records (the command line, submit / verify and the trainer all build them this way)."""

import pytest

from wcbench.pose import build_estimator
from wcbench.results.scorers import build_scorers
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer

NAMES = {"estimator": {"name": "opencv"}, "quality": {"name": "default"}}


def test_a_recorded_header_builds_the_scorers_it_records():
    made = build_scorers({"estimator": {"name": "opencv", "options": {"max_side": 200}},
                          "quality": {"name": "default", "options": {"spatial_stride": 2}},
                          "mode": "worldcompass-compat"})
    header = made.header()
    assert header["estimator"]["options"] == {"max_side": 200} and header["mode"] == "worldcompass-compat"
    # a results.json made under other thresholds is re-scored under those, not the current ones
    header["estimator"]["thresholds"]["translation"] *= 2
    rebuilt = build_scorers(header)
    assert rebuilt.header() == header
    assert rebuilt.estimator.thresholds.translation == header["estimator"]["thresholds"]["translation"]


def test_names_alone_give_the_default_mode_thresholds_and_no_options():
    by_hand = Scorers(build_estimator("opencv"), build_quality_scorer("default"))
    assert build_scorers(NAMES).header() == by_hand.header()


@pytest.mark.parametrize("header, message", [
    ({**NAMES, "mode": "best"}, "mode='best' is not one of default, worldcompass-compat"),
    ({**NAMES, "estimator": {"name": "opencv", "options": {"no_such": 1}}}, "bad scorer option: .*no_such"),
])
def test_a_bad_mode_or_option_is_refused(header, message):
    with pytest.raises(ValueError, match=message):
        build_scorers(header)
