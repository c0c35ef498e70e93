"""`oomrec record list`: the records, sorted by model then length, as a table or JSON."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Annotated

import typer
from rich.markup import escape

from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.render import print_json, record_table, stdout_console
from oomrec.config import Settings
from oomrec.hardware import option_tag
from oomrec.records import OomRecord


def select(
    records: list[OomRecord], model_glob: str | None, hardware: str | None
) -> list[OomRecord]:
    """Records matching the model glob and hardware tag, sorted by model then length."""
    tag = option_tag(hardware)
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
    no_git: Annotated[
        bool,
        typer.Option("--no-git", help="Skip the status column (which reads git history)."),
    ] = False,
    record: RecordOption = None,
) -> None:
    """List the OOM records, sorted by model then length.

    Inside a git repository a status column says whether a fix commit in HEAD's history (trailer
    `OOM-Fix: <model glob>`) made each record stale: active, stale: fix abc1234, or unknown: why.

    Example: oomrec record list --model 'gemma-4-*' --hardware gb10
    """
    record_file, settings = open_record(record)
    loaded = record_file.load()
    print_warnings(loaded)
    chosen = select(loaded.records, model, hardware)
    statuses = None if no_git or not chosen else _statuses(chosen, settings)
    if as_json:
        rows = [r.to_dict() for r in chosen]
        if statuses is not None:
            for row, status in zip(rows, statuses, strict=True):
                row["status"] = status
        print_json(rows)
        return
    console = stdout_console()
    if not chosen:
        console.print(f"no OOM records in {record_file.shown_as}", highlight=False)
        return
    console.print(
        record_table(
            chosen,
            title=f"{record_file.shown_as}: {len(chosen)} records",
            extra=("status",) if statuses else (),
            extra_values=[(escape(status),) for status in statuses or ()],
        )
    )


def _statuses(records: list[OomRecord], settings: Settings) -> list[str] | None:
    """Each record's status against the fix commits in HEAD's history; None outside git."""
    if settings.repo_root is None:
        # Outside a repository: no status, and no GitPython import either.
        return None
    from oomrec import gitutil
    from oomrec.fixes import trailer_key
    from oomrec.stale import judge_fixes, record_statuses

    repo = gitutil.open_repo()
    if repo is None:
        return None
    key = trailer_key(settings)
    fixes = gitutil.fix_commits(repo, ["HEAD"], key) if gitutil.head_sha(repo) else []
    return record_statuses(judge_fixes(repo, fixes, records), records)
