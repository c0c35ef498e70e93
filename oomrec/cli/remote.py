"""`oomrec remote setup`, `oomrec record push` and `oomrec record pull`: shared records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli.apps import RecordOption, record_app, remote_app
from oomrec.cli.common import open_record
from oomrec.core.errors import OomrecError

if TYPE_CHECKING:
    import git

RemoteArg = Annotated[
    str, typer.Argument(metavar="REMOTE", help="The git remote. Default: origin.")
]


def _repo() -> git.Repo:
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError("shared records live in git notes: run this inside the repository")
    return repo


@remote_app.command("setup")
def remote_setup(remote: RemoteArg = "origin") -> None:
    """Make `git fetch REMOTE` bring every host's OOM records (never sets a push refspec).

    Adds the fetch refspec +refs/notes/oomrec/*:refs/notes/remotes/REMOTE/oomrec/*.

    Example: oomrec remote setup origin
    """
    from oomrec.store import notes

    added = notes.setup(_repo(), remote)
    spec = notes.refspec(remote)
    typer.echo(f"{'added' if added else 'already there'}: remote.{remote}.fetch {spec}")


@record_app.command("push")
def record_push(
    remote: RemoteArg = "origin",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be published; change nothing.")
    ] = False,
    record: RecordOption = None,
) -> None:
    """Publish this host's OOM records to REMOTE, in its own notes ref.

    Only records another machine can judge go: with a hardware tag and a memory size, measured
    at a commit on a branch of REMOTE. The others stay local, listed with the reason.

    Example: oomrec record push origin
    """
    from oomrec.core.hardware import detect
    from oomrec.store import notes

    repo = _repo()
    record_file, _ = open_record(record)
    host = notes.host_id(detect())
    plan = notes.plan_push(repo, record_file, host, remote)
    for text, why in plan.kept_back:
        typer.echo(f"kept local: {text} ({why})", err=True)
    if dry_run:
        typer.echo(
            f"dry run: would publish {plan.count} record line(s) as {notes.local_ref(host)}; "
            f"{len(plan.kept_back)} stay local"
        )
        return
    new = notes.write_notes(repo, plan)
    pushed, _ = notes.push(repo, plan)
    verb = "pushed" if pushed else "nothing new to push"
    typer.echo(
        f"{verb}: {new} new record line(s) in {notes.local_ref(host)} to {remote}; "
        f"{len(plan.kept_back)} stay local"
    )


@record_app.command("pull")
def record_pull(remote: RemoteArg = "origin") -> None:
    """Fetch every host's OOM records from REMOTE (into refs/notes/remotes/REMOTE/oomrec/).

    The sweep, `record list` and `record stale` read them with the local record.

    Example: oomrec record pull origin
    """
    from oomrec.store import notes

    repo = _repo()
    refs = notes.pull(repo, remote)
    counts = notes.grouped(notes.read_all(repo))
    shown = ", ".join(f"{host} ({n})" for host, n in sorted(counts.items())) or "none"
    typer.echo(f"fetched {len(refs)} host ref(s) from {remote}; records by host: {shown}")
