"""The accuracy benchmark's scoring rules (benchmarks/scoring.py) and its choice of the
default level (benchmarks/accuracy.py), on a tiny synthetic labelled set (no download)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys

import pytest

from conftest import ROOT


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


scoring = _load("scoring")

PATH = "toypkg-1.0/toypkg/layers.py"


@pytest.fixture
def labelled(tmp_path):
    """One labelled file: two F1 hazards (one with a duplicate site), one benign F1
    look-alike, one F2 hazard."""
    (tmp_path / "files.txt").write_text("toypkg==1.0\ttoypkg-1.0\ttoypkg/layers.py\n")
    records = [
        {"line": 3, "family": "F1", "verdict": "hazard"},
        {"line": 10, "family": "F1", "verdict": "benign"},
        {"line": 15, "family": "F2", "verdict": "hazard"},
        {"line": 30, "family": "F1", "verdict": "hazard"},
        {"line": 40, "family": "F1", "verdict": "hazard", "dup_of": 30},
    ]
    (tmp_path / "labels.jsonl").write_text("".join(
        json.dumps({"pkg": "toypkg==1.0", "dist_dir": "toypkg-1.0", "path": "toypkg/layers.py",
                    "reason": f"synthetic {r['verdict']}", "source": "regex", **r}) + "\n" for r in records))
    return tmp_path


def finding(line, code, confidence="high", path=PATH):
    return {"path": path, "line": line, "code": code, "confidence": confidence}


def test_a_finding_goes_to_the_nearest_label_of_its_family_within_two_lines(labelled):
    scores = scoring.score(labelled, [finding(5, "DTL101"), finding(12, "DTL103"), finding(41, "DTL102")])
    f1 = scores["F1"]
    # line 5 hits the hazard at 3; line 12 the benign label at 10; line 41 the duplicate of 30.
    assert (f1.hazards, f1.tp, f1.false_labels, f1.unlabelled) == (2, 2, 1, 0)
    assert f1.precision == pytest.approx(2 / 3) and f1.recall == 1.0
    assert scores["F2"].missed == [f"{PATH}:15  synthetic hazard"]


def test_an_unlabelled_line_is_a_false_alarm_until_an_outside_reader_judges_it(labelled, tmp_path):
    findings = [finding(20, "DTL301"), finding(20, "DTL303"), finding(3, "DTL101", path="other/file.py")]
    scores = scoring.score(labelled, findings)
    assert scores["F3"].unlabelled == 1  # one line, however many codes; unlisted files do not count
    judged = tmp_path / "judged.jsonl"
    judged.write_text(json.dumps({"dist_dir": "toypkg-1.0", "path": "toypkg/layers.py", "line": 20,
                                  "family": "F3", "verdict": "hazard", "reason": "judged real"}) + "\n")
    scores = scoring.score(labelled, findings, judged=judged)
    assert (scores["F3"].tp, scores["F3"].unlabelled, scores["F3"].hazards) == (1, 0, 1)


def test_min_confidence_drops_the_findings_below_it(labelled):
    findings = [finding(3, "DTL101", "low"), finding(10, "DTL101", "medium")]
    assert scoring.score(labelled, findings, min_confidence="low")["F1"].tp == 1
    medium = scoring.score(labelled, findings, min_confidence="medium")["F1"]
    assert (medium.tp, medium.false_labels) == (0, 1)


def test_the_default_is_the_lowest_level_that_passes_on_every_development_set(labelled):
    accuracy = _load("accuracy")
    low_noise = [finding(3, "DTL101", "high"), finding(10, "DTL103", "low"), finding(12, "DTL103", "low")]
    levels = {level: {"x": scoring.score(labelled, low_noise, min_confidence=level),
                      "y": scoring.score(labelled, [finding(3, "DTL101")], min_confidence=level)}
              for level in accuracy.LEVELS}
    assert not accuracy.passes(levels["low"]["x"])  # one hit, one benign label flagged
    assert accuracy.default_level(levels, ["x", "y"]) == "medium"
    noisy = {level: {"x": scoring.score(labelled, [finding(10, "DTL103")], min_confidence=level)}
             for level in accuracy.LEVELS}
    assert accuracy.default_level(noisy, ["x"]) is None
    assert math.isnan(scoring.score(labelled, [])["F3"].precision)


def test_listed_files_reads_the_file_list(tmp_path):
    (tmp_path / "files.txt").write_text("# comment\na==1\ta-1\ta/x.py\n\nb==2\tb-2\tb/y.py\n")
    assert scoring.listed_files(tmp_path) == ["a-1/a/x.py", "b-2/b/y.py"]
