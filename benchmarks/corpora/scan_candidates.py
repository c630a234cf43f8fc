#!/usr/bin/env python3
"""Candidate lines that a labelled set labels exhaustively, one family at a time.

    python3 scan_candidates.py ROOT FILES.txt                 # candidates as JSON lines
    python3 scan_candidates.py ROOT FILES.txt --check LABELS  # every candidate labelled once?

ROOT holds the unpacked distributions (``ROOT/<dist_dir>/<path>``); FILES.txt lists the
labelled files as ``pkg==ver<TAB>dist_dir<TAB>path``. Text after ``#`` is ignored unless the
line starts with a quote. The patterns are deliberately broad: a labelled set holds hazards
and look-alikes alike. Beyond the float32 tokens of the older corpora, F1 also takes every
way torch's float32 gets in without the token: ``.float()``, ``FloatTensor``, and creation
calls whose arguments name no dtype (torch's default dtype decides).
"""
import json
import re
import sys

F1_TOKENS = re.compile(r"\bfloat32\b|torch\.float\b(?!\d)|\.float\(\s*\)|\bFloatTensor\b|\bfrom_numpy\s*\(")
# A creation call that names no dtype in its arguments (checked up to its closing bracket).
F1_CREATION = re.compile(r"\btorch\.(ones|zeros|full|empty|arange|linspace|logspace|rand|randn|tensor|as_tensor|eye)\s*\(")
F2 = [
    re.compile(r"(^|[(,=:\[])\s*lambda\b|\breturn\s+lambda\b"),
    re.compile(r"\bspawn\s*\(|start_method|get_context\s*\("),
    re.compile(r"\bProcess\s*\(|\bPool\s*\(|ProcessPoolExecutor|\.(imap|imap_unordered|starmap|map_async|apply_async)\s*\("),
    re.compile(r"\bcollate_fn\s*=|\bworker_init_fn\s*=|\bDataLoader\s*\("),
    re.compile(r"register_\w*hook\s*\(|output_transform|\bLambdaLR\s*\(|\bMethodType\s*\("),
    re.compile(r"\b(pool|p|executor)\.(map|starmap|submit)\s*\(", re.I),
]
F3 = [
    re.compile(r"\.(half|bfloat16|double)\s*\(\s*\)"),
    re.compile(r"\.to\([^)]*\b(float16|bfloat16|half|float64|double)\b"),
    re.compile(r"\.type\(\s*torch\.(float16|half|bfloat16|float64|double)"),
    re.compile(r"(model|module|net|encoder|decoder|unet|vae|pipe|pipeline|generator|vocoder|adapter|lora)\w*"
               r"\s*\.to\(\s*(dtype\s*=\s*)?[\w.]*dtype\w*\s*\)", re.I),
    re.compile(r"cast_to_(param|compute|output)|tree_map\(.*astype|tree\.map\(.*astype"),
]
TREE = re.compile(r"tree_map|tree_multimap|tree\.map|tree_util\.tree_map")
CAST = re.compile(r"\.astype\(|\.to\(|\.half\(|\.bfloat16\(|(asarray|np\.array)\(.*dtype")


def code_part(raw):
    return raw if raw.strip().startswith(("'", '"')) else raw.split("#")[0]


def call_text(text, start):
    """The text of the call whose opening bracket ends at ``start``, to its closing bracket."""
    depth = 1
    for i in range(start, min(len(text), start + 3000)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:start + 3000]


def scan_text(text):
    lines = text.split("\n")
    offsets, pos = [], 0
    for raw in lines:
        offsets.append(pos)
        pos += len(raw) + 1
    out = []
    for i, raw in enumerate(lines):
        s = code_part(raw)
        fams = []
        f1 = bool(F1_TOKENS.search(s))
        if not f1:
            for m in F1_CREATION.finditer(s):
                if "dtype" not in call_text(text, offsets[i] + m.end()):
                    f1 = True
                    break
        if f1:
            fams.append("F1")
        if any(p.search(s) for p in F2):
            fams.append("F2")
        if any(p.search(s) for p in F3) or (CAST.search(s) and TREE.search("\n".join(lines[max(0, i - 2):i + 1]))):
            fams.append("F3")
        out.extend((i + 1, f) for f in fams)
    return out


def candidates(root, files):
    cands = set()
    for row in open(files, encoding="utf-8"):
        if not row.strip() or row.startswith("#"):
            continue
        pkg, dist_dir, path = row.rstrip("\n").split("\t")
        text = open(f"{root}/{dist_dir}/{path}", encoding="utf-8", errors="replace").read()
        cands.update((pkg, path, line, fam) for line, fam in scan_text(text))
    return cands


def main(argv):
    root, files = argv[1], argv[2]
    cands = candidates(root, files)
    if "--check" not in argv:
        for pkg, path, line, fam in sorted(cands):
            print(json.dumps({"pkg": pkg, "path": path, "line": line, "family": fam}))
        return 0
    labels = [json.loads(l) for l in open(argv[argv.index("--check") + 1], encoding="utf-8") if l.strip()]
    regex = {(r["pkg"], r["path"], r["line"], r["family"]) for r in labels if r["source"] == "regex"}
    print(f"candidates: {len(cands)}  regex labels: {len(regex)}  manual labels: {len(labels) - len(regex)}")
    print("unlabelled candidates:", sorted(cands - regex))
    print("regex labels that are not candidates:", sorted(regex - cands))
    return 0 if cands == regex else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
