"""The documentation site: the real `mkdocs build --strict` (warnings, broken links between
pages included, are errors) builds every page that the rules' `help_uri` and the
README's links point at; the README stays short and its own anchors resolve."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT
from dtype_lint.core.ruledoc import SITE_URL
from dtype_lint.rules.registry import all_docs

README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    folder = tmp_path_factory.mktemp("site")
    # from the project's root: the home page includes a part of README.md by that path
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return folder


def built(site, url: str):
    """The file the site serves at ``url`` (a page's folder is served as its index.html)."""
    assert url.startswith(SITE_URL), url
    path = url.removeprefix(SITE_URL).split("#")[0]
    return site / path / "index.html" if path.endswith("/") or not path else site / path


def test_every_rule_help_uri_is_a_built_page(site):
    for doc in all_docs().values():
        page = built(site, doc.help_uri)
        assert page.is_file(), doc.help_uri
        assert f"{doc.code} {doc.name}" in page.read_text(encoding="utf-8")


def test_the_site_url_is_the_one_the_help_uris_use():
    assert re.search(rf"^site_url: {re.escape(SITE_URL)}$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)


def test_readme_links_into_the_site_are_built_pages(site):
    links = re.findall(rf"\]\(({re.escape(SITE_URL)}[^)]*)\)", README)
    assert len(links) > len(all_docs())  # the rules table and the pages named in the README
    for url in links:
        assert built(site, url).is_file(), url


def test_home_page_includes_the_readme_overview(site):
    assert "Pickling hazards (" in (site / "index.html").read_text(encoding="utf-8")


def test_readme_is_short_and_its_anchors_are_its_own_headings():
    assert len(README.splitlines()) < 400
    headings = {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in README.splitlines() if line.startswith("#")}
    anchors = re.findall(r"\]\(#([^)]+)\)", README)
    assert anchors and set(anchors) <= headings
