"""Small pieces several commands share: opening the record, printing its warnings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from oomrec.cli.output import info
from oomrec.config import (
    Settings,
    default_record_path,
    display_path,
    load_settings,
    record_path,
    record_source,
)
from oomrec.errors import OomrecError
from oomrec.guest import exclude_record
from oomrec.records import Loaded, RecordFile

if TYPE_CHECKING:
    from oomrec.archive import ArchivedLine


def open_record(cli_value: Path | None, writing: bool = False) -> tuple[RecordFile, Settings]:
    """The record file the command works on; with `writing`, its first write into a git worktree
    adds it to the repository's info/exclude (see guest.py)."""
    settings = load_settings()
    path = record_path(cli_value, settings)
    if cli_value is not None:
        _check_folder(path, "--record")
    elif path != default_record_path(settings):
        _check_folder(path, record_source(settings))
    # A path the user typed is shown as typed; a derived one relative to where they stand.
    shown = str(cli_value) if cli_value is not None else display_path(path)
    record_file = RecordFile(path, shown_as=shown)
    if writing:
        record_file.before_first_write = lambda: _exclude_from_git(path)
    return record_file, settings


def _exclude_from_git(path: Path) -> None:
    said = exclude_record(path)
    if said is not None:
        info(said, err=True)


def _check_folder(path: Path, source: str) -> None:
    """A record path someone chose must be in a folder that exists: a typo must not create
    folders (only the default location's benchmarks/ folder is created)."""
    folder = path.parent
    if folder.is_dir():
        return
    what = "is not a folder" if folder.exists() else "does not exist"
    raise OomrecError(f"{source} {path}: {folder} {what}; create the folder or fix the path")


def print_warnings(loaded: Loaded, record_file: RecordFile | None = None) -> list[ArchivedLine]:
    """The record's warnings, and with `record_file` those of its archive too; returns the
    archived records read for them, so the command need not read the archive again."""
    for warning in loaded.warnings:
        typer.echo(str(warning), err=True)
    if record_file is None:
        return []
    from oomrec import archive

    parked, warnings = archive.read(record_file, loaded)
    for text in warnings:
        typer.echo(text, err=True)
    return parked
