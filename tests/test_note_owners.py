"""Notes have owners: a host's notes ref carries only that host's records, a retraction takes
back only its own host's record (or any, from a host `[tool.oomrec] admin_hosts` names), refs
are read by their exact names, and nothing another machine wrote under this host's id is
republished as its own, or blocks its push. A bare origin and clones acting as hosts, as in
tests/test_shared.py; the attacker is a plain clone that pushes notes with git."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import git
from tests.test_import_evidence import imported, sweep_on_a_and_publish
from tests.test_shared import GIB, Fleet

Cli = Callable[..., CliResult]
HUGE = 2**63 - 1


@pytest.fixture
def fleet(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    return Fleet(tmp_path, cli, monkeypatch)


def _stamp(ahead: timedelta = timedelta()) -> str:
    return (datetime.now(UTC) + ahead).strftime("%Y-%m-%dT%H:%M:%SZ")


def _publish(fleet: Fleet, cli: Cli, name: str = "A", length: str = "8192") -> str:
    """Host `name` records gemma-4-31b at `length` and pushes it; returns the record line."""
    where = fleet.on(name)
    assert cli("record", "add", "gemma-4-31b", length).exit_code == 0
    pushed = cli("record", "push")
    assert pushed.exit_code == 0, pushed.stderr
    lines = (where / "benchmarks" / ".oom-record").read_text().splitlines()
    return next(x for x in lines if x.startswith(f"gemma-4-31b,{length},"))


def _rogue(fleet: Fleet, ref: str, lines: list[str], *, on_top: bool = False) -> None:
    """Another clone writes `lines` in a note of the base commit under `ref` and pushes it to
    the origin (on top of the origin's `ref` with `on_top`, a fast-forward; else forced)."""
    rogue = fleet.clone("rogue")
    base = git(rogue, "rev-parse", "origin/main").strip()
    if on_top:
        git(rogue, "fetch", "-q", "origin", f"+{ref}:{ref}")
        lines = [*git(rogue, "notes", f"--ref={ref}", "show", base).splitlines(), *lines]
    git(rogue, "notes", f"--ref={ref}", "add", "-f", "-m", "\n".join(lines), base)
    git(rogue, "push", "-q", "-f", "origin", f"{ref}:{ref}")


def _pull(fleet: Fleet, cli: Cli, name: str) -> CliResult:
    fleet.on(name)
    cli("remote", "setup")
    pulled = cli("record", "pull")
    assert pulled.exit_code == 0, pulled.stderr
    return pulled


def _naming(text: str, ref: str) -> list[str]:
    return [line for line in text.splitlines() if ref in line]


@pytest.mark.parametrize("copied", [False, True], ids=["retraction-only", "with-a-copy"])
def test_a_retraction_in_another_hosts_ref_hides_nothing(
    fleet: Fleet, cli: Cli, copied: bool
) -> None:
    """gb10-evil publishes, in its own ref, a retraction of A's record (and, to pass for its
    publisher, a copy of A's line): B still skips the cell A recorded."""
    line = _publish(fleet, cli)
    retraction = f"oomrec-retracted {_stamp()} x {line}"
    _rogue(fleet, "refs/notes/oomrec/gb10-evil", [line, retraction] if copied else [retraction])
    _pull(fleet, cli, "B")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    listed = cli("record", "list", "--json")
    assert [r["from"] for r in json.loads(listed.stdout)["records"]] == ["notes:gb10-a"]
    if not copied:
        (said,) = _naming(listed.stderr, "refs/notes/remotes/origin/oomrec/gb10-evil")
        assert "1 retraction(s) or restore(s) of records another host published" in said
        assert "admin_hosts" in said


def test_a_retraction_stamped_ahead_by_another_host_loses_to_the_publishers_restore(
    fleet: Fleet, cli: Cli
) -> None:
    """A retracts its record, then restores it; another host had published a retraction of
    it stamped 23 h ahead (within the skew a clock may have): B applies A's record again."""
    line = _publish(fleet, cli)
    assert cli("record", "retract", "gemma-4-31b", "8192", "--reason", "oops").exit_code == 0
    assert cli("record", "push").exit_code == 0
    ahead = f"oomrec-retracted {_stamp(timedelta(hours=23))} x {line}"
    _rogue(fleet, "refs/notes/oomrec/gb10-evil", [line, ahead])
    fleet.on("A")
    assert cli("record", "restore", "--retracted").exit_code == 0
    assert cli("record", "push").exit_code == 0
    _pull(fleet, cli, "B")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]


