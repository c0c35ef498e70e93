"""Small pieces several commands share: opening the record, printing its warnings."""

from __future__ import annotations

from pathlib import Path

import typer

from oomrec.config import Settings, display_path, load_settings, record_path
from oomrec.records import Loaded, RecordFile


def open_record(cli_value: Path | None) -> tuple[RecordFile, Settings]:
    settings = load_settings()
    path = record_path(cli_value, settings)
    return RecordFile(path, shown_as=display_path(path)), settings


def print_warnings(loaded: Loaded) -> None:
    for warning in loaded.warnings:
        typer.echo(str(warning), err=True)
