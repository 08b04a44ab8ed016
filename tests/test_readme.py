"""The README's option table is generated from paimon_ds.options; it must not drift."""

from pathlib import Path

from paimon_ds.options import markdown_table


def test_readme_option_table_is_current():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Supported options", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    # the section's table is the registry's, row for row: no stale row, none missing
    assert table == markdown_table(), "regenerate the README's option table from paimon_ds.options.markdown_table()"


def test_readme_shows_the_two_commands_first():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    first_block = readme.split("```")[1]
    assert "make demo" in first_block and "make test" in first_block
