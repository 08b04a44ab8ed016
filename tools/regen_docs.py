"""Regenerate the option tables of docs/tables/options.md from the registry,
paimon_ds.options.registry.markdown_tables().

Each block of consecutive lines starting with '|' in the page, in order, is replaced by the next generated table;
the prose around them is kept. tests/test_docs.py fails while the page and the registry differ.

    python tools/regen_docs.py          # rewrite the page
    python tools/regen_docs.py --check  # exit 1 if the page is stale, changing nothing
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OPTIONS_PAGE = REPO / "docs" / "tables" / "options.md"


def regenerate(text: str, tables: list[str]) -> str:
    """The page with its table blocks replaced by `tables`, in order; ValueError if the counts differ."""
    out: list[str] = []
    count, in_table = 0, False
    for line in text.split("\n"):
        if line.startswith("|"):
            if not in_table:
                if count < len(tables):
                    out.append(tables[count])
                count += 1
                in_table = True
            continue
        in_table = False
        out.append(line)
    if count != len(tables):
        raise ValueError(f"{OPTIONS_PAGE.name} has {count} tables, the registry makes {len(tables)}: "
                         "add or remove a table block (with its prose) by hand, then run this again")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(REPO))
    from paimon_ds.options.registry import markdown_tables  # the repository's package, not an installed one

    text = OPTIONS_PAGE.read_text()
    new = regenerate(text, markdown_tables())
    if "--check" in argv:
        if new != text:
            print(f"{OPTIONS_PAGE} is stale: run python tools/regen_docs.py", file=sys.stderr)
            return 1
        return 0
    OPTIONS_PAGE.write_text(new)
    print(f"regenerated the option tables of {OPTIONS_PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
