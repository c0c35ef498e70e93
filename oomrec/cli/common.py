"""Small pieces several commands share: opening the record, printing its warnings."""

from __future__ import annotations

from pathlib import Path

import typer

from oomrec.config import Settings, display_path, load_settings, record_path
from oomrec.records import Loaded, RecordFile


def open_record(cli_value: Path | None) -> tuple[RecordFile, Settings]:
    settings = load_settings()
    path = record_path(cli_value, settings)
    # A path the user typed is shown as typed; a derived one relative to where they stand.
    shown = str(cli_value) if cli_value is not None else display_path(path)
    return RecordFile(path, shown_as=shown), settings


def print_warnings(loaded: Loaded, record_file: RecordFile | None = None) -> None:
    """The record's warnings, and with `record_file` those of its archive too."""
    for warning in loaded.warnings:
        typer.echo(str(warning), err=True)
    if record_file is not None:
        from oomrec import archive

        for text in archive.read(record_file, loaded)[1]:
            typer.echo(text, err=True)
