"""`record retract`: take back records that were a mistake (a wrong `record add`, an OOM that
was the machine's fault), so the next sweep launches the cell. Nothing is deleted: the records
move to the archive with the reason, `record restore --retracted` brings them back, and
`record push` publishes the retraction so other hosts stop applying it too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.core.errors import OomrecError
from oomrec.core.hardware import detect, option_tag
from oomrec.core.modelnames import check_model_name, model_name
from oomrec.core.records import OomRecord, check_length, parse_line
from oomrec.store import archive
from oomrec.store.locations import open_record

MAX_REASON = 500


@dataclass(kw_only=True)
class RetractResult(Result):
    record: str
    model: str
    length: int
    hardware: str | None
    reason: str
    dry_run: bool
    # This host's records taken back (moved to the archive), and other hosts' shared ones
    # (their retraction archived here, published by `record push`): lines as written.
    local: list[str]
    shared: list[str]

    @property
    def count(self) -> int:
        return len(self.local) + len(self.shared)

    def json_body(self) -> dict[str, Any]:
        def entries(lines: list[str], where: str) -> list[dict[str, Any]]:
            return [{"line": t, "from": where, "entry": _entry(t)} for t in lines]

        return {
            "record": self.record,
            "model": self.model,
            "length": self.length,
            "hardware": self.hardware,
            "reason": self.reason,
            "dry_run": self.dry_run,
            "retracted": self.count,
            "records": entries(self.local, "record") + entries(self.shared, "notes"),
        }


def _entry(text: str) -> dict[str, Any]:
    return parse_line(text).to_dict()


def check_reason(reason: str) -> str:
    """The reason as the archive keeps it: one line, not empty."""
    flat = " ".join(reason.split())
    if not flat:
        raise OomrecError(
            "--reason is empty; say why the record was a mistake, e.g. --reason 'typo in "
            "record add'"
        )
    if len(flat) > MAX_REASON:
        raise OomrecError(f"--reason is {len(flat)} characters; keep it under {MAX_REASON}")
    return flat


def record_retract(
    *,
    model: str,
    length: str | int,
    reason: str,
    hardware: str | None = None,
    record: Path | None = None,
    dry_run: bool = False,
) -> RetractResult:
    """Retract every record of `model` at exactly `length` tokens (only those of `hardware`
    when given: a tag, matched as `record add` writes it): this host's from its record, and the
    shared records of other hosts that apply here."""
    # One identity (`plain-8b/` is `plain-8b`), as the record's lines are read.
    model = check_model_name(model_name(model))
    at = check_length(str(length))
    why = check_reason(reason)
    tag = option_tag(hardware) if hardware is not None else None
    record_file, _ = open_record(record)
    record_file.check_confined()
    warnings: list[str] = []

    def matches(rec: OomRecord | None) -> bool:
        return (
            rec is not None
            and rec.model == model
            and rec.prompt_target_len == at
            and (tag is None or rec.hardware == tag)
        )

    loaded = record_file.load()
    parked = archive.load(record_file, loaded)
    local = [line.text for line in loaded.lines if matches(line.record)]
    known = loaded.records + [x.record for x in archive.in_play(parked) if x.record is not None]
    shared = [
        line.text
        for line in _shared(known, archive.events(parked), warnings)
        if matches(line.record)
    ]
    if not dry_run:
        if local:
            tagged = archive.retraction(why)
            moved = archive.move_out(
                record_file, lambda now: {x.text: tagged for x in now.lines if matches(x.record)}
            )
            local = [line.text for line in moved]
        shared = archive.add_retracted(record_file, shared, why)
    if not local and not shared:
        warnings.append(
            f"warning: no record of {model} at {at} tokens"
            + (f" on {tag}" if tag else "")
            + f" in {record_file.shown_as} or in shared notes; nothing retracted"
        )
    return RetractResult(
        warnings=warnings,
        record=record_file.shown_as,
        model=model,
        length=at,
        hardware=tag,
        reason=why,
        dry_run=dry_run,
        local=local,
        shared=shared,
    )


def _shared(known: list[OomRecord], events: list[Any], warnings: list[str]) -> list[Any]:
    from oomrec.store import notes

    return notes.shared(known, detect(), warnings, events)
