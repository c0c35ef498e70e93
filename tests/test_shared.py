"""Shared records through git notes: a bare origin and clones in temp dirs acting as hosts
A (gb10, 128 GiB), B (gb10, 128 GiB) and C (m3ultra, 512 GiB)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import git
from tests.helpers import dry_run_verdicts

Cli = Callable[..., CliResult]
GIB = 1024**3
HOSTS = {
    "A": ("gb10", 128 * GIB),
    "B": ("gb10", 128 * GIB),
    "C": ("m3ultra", 512 * GIB),
}


class Fleet:
    def __init__(self, root: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.cli = cli
        self.mp = monkeypatch
        self.origin = root / "origin.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(self.origin))
        seed = root / "seed"
        git(root, "clone", "-q", str(self.origin), str(seed))
        git(seed, "commit", "-q", "--allow-empty", "-m", "base")
        git(seed, "push", "-q", "origin", "main")

    def clone(self, name: str) -> Path:
        path = self.root / name
        if not path.exists():
            git(self.root, "clone", "-q", str(self.origin), str(path))
            (path / "models" / "gemma-4-31b").mkdir(parents=True)
        return path

    def on(self, name: str, host: str | None = None) -> Path:
        """Act as host `name`: its clone is the cwd, its tag, memory and id are set."""
        tag, mem = HOSTS[name[0]]
        path = self.clone(name)
        self.mp.chdir(path)
        self.mp.setenv("OOMREC_HARDWARE", tag)
        self.mp.setenv("OOMREC_MEM_BYTES", str(mem))
        self.mp.setenv("OOMREC_HOST", host or f"{tag}-{name.lower()}")
        return path

    def plan(self, name: str) -> list[str]:
        return dry_run_verdicts(self.cli, self.on(name))[1]


@pytest.fixture
def fleet(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Fleet:
    return Fleet(tmp_path, cli, monkeypatch)


def test_an_oom_pushed_by_a_pre_skips_on_b_after_pull_and_not_on_c(fleet: Fleet, cli: Cli) -> None:
    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    pushed = cli("record", "push")
    assert pushed.exit_code == 0, pushed.stderr
    assert pushed.stdout.startswith("pushed: 1 new record line(s) in refs/notes/oomrec/gb10-a")
    for host in ("B", "C"):
        fleet.on(host)
        assert cli("remote", "setup").stdout.startswith("added: remote.origin.fetch")
        pulled = cli("record", "pull")
        assert pulled.stdout.endswith("records by host: gb10-a (1)\n")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    assert fleet.plan("C") == ["run", "run"]
    # Where it came from, in list.
    fleet.on("B")
    listed = json.loads(cli("record", "list", "--json").stdout)["records"]
    assert [(r["prompt_target_len"], r["from"]) for r in listed] == [(8192, "notes:gb10-a")]
    # Pushing again with nothing new is a no-op.
    fleet.on("A")
    assert cli("record", "push").stdout.startswith("nothing new to push: 0 new record line(s)")


def test_a_fix_merged_on_origin_lifts_a_shared_record_once_b_pulls_the_code(
    fleet: Fleet, cli: Cli
) -> None:
    fleet.on("A")
    cli("record", "add", "gemma-4-31b", "8192")
    cli("record", "push")
    b = fleet.on("B")
    cli("remote", "setup")
    cli("record", "pull")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    a = fleet.on("A")
    git(a, "commit", "-q", "--allow-empty", "-m", "Chunk the prefill\n\nOOM-Fix: gemma-4-*")
    git(a, "push", "-q", "origin", "main")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    git(b, "pull", "-q")
    # Lifted on B by the pulled fix: a probe, which a run on B verifies.
    assert fleet.plan("B") == ["run", "probe"]
    ran = cli("run", "gemma-4-31b", "8192", "--json", "--", sys.executable, "-c", "pass")
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["probe"] is True
    # Another host's line is only archived here (B's record never held it), as verified.
    assert not (b / "benchmarks" / ".oom-record").exists()
    archived = (b / "benchmarks" / ".oom-record.archive").read_text()
    assert archived.split(" ")[1].startswith("verified:")
    assert fleet.plan("B") == ["run", "run"]


def test_what_cannot_be_judged_elsewhere_stays_local(
    fleet: Fleet, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = fleet.on("A")
    git(a, "commit", "-q", "--allow-empty", "-m", "local only")
    cli("record", "add", "gemma-4-31b", "1024", "--any-hardware", "--commit", "HEAD~1")
    cli("record", "add", "gemma-4-31b", "2048")
    monkeypatch.setenv("OOMREC_MEM_BYTES", "unknown")
    assert cli("record", "add", "gemma-4-31b", "4096", "--commit", "HEAD~1").exit_code == 0
    # A fake OOM on a pushed commit, tagged and sized: publishable but for being a fake.
    record = a / "benchmarks" / ".oom-record"
    fields = next(x for x in record.read_text().splitlines() if ",2048," in x).split(",")
    fields[1], fields[3] = "8192", git(a, "rev-parse", "HEAD~1").strip()
    with record.open("a") as out:
        out.write(",".join([*fields[:8], "fake"]) + "\n")
    result = cli("record", "push")
    assert result.exit_code == 0, result.stderr
    kept = result.stderr.splitlines()
    assert len(kept) == 4
    assert "1024" in kept[0] and "no hardware tag" in kept[0]
    assert "4096" in kept[1] and "memory unknown" in kept[1]
    assert "8192" in kept[2] and "faked with --fake-oom (no OOM was seen)" in kept[2]
    assert "2048" in kept[3] and "is on no branch of origin (push it first)" in kept[3]
    assert result.stdout.startswith("nothing new to push: 0 new")


def test_two_clones_with_one_host_id_lose_nothing(fleet: Fleet, cli: Cli) -> None:
    fleet.on("A1", host="gb10-shared")
    cli("record", "add", "gemma-4-31b", "8192")
    fleet.on("A2", host="gb10-shared")
    cli("record", "add", "gemma-4-31b", "16384")
    assert cli("record", "push").exit_code == 0
    fleet.on("A1", host="gb10-shared")
    # A1's ref does not contain A2's push: rejected, merged, retried.
    result = cli("record", "push")
    assert result.exit_code == 0, result.stderr
    fleet.on("B")
    cli("remote", "setup")
    cli("record", "pull")
    listed = json.loads(cli("record", "list", "--json").stdout)["records"]
    assert sorted(r["prompt_target_len"] for r in listed) == [8192, 16384]


def test_concurrent_pushes_of_one_host_id_lose_nothing(fleet: Fleet) -> None:
    procs = []
    for n, length in enumerate(("1024", "2048", "4096")):
        path = fleet.clone(f"A{n}")
        env = {
            "OOMREC_HOST": "gb10-same",
            "OOMREC_HARDWARE": "gb10",
            "OOMREC_MEM_BYTES": str(128 * GIB),
            "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        }
        import os

        env = {**os.environ, **env}
        subprocess.run(
            [sys.executable, "-m", "oomrec", "record", "add", "gemma-4-31b", length],
            cwd=path,
            env=env,
            check=True,
            capture_output=True,
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "oomrec", "record", "push"],
                cwd=path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    note_ref = "refs/notes/oomrec/gb10-same"
    listed = git(fleet.origin, "notes", "--ref", note_ref, "list").splitlines()
    body = git(fleet.origin, "notes", "--ref", note_ref, "show", listed[0].split()[1])
    assert sorted(int(x.split(",")[1]) for x in body.splitlines()) == [1024, 2048, 4096]


def test_notes_survive_gc_and_remote_setup_leaves_branch_pushes_alone(
    fleet: Fleet, cli: Cli
) -> None:
    a = fleet.on("A")
    cli("record", "add", "gemma-4-31b", "8192")
    cli("record", "push")
    b = fleet.on("B")
    cli("remote", "setup")
    assert cli("remote", "setup").stdout.startswith("already there:")
    git(b, "fetch", "-q")
    for where in (fleet.origin, a, b):
        git(where, "gc", "-q", "--prune=now")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    assert (
        subprocess.run(
            ["git", "config", "--get-all", "remote.origin.push"], cwd=b, capture_output=True
        ).returncode
        == 1
    )
    git(b, "commit", "-q", "--allow-empty", "-m", "b work")
    pushed = git(b, "push", "--porcelain", "origin", "main")
    assert "refs/heads/main:refs/heads/main" in pushed
    assert "refs/notes" not in pushed


def test_push_without_identity_says_how(fleet: Fleet, cli: Cli, monkeypatch) -> None:
    fleet.on("A")
    cli("record", "add", "gemma-4-31b", "8192")
    for name in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name)
    result = cli("record", "push")
    assert result.exit_code == 2
    assert "git notes need a committer identity: git config user.name" in result.stderr


def test_an_unknown_remote_is_one_line(fleet: Fleet, cli: Cli) -> None:
    fleet.on("A")
    result = cli("record", "pull", "upstream")
    assert result.exit_code == 2
    assert result.stderr == (
        "oomrec: error: no git remote named 'upstream' (remotes: origin); add one with git "
        "remote add\n"
    )


def test_shards_partition_the_models_stably_and_say_which_they_took(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    models = [f"model-{n}" for n in range(12)]
    for m in models:
        (tmp_path / "models" / m).mkdir(parents=True)
    taken: list[list[str]] = []
    for i in (1, 2, 3):
        result = cli(
            "sweep",
            "--models",
            " ".join(models),
            "--lengths",
            "512 1024",
            "--runner",
            f"{sys.executable} -c pass",
            "--shard",
            f"{i}/3",
            "--dry-run",
            "--json",
        )
        assert result.exit_code == 0, result.stderr
        cells = json.loads(result.stdout)["cells"]
        mine = sorted({c["model"] for c in cells})
        # Every length of a model is in the same shard.
        assert len(cells) == 2 * len(mine)
        assert f"shard {i}/3: " in result.stderr
        taken.append(mine)
    assert sorted(m for shard in taken for m in shard) == sorted(models)
    from oomrec.sweep.options import shard_of

    assert [shard_of(m, 3) for m in models] == [shard_of(m, 3) for m in models]
    bad = cli("sweep", "--models", "a", "--runner", "true", "--shard", "4/3", "--dry-run")
    assert bad.exit_code == 2
    assert "--shard '4/3' is not I/N with 1 <= I <= N" in bad.stderr


RUNNER = r"""
import sys
model, length, cell_csv = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if model == "b":
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    sys.exit(1)
header = ("model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
          "decode_tok_s,date,hardware,mlx_version,build_type,max_tokens,prompt,prompt_target_len")
