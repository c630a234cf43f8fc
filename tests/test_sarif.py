"""SARIF for GitHub code scanning: rule metadata with a `helpUri` at the rule's page of
the documentation site, fingerprints that follow a finding when lines move, code flows
for findings whose evidence is elsewhere, and every log valid under the official OASIS
schema (tests/data/)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES
from dtype_lint.core.finding import CellMap, Edit, FileError, Finding, Fix, Step
from dtype_lint.frontends import formats
from dtype_lint.core.ruledoc import SITE_URL
from dtype_lint.rules.registry import RULES_BY_CODE

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"


def sarif(cli, *paths):
    return json.loads(cli("check", "--no-cache", "--output-format", "sarif", *map(str, paths)).out)


def fingerprints(log):
    return [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
             r["partialFingerprints"]["primaryLocationLineHash"]) for r in log["runs"][0]["results"]]


def test_rules_have_descriptions_level_and_a_site_help_uri(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    rules = sarif(cli, tmp_path)["runs"][0]["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == set(RULES_BY_CODE)
    for rule in rules:
        doc = RULES_BY_CODE[rule["id"]].doc
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["helpUri"] == f"{SITE_URL}rules/{rule['id'].lower()}-{doc.name}/"
        assert rule["defaultConfiguration"]["level"] == ("error" if doc.default_enabled else "none")


def test_fingerprint_survives_lines_inserted_above(cli, tmp_path):
    path = tmp_path / "a.py"
    path.write_text(HAZARD)
    [(code, line, before)] = fingerprints(sarif(cli, path))
    path.write_text("# a new header\n\n\nimport os\n" + HAZARD.replace("def f", "def  f"))
    [(code_after, line_after, after)] = fingerprints(sarif(cli, path))
    assert (code_after, line_after) == (code, line + 4)
    assert after == before


def test_fingerprint_changes_with_the_line_and_counts_identical_lines(cli, tmp_path):
    path = tmp_path / "a.py"
    path.write_text(HAZARD)
    [(_, _, one)] = fingerprints(sarif(cli, path))
    path.write_text(HAZARD.replace("(x, dtype", "(y, dtype"))
    [(_, _, other)] = fingerprints(sarif(cli, path))
    assert other != one
    path.write_text(HAZARD + "class A:\n" + "".join("    " + l + "\n" for l in HAZARD.splitlines()[1:]))
    hashes = [h for _, _, h in fingerprints(sarif(cli, path))]
    assert len(hashes) == 2 and hashes[0].split(":")[0] == hashes[1].split(":")[0]
    assert [h.split(":")[1] for h in hashes] == ["1", "2"]


def test_stdin_fingerprints_use_the_text_read(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    from_file = fingerprints(sarif(cli, tmp_path / "a.py"))[0][2]
    result = cli("check", "-", "--stdin-filename", "elsewhere.py", "--output-format", "sarif", stdin=HAZARD.encode())
    assert fingerprints(json.loads(result.out))[0][2] == from_file


# -- code flows, and the whole log against the official schema ---------------------------

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
NOTEBOOK_CELLS = CellMap(cells=(1, 3), starts=(1, 5))  # cell 1 is module lines 1-3, cell 3 from line 5


def validator() -> jsonschema.Draft4Validator:
    """The OASIS schema (draft 4), with formats checked: every artifact's `uri` must be a
    URI reference, which only a format checker sees (rfc3986-validator)."""
    checker = jsonschema.FormatChecker()
    assert "uri-reference" in checker.checkers, "install rfc3986-validator (the test extra)"
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    return jsonschema.Draft4Validator(SCHEMA, format_checker=checker)


def finding(path: str, line: int, flow: tuple[Step, ...] = (), cells: CellMap | None = None,
            fix: Fix | None = None) -> Finding:
    return Finding(path, line, 5, line, 18, "DTL204", "unpicklable-callable-on-module", f"hazard at {line}",
                   fix=fix, cells=cells, flow=flow)


def constructed_log(site_packages: Path) -> dict:
    """Findings with and without flows (a step in an installed package, by absolute
    path; one in a folder whose name has a space), a notebook's finding with a step in
    its own cells, a fix, and file errors with and without a place."""
    findings = [
        finding("train.py", 40, flow=(Step("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__"),
                                      Step("nets/base.py", 12, 1, "Scorer derives from torch.nn.Module"))),
        finding("train.py", 52, flow=(Step(str(site_packages / "timm" / "models" / "vit.py"), 7, 3,
                                           "helper cast_model casts its parameter `model`"),
                                      Step("my utils/precision.py", 8, 5, "cast_model called here"))),
        finding("train.py", 60, fix=Fix("safe", (Edit(60, 5, 60, 18, "x"),))),
        finding("exp.ipynb", 7, cells=NOTEBOOK_CELLS, flow=(Step("exp.ipynb", 2, 1, "Net defined in cell 1"),)),
    ]
    errors = [FileError("broken.py", "syntax error: invalid syntax", 3, 4),
              FileError("nb.ipynb", "syntax error: unexpected indent", 2, 1, cell=2),
              FileError("gone.py", "cannot read: Permission denied")]
    return formats.sarif(findings, errors, lambda path: [])


def results(log: dict) -> list[dict]:
    return log["runs"][0]["results"]


def test_log_with_flows_notebooks_and_errors_is_valid_sarif(tmp_path):
    validator().validate(constructed_log(tmp_path / "site-packages"))


def test_cli_log_of_files_notebooks_and_a_broken_notebook_is_valid_sarif(cli, tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    paths = [tmp_path, FIXTURES / "nb_float32.ipynb", FIXTURES / "broken" / "nb_broken_cells.ipynb"]
    log = sarif(cli, *paths)
    assert {r["ruleId"] for r in results(log)} and log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    validator().validate(log)


def _flat_location(log: dict) -> None:
    """A thread flow location that is the location itself, not {"location": ...}."""
    flow = results(log)[0]["codeFlows"][0]["threadFlows"][0]
    flow["locations"] = [entry["location"] for entry in flow["locations"]]


def _no_thread_flows(log: dict) -> None:
    results(log)[0]["codeFlows"] = [{"locations": []}]


def _string_id(log: dict) -> None:
    results(log)[0]["relatedLocations"][0]["id"] = "1"


def _raw_path_uri(log: dict) -> None:
    results(log)[1]["relatedLocations"][1]["physicalLocation"]["artifactLocation"]["uri"] = "my utils/precision.py"


@pytest.mark.parametrize("damage", [_flat_location, _no_thread_flows, _string_id, _raw_path_uri])
def test_a_malformed_code_flow_fails_validation(damage, tmp_path):
    log = constructed_log(tmp_path / "site-packages")
    damage(log)
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(log)


def test_code_flow_walks_the_steps_then_the_finding(tmp_path):
    site_packages = tmp_path / "site-packages"
    first, second, _, notebook = results(constructed_log(site_packages))

    def places(locations):
        return [(place["physicalLocation"]["artifactLocation"]["uri"], place["physicalLocation"]["region"]["startLine"],
                 place["physicalLocation"]["region"]["startColumn"], place["message"]["text"]) for place in locations]

    (code_flow,) = first["codeFlows"]
    (thread_flow,) = code_flow["threadFlows"]
    assert places(entry["location"] for entry in thread_flow["locations"]) == [
        ("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__"),
        ("nets/base.py", 12, 1, "Scorer derives from torch.nn.Module"),
        ("train.py", 40, 5, "hazard at 40"),
    ]
    assert [place["id"] for place in first["relatedLocations"]] == [1, 2]
    assert places(first["relatedLocations"]) == places(entry["location"] for entry in thread_flow["locations"])[:2]
    # An installed package's file by a file URI; a space percent-encoded.
    assert [uri for uri, *_ in places(second["relatedLocations"])] == [
        (site_packages / "timm" / "models" / "vit.py").as_uri(), "my%20utils/precision.py"]
    # A step in the notebook's own cells is placed in its cell, as the finding is.
    in_cells = [(entry["location"]["physicalLocation"]["region"]["startLine"], entry["location"]["properties"])
                for entry in notebook["codeFlows"][0]["threadFlows"][0]["locations"]]
    assert in_cells == [(2, {"cell": 1}), (3, {"cell": 3})]


def test_a_finding_without_flow_has_no_code_flow(tmp_path):
    third = results(constructed_log(tmp_path / "site-packages"))[2]
    assert "codeFlows" not in third and "relatedLocations" not in third and third["fixes"]


def test_uris_are_relative_references_or_file_uris(cli, tmp_path):
    folder = tmp_path / "my models"
    folder.mkdir()
    (folder / "a.py").write_text(HAZARD)
    relative = json.loads(cli("check", "--no-cache", "--output-format", "sarif", "my models/a.py", cwd=tmp_path).out)
    absolute = sarif(cli, folder / "a.py")
    uri = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results(relative)]
    assert uri == ["my%20models/a.py"]
    uri = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results(absolute)]
    assert uri == [(folder / "a.py").as_uri()]


def test_results_carry_their_confidence_and_rules_their_measured_precision(cli):
    log = json.loads(cli("check", str(FIXTURES), "--output-format", "sarif", "--min-confidence", "low").out)
    run = log["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    levels = {"high": "error", "medium": "warning", "low": "note"}
    for result in run["results"]:
        confidence = result["properties"]["confidence"]
        assert result["level"] == levels[confidence] and result["properties"]["basis"]
    assert {r["properties"]["confidence"] for r in run["results"]} == {"low", "medium", "high"}
    # CodeQL's rule-level precision, where measured (docs/accuracy.md); absent where not.
    assert rules["DTL101"]["properties"]["precision"] == "very-high"
    assert "precision" not in rules["DTL102"]["properties"]