def test_an_admin_hosts_retraction_of_any_hosts_record_applies(fleet: Fleet, cli: Cli) -> None:
    """gb10-lead retracts A's shared record and pushes: a host whose [tool.oomrec] admin_hosts
    names gb10-lead stops applying it, one that does not keeps applying it."""
    _publish(fleet, cli)
    _pull(fleet, cli, "A3")
    fleet.on("A3", host="gb10-lead")
    retracted = cli("record", "retract", "gemma-4-31b", "8192", "--reason", "A's driver")
    assert retracted.exit_code == 0, retracted.stderr
    assert cli("record", "push").exit_code == 0
    b = fleet.clone("B")
    _pull(fleet, cli, "B")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    (b / "pyproject.toml").write_text('[tool.oomrec]\nadmin_hosts = ["gb10-lead"]\n')
    assert fleet.plan("B") == ["run", "run"]
    # An admin's restore applies as its retraction did.
    fleet.on("A3", host="gb10-lead")
    assert cli("record", "restore", "--retracted").exit_code == 0
    assert cli("record", "push").exit_code == 0
    _pull(fleet, cli, "B")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]


def test_admin_hosts_that_is_not_a_list_of_ids_is_one_line(fleet: Fleet, cli: Cli) -> None:
    b = fleet.on("B")
    (b / "pyproject.toml").write_text('[tool.oomrec]\nadmin_hosts = "gb10-lead"\n')
    result = cli("record", "list")
    assert result.exit_code == 2
    assert "admin_hosts must be a list of host ids" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_hosts_ref_carries_only_its_own_machines_lines(fleet: Fleet, cli: Cli) -> None:
    """m3ultra-evil publishes a gb10 line of 2^63-1 bytes (it would skip the cell on every
    gb10) beside an m3ultra line of its own: the gb10 line is kept aside on B, with one warning
    naming the ref; the m3ultra line applies on C."""
    rogue = fleet.clone("rogue")
    base = git(rogue, "rev-parse", "origin/main").strip()
    gb10 = f"gemma-4-31b,4096,2026-07-03,{base},,x.csv,gb10,{HUGE}"
    m3 = f"gemma-4-31b,8192,2026-07-03,{base},,x.csv,m3ultra,{512 * GIB}"
    _rogue(fleet, "refs/notes/oomrec/m3ultra-evil", [gb10, m3])
    pulled = _pull(fleet, cli, "B")
    ref = "refs/notes/remotes/origin/oomrec/m3ultra-evil"
    (said,) = _naming(pulled.stderr, ref)
    assert "1 recorded on gb10, not on the ref's host m3ultra-evil" in said
    assert fleet.plan("B") == ["run", "run"]
    listed = cli("record", "list", "--json")
    assert len(_naming(listed.stderr, ref)) == 1
    assert [r["hardware"] for r in json.loads(listed.stdout)["records"]] == ["m3ultra"]
    _pull(fleet, cli, "C")
    assert fleet.plan("C") == ["run", "SKIP:oom_record"]


