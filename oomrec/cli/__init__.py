"""The command line. Each command lives in its own module and registers on the shared apps."""

from __future__ import annotations

from oomrec.cli import record_add, record_list  # noqa: F401  (registration)
from oomrec.cli.app import app


def main() -> int:
    return app(prog_name="oomrec")  # type: ignore[no-any-return]
