"""``ragloom rst-preview FILE``: the words Ragloom indexes from a reStructuredText file.

A writer checks what retrieval will see of a document (what the markup rules keep and
drop) before indexing it, without an index or a model.
"""

from __future__ import annotations

from pathlib import Path

import click

from ragloom.loaders import LoaderError
from ragloom_app.terminal import terminal_text
from ragloom_plugin_example.rst import RstReader

__all__ = ["PREVIEW_CHARS", "PREVIEW_MAX_BYTES", "rst_preview"]

PREVIEW_MAX_BYTES = 10 * 1024 * 1024
"""The largest file previewed: a preview is for a document, not a data dump."""

PREVIEW_CHARS = 4000
"""Characters printed by default (``--chars``); the rest is counted, not shown."""


@click.command(name="rst-preview")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--chars",
    type=click.IntRange(min=1),
    default=PREVIEW_CHARS,
    show_default=True,
    help="characters of text to print",
)
def rst_preview(path: Path, chars: int) -> int:
    """Print the text Ragloom indexes from the .rst file PATH, its markup removed."""
    size = path.stat().st_size
    if size > PREVIEW_MAX_BYTES:
        click.echo(
            f"rst-preview: {path.name} has {size:,} bytes; previews stop at "
            f"{PREVIEW_MAX_BYTES:,} (PREVIEW_MAX_BYTES)",
            err=True,
        )
        return 1
    try:
        pages = RstReader().read(path)
    except LoaderError as exc:
        click.echo(terminal_text(f"rst-preview: {path.name}: {exc.reason}"), err=True)
        return 1
    text = "\n".join(page.text for page in pages)
    # The file's text may hold escape sequences: none reach the terminal.
    click.echo(terminal_text(text[:chars]).rstrip("\n"))
    words = len(text.split())
    cut = f" (the first {chars:,} characters of {len(text):,} shown)" if len(text) > chars else ""
    click.echo(f"-- {words:,} words{cut}", err=True)
    return 0