def test_a_nested_ref_is_no_hosts_ref(fleet: Fleet, cli: Cli) -> None:
    """refs/notes/oomrec/x/oomrec/gb10-honest is fetched as .../origin/oomrec/x/oomrec/
    gb10-honest: never read as host gb10-honest's, said once."""
    rogue = fleet.clone("rogue")
    base = git(rogue, "rev-parse", "origin/main").strip()
    line = f"gemma-4-31b,8192,2026-07-03,{base},,x.csv,gb10,{128 * GIB}"
    _rogue(fleet, "refs/notes/oomrec/x/oomrec/gb10-honest", [line])
    pulled = _pull(fleet, cli, "B")
    nested = "refs/notes/remotes/origin/oomrec/x/oomrec/gb10-honest"
    (said,) = _naming(pulled.stderr, nested)
    assert "not a host's notes ref" in said
    assert "gb10-honest" not in pulled.stdout
    listed = cli("record", "list", "--json")
    assert len(_naming(listed.stderr, nested)) == 1
    assert json.loads(listed.stdout)["records"] == []
    assert fleet.plan("B") == ["run", "run"]


def test_lines_of_another_machine_under_this_hosts_id_are_not_republished(
    fleet: Fleet, cli: Cli
) -> None:
    """Someone appends a gb10 line of 2^63-1 bytes to A's ref on the origin. A's next push is
    a merge that leaves it out (A is a 128 GiB gb10), keeps it under refs/notes/kept/, and
    says so; a host that pulls afterwards never sees it as A's."""
    _publish(fleet, cli)
    rogue = fleet.clone("rogue")
    base = git(rogue, "rev-parse", "origin/main").strip()
    forged = f"gemma-4-31b,4096,2026-07-03,{base},,x.csv,gb10,{HUGE}"
    ref = "refs/notes/oomrec/gb10-a"
    _rogue(fleet, ref, [forged], on_top=True)
    a = fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "16384").exit_code == 0
    pushed = cli("record", "push")
    assert pushed.exit_code == 0, pushed.stderr
    (said,) = _naming(pushed.stderr, ref)
    assert "not merged into this host's ref" in said and "refs/notes/kept/origin/" in said
    assert forged not in git(a, "notes", f"--ref={ref}", "show", base)
    shown = git(fleet.origin, "notes", f"--ref={ref}", "show", base)
    assert forged not in shown and ",16384," in shown
    kept = git(a, "for-each-ref", "--format=%(refname)", "refs/notes/kept/").split()
    assert len(kept) == 1 and forged in git(a, "notes", f"--ref={kept[0]}", "show", base)
    _pull(fleet, cli, "B")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    # On A the kept line is read as any line under A's id: not A's memory, not applied.
    assert fleet.plan("A") == ["run", "SKIP:oom_record"]


def test_a_garbage_line_in_this_hosts_ref_on_the_remote_blocks_no_push(
    fleet: Fleet, cli: Cli
) -> None:
    """A line that is no record, pushed into A's ref on the origin, refused A's every push for
    good. The push merges around it, says so, and the line is kept verbatim."""
    _publish(fleet, cli)
    ref = "refs/notes/oomrec/gb10-a"
    garbage = "\x1b]0;not a record, 2^63"
    _rogue(fleet, ref, [garbage], on_top=True)
    a = fleet.on("A")
    for length in ("16384", "32768"):
        assert cli("record", "add", "gemma-4-31b", length).exit_code == 0
        pushed = cli("record", "push")
        assert pushed.exit_code == 0, pushed.stderr
        assert pushed.stdout.startswith("pushed: 1 new record line(s)")
    base = git(a, "rev-parse", "origin/main").strip()
    shown = git(fleet.origin, "notes", f"--ref={ref}", "show", base)
    assert ",16384," in shown and ",32768," in shown and garbage not in shown
    kept = git(a, "for-each-ref", "--format=%(refname)", "refs/notes/kept/").split()
    assert len(kept) == 1
    assert garbage in git(a, "notes", f"--ref={kept[0]}", "show", base).splitlines()
    # Still in the history of A's ref on the origin: a parent of A's merge.
    tips = git(fleet.origin, "rev-list", ref).split()
    assert kept[0].split("/")[4] in {tip[:12] for tip in tips}


