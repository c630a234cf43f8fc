"""`--show-flow`: under a finding whose evidence is elsewhere, one `via PATH:LINE:COL:
MESSAGE` line per step, in text and full output; nothing changes without the flag, and
GitHub annotations stay one line per finding."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from dtype_lint.core.engine import lint_source
from dtype_lint.core.finding import CellMap, Finding, Step
from dtype_lint.core.ruledoc import CONFIRM as CONFIRM_BY_FAMILY
from dtype_lint.frontends import formats
from dtype_lint.project.cache import Cache
from dtype_lint.project.config import Config, load_config
from dtype_lint.rules.selection import Selected

HAZARD = "import torch\ndef f(x, dtype=torch.float32):\n    return x\n"
FLOW = (Step("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__"),
        Step("nets/base.py", 12, 1, "Scorer derives from torch.nn.Module"))
VIA = ["    via nets/heads.py:31:9: lambda stored by Scorer.__init__",
       "    via nets/base.py:12:1: Scorer derives from torch.nn.Module"]
# The last line says how to confirm an F1 finding at run time.
CONFIRM = "    confirm: " + CONFIRM_BY_FAMILY["1"][0]


def hazard(path: str = "train.py", flow: tuple[Step, ...] = FLOW, confidence: str = "high") -> Finding:
    (found,) = lint_source(HAZARD, path, Selected(("DTL101",)), Config().options)
    return dataclasses.replace(found, flow=flow, confidence=confidence)


def render(fmt: str, findings: list[Finding], show_flow: bool) -> list[str]:
    out = io.StringIO()
    formats.write(fmt, findings, [], out, lambda path: HAZARD.splitlines(), show_flow=show_flow)
    return out.getvalue().splitlines()


def test_text_shows_a_via_line_per_step_in_order():
    first, *rest = render("text", [hazard(), hazard("other.py", flow=())], show_flow=True)
    assert first.startswith("train.py:2:16: DTL101 ")
    assert rest[:3] == VIA + [CONFIRM]
    assert rest[3].startswith("other.py:2:16: DTL101 ") and rest[4:] == [CONFIRM]


def test_full_puts_the_via_lines_after_the_snippet():
    _, line, caret, *via = render("full", [hazard()], show_flow=True)
    assert line.endswith("def f(x, dtype=torch.float32):") and "^" in caret
    assert via == VIA + [CONFIRM]


def test_a_finding_below_high_says_what_its_confidence_rests_on():
    (found,) = lint_source(HAZARD, "train.py", Selected(("DTL101",)), Config().options)
    assert found.confidence == "medium"  # a plain function's default: its meeting the activations is assumed
    _, *lines = render("text", [dataclasses.replace(found, flow=FLOW)], show_flow=True)
    assert lines == VIA + [f"    confidence: medium: {found.basis}", CONFIRM]
    assert render("text", [found], show_flow=False) == render("text", [found], show_flow=False)[:1]


def test_without_the_flag_nothing_changes():
    for fmt in ("text", "full", "github"):
        assert render(fmt, [hazard()], show_flow=False) == render(fmt, [hazard(flow=())], show_flow=False)


def test_github_annotations_stay_one_line_per_finding():
    assert render("github", [hazard()], show_flow=True) == render("github", [hazard(flow=())], show_flow=False)


def test_a_step_in_the_notebooks_own_cells_is_placed_in_its_cell():
    cells = CellMap(cells=(1, 4), starts=(1, 3))  # cell 1 is module lines 1-2, cell 4 from line 3
    notebook = dataclasses.replace(hazard("exp.ipynb"), cells=cells,
                                   flow=(Step("exp.ipynb", 2, 5, "Net defined"), Step("lib.py", 3, 1, "helper")))
    assert render("text", [notebook], show_flow=True)[1:] == ["    via exp.ipynb:cell 1:2:5: Net defined",
                                                             "    via lib.py:3:1: helper", CONFIRM]


def test_the_cli_prints_the_flow_of_a_finding(cli, tmp_path: Path):
    """End to end, with a finding the engine would give a flow: seeded into the cache, as
    a warm run reads it. (The key is the CLI's: the config's fingerprint and the
    prefilter; were it to change, the file would be linted afresh and this fail.)"""
    (tmp_path / "pyproject.toml").write_text("[tool.dtype-lint]\n")
    path = tmp_path / "train.py"
    path.write_text(HAZARD)
    cache = Cache(str(tmp_path / "cache"), f"{load_config(tmp_path / 'pyproject.toml').fingerprint()}\0prefilter=True")
    cache.put(cache.key(str(path), path.read_bytes()), [hazard(str(path), confidence="medium")])
    run = ("check", str(path), "--cache-dir", str(tmp_path / "cache"), "-q")
    assert cli(*run, "--show-flow").out.splitlines()[1:] == VIA + [
        f"    confidence: medium: {hazard().basis}", CONFIRM]
    assert len(cli(*run).out.splitlines()) == 1
