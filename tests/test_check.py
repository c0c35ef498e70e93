"""`oomrec check MODEL LENGTH`: may this cell launch here and now? Against real records in real
repositories: the hardware and memory a record applies to, a fix that lifts it, a record
shared by another host, and the sweep's own dry run as the yardstick. Both ways in are tested:
the plain forms (answered without Typer, entry.py) and the full command line (CliRunner)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import dry_run_verdicts
from tests.test_shared import Fleet, fleet  # noqa: F401  (the fixture)
from tests.test_stale_content import AFTER, BEFORE, TRAILER

Cli = Callable[..., CliResult]
GIB = 1024**3
MODEL = "gemma-4-31b"


def check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m oomrec check ARGS` as a script runs it (the plain path of entry.py)."""
    return subprocess.run(
        [sys.executable, "-m", "oomrec", "check", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        check=False,
    )


def verdict(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = check(*args, "--json", env=env)
    assert result.returncode in (0, 1, 3), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.fixture
def gemma(repo: Repo) -> Repo:
    (repo.path / "models" / MODEL).mkdir(parents=True)
    return repo


def test_no_record_may_launch_and_an_applying_record_may_not(gemma: Repo, cli: Cli) -> None:
    result = check(MODEL, "32768")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"run: {MODEL} @ 32768 on testhw: no OOM record applies " \
        "(benchmarks/.oom-record)\n"  # fmt: skip
    assert cli("record", "add", MODEL, "8192").exit_code == 0
    below = check(MODEL, "4096")
    assert below.returncode == 0, below.stderr
    refused = check(MODEL, "32k")
    assert refused.returncode == 1
    line = (gemma.path / "benchmarks" / ".oom-record").read_text().strip()
    assert refused.stdout == (
        f"SKIP:oom_record: {MODEL} @ 32768 on testhw: recorded OOM at 8192 <= 32768 "
        f"(benchmarks/.oom-record:1: {line})\n"
    )
    assert refused.stderr == ""
    # The same cells as the sweep decides them.
    assert dry_run_verdicts(cli, gemma.path, lengths="4096 32768")[1] == ["run", "SKIP:oom_record"]
    code, body = verdict(MODEL, "8192")
    assert code == 1
    assert body["verdict"] == "SKIP:oom_record" and body["may_launch"] is False
    assert body["record_line"] == f"benchmarks/.oom-record:1: {line}"
    assert body["schema_version"] == 2


def test_a_record_applies_only_to_its_hardware_and_to_no_more_memory(gemma: Repo, cli: Cli) -> None:
    host = {"OOMREC_MEM_BYTES": str(128 * GIB)}
    cli("record", "add", MODEL, "8192", "--hardware", "otherhw", "--mem", "128GiB")
    assert verdict(MODEL, "8192", env=host)[0] == 0  # another machine class
    cli("record", "add", MODEL, "16384", "--mem", "64GiB")
    # Ran out of memory with 64 GiB: this host's 128 GiB is not where it is evidence.
    assert verdict(MODEL, "16384", env=host)[0] == 0
    assert verdict(MODEL, "16384", env={"OOMREC_MEM_BYTES": str(64 * GIB)})[0] == 1
    assert verdict(MODEL, "16384", env={"OOMREC_MEM_BYTES": str(32 * GIB)})[0] == 1
    cli("record", "add", MODEL, "32768", "--any-hardware")
    code, body = verdict(MODEL, "32768", env=host)
    assert code == 1 and body["hardware"] == "testhw" and body["host_mem_bytes"] == 128 * GIB


def test_a_fix_in_the_tree_lifts_the_record_and_says_so(gemma: Repo, cli: Cli) -> None:
    gemma.commit("add the prefill", {"prefill.py": BEFORE})
    cli("record", "add", MODEL, "8192")
    assert verdict(MODEL, "8192")[0] == 1
    fix = gemma.commit(f"Chunk the prefill\n\n{TRAILER}\n", {"prefill.py": AFTER})
    result = check(MODEL, "8192")
    # Lifted, not yet verified: only as a probe (exit 3), never an unguarded launch.
    assert result.returncode == 3, result.stderr
    assert f"lifted, unverified: fix {fix[:7]}" in result.stdout
    # A hand revert of the fix's change puts the record back in play.
    gemma.commit("Revert the chunking by hand", {"prefill.py": BEFORE})
    assert verdict(MODEL, "8192")[0] == 1
    assert dry_run_verdicts(cli, gemma.path, lengths="8192")[1] == ["SKIP:oom_record"]


def test_a_record_shared_by_another_host_applies(fleet: Fleet, cli: Cli) -> None:  # noqa: F811
    fleet.on("A")
    cli("record", "add", "gemma-4-31b", "8192")
    assert cli("record", "push").exit_code == 0
    b = fleet.on("B")
    assert verdict("gemma-4-31b", "8192")[0] == 0  # not pulled yet
    cli("remote", "setup")
    cli("record", "pull")
    assert not (b / "benchmarks" / ".oom-record").exists()  # only in the notes
    code, body = verdict("gemma-4-31b", "16384")
    assert code == 1, body
    assert body["record_line"].startswith("notes gb10-a@")
    fleet.on("C")  # another machine class
    cli("remote", "setup")
    cli("record", "pull")
    assert verdict("gemma-4-31b", "16384")[0] == 0


def test_model_paths_as_typed_and_nested_models(gemma: Repo, cli: Cli) -> None:
    cli("record", "add", MODEL, "8192")
    result = check(f"./models/{MODEL}/", "8192")
    assert result.returncode == 1
    assert f"note: model './models/{MODEL}/' read as '{MODEL}'" in result.stderr
    (gemma.path / "models" / "org" / "nested").mkdir(parents=True)
    cli("record", "add", "org/nested", "512")
    assert verdict("org/nested", "512")[0] == 1
    # A model with a folder and no record (one without a folder is refused: test_model_names).
    (gemma.path / "models" / "org" / "other").mkdir()
    assert verdict("org/other", "512")[0] == 0


def test_the_record_ignored_by_the_harness_switch_says_so(gemma: Repo, cli: Cli) -> None:
    cli("record", "add", MODEL, "8192")
    result = check(MODEL, "8192", env={"MLXCEL_BENCH_IGNORE_OOM_RECORD": "1"})
    assert result.returncode == 0
    assert "record is ignored ($MLXCEL_BENCH_IGNORE_OOM_RECORD is set)" in result.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((MODEL, "2x"), "length '2x' is not a prompt length"),
        ((MODEL, "0"), "length '0' is not a prompt length"),
        (("/abs", "512"), "absolute path"),
        ((MODEL,), "Missing argument 'LENGTH'"),
        ((MODEL, "512", "--bogus"), "No such option: --bogus"),
        ((MODEL, "512", "--record", "/no/such/dir/rec"), "/no/such/dir"),
    ],
    ids=["bad length", "zero", "absolute model", "no length", "unknown option", "no folder"],
)
def test_usage_errors_are_one_line_and_status_2(
    gemma: Repo, args: tuple[str, ...], said: str
) -> None:
    result = check(*args)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert result.stderr.startswith("oomrec: error: ") and said in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_the_plain_path_and_the_full_command_line_agree(gemma: Repo, cli: Cli) -> None:
    cli("record", "add", MODEL, "8192")
    for length, status in (("4096", 0), ("8192", 1)):
        plain = check(MODEL, length, "--json")
        full = cli("check", MODEL, length, "--json")
        assert plain.returncode == full.exit_code == status
        assert json.loads(plain.stdout) == json.loads(full.stdout)
    # -q: a yes says nothing, a no still says why.
    quiet_yes = subprocess.run(
        [sys.executable, "-m", "oomrec", "-q", "check", MODEL, "512"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (quiet_yes.returncode, quiet_yes.stdout) == (0, "")
    quiet_no = cli("-q", "check", MODEL, "8192")
    assert quiet_no.exit_code == 1 and quiet_no.stdout.startswith("SKIP:oom_record: ")


def test_outside_git_with_a_record_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / MODEL).mkdir(parents=True)
    record = tmp_path / "rec"
    record.write_text(f"{MODEL},8192,2026-07-03,unknown,,s.csv,testhw\n")
    assert check(MODEL, "4096", "--record", str(record)).returncode == 0
    refused = check(MODEL, "8192", f"--record={record}")
    assert refused.returncode == 1, refused.stderr
    assert f"{record}:1: {MODEL},8192," in refused.stdout
    inside = subprocess.run(["git", "rev-parse"], cwd=tmp_path, capture_output=True, check=False)
    assert inside.returncode != 0  # truly outside any repository


def test_stdout_on_a_full_disk_or_gone_is_one_line_or_silent(gemma: Repo, cli: Cli) -> None:
    cli("record", "add", MODEL, "8192")
    for args in ((MODEL, "512"), (MODEL, "8192", "--json")):
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "oomrec", "check", *args],
                stdout=full, stderr=subprocess.PIPE, text=True, check=False,
            )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            "oomrec: error: cannot write the output: No space left on device; free space or "
            "send it elsewhere\n"
        )
    # A reader gone away (`| head -0`): status 1 and no message, as every command ends then.
    # Its end is closed before oomrec starts, so every write fails, however busy the machine.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        gone = subprocess.run(
            [sys.executable, "-m", "oomrec", "check", MODEL, "512"],
            stdout=write_end, stderr=subprocess.PIPE, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (gone.returncode, gone.stderr) == (1, b"")


