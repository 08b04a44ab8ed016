"""The README stays short and points to the documentation site (docs/; tests/test_docs.py checks the pages)."""

from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_shows_the_two_commands_first():
    first_block = README.read_text().split("```")[1]
    assert "make demo" in first_block and "make test" in first_block


def test_readme_is_short():
    # the details live in docs/; the README says what the package is, how to start, and where to read on
    assert len(README.read_text().splitlines()) <= 200
