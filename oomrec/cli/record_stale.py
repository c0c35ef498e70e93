"""`oomrec record stale`: which records the fix commits of a range have made stale."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.render import (
    MAX_TABLE_ROWS,
    more_rows,
    print_json,
    record_table,
    stdout_console,
)
from oomrec.errors import EXIT_FOUND, OomrecError


@record_app.command("stale")
def record_stale(
    range_: Annotated[
        str | None,
        typer.Option(
            "--range",
            metavar="A..B",
            help="Where to look for fix commits. Default: all of HEAD's history.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit 1 when some record is stale (for CI).")
    ] = False,
    record: RecordOption = None,
) -> None:
    """List the records that fix commits (trailer `OOM-Fix: <model glob>`) have made stale.

    For each one: the record, the fix, its subject and the glob that matched; then the prune
    command that removes them. Exit status 0 either way, unless --exit-code.

    Example: oomrec record stale --range v1.2..HEAD --exit-code
    """
    from oomrec import gitutil
    from oomrec.fixes import prune_command, trailer_key
    from oomrec.stale import STALE, UNKNOWN, judge_fixes

    record_file, settings = open_record(record)
    key = trailer_key(settings)
    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError("record stale reads git history: run it inside the repository")
    where = range_ or "HEAD"
    # A repository without commits has no fix commit, and `git log HEAD` would fail.
    no_history = range_ is None and gitutil.head_sha(repo) is None
    fixes = [] if no_history else gitutil.fix_commits(repo, [where], key)
    loaded = record_file.load()
    print_warnings(loaded)
    lines = [line for line in loaded.lines if line.record is not None]
    records = [line.record for line in lines if line.record is not None]
    judgements = judge_fixes(repo, fixes, records)
    # (judgement, record index) pairs, by fix, then in file order.
    stale = [
        (j, i) for j in judgements for i in j.indices if j.verdict_of(records[i]).status == STALE
    ]
    unknown = [
        (j, i) for j in judgements for i in j.indices if j.verdict_of(records[i]).status == UNKNOWN
    ]
    stale_fixes = {j.fix.sha for j, _ in stale}
    record_arg = str(record) if record is not None else None
    commands = [prune_command(fix, record_arg) for fix in fixes if fix.sha in stale_fixes]

    if as_json:
        print_json(
            {
                "range": where,
                "fixes": [
                    {"commit": fix.sha, "subject": fix.subject, "globs": list(fix.globs)}
                    for fix in fixes
                ],
                "stale": [
                    {
                        "line": lines[i].lineno,
                        "record": records[i].to_dict(),
                        "fix": j.fix.sha,
                        "subject": j.fix.subject,
                        "glob": j.globs[records[i].model],
                    }
                    for j, i in stale
                ],
                "unknown": [
                    {
                        "line": lines[i].lineno,
                        "record": records[i].to_dict(),
                        "fix": j.fix.sha,
                        "reason": j.verdict_of(records[i]).reason,
                    }
                    for j, i in unknown
                ],
                "prune_commands": commands,
            }
        )
    else:
        console = stdout_console()
        if stale:
            console.print(
                record_table(
                    [records[i] for _, i in stale[:MAX_TABLE_ROWS]],
                    title=f"{record_file.shown_as}: stale records (fix commits in {where})",
                    extra=("fix", "subject", "glob"),
                    extra_values=[
                        (j.fix.short, escape(j.fix.subject), escape(j.globs[records[i].model]))
                        for j, i in stale[:MAX_TABLE_ROWS]
                    ],
                ),
                highlight=False,
            )
            _more(console, len(stale))
        if unknown:
            console.print(
                record_table(
                    [records[i] for _, i in unknown[:MAX_TABLE_ROWS]],
                    title="not judged (kept by prune unless --prune-unknown)",
                    extra=("fix", "why"),
                    extra_values=[
                        (j.fix.short, escape(j.verdict_of(records[i]).reason))
                        for j, i in unknown[:MAX_TABLE_ROWS]
                    ],
                ),
                highlight=False,
            )
            _more(console, len(unknown))
        for command in commands:
            typer.echo(f"run: {command}")
        stale_records = len({i for _, i in stale})
        typer.echo(_summary(stale_records, len(stale_fixes), len(fixes), key, where))
    if exit_code and stale:
        raise typer.Exit(EXIT_FOUND)


def _more(console: Console, total: int) -> None:
    more = more_rows(total, "--json")
    if more:
        console.print(more, highlight=False, markup=False)


def _summary(stale: int, stale_fixes: int, fixes: int, key: str, where: str) -> str:
    if not fixes:
        return f"no fix commits (trailer {key}:) in {where}"
    if not stale:
        return f"no stale records ({_n(fixes, 'fix commit')} in {where})"
    return f"{_n(stale, 'stale record')} from {_n(stale_fixes, 'fix commit')} in {where}"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
