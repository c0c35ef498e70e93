"""`oomrec record list`: the records, sorted by model then length, as a table or JSON."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Annotated

import typer

from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.render import print_json, record_table, stdout_console
from oomrec.hardware import normalize
from oomrec.records import OomRecord


def select(
    records: list[OomRecord], model_glob: str | None, hardware: str | None
) -> list[OomRecord]:
    """Records matching the model glob and hardware tag, sorted by model then length."""
    tag = normalize(hardware) if hardware else None
    chosen = [
        r
        for r in records
        if (model_glob is None or fnmatchcase(r.model, model_glob))
        and (tag is None or r.hardware == tag)
    ]
    return sorted(chosen, key=lambda r: (r.model, r.prompt_target_len))


@record_app.command("list")
def record_list(
    model: Annotated[
        str | None, typer.Option("--model", help="Only models matching this glob.")
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", help="Only records of this hardware tag.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
    record: RecordOption = None,
) -> None:
    """List the OOM records, sorted by model then length.

    Example: oomrec record list --model 'gemma-4-*' --hardware gb10
    """
    record_file, _ = open_record(record)
    loaded = record_file.load()
    print_warnings(loaded)
    chosen = select(loaded.records, model, hardware)
    if as_json:
        print_json([r.to_dict() for r in chosen])
        return
    console = stdout_console()
    if not chosen:
        console.print(f"no OOM records in {record_file.shown_as}", highlight=False)
        return
    console.print(record_table(chosen, title=f"{record_file.shown_as}: {len(chosen)} records"))
