"""`oomrec record stale`: which records no longer apply at HEAD, which archived ones apply
again, and what is wrong with the fix trailers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from oomrec import archive
from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.output import info
from oomrec.cli.render import SCREENFUL, Listing, plural, print_json, print_records, verb
from oomrec.errors import EXIT_FOUND, OomrecError
from oomrec.fixes import trailer_key
from oomrec.records import OomRecord

if TYPE_CHECKING:
    from oomrec.stale import Judgement


@record_app.command("stale")
def record_stale(
    range_: Annotated[
        str | None,
        typer.Option(
            "--range",
            metavar="A..B",
            help="Only fixes with a copy or revert in this range. Default: all of HEAD's history.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit 1 when a record no longer applies or an archived one applies again.",
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every record, not a screenful.")
    ] = False,
    record: RecordOption = None,
) -> None:
    """List the records that no longer apply at HEAD, and the archived ones that apply again.

    A record no longer applies when a fix commit (trailer `OOM-Fix: <model glob>`) is in effect
    at HEAD and was not where the record was measured; a revert takes a fix out of effect. Also
    warns about fix trailers that cannot work as written. Exit status 0 either way, unless
    --exit-code.

    Example: oomrec record stale --range v1.2..HEAD --exit-code
    """
    from oomrec import gitutil
    from oomrec.report import record_contradictions
    from oomrec.report_text import contradiction_lines
    from oomrec.stale import Status, hygiene, open_history

    record_file, settings = open_record(record)
    key = trailer_key(settings)
    if gitutil.open_repo() is None:
        raise OomrecError("record stale reads git history: run it inside the repository")
    loaded = record_file.load()
    parked = print_warnings(loaded, record_file)
    live = [line for line in loaded.lines if line.record is not None]
    records: list[OomRecord] = [line.record for line in live if line.record is not None]
    records += [line.record for line in parked if line.record is not None]
    from oomrec import notes
    from oomrec.hardware import detect

    known = [x.text for x in loaded.lines] + [x.original for x in parked]
    shared = [line for line in notes.shared(known, detect()) if line.record is not None]
    records += [line.record for line in shared if line.record is not None]
    history = open_history(key, [r.commit for r in records])
    judgements = history.judge(records) if history is not None else []
    in_range = _range_filter(range_, key)

    def lifted(j: Judgement) -> bool:
        return j.status == Status.LIFTED and (
            in_range is None or any(set(f.copies) & in_range for f in j.fixes)
        )

    n = len(live)
    gone = [(live[i].lineno, records[i], j) for i, j in enumerate(judgements[:n]) if lifted(j)]
    unknown = [
        (live[i].lineno, records[i], j)
        for i, j in enumerate(judgements[:n])
        if j.status == Status.UNKNOWN
    ]
    m = n + len(parked)
    back = [
        (parked[i].lineno, records[n + i], j) for i, j in enumerate(judgements[n:m]) if j.applies
    ]
    # Other hosts' records: judged the same way, for the user to see; prune never touches them.
    others = [
        (shared[i].host, records[m + i], j) for i, j in enumerate(judgements[m:]) if lifted(j)
    ]
    warnings = hygiene(history, {r.model for r in records}) if history is not None else []
    # Evidence for the user from the report (a later CSV row ran the cell): never pruned on.
    contradicted = record_contradictions(record_file, loaded, settings)
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    if as_json:
        print_json(
            {
                "range": range_ or "HEAD",
                "no_longer_apply": [_entry(ln, rec, j) for ln, rec, j in gone],
                "apply_again": [_entry(ln, rec, j) for ln, rec, j in back],
                "unknown": [_entry(ln, rec, j) for ln, rec, j in unknown],
                "shared_no_longer_apply": [
                    {**_entry(0, rec, j), "from": f"notes:{host}"} for host, rec, j in others
                ],
                "warnings": warnings,
                "contradicted": [c.to_dict() for c in contradicted],
            }
        )
    else:
        for title, rows in (
            (f"{record_file.shown_as}: no longer apply at HEAD", gone),
            (f"{record_file.shown_as}{archive.SUFFIX}: archived, apply again at HEAD", back),
            ("apply because git cannot prove otherwise", unknown),
        ):
            if rows:
                print_records(
                    Listing(
                        [rec for _, rec, _ in rows],
                        title=title,
                        extra=[
                            ("line", [str(ln) for ln, _, _ in rows]),
                            ("status", [str(j) for _, _, j in rows]),
                        ],
                    ),
                    limit=None if verbose else SCREENFUL,
                )
        for line in contradiction_lines(contradicted):
            typer.echo(line)
        if gone:
            info("run: oomrec record prune   (archives them; the sweep skips them already)")
        if back:
            info("run: oomrec record restore (the sweep pre-skips their cells already)")
        for host, rec, j in others[:SCREENFUL]:
            info(
                f"shared by {host}: {rec.model} @ {rec.prompt_target_len} {j} (judged when read; "
                "prune never touches another host's records)"
            )
        info(
            f"{plural(len(gone), 'record')} no longer {verb(len(gone), 'applies', 'apply')}, "
            f"{plural(len(back), 'archived record')} {verb(len(back), 'applies', 'apply')} again, "
            f"{len(unknown)} {verb(len(unknown), 'applies', 'apply')} because git cannot say "
            "(at HEAD)"
        )
    if exit_code and (gone or back):
        raise typer.Exit(EXIT_FOUND)


def _range_filter(range_: str | None, key: str) -> set[str] | None:
    if range_ is None:
        return None
    from oomrec import gitutil

    repo = gitutil.open_repo()
    assert repo is not None
    return {event.sha for event in gitutil.range_events(repo, [range_], key)}


def _entry(lineno: int, rec: OomRecord, j: Judgement) -> dict[str, object]:
    fix = j.fixes[0] if j.fixes else None
    return {
        "line": lineno,
        "record": rec.to_dict(),
        "status": j.status.value,
        "fix": fix.sha if fix else None,
        "subject": fix.subject if fix else None,
        "globs": list(fix.globs) if fix else [],
        "reason": j.reason or None,
    }
