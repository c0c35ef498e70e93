"""Notes have owners: which lines a host's notes ref may carry, and whose retraction takes a
record back. Rules on lines already read (store/notes.py reads them, and pushes by them).

Any machine can push any notes ref, so a ref's name is a claim, checked against its lines:

- A host's id is `<tag>-<name>` (notes.host_id), so the ref of host `gb10-spark1` may carry
  only records tagged `gb10`. Its memory is not in its id: another host's memory cannot be
  known, so only the tag is checked there; under this host's own id (the remote's copy of its
  ref, kept copies of it) a record may not claim more memory than this host has (within
  MEM_JITTER): such a line would apply on hosts larger than this one (2^63-1 bytes: on every
  one). Less is allowed: another clone under this id may run in a tighter memory cgroup.
- A retraction or restore read in host H's ref applies to H's own line of that evidence only
  (the one its ref carries), or, where H is one of `[tool.oomrec] admin_hosts`, to every host's
  line. This clone's own archive events (`record retract` here) apply to every line here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from oomrec.core.errors import OomrecError
from oomrec.core.records import MEM_JITTER, EvidenceKey, OomRecord, evidence_key
from oomrec.core.shown import show_bytes, visible
from oomrec.store.retractions import Event, retracted

ADMIN_KEY = "admin_hosts"
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


@lru_cache(maxsize=1024)
def safe_id(raw: str) -> str:
    """`raw` as a host id may hold it: lower case, letters, digits, `.`, `_` and `-`."""
    return _UNSAFE.sub("-", raw.lower()).strip("-.")[:64]


@dataclass(frozen=True, slots=True)
class Machine:
    """This host, as the rules know it: its id (its tag first) and memory (None: not known)."""

    host: str
    mem: int | None


def not_its_own(owner: str, record: OomRecord, me: Machine | None, *, own_ref: bool) -> str:
    """Why `record`, a line of host `owner`'s ref, is no measurement of that host ("" when it
    may be one). `own_ref`: the line is in this clone's own local ref, which only this clone
    writes (its memory then is whatever this host had when it recorded the line)."""
    tag = safe_id(record.hardware or "")
    if not tag or not (owner == tag or owner.startswith(f"{tag}-")):
        shown = visible(record.hardware or "no hardware")
        return f"recorded on {shown}, not on the ref's host {visible(owner)}"
    if (
        me is not None
        and owner == me.host
        and not own_ref
        and me.mem is not None
        and record.mem_bytes is not None
        and record.mem_bytes > me.mem * (1 + MEM_JITTER)
    ):
        return f"recorded with {show_bytes(record.mem_bytes)}, this host has {show_bytes(me.mem)}"
    return ""


def admin_hosts(tool: Mapping[str, Any], where: object) -> frozenset[str]:
    """The host ids `[tool.oomrec] admin_hosts` names: hosts whose retractions and restores
    apply to every host's records. OomrecError (one line) unless a list of host ids."""
    value = tool.get(ADMIN_KEY, [])
    if not isinstance(value, list) or not all(isinstance(x, str) and safe_id(x) for x in value):
        raise OomrecError(
            f"{where}: [tool.oomrec] {ADMIN_KEY} must be a list of host ids, e.g. "
            '["gb10-lead"]; fix the file'
        )
    return frozenset(safe_id(x) for x in value)


class Standing:
    """Retraction events by evidence, each with the host whose ref carried it (None: this
    clone's archive), and who may take back whose line."""

    def __init__(self, events: Iterable[tuple[str | None, Event]], admins: frozenset[str]):
        self.admins = admins
        self.by_key: dict[EvidenceKey, list[tuple[str | None, Event]]] = {}
        for owner, event in events:
            self.by_key.setdefault(evidence_key(event.record), []).append((owner, event))

    def may_take_back(self, by: str | None, owner: str) -> bool:
        """Whether an event read in host `by`'s ref (None: this clone's) applies to the line
        host `owner`'s ref carries."""
        return by is None or by == owner or by in self.admins

    def hides(self, owner: str, record: OomRecord) -> bool:
        """Whether host `owner`'s line of `record` is taken back: its latest event among those
        that may take it back is a retraction (retractions.retracted: ties, future stamps)."""
        key = evidence_key(record)
        events = [e for by, e in self.by_key.get(key, ()) if self.may_take_back(by, owner)]
        return bool(events) and key in retracted(events)

    def trusted(self, carried: set[tuple[str, EvidenceKey]]) -> list[tuple[str | None, Event]]:
        """The events that may take back some line read (`carried`: (host, evidence) of every
        line its host owns): this clone's, an admin's, or one its own host's ref carries."""
        return [
            (by, event)
            for key, events in self.by_key.items()
            for by, event in events
            if by is None or by in self.admins or (by, key) in carried
        ]
