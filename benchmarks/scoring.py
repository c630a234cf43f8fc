"""Score findings against a labelled set, by the team's rules (standard library only).

A labelled set is a folder with ``files.txt`` (``pkg==ver<TAB>dist_dir<TAB>path``, the files
labelled exhaustively) and ``labels.jsonl`` (one label per line: pkg, dist_dir, path, line,
family, verdict, reason, source, optional ``dup_of``); ``judged.jsonl``, where present, holds
outside readers' verdicts on lines the labels left out, in the same form.

The rules (those behind the team's tables, stricter than each corpus's own ``score.py``):

* a finding counts for the family its code's prefix maps to (``DTL1`` -> F1 ...);
* it goes to the nearest label of its family in the same file within ``tolerance`` lines (a
  finding sits on a statement's first line, a label on the offending token; a hazard wins a
  tie); a finding on a ``dup_of`` label hits that label's primary hazard;
* recall: primary hazards hit / primary hazards; a label whose reason ends "(low
  confidence)" is left out with ``drop_low``;
* a false alarm is a benign label flagged (counted once per label) or a finding on an
  unlabelled line of a labelled file (counted once per line), until an outside reader judges
  it; precision = hits / (hits + false alarms).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

FAMILIES = {"DTL1": "F1", "DTL2": "F2", "DTL3": "F3"}


@dataclasses.dataclass
class Label:
    key: tuple[str, str]  # (dist_dir/path, family)
    line: int
    hazard: bool
    reason: str
    dup_of: int | None = None

    @property
    def low(self) -> bool:
        return self.reason.rstrip(". ").endswith("(low confidence)")


@dataclasses.dataclass
class FamilyScore:
    hazards: int = 0
    tp: int = 0
    false_labels: int = 0  # benign labels flagged
    unlabelled: int = 0  # findings on unlabelled lines (distinct lines)
    missed: list = dataclasses.field(default_factory=list)
    false_alarms: list = dataclasses.field(default_factory=list)

    @property
    def fp(self) -> int:
        return self.false_labels + self.unlabelled

    @property
    def precision(self) -> float:
        flagged = self.tp + self.fp
        return self.tp / flagged if flagged else math.nan

    @property
    def recall(self) -> float:
        return self.tp / self.hazards if self.hazards else math.nan


def listed_files(folder: Path) -> list[str]:
    """``<dist_dir>/<path>`` of every file labelled exhaustively."""
    out = []
    for raw in (folder / "files.txt").read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            _, dist_dir, path = raw.split("\t")
            out.append(f"{dist_dir}/{path}")
    return out


def load_labels(folder: Path, judged: Path | None = None) -> list[Label]:
    """The set's labels, and outside readers' verdicts on lines they left out (the set's
    ``judged.jsonl``, and ``judged`` where the set's own folder is not ours to write)."""
    labels = []
    for path in (folder / "labels.jsonl", folder / "judged.jsonl", judged):
        if path is None or not path.is_file():
            continue
        for raw in path.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                record = json.loads(raw)
                labels.append(Label((f"{record['dist_dir']}/{record['path']}", record["family"]), int(record["line"]),
                                    record["verdict"] == "hazard", record.get("reason", ""), record.get("dup_of")))
    return labels


def family_of(code: str) -> str | None:
    return next((family for prefix, family in FAMILIES.items() if code.startswith(prefix)), None)


def score(folder: Path, findings: list[dict], tolerance: int = 2, drop_low: bool = False,
          min_confidence: str | None = None, judged: Path | None = None) -> dict[str, FamilyScore]:
    """Per family, the score of ``findings`` (``path`` relative to the corpus root, ``line``,
    ``code``, optional ``confidence``) on the labelled set in ``folder``."""
    listed = set(listed_files(folder))
    labels = [label for label in load_labels(folder, judged) if not (drop_low and label.low)]
    by_key: dict[tuple[str, str], list[Label]] = {}
    for label in labels:
        by_key.setdefault(label.key, []).append(label)
    scores = {family: FamilyScore() for family in sorted(set(FAMILIES.values()))}
    primaries = {(label.key, label.line): label for label in labels if label.dup_of is None}
    for label in primaries.values():
        if label.hazard:
            scores[label.key[1]].hazards += 1
    hit: set[tuple[tuple[str, str], int]] = set()
    flagged_benign: set[tuple[tuple[str, str], int]] = set()
    unlabelled: set[tuple[tuple[str, str], int]] = set()
    order = ("low", "medium", "high")
    for finding in findings:
        family = family_of(finding["code"])
        if family is None or finding["path"] not in listed:
            continue
        if min_confidence and order.index(finding.get("confidence", "high")) < order.index(min_confidence):
            continue
        key, line = (finding["path"], family), int(finding["line"])
        near = [label for label in by_key.get(key, ()) if abs(label.line - line) <= tolerance]
        if not near:
            if (key, line) not in unlabelled:
                unlabelled.add((key, line))
                scores[family].false_alarms.append(f"{finding['path']}:{line} [{finding['code']}] unlabelled")
            continue
        best = min(near, key=lambda label: (abs(label.line - line), not label.hazard))
        if best.hazard:
            target = best.dup_of if best.dup_of is not None else best.line
            hit.add((key, target))
        elif (key, best.line) not in flagged_benign:
            flagged_benign.add((key, best.line))
            scores[family].false_alarms.append(f"{finding['path']}:{line} [{finding['code']}] benign: {best.reason}")
    for (key, line), label in sorted(primaries.items()):
        if not label.hazard:
            continue
        if (key, line) in hit:
            scores[key[1]].tp += 1
        else:
            scores[key[1]].missed.append(f"{key[0]}:{line}  {label.reason}")
    for key, _ in flagged_benign:
        scores[key[1]].false_labels += 1
    for key, _ in unlabelled:
        scores[key[1]].unlabelled += 1
    return scores


def table(scores: dict[str, FamilyScore]) -> str:
    rows = [("family", "hazards", "found", "missed", "FP benign", "FP unlabelled", "precision", "recall")]
    for family, s in scores.items():
        rows.append((family, str(s.hazards), str(s.tp), str(len(s.missed)), str(s.false_labels), str(s.unlabelled),
                     f"{s.precision:.3f}", f"{s.recall:.3f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)


def union(results: list[dict[str, FamilyScore]]) -> dict[str, FamilyScore]:
    out = {family: FamilyScore() for family in sorted(set(FAMILIES.values()))}
    for result in results:
        for family, s in result.items():
            total = out[family]
            total.hazards += s.hazards
            total.tp += s.tp
            total.false_labels += s.false_labels
            total.unlabelled += s.unlabelled
            total.missed += s.missed
            total.false_alarms += s.false_alarms
    return out
