"""`oomrec record list`: the records, sorted by model then length, with whether each applies."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from operator import attrgetter
from typing import Annotated

import typer

from oomrec import archive
from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.output import info, is_tty
from oomrec.cli.render import Listing, plural, print_json, print_records
from oomrec.config import Settings
from oomrec.hardware import option_tag
from oomrec.records import OomRecord


def select(
    records: list[OomRecord], model_globs: Sequence[str], hardware: str | None
) -> list[OomRecord]:
    """Records matching any of the model globs (all when none) and the hardware tag, sorted by
    model then length."""
    tag = option_tag(hardware)
    chosen = [
        r
        for r in records
        if (not model_globs or any(fnmatchcase(r.model, glob) for glob in model_globs))
        and (tag is None or r.hardware == tag)
    ]
    # Two stable single-key sorts: three times faster than one on (model, length) tuples.
    chosen.sort(key=attrgetter("prompt_target_len"))
    chosen.sort(key=attrgetter("model"))
    return chosen


@record_app.command("list")
def record_list(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", metavar="GLOB", help="Only models matching this glob (repeatable: any)."
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option("--hardware", metavar="TAG", help="Only records of this hardware tag."),
    ] = None,
    archived: Annotated[
        bool,
        typer.Option("--archived", help="List the archived records (RECORD.archive) instead."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object: the records under `records`.")
    ] = False,
    no_git: Annotated[
        bool,
        typer.Option("--no-git", help="Skip the status column (which reads git history)."),
    ] = False,
    record: RecordOption = None,
) -> None:
    """List the OOM records, sorted by model then length.

    Inside a git repository a status column says whether each record applies at HEAD:
    `applies`, `applies (unknown: why)` when git cannot prove otherwise, or `no longer applies:
    fix abc1234 (subject)` when a fix in effect at HEAD (trailer `OOM-Fix: <model glob>`)
    lifts it.

    Example: oomrec record list --model 'gemma-4-*' --hardware gb10
    """
    record_file, settings = open_record(record)
    loaded = record_file.load()
    parked = print_warnings(loaded, record_file)
    if archived:
        lines = parked
        pool = [line.record for line in lines if line.record is not None]
        stamps = {id(line.record): line.archived_at for line in lines}
    else:
        pool, stamps = loaded.records, {}
    origin: dict[int, str] = {}
    if not archived and not no_git and settings.repo_root is not None:
        from oomrec import notes
        from oomrec.hardware import detect

        for note in notes.shared((x.text for x in loaded.lines), detect()):
            if note.record is not None:
                pool.append(note.record)
                origin[id(note.record)] = f"notes:{note.host}"
    chosen = select(pool, model or (), hardware)
    statuses = None if no_git or not chosen else _statuses(chosen, settings)
    if as_json:
        rows = [r.to_dict() for r in chosen]
        for row, rec in zip(rows, chosen, strict=True):
            row["from"] = "archive" if archived else origin.get(id(rec), "local")
            if archived:
                row["archived_at"] = stamps.get(id(rec))
        if statuses is not None:
            for row, status in zip(rows, statuses, strict=True):
                row["status"] = status
        print_json(
            {
                "record": record_file.shown_as + (archive.SUFFIX if archived else ""),
                "archived": archived,
                "records": rows,
            }
        )
        return
    where = record_file.shown_as + (archive.SUFFIX if archived else "")
    if not chosen:
        info(f"no OOM records in {where}", err=True)
        return
    title = f"{where}: {plural(len(chosen), 'record')}"
    if not is_tty():
        # Off a terminal stdout carries only records, so `| wc -l` and `| grep -c` count them.
        info(title, err=True)
    print_records(
        Listing(
            chosen,
            title=title if is_tty() else None,
            extra=((("from", [origin.get(id(rec), "local") for rec in chosen]),) if origin else ())
            + ((("status", statuses),) if statuses else ()),
        )
    )


def _statuses(records: list[OomRecord], settings: Settings) -> list[str] | None:
    """Each record's status at HEAD; None outside git."""
    if settings.repo_root is None:
        # Outside a repository: no status, and no GitPython import either.
        return None
    from oomrec.fixes import trailer_key
    from oomrec.stale import judge_all, open_history

    history = open_history(trailer_key(settings), [r.commit for r in records])
    if history is None:
        return None
    return [str(j) for j in judge_all(history, records)]
