"""`oomrec remote setup`, `oomrec record push` and `oomrec record pull`: shared records."""

from typing import Annotated

import typer

from oomrec.cli.apps import RecordOption, record_app, remote_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info

RemoteArg = Annotated[
    str, typer.Argument(metavar="REMOTE", help="The git remote. Default: origin.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON object.")]


@remote_app.command("setup")
def remote_setup(remote: RemoteArg = "origin", as_json: JsonOption = False) -> None:
    """Make `git fetch REMOTE` bring every host's OOM records (never sets a push refspec).

    Adds the fetch refspec +refs/notes/oomrec/*:refs/notes/remotes/REMOTE/oomrec/*.

    Example: oomrec remote setup origin
    """
    from oomrec.cli.jsonout import write_result
    from oomrec.commands.shared import remote_setup as setup

    result = setup(remote)
    print_messages(result)
    if as_json:
        write_result(result)
        return
    state = "added" if result.added else "already there"
    info(f"{state}: remote.{remote}.fetch {result.refspec}")


@record_app.command("push")
def record_push(
    remote: RemoteArg = "origin",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be published; change nothing.")
    ] = False,
    as_json: JsonOption = False,
    record: RecordOption = None,
) -> None:
    """Publish this host's OOM records to REMOTE, in its own notes ref.

    Only records another machine can judge go: with a hardware tag and a memory size, measured
    at a commit on a branch of REMOTE. The others stay local, listed with the reason.

    Example: oomrec record push origin
    """
    from oomrec.cli.jsonout import write_result
    from oomrec.commands.shared import record_push as push

    result = push(remote, dry_run=dry_run, record=record)
    print_messages(result)
    if as_json:
        write_result(result)
        return
    for text, why in result.kept_back:
        typer.echo(f"kept local: {text} ({why})", err=True)
    kept = f"{len(result.kept_back)} stay local"
    if dry_run:
        info(f"dry run: would publish {result.publish} record line(s) as {result.ref}; {kept}")
        return
    state = "pushed" if result.pushed else "nothing new to push"
    info(f"{state}: {result.new} new record line(s) in {result.ref} to {remote}; {kept}")


@record_app.command("pull")
def record_pull(remote: RemoteArg = "origin", as_json: JsonOption = False) -> None:
    """Fetch every host's OOM records from REMOTE (into refs/notes/remotes/REMOTE/oomrec/).

    The sweep, `record list` and `record stale` read them with the local record.

    Example: oomrec record pull origin
    """
    from oomrec.cli.jsonout import write_result
    from oomrec.commands.shared import record_pull as pull

    result = pull(remote)
    print_messages(result)
    if as_json:
        write_result(result)
        return
    shown = ", ".join(f"{host} ({n})" for host, n in result.by_host.items()) or "none"
    info(f"fetched {len(result.refs)} host ref(s) from {remote}; records by host: {shown}")
