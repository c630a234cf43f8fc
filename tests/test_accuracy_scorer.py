"""The accuracy benchmark's scoring path on a tiny synthetic corpus (no download).

The shared scorer (``<repo>/../shared/corpus/score.py``) is called as the benchmark
calls it; the test is skipped where it is absent.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import ROOT

SCORER = ROOT.parent / "shared" / "corpus" / "score.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def corpus(tmp_path):
    """One package, one labelled file: two hazards (F1, F2), one benign look-alike (F1)."""
    package = tmp_path / "corpus" / "toypkg-1.0" / "toypkg"
    package.mkdir(parents=True)
    (package / "layers.py").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    files = tmp_path / "files.txt"
    files.write_text("toypkg==1.0\ttoypkg-1.0\ttoypkg/layers.py\n")
    labels = tmp_path / "labels.jsonl"
    records = [
        {"line": 3, "family": "F1", "verdict": "hazard"},
        {"line": 10, "family": "F1", "verdict": "benign"},
        {"line": 15, "family": "F2", "verdict": "hazard"},
    ]
    labels.write_text("".join(
        json.dumps({"pkg": "toypkg==1.0", "dist_dir": "toypkg-1.0", "path": "toypkg/layers.py",
                    "reason": f"synthetic {r['verdict']}", "source": "regex", **r}) + "\n"
        for r in records
    ))
    return tmp_path / "corpus", files, labels


@pytest.mark.skipif(not SCORER.is_file(), reason="the shared corpus tools are not here")
def test_scorer_output_becomes_the_table_and_the_listing(corpus, tmp_path):
    corpus_dir, files, labels = corpus
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps([
        {"path": "toypkg-1.0/toypkg/layers.py", "line": 4, "code": "DTL101"},   # the F1 hazard, one line off
        {"path": "toypkg-1.0/toypkg/layers.py", "line": 10, "code": "DTL103"},  # the benign look-alike
        {"path": "toypkg-1.0/toypkg/layers.py", "line": 19, "code": "DTL301"},  # an unlabelled F3 line
    ]))
    bench = _benchmark()
    result = bench.run_scorer(SCORER, corpus_dir, findings, tmp_path / "score.json", labels=labels, files=files)

    f1, f2, f3 = (result["families"][f] for f in ("F1", "F2", "F3"))
    assert (f1["hazards"], f1["tp"], f1["fn"], f1["fp_labels"]) == (1, 1, 0, 1)
    assert (f2["hazards"], f2["tp"], f2["fn"]) == (1, 0, 1)
    assert f3["unlabelled_findings"] == 1

    rows = {line.split()[0]: line.split() for line in bench.build_table(result).splitlines()}
    assert rows["family"][:8] == ["family", "hazards", "found", "missed", "FP", "benign", "unlabelled", "precision"]
    assert rows["F1"][1:8] == ["1", "1", "0", "1", "0", "0.500", "1.000"]
    assert rows["F2"][1:4] == ["1", "0", "1"] and rows["F2"][-2:] == ["below", "0.90"]

    listing = bench.build_listing(result, unlabelled=True).splitlines()
    assert "F1 false-pos  toypkg-1.0/toypkg/layers.py:10 [DTL103]  synthetic benign" in listing
    assert "F2 missed     toypkg-1.0/toypkg/layers.py:15  synthetic hazard" in listing
    assert "F3 unlabelled toypkg-1.0/toypkg/layers.py:19 [DTL301]" in listing


def test_listed_files_reads_the_corpus_file_list(tmp_path):
    (tmp_path / "files.txt").write_text("# comment\na==1\ta-1\ta/x.py\n\nb==2\tb-2\tb/y.py\n")
    assert _benchmark().listed_files(tmp_path) == ["a-1/a/x.py", "b-2/b/y.py"]