def checked_imports(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    from tests.test_startup_imports import imported

    return imported(["check", *args, "--json"], Path.cwd())


def test_a_history_known_to_hold_no_fix_is_judged_without_gitpython(gemma: Repo, cli: Cli) -> None:
    gemma.commit("add the prefill", {"prefill.py": BEFORE})
    cli("record", "add", MODEL, "8192")
    # The first judgement reads the history with GitPython and keeps what it found (no fix).
    first, modules = checked_imports(MODEL, "32768")
    assert first.returncode == 1 and "git" in modules
    again, modules = checked_imports(MODEL, "32768")
    assert again.returncode == 1, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert "git" not in modules
    # A fix committed since: HEAD was never scanned, so the full judgement runs and lifts it.
    fix = gemma.commit(f"Chunk the prefill\n\n{TRAILER}\n", {"prefill.py": AFTER})
    lifted, modules = checked_imports(MODEL, "32768")
    assert lifted.returncode == 3, lifted.stderr
    assert f"fix {fix[:7]}" in json.loads(lifted.stdout)["reason"] and "git" in modules
    # With a fix in the history the cache proves nothing: every later check judges in full.
    later, modules = checked_imports(MODEL, "32768")
    assert later.returncode == 3 and "git" in modules


@pytest.mark.parametrize("spoil", ["cut", "shallow", "unknown commit"])
def test_what_the_cache_cannot_prove_is_judged_in_full(
    gemma: Repo, cli: Cli, tmp_path: Path, spoil: str
) -> None:
    gemma.commit("add the prefill", {"prefill.py": BEFORE})
    cli(
        "record",
        "add",
        MODEL,
        "8192",
        *(["--commit", "unknown"] if spoil == "unknown commit" else []),
    )
    assert checked_imports(MODEL, "32768")[0].returncode == 1
    (cache,) = (gemma.path / ".git" / "oomrec").glob("events-*")
    if spoil == "cut":
        cache.write_text(cache.read_text()[:-3])
    elif spoil == "shallow":
        (gemma.path / ".git" / "shallow").write_text(gemma.git("rev-parse", "HEAD").strip() + "\n")
    done, modules = checked_imports(MODEL, "32768")
    assert done.returncode == 1, done.stderr
    assert "git" in modules


def test_a_replaced_history_is_judged_in_full(gemma: Repo, cli: Cli) -> None:
    """`git replace` changes a commit's history without changing its SHA: the cache cannot
    vouch for it (a replacement that brings a fix below HEAD lifts the record)."""
    gemma.commit("add the prefill", {"prefill.py": BEFORE})
    cli("record", "add", MODEL, "8192")
    chunk = gemma.commit("Chunk the prefill", {"prefill.py": AFTER})
    assert checked_imports(MODEL, "32768")[0].returncode == 1
    assert "git" not in checked_imports(MODEL, "32768")[1]
    tree = gemma.git("rev-parse", "HEAD^{tree}").strip()
    parent = gemma.git("rev-parse", "HEAD~1").strip()
    fixed = gemma.git(
        "commit-tree", "-p", parent, "-m", "Chunk the prefill", "-m", TRAILER, tree
    ).strip()
    gemma.git("replace", chunk, fixed)
    done, modules = checked_imports(MODEL, "32768")
    assert done.returncode == 3, done.stdout
    assert "git" in modules


def test_the_shortcut_reads_the_repository_the_judgement_reads(
    gemma: Repo, cli: Cli, tmp_path: Path
) -> None:
    """A bare clone inside the worktree, the cwd in it: both read the bare repository (its
    fix), not the worktree around it (its cache, which says no fix)."""
    gemma.commit("add the prefill", {"prefill.py": BEFORE})
    cli("record", "add", MODEL, "8192")
    record = str(gemma.path / "benchmarks" / ".oom-record")
    assert checked_imports(MODEL, "32768")[0].returncode == 1  # the worktree's cache: no fix
    bare = gemma.path / "vendor.git"
    gemma.git("clone", "-q", "--bare", str(gemma.path), str(bare))
    with (gemma.path / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("/vendor.git/\n")
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    (work / "prefill.py").write_text(AFTER)
    for args in (["commit", "-qam", f"Chunk the prefill\n\n{TRAILER}"], ["push", "-q"]):
        subprocess.run(["git", *args], cwd=work, check=True)
    from tests.test_startup_imports import imported

    done, _ = imported(["check", MODEL, "32768", "--json", "--record", record], bare)
    assert done.returncode == 3, done.stdout
    assert "lifted, unverified" in json.loads(done.stdout)["reason"]
