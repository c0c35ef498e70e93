"""The library verbs: one module per command, each a plain function that takes typed options and
returns a result object (as pre-commit's `commands/` and sqlite-utils' library do).

A verb never prints and never exits: it returns what happened, with the warnings the user should
see, and raises `OomrecError` for a problem the user can fix. `oomrec.cli` parses options, calls
the verb and renders its result, as a table, plain lines or the result's `to_json()`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from oomrec.core.schema import JSON_SCHEMA_VERSION as SCHEMA_VERSION


@dataclass(kw_only=True)
class Result(ABC):
    """What a verb returns: its warnings (one line each, for stderr), its notices (what it did
    besides its job, e.g. the record kept out of `git status`: informational, for stderr) and
    its JSON shape."""

    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The verb's one JSON shape, `schema_version` first; the same keys in a dry run and a
        real run."""
        return {"schema_version": SCHEMA_VERSION, **self.json_body()}

    @abstractmethod
    def json_body(self) -> dict[str, Any]:
        """The verb's own keys."""
