"""Fetch a labelled set's pinned distributions from PyPI and unpack them (standard library
only; nothing is installed or built).

    python benchmarks/corpora/fetch.py benchmarks/corpora/set-e DEST

``entries.txt`` in the set's folder lists one distribution per line as
``spec|kind|archive|sha256|dist_dir``: ``kind`` is ``sdist`` (unpacked from the archive's top
folder) or ``wheel`` (a pure-Python wheel, unpacked as it is). Each archive is found through
PyPI's Simple API (``PIP_INDEX_URL`` or pypi.org; no metadata is prepared, so an sdist whose setup imports torch is fetched
all the same), downloaded, checked against its sha256 and unpacked into
``DEST/<dist_dir>/``, so that every ``dist_dir/path`` of ``files.txt`` and ``labels.jsonl``
resolves under DEST. A distribution already unpacked is left as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

INDEX = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


def entries(folder: Path) -> list[list[str]]:
    lines = (folder / "entries.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("|") for line in lines if line.strip() and not line.startswith("#")]


def download(spec: str, archive: Path) -> None:
    name = spec.split("==")[0]
    # The Simple API's JSON form (PEP 691): every file of the project, with its URL.
    request = urllib.request.Request(f"{INDEX}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        project = json.load(response)
    url = next((f["url"] for f in project["files"] if f["filename"] == archive.name), None)
    if url is None:
        sys.exit(f"{spec}: PyPI lists no {archive.name}")
    with urllib.request.urlopen(url, timeout=300) as response, open(archive, "wb") as out:
        shutil.copyfileobj(response, out)


def unpack(archive: Path, kind: str, target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        if kind == "sdist":
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
            (top,) = Path(tmp).iterdir()  # an sdist holds one folder, `name-version/`
            shutil.move(str(top), target)
        else:
            with zipfile.ZipFile(archive) as wheel:
                wheel.extractall(tmp)
            shutil.move(tmp, target)
            Path(tmp).mkdir()  # for the context manager's cleanup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the labelled set (its entries.txt)")
    parser.add_argument("dest", type=Path, help="where the distributions are unpacked")
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    downloads = args.dest / "_downloads"
    downloads.mkdir(exist_ok=True)
    for spec, kind, archive_name, sha256, dist_dir in entries(args.folder):
        target = args.dest / dist_dir
        if target.is_dir():
            continue
        archive = downloads / archive_name
        if not archive.is_file():
            print(f">> {spec}", file=sys.stderr)
            download(spec, archive)
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != sha256:
            sys.exit(f"{archive_name}: sha256 {digest}, expected {sha256}")
        unpack(archive, kind, target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