row = (f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"
       f'"Hello, how are you today?",{length}')
open(cell_csv, "w").write(header + "\n" + row + "\n")
"""


def test_fleet_submit_runs_every_shard_through_submitits_local_executor(
    fleet: Fleet, cli: Cli
) -> None:
    pytest.importorskip("submitit")
    a = fleet.on("A")
    for name in ("a", "b", "c"):
        (a / "models" / name).mkdir(parents=True, exist_ok=True)
    (a / "runner.py").write_text(RUNNER)
    cli("remote", "setup")
    runner = f"{sys.executable} runner.py {{model}} {{length}} {{cell_csv}}"
    result = cli(
        "fleet", "submit", "--shards", "2", "--cluster", "local", "--wait", "--json",
        "--folder", str(fleet.root / "jobs"), "--",
        "--models", "a b c", "--lengths", "512", "--runner", runner,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert len(data["jobs"]) == 2
    results = sorted(data["results"], key=lambda r: r["shard"])
    assert [r["steps"] for r in results] == [{"pull": 0, "sweep": 0, "push": 0}] * 2
    assert sum(r["cells"] for r in results) == 3
    assert [Path(r["output"]).name.endswith(f"_shard{r['shard']}of2.csv") for r in results] == [
        True,
        True,
    ]
    # b's OOM went to the origin in A's notes: B pre-skips it after a pull.
    shared = git(fleet.origin, "for-each-ref", "refs/notes/oomrec/")
    assert "refs/notes/oomrec/gb10-a" in shared


def test_fleet_submit_refuses_options_it_sets_itself(fleet: Fleet, cli: Cli) -> None:
    fleet.on("A")
    result = cli("fleet", "submit", "--", "--models", "a", "--output", "x.csv")
    assert result.exit_code == 2
    assert "fleet submit sets --output itself" in result.stderr


def test_record_stale_judges_other_hosts_records_without_touching_them(
    fleet: Fleet, cli: Cli
) -> None:
    fleet.on("A")
    cli("record", "add", "gemma-4-31b", "8192")
    cli("record", "push")
    b = fleet.on("B")
    cli("remote", "setup")
    cli("record", "pull")
    git(b, "commit", "-q", "--allow-empty", "-m", "Chunk the prefill\n\nOOM-Fix: gemma-4-*")
    data = json.loads(cli("record", "stale", "--json").stdout)
    assert [
        (e["from"], e["record"]["prompt_target_len"]) for e in data["shared_no_longer_apply"]
    ] == [("notes:gb10-a", 8192)]
    assert data["no_longer_apply"] == []
    assert cli("record", "prune").exit_code == 0
    assert "gb10-a" in git(b, "for-each-ref", "refs/notes/")


def test_a_shared_record_is_the_same_evidence_however_its_line_is_written(
    fleet: Fleet, cli: Cli
) -> None:
    a = fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    line = (a / "benchmarks" / ".oom-record").read_text().strip()
    b = fleet.on("B")
    assert cli("remote", "setup").exit_code == 0
    assert cli("record", "pull").exit_code == 0
    # B holds the same evidence in its own record, written by hand: its tag in upper case.
    model, length, day, commit, peak, source, tag, mem = line.split(",")
    (b / "benchmarks").mkdir(exist_ok=True)
    (b / "benchmarks" / ".oom-record").write_text(
        ",".join([model, length, day, commit, peak, source, tag.upper(), mem]) + "\n"
    )
    listed = json.loads(cli("record", "list", "--json").stdout)["records"]
    assert [(r["prompt_target_len"], r["from"]) for r in listed] == [(8192, "local")]


def test_setup_push_and_pull_each_print_one_json_shape(fleet: Fleet, cli: Cli) -> None:
    """`--json` on every shared-record verb: one object, `schema_version` first, the same keys
    in a dry run and a real run."""
    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "add", "gemma-4-31b", "512", "--hardware", "").exit_code in (0, 2)
    dry = json.loads(cli("record", "push", "--dry-run", "--json").stdout)
    real = json.loads(cli("record", "push", "--json").stdout)
    assert list(dry) == list(real) == [
        "schema_version", "remote", "host", "ref", "dry_run", "publish", "new", "pushed",
        "kept_back",
    ]  # fmt: skip
    assert (dry["dry_run"], dry["publish"], dry["new"], dry["pushed"]) == (True, 1, 0, False)
    assert (real["dry_run"], real["new"], real["pushed"]) == (False, 1, True)
    assert real["ref"] == "refs/notes/oomrec/gb10-a"
    again = json.loads(cli("record", "push", "--json").stdout)
    assert (again["new"], again["pushed"]) == (0, False)
    fleet.on("B")
    setup = json.loads(cli("remote", "setup", "--json").stdout)
    assert setup == {
        "schema_version": 2,
        "remote": "origin",
        "refspec": "+refs/notes/oomrec/*:refs/notes/remotes/origin/oomrec/*",
        "added": True,
    }
    assert json.loads(cli("remote", "setup", "--json").stdout)["added"] is False
    pulled = cli("record", "pull", "--json")
    assert pulled.stdout.count("\n") == 1
    data = json.loads(pulled.stdout)
    assert data["by_host"] == {"gb10-a": 1}
    assert data["refs"] == ["refs/notes/remotes/origin/oomrec/gb10-a"]


def _publish_raw(fleet: Fleet, host: str, make_object: Callable[[Path], str]) -> str:
    """Someone pushes refs/notes/oomrec/<host> pointing at whatever `make_object` writes."""
    rogue = fleet.clone("rogue")
    sha = make_object(rogue)
    git(rogue, "update-ref", f"refs/notes/oomrec/{host}", sha)
    git(rogue, "push", "-q", "-f", "origin", f"refs/notes/oomrec/{host}:refs/notes/oomrec/{host}")
    return sha


def _blob(where: Path) -> str:
    return git(where, "hash-object", "-w", "--stdin", input="not a notes tree\n")


def _tree(where: Path) -> str:
    return git(where, "write-tree")


def _tag(where: Path) -> str:
    git(where, "tag", "-a", "-m", "a tag", "t-of-blob", _blob(where))
    return git(where, "rev-parse", "t-of-blob")


@pytest.mark.parametrize("make", [_blob, _tree, _tag], ids=["blob", "tree", "tag"])
def test_a_notes_ref_at_a_blob_tree_or_tag_is_one_warning_and_the_rest_applies(
    fleet: Fleet, cli: Cli, make: Callable[[Path], str]
) -> None:
    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    _publish_raw(fleet, "evil", make)
    fleet.on("B")
    cli("remote", "setup")
    pulled = cli("record", "pull")
    assert pulled.exit_code == 0, pulled.stderr
    bad = "refs/notes/remotes/origin/oomrec/evil"
    warned = [x for x in pulled.stderr.splitlines() if bad in x]
    assert len(warned) == 1 and "not a notes commit" in warned[0]
    assert "Traceback" not in pulled.stderr and "error:" not in pulled.stderr
    assert pulled.stdout.endswith("records by host: gb10-a (1)\n")
    listed = cli("record", "list", "--json")
    assert listed.exit_code == 0
    assert len([x for x in listed.stderr.splitlines() if bad in x]) == 1
    assert [r["from"] for r in json.loads(listed.stdout)["records"]] == ["notes:gb10-a"]
    # The sweep still pre-skips the cell A recorded, and says why the other ref is not read.
    _, verdicts = dry_run_verdicts(cli, fleet.on("B"))
    assert verdicts == ["run", "SKIP:oom_record"]


def test_a_shared_line_no_publisher_writes_is_not_applied(fleet: Fleet, cli: Cli) -> None:
    """The read side applies what `record push` publishes: a line without a hardware tag
    (it would apply to every machine) pushed by hand under another id is left out, said."""
    rogue = fleet.clone("rogue")
    base = git(rogue, "rev-parse", "HEAD")
    line = f"gemma-4-31b,4096,2026-07-03,{base},,x.csv"
    git(rogue, "notes", "--ref=oomrec/hand", "add", "-m", line, base)
    git(rogue, "push", "-q", "origin", "refs/notes/oomrec/hand:refs/notes/oomrec/hand")
    b = fleet.on("B")
    cli("remote", "setup")
    cli("record", "pull")
    _, verdicts = dry_run_verdicts(cli, b)
    assert verdicts == ["run", "run"]
    listed = cli("record", "list")
    assert "refs/notes/remotes/origin/oomrec/hand: lines no publisher writes" in listed.stderr
    assert "no hardware tag" in listed.stderr


def test_a_push_restores_what_another_machine_rewound(fleet: Fleet, cli: Cli) -> None:
    """Host A's ref force-pushed back to its first commit from elsewhere: A's next push sees
    the remote as it is, not as A last fetched it, and makes it hold all three records."""
    fleet.on("A")
    for length in ("4096", "8192", "16384"):
        assert cli("record", "add", "gemma-4-31b", length).exit_code == 0
        assert cli("record", "push").exit_code == 0
    first = git(fleet.origin, "rev-list", "--max-parents=0", "refs/notes/oomrec/gb10-a")
    git(fleet.origin, "update-ref", "refs/notes/oomrec/gb10-a", first)
    fleet.on("A")
    pushed = cli("record", "push")
    assert pushed.stdout.startswith("pushed: 0 new record line(s)"), pushed.stdout
    fleet.on("C")
    cli("remote", "setup")
    assert cli("record", "pull").stdout.endswith("records by host: gb10-a (3)\n")
    # Deleted on the remote: the next push creates it again.
    git(fleet.origin, "update-ref", "-d", "refs/notes/oomrec/gb10-a")
    fleet.on("A")
    assert cli("record", "push").stdout.startswith("pushed:")
    assert git(fleet.origin, "rev-parse", "refs/notes/oomrec/gb10-a")


def _fleet_clone_with_runner(fleet: Fleet, cli: Cli) -> tuple[Path, str]:
    a = fleet.on("A")
    for name in ("a", "b"):
        (a / "models" / name).mkdir(parents=True, exist_ok=True)
    (a / "runner.py").write_text(RUNNER)
    return a, f"{sys.executable} runner.py {{model}} {{length}} {{cell_csv}}"


def test_a_task_whose_pull_fails_launches_nothing_unless_offline(fleet: Fleet, cli: Cli) -> None:
    """The remote is unreachable from the task: sweeping anyway could launch a cell another
    host has recorded as an OOM, so the task launches nothing; --offline says it sweeps."""
    pytest.importorskip("submitit")
    a, runner = _fleet_clone_with_runner(fleet, cli)
    git(a, "remote", "add", "gone", str(fleet.root / "no-such-remote.git"))
    args = ["fleet", "submit", "--shards", "1", "--cluster", "local", "--wait", "--json",
            "--remote", "gone", "--folder", str(fleet.root / "jobs")]  # fmt: skip
    sweep = ["--", "--models", "a b", "--lengths", "512", "--runner", runner]
    result = cli(*args, *sweep)
    assert result.exit_code == 1, result.stdout + result.stderr
    (task,) = json.loads(result.stdout)["results"]
    assert task["steps"]["pull"] != 0 and task["steps"]["sweep"] == 3
    assert "push" not in task["steps"] and task["cells"] == 0
    assert any("not run: record pull gone failed" in line for line in task["log"])
    assert not list((a / "benchmarks").glob("*_shard1of1.csv"))
    offline = cli(*args, "--offline", *sweep)
    (task,) = json.loads(offline.stdout)["results"]
    assert task["steps"]["sweep"] == 0 and task["cells"] == 2
    assert any("--offline: sweeping without" in line for line in task["log"])


def test_sweep_arguments_are_tried_before_anything_is_queued(fleet: Fleet, cli: Cli) -> None:
    pytest.importorskip("submitit")
    _, runner = _fleet_clone_with_runner(fleet, cli)
    jobs = fleet.root / "jobs"
    result = cli("fleet", "submit", "--cluster", "local", "--folder", str(jobs), "--",
                 "--models", "a", "--lenghts", "512", "--runner", runner)  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("oomrec: error: the sweep arguments would fail in every task")
    assert "--lenghts" in result.stderr and result.stderr.count("\n") == 1
    assert not jobs.exists()


def test_slurm_asked_for_where_there_is_none_is_one_line(
    fleet: Fleet, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("submitit")
    _, runner = _fleet_clone_with_runner(fleet, cli)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    result = cli("fleet", "submit", "--cluster", "slurm", "--", "--models", "a",
                 "--lengths", "512", "--runner", runner)  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("oomrec: error: --cluster slurm: no Slurm here")
    assert result.stderr.count("\n") == 1


def test_fleet_files_stay_out_of_git_status_and_no_literal_job_folder_is_left(
    fleet: Fleet, cli: Cli
) -> None:
    pytest.importorskip("submitit")
    a = fleet.on("A")
    (a / "models" / "a").mkdir(parents=True, exist_ok=True)
    (a / "runner.py").write_text(RUNNER)
    git(a, "add", "runner.py")
    git(a, "commit", "-q", "-m", "runner")
    cli("remote", "setup")
    runner = f"{sys.executable} runner.py {{model}} {{length}} {{cell_csv}}"
    result = cli(
        "fleet", "submit", "--shards", "1", "--cluster", "local", "--wait", "--json", "--",
        "--models", "a", "--lengths", "512", "--runner", runner,
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    jobs = a / "benchmarks" / ".oomrec-fleet"
    assert jobs.is_dir()
    assert not (jobs / "%j").exists()
    status = git(a, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert not [line for line in status if ".oomrec" in line or ".oom-record" in line], status


def test_two_pushes_of_one_clone_at_once_both_land(fleet: Fleet, cli: Cli) -> None:
    """A fleet's shards on one machine push from one clone at the same moment: the notes ref
    is written under a lock, so neither fast-import finds the other's ref in its way."""
    a = fleet.on("A")
    for length in ("512", "1024", "2048", "4096"):
        assert cli("record", "add", "gemma-4-31b", length).exit_code == 0
    pushes = [
        subprocess.Popen(
            [sys.executable, "-m", "oomrec", "record", "push"],
            cwd=a,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for push in pushes:
        out, err = push.communicate(timeout=300)
        assert push.returncode == 0, out + err
    shared = git(fleet.origin, "notes", "--ref", "refs/notes/oomrec/gb10-a", "list")
    assert shared.strip()


def test_read_objects_takes_a_missing_last_object_as_missing(tmp_path: Path) -> None:
    """GitPython strips cat-file's last newline: a missing object asked for last (a gitlink in a
    pushed notes tree, a deleted blob) raised ValueError out of every reader of notes."""
    from oomrec.store import gitrepo as gitutil
    from tests.gitrepo import Repo

    repo = Repo(tmp_path / "r")
    head = repo.commit("one")
    opened = gitutil.open_repo(repo.path)
    assert opened is not None
    found = gitutil.read_objects(opened, [head, "e" * 40])
    assert found[0] is not None and found[0][0] == "commit"
    assert found[1] is None
    assert gitutil.read_objects(opened, ["e" * 40]) == [None]


def fast_import(repo: Path, stream: str) -> None:
    done = subprocess.run(
        ["git", "fast-import", "--quiet"],
        input=stream,
        cwd=repo,
        text=True,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_fanned_out_notes_tree_of_a_sha256_repository_is_read_whole(tmp_path: Path) -> None:
    """A notes ref of 600 notes fans out (`ab/cdef...`); SHA-256 tree entries hold 32-byte ids,
    read as 20 they lost whole subtrees (some of 600 records read). Every note is read."""
    from oomrec.store import gitrepo as gitutil
    from oomrec.store.notes import read_ref

    path = tmp_path / "r"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(path))
    stream = []
    for i in range(600):
        stream.append(f"commit refs/heads/main\ncommitter t <t@t> {1_700_000_000 + i} +0000\n")
        stream.append(f"data {len(str(i))}\n{i}\n")
    fast_import(path, "".join(stream))
    shas = git(path, "rev-list", "main").split()
    lines = [
        f"{sha} m{i},512,2026-01-01,{sha},,x.csv,gb10,137438953472" for i, sha in enumerate(shas)
    ]
    # One note per commit, through fast-import's notemodify: git fans the tree out itself.
    notes = ["commit refs/notes/oomrec/many\ncommitter t <t@t> 1700000000 +0000\ndata 0\n"]
    for line in lines:
        sha, text = line.split(" ", 1)
        notes.append(f"N inline {sha}\ndata {len(text) + 1}\n{text}\n")
    fast_import(path, "".join(notes))
    tree = git(path, "ls-tree", "refs/notes/oomrec/many")
    assert "\ttree " not in tree and " tree " in tree, "the notes tree did not fan out"
    opened = gitutil.open_repo(path)
    assert opened is not None
    read = read_ref(opened, "refs/notes/oomrec/many")
    assert len(read) == 600
    assert sorted(read) == sorted(shas)


def test_a_host_name_with_terminal_escapes_is_shown_escaped(fleet: Fleet, cli: Cli) -> None:
    """A notes ref's name is the host's id as others see it, and git allows a bidi override or
    an 8-bit CSI in it: `record pull`, `record list` and the sweep's log show it escaped."""
    rogue = fleet.clone("rogue")
    base = git(rogue, "rev-parse", "HEAD")
    name = "gb10-x\u202eevil\u009b31m"
    line = f"gemma-4-31b,4096,2026-07-03,{base},,x.csv,gb10,{128 * GIB}"
    git(rogue, "notes", f"--ref=oomrec/{name}", "add", "-m", line, base)
    git(rogue, "push", "-q", "origin", f"refs/notes/oomrec/{name}:refs/notes/oomrec/{name}")
    fleet.on("B")
    cli("remote", "setup")
    shown = r"gb10-x\u202eevil\x9b31m"
    pulled = cli("record", "pull")
    assert pulled.exit_code == 0, pulled.stderr
    assert pulled.stdout.endswith(f"records by host: {shown} (1)\n")
    listed = cli("record", "list", "--json")
    assert [r["from"] for r in json.loads(listed.stdout)["records"]] == [f"notes:{shown}"]
    plan = cli("sweep", "--models", "gemma-4-31b", "--lengths", "4096", "--dry-run",
               "--runner", "true {cell_csv}")  # fmt: skip
    assert plan.exit_code == 0, plan.stderr
    everything = pulled.stdout + pulled.stderr + listed.stderr + plan.stdout + plan.stderr
    assert "\u202e" not in everything and "\u009b" not in everything
    assert f"notes {shown}@" in plan.stdout + plan.stderr


@pytest.mark.parametrize("how", ["force-push an empty ref", "a commit that drops the note",
                                 "delete the ref, prune on"])  # fmt: skip
def test_a_rewritten_notes_ref_loses_no_record_on_the_hosts_that_had_it(
    fleet: Fleet, cli: Cli, how: str
) -> None:
    """Any machine can rewrite another's notes ref on the remote. A host that had read the
    records keeps them (the old tip under refs/notes/kept/, said once), judged by the lines
    the notes lost, not by whether the update was a fast-forward."""
    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    fleet.on("B")
    cli("remote", "setup")
    assert cli("record", "pull").exit_code == 0
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    rogue = fleet.clone("rogue")
    ref = "refs/notes/oomrec/gb10-a"
    if how == "force-push an empty ref":
        empty = git(rogue, "mktree", input="")
        bare = git(rogue, "commit-tree", empty, "-m", "nothing here")
        git(rogue, "push", "-q", "--force", "origin", f"{bare}:{ref}")
    elif how == "a commit that drops the note":
        git(rogue, "fetch", "-q", "origin", f"+{ref}:{ref}")
        tip = git(rogue, "rev-parse", ref)
        empty = git(rogue, "mktree", input="")
        child = git(rogue, "commit-tree", empty, "-p", tip, "-m", "drop")
        git(rogue, "push", "-q", "origin", f"{child}:{ref}")
    else:
        git(rogue, "push", "-q", "origin", f":{ref}")
        git(fleet.clone("B"), "config", "fetch.prune", "true")
    b = fleet.on("B")
    pulled = cli("record", "pull")
    assert pulled.exit_code == 0, pulled.stderr
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    kept = git(b, "for-each-ref", "--format=%(refname)", "refs/notes/kept/")
    if how.startswith("delete"):
        # Never pruned by record pull's fetch: the tracking ref stays, nothing to keep.
        assert kept == "" and "no longer hold" not in pulled.stderr
        return
    assert "no longer hold 1 record line(s) they held" in pulled.stderr
    assert kept.count("\n") == 0 and kept.endswith("/oomrec/gb10-a")
    # Said once: the next pull has nothing new to keep.
    again = cli("record", "pull")
    assert "no longer hold" not in again.stderr
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]


def test_a_push_puts_back_what_a_descendant_commit_dropped(fleet: Fleet, cli: Cli) -> None:
    """A commit on top of host A's notes that drops them, pushed from elsewhere: A's next push
    merges it (a fast-forward) and puts back what its ref held, so the remote holds it again;
    it said 'nothing new to push' and left the remote without the record."""
    a = fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    rogue = fleet.clone("rogue")
    ref = "refs/notes/oomrec/gb10-a"
    git(rogue, "fetch", "-q", "origin", f"+{ref}:{ref}")
    tip = git(rogue, "rev-parse", ref)
    empty = git(rogue, "mktree", input="")
    child = git(rogue, "commit-tree", empty, "-p", tip, "-m", "drop")
    git(rogue, "push", "-q", "origin", f"{child}:{ref}")
    fleet.on("A")
    pushed = cli("record", "push")
    assert pushed.exit_code == 0, pushed.stderr
    git(a, "fetch", "-q", "origin", f"+{ref}:refs/notes/check")
    listed = git(a, "notes", "--ref=refs/notes/check", "list")
    assert len(listed.splitlines()) == 1
    fleet.on("B")
    cli("remote", "setup")
    cli("record", "pull")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]


def test_quiet_silences_the_summaries_of_setup_push_and_pull(fleet: Fleet, cli: Cli) -> None:
    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    for args in (("remote", "setup"), ("record", "push"), ("record", "pull")):
        done = cli(*args, "-q")
        assert done.exit_code == 0, done.stderr
        assert (done.stdout, done.stderr) == ("", ""), args
