"""Rule metadata shared by the static rules, the runtime checks and every front-end.

A :class:`RuleDoc` carries a code, its name, its family and the docs that
``dtype-lint explain`` prints and the documentation site's rule pages are generated
from. Static rules
(LibCST visitors under :mod:`dtype_lint.rules`) and runtime checks
(:mod:`dtype_lint.runtime.codes`) both describe themselves with one, so a code means
the same thing wherever it is reported.
"""

from __future__ import annotations

import dataclasses
import textwrap

# The documentation site (built by MkDocs from docs/); each rule has a page there.
SITE_URL = "https://dtype-lint.github.io/dtype-lint/"

FAMILIES = {
    "1": "Hardcoded float32",
    "2": "Pickling hazards",
    "3": "Parameter-tree recasting",
}


# How to confirm a static finding of each family at run time, with the runtime module:
# (one line for --show-flow, the snippet for the rule's page and the editor's hover).
CONFIRM = {
    "1": ("run the model under dtype_lint.runtime.guard(model, \"bfloat16\"): DTL191/DTL192 name the module "
          "whose output is float32",
          "from dtype_lint.runtime import guard\n\n"
          "model = model.to(torch.bfloat16)  # or the policy the model trains under\n"
          "with guard(model, \"bfloat16\"):  # raises DTL191/DTL192 naming the module whose output is float32\n"
          "    model(batch)"),
    "2": ("dtype_lint.runtime.assert_picklable(obj) pickles it as spawn and torch.save do and names the culprit",
          "from dtype_lint.runtime import assert_picklable\n\n"
          "assert_picklable(model, \"model\")  # or the dataset, the DataLoader, the process target;\n"
          "# raises DTL291 naming each attribute pickle cannot store: model.head.act: a lambda"),
    "3": ("after the cast runs, dtype_lint.runtime.assert_tree_dtypes(model.state_dict(), \"float32\") names each "
          "recast parameter",
          "from dtype_lint.runtime import assert_tree_dtypes\n\n"
          "assert_tree_dtypes(model.state_dict(), \"float32\")  # or the Flax params and the policy's storage dtype;\n"
          "# raises DTL391 naming each parameter that the cast left in another dtype"),
}


RUNTIME_CONFIDENCE = """
    A runtime check reports a dtype that occurred while the code ran, so its findings
    are always `high`.
    """


@dataclasses.dataclass(frozen=True)
class RuleDoc:
    """Everything a user can read about one code."""

    code: str
    name: str
    summary: str
    what_it_does: str
    why_bad: str
    example: str
    use_instead: str
    fix_safety: str = "This rule has no automatic fix."
    options: str = "None."
    known_limits: str = ""
    kind: str = "static"  # "static" (a lint rule) or "runtime" (a runtime check)
    default_enabled: bool = True
    # Which evidence makes a finding of this rule high, medium or low (core.confidence).
    confidence: str = RUNTIME_CONFIDENCE
    # CodeQL's precision levels (very-high >= 0.95, high >= 0.90, medium >= 0.75, low): what
    # the rule's findings at the default confidence measured on the labelled corpora and
    # the outside readings (docs/accuracy.md); None where no such finding was measured.
    precision: str | None = None
    # What the rule finds, from its declaration (finders, flow, sanitizers; see
    # dtype_lint.core.rule.Rule.describe): filled in by the registry, not written by hand.
    finds: str = ""

    @property
    def family(self) -> str:
        return FAMILIES[self.code[3]]

    @property
    def confirm(self) -> str:
        """One line: how to confirm a finding of this rule at run time."""
        return CONFIRM[self.code[3]][0]

    @property
    def page(self) -> str:
        """The rule's page on the site, relative to it (`rules/dtl101-float32-dtype-default/`:
        from docs/rules/dtl101-float32-dtype-default.md), stable while the name is."""
        return f"rules/{self.code.lower()}-{self.name}/"

    @property
    def help_uri(self) -> str:
        return SITE_URL + self.page

    def markdown(self) -> str:
        """The rule's docs in ruff's layout."""
        parts = [
            f"# {self.name} ({self.code})",
            f"Family: {self.family}. Kind: {self.kind}."
            + ("" if self.default_enabled else " Not enabled by default: select it."),
            "## What it does\n" + _dedent(self.what_it_does),
            *(["## What it finds\n" + self.finds] if self.finds else []),
            "## Why is this bad?\n" + _dedent(self.why_bad),
            "## Example\n```python\n" + _dedent(self.example) + "\n```",
            "## Use instead\n```python\n" + _dedent(self.use_instead) + "\n```",
            "## Fix safety\n" + _dedent(self.fix_safety),
            *(["## How to confirm it\n" + "At run time, with the runtime module ([Runtime checks](../runtime.md)):"
               + "\n```python\n" + CONFIRM[self.code[3]][1] + "\n```"] if self.kind == "static" else []),
            "## Confidence\n" + _dedent(self.confidence) + "\n\n" + (
                _PRECISION.format(self.precision) if self.precision else _UNMEASURED),
            "## Options\n" + _dedent(self.options),
        ]
        if self.known_limits:
            parts.append("## Known limits\n" + _dedent(self.known_limits))
        return "\n\n".join(parts) + "\n"

    def as_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "name": self.name,
            "family": self.family,
            "kind": self.kind,
            "summary": self.summary,
            "default_enabled": self.default_enabled,
            "precision": self.precision,
        }


_PRECISION = ("Precision of its findings at the default `min-confidence` (in the audit mode for a rule that "
              "reports only there), measured on the labelled corpora and by outside readers: **{}** "
              "(CodeQL's scale; see [Accuracy](../accuracy.md)).")
_UNMEASURED = ("No finding of it at the default `min-confidence` has been measured yet on the labelled "
               "corpora or by outside readers (see [Accuracy](../accuracy.md)).")


def _dedent(text: str) -> str:
    return textwrap.dedent(text).strip("\n")
