"""The README's claims section and the two generated pages beside it, written in one step.

`servesim claims --readme README.md` calls `update_readme`. It sits above `claims` (the report and its
section) and `unmet_doc` (the page of unmet claims, which reads the report's helpers), so neither imports
the other's writer.
"""
from __future__ import annotations

from pathlib import Path

from .claims import NR_DOC, README_BEGIN, README_END, ClaimsError, not_reproducible_doc, readme_section
from .docs_blocks import replace_block
from .unmet_doc import write as write_unmet


def update_readme(readme: str | Path, rows: list[dict], scale: str, full_rows: list[dict] | None = None,
                  full_sources: dict | None = None) -> None:
    """Rewrite the README's claims block and write `NR_DOC` and `unmet_doc`'s page beside it."""
    text = replace_block(Path(readme).read_text(), README_BEGIN, README_END,
                         readme_section(rows, scale, full_rows, full_sources))
    if text is None:
        raise ClaimsError(f"{readme}: markers {README_BEGIN!r} ... {README_END!r} not found")
    Path(readme).write_text(text)
    doc = Path(readme).parent / NR_DOC
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(not_reproducible_doc(rows))
    write_unmet(Path(readme).parent, full_rows, full_sources)