def test_a_host_id_always_starts_with_its_hardware_tag(fleet: Fleet, cli: Cli) -> None:
    """OOMREC_HOST=shared on a gb10 and on an m3ultra: two ids, gb10-shared and
    m3ultra-shared, so neither machine's lines ever sit in the other's ref."""
    for name in ("A1", "C1"):
        fleet.on(name, host="shared")
        assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
        pushed = cli("record", "push", "--json")
        assert pushed.exit_code == 0, pushed.stderr
        tag = "gb10" if name == "A1" else "m3ultra"
        assert json.loads(pushed.stdout)["ref"] == f"refs/notes/oomrec/{tag}-shared"
    fleet.on("A2", host="gb10-box")
    assert cli("record", "add", "gemma-4-31b", "4096").exit_code == 0
    assert json.loads(cli("record", "push", "--json").stdout)["host"] == "gb10-box"
    pulled = _pull(fleet, cli, "B")
    assert pulled.stdout.endswith(
        "records by host: gb10-box (1), gb10-shared (1), m3ultra-shared (1)\n"
    )
    assert fleet.plan("B") == ["SKIP:oom_record", "SKIP:oom_record"]


def test_a_hosts_ref_is_known_by_its_exact_name() -> None:
    """Everything after a remote's `oomrec/` came from the remote: a host is one name there."""
    from oomrec.store.noterefs import host_of

    assert host_of("refs/notes/oomrec/gb10-a") == "gb10-a"
    assert host_of("refs/notes/remotes/origin/oomrec/gb10-a") == "gb10-a"
    # A remote named `oomrec`, one named with a slash.
    assert host_of("refs/notes/remotes/oomrec/oomrec/gb10-a") == "gb10-a"
    assert host_of("refs/notes/remotes/lab/west/oomrec/gb10-a") == "gb10-a"
    assert host_of("refs/notes/kept/origin/0123456789ab/oomrec/gb10-a") == "gb10-a"
    for nested in (
        "refs/notes/oomrec/x/oomrec/gb10-honest",
        "refs/notes/remotes/origin/oomrec/x/oomrec/gb10-honest",
        "refs/notes/kept/origin/0123456789ab/oomrec/x/oomrec/gb10-honest",
        "refs/notes/remotes/oomrec/gb10-a",
        "refs/notes/oomrec/",
        "refs/notes/commits",
    ):
        assert host_of(nested) is None, nested


def test_import_takes_no_retraction_from_another_hosts_ref(
    fleet: Fleet, cli: Cli, tmp_path: Path
) -> None:
    """A sweeps (gemma-4-31b runs out of memory at 1024), commits the CSV and publishes its
    record; gb10-evil publishes a retraction of it. B's import of the CSV holds the row by A's
    shared record: it is not left out as retracted."""
    csv = "benchmarks/cuda_gb10_x.csv"
    a = sweep_on_a_and_publish(fleet, cli, tmp_path, csv)
    line = (a / "benchmarks" / ".oom-record").read_text().splitlines()[0]
    _rogue(fleet, "refs/notes/oomrec/gb10-evil", [f"oomrec-retracted {_stamp()} x {line}"])
    _pull(fleet, cli, "B")
    report = imported(cli)
    assert (report["added"], report["retracted"], report["already_present"]) == (0, 0, 1)
    assert cli("check", "gemma-4-31b", "2048").exit_code == 1


def test_a_clone_of_this_host_under_a_tighter_memory_limit_is_merged(
    fleet: Fleet, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two clones under one id, one in a 64 GiB memory cgroup: its record claims less memory
    than the host has, which this host may have written; the other clone's push merges it."""
    fleet.on("A1", host="gb10-shared")
    monkeypatch.setenv("OOMREC_MEM_BYTES", str(64 * GIB))
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    fleet.on("A2", host="gb10-shared")
    assert cli("record", "add", "gemma-4-31b", "16384").exit_code == 0
    pushed = cli("record", "push")
    assert pushed.exit_code == 0 and pushed.stderr == "", pushed.stderr
    ref = "refs/notes/oomrec/gb10-shared"
    base = git(fleet.origin, "rev-parse", "main").strip()
    shown = git(fleet.origin, "notes", f"--ref={ref}", "show", base)
    assert f",{64 * GIB}" in shown and ",16384," in shown
