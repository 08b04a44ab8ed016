"""The documentation site (mkdocs.yml, docs/): it builds with --strict (no broken link, anchor or docstring), its
option tables are the registry's (tools/regen_docs.py regenerates them), and the README links every page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from paimon_ds.options.registry import markdown_table

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def test_options_page_tables_are_current():
    page = (DOCS / "tables" / "options.md").read_text()
    tables = "\n".join(line for line in page.splitlines() if line.startswith("|"))
    # the page's tables are the registry's, row for row: no stale row, none missing
    assert tables == markdown_table(), "regenerate the option tables: python tools/regen_docs.py"


def test_docs_build_strict(tmp_path: Path):
    """`mkdocs build --strict` (what `make docs` runs): a warning of mkdocs, of a link or anchor check, or of
    mkdocstrings rendering a docstring fails the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                          "-d", str(tmp_path / "site")], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    warnings = [line for line in run.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert run.returncode == 0 and not warnings, run.stderr[-4000:]
    assert (tmp_path / "site" / "tables" / "options" / "index.html").exists()


def test_readme_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    linked = set(re.findall(r"\]\((docs/[^)#\s]+\.md)", readme))
    pages = {p.relative_to(REPO).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - linked == set(), "link these pages from the README"
    assert linked - pages == set(), "the README links pages that do not exist"
