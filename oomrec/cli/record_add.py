"""`oomrec record add`: append one record by hand."""

from __future__ import annotations

from datetime import date
from typing import Annotated

import typer

from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record
from oomrec.cli.output import info
from oomrec.errors import OomrecError
from oomrec.hardware import detect, detect_memory, option_tag, parse_size
from oomrec.records import (
    UNKNOWN_COMMIT,
    OomRecord,
    check_length,
    check_model_name,
    evidence_key,
    format_line,
)


@record_app.command("add")
def record_add(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="The model's directory name.")],
    length: Annotated[
        str, typer.Argument(metavar="LENGTH", help="The prompt length (tokens) that OOMed.")
    ],
    commit: Annotated[
        str | None,
        typer.Option(
            "--commit", metavar="REV", help="The code revision it OOMed on. Default: HEAD."
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option(
            "--hardware", metavar="TAG", help="Hardware tag, e.g. gb10. Default: this host's."
        ),
    ] = None,
    any_hardware: Annotated[
        bool,
        typer.Option("--any-hardware", help="Record no hardware: the record applies to all."),
    ] = False,
    source: Annotated[
        str,
        typer.Option(
            "--source", metavar="TEXT", help="Where the OOM was seen (a CSV path, a note)."
        ),
    ] = "manual",
    mem: Annotated[
        str | None,
        typer.Option(
            "--mem",
            metavar="SIZE",
            help="Memory the accelerator could address, e.g. 96GiB or bytes. Default: this "
            "host's, when the hardware is this host's.",
        ),
    ] = None,
    record: RecordOption = None,
) -> None:
    """Append an OOM record by hand.

    Example: oomrec record add gemma-4-31b-it-4bit 32768 --commit HEAD~2 --hardware gb10
    """
    check_model_name(model)
    prompt_target_len = check_length(length)
    if hardware is not None and any_hardware:
        raise OomrecError("--hardware and --any-hardware exclude each other; pick one")
    tag = None if any_hardware else (option_tag(hardware) or detect())
    mem_bytes = _mem_bytes(mem, this_host=tag == detect())
    record_file, _ = open_record(record, writing=True)
    new = OomRecord(
        model=model,
        prompt_target_len=prompt_target_len,
        date=date.today().isoformat(),
        commit=_commit_sha(commit),
        peak_bytes=None,
        source_csv=source,
        hardware=tag,
        mem_bytes=mem_bytes,
    )
    added = record_file.append_new([new], unless_present=evidence_key)
    for notice in record_file.notices:
        typer.echo(f"warning: {notice}", err=True)
    if added:
        info(f"added to {record_file.shown_as}: {format_line(new)}")
    else:
        info(f"already recorded in {record_file.shown_as}: {format_line(new)}")


def _mem_bytes(given: str | None, this_host: bool) -> int | None:
    if given is None:
        # Another machine's memory is not this one's: unknown unless said.
        return detect_memory() if this_host else None
    size = parse_size(given)
    if size is None:
        raise OomrecError(f"--mem {given[:40]!r} is not a memory size; give e.g. 96GiB or bytes")
    return size


def _commit_sha(rev: str | None) -> str:
    from oomrec import gitutil

    repo = gitutil.open_repo()
    if rev is None:
        return gitutil.head_sha(repo) or UNKNOWN_COMMIT
    return gitutil.resolve_commit(repo, rev)
