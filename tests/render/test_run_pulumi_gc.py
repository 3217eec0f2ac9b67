"""run_pulumi tunes the garbage collector for the run only: a test process (or a library user's program) keeps its
own settings afterwards."""

from __future__ import annotations

import gc

import pulumi

from gpushare.render.mock_engine import YOUNG_COLLECTION_THRESHOLD, run_pulumi


def test_collector_settings_are_restored_after_the_run():
    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    during = {}

    def program():
        during.update(threshold=gc.get_threshold(), frozen=gc.get_freeze_count())
        pulumi.CustomResource("test:index:Thing", "thing", {})

    assert len(run_pulumi(program).resources) == 1
    assert during["threshold"][0] >= YOUNG_COLLECTION_THRESHOLD and during["frozen"] > before[1]
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
