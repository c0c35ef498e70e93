"""The command line. Each command lives in its own module and registers on the shared apps."""

from __future__ import annotations

from oomrec.cli import (  # noqa: F401  (registration)
    fleet,
    hook,
    record_add,
    record_import,
    record_list,
    record_prune,
    record_stale,
    remote,
    report,
    sweep,
)
from oomrec.cli.app import app


def main() -> int:
    return app(prog_name="oomrec")  # type: ignore[no-any-return]
