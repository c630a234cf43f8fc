"""SARIF for GitHub code scanning: rule metadata with a `helpUri` at the rule's page of
the documentation site, and
fingerprints that follow a finding when lines move."""

from __future__ import annotations

import json

from dtype_lint.rules.catalog import SITE_URL
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
