"""A finished cell's verdict: the runner's own row first, else its exit, output and OOM kills."""

from __future__ import annotations

import csv
import json
import signal

import pytest

from oomrec.core.schema import RECORDED_TOKENS, Token, line_token
from oomrec.sweep.cell.classify import verdict_from_exit, verdict_from_row
from oomrec.sweep.cell.oomkill import KillEvidence, LoggedKill, OomCounters, compare, read_counters
from oomrec.sweep.cell.signatures import match_signature
from oomrec.sweep.planner import Action
from tests.conftest import SHARED_CORPUS

# What the kernel's OOM-kill counters can say about a cell, with no kernel log to read.
GREW = KillEvidence(grew=(("/proc/vmstat", 1),), readable=("/proc/vmstat",))
UNCHANGED = KillEvidence(grew=(), readable=("/proc/vmstat", "cgroup v1 memory.oom_control"))
UNREADABLE = KillEvidence(grew=(), readable=())
# And what the kernel log says: a kill of the cell's runner, of a pid never seen in oomrec's
# cgroup, only kills in other cgroups (the counters grew with them), or no kill at all.
KILLED = LoggedKill(4242, "python", "/sweep")
OF_CELL = KillEvidence(grew=GREW.grew, readable=GREW.readable, logged=(KILLED,), of_cell=(KILLED,))
MAYBE = KillEvidence(grew=(), readable=(), logged=(KILLED,), maybe_cell=(KILLED,))
ELSEWHERE = KillEvidence(
    grew=GREW.grew, readable=GREW.readable, logged=(LoggedKill(7, "other", "/job/8"),)
)
NO_KILL = KillEvidence(grew=(), readable=(), logged=())
CUDA_OOM = "CUDA out of memory. Tried to allocate 1 GiB"


@pytest.mark.parametrize(
    ("returncode", "output", "kills", "timed_out", "token", "evidence"),
    [
        (124, CUDA_OOM, GREW, False, "FAIL:timeout", None),
        (-signal.SIGKILL, CUDA_OOM, GREW, True, "FAIL:timeout", None),
        (-signal.SIGKILL, "", OF_CELL, False, "SKIP:oom", "kernel log"),
        (137, "", OF_CELL, False, "SKIP:oom", "kernel log"),
        (-signal.SIGKILL, "", MAYBE, False, "SKIP:oom", "unconfirmed"),
        # Another cgroup's OOM is never the cell's, whatever the machine's counter did.
        (-signal.SIGKILL, "", ELSEWHERE, False, "FAIL:killed", None),
        (-signal.SIGKILL, "", NO_KILL, False, "FAIL:killed", None),
        # No log: a counter that grew cannot be tied to the cell, but a missed OOM is worse.
        (-signal.SIGKILL, "", GREW, False, "SKIP:oom", "unconfirmed"),
        (137, "", GREW, False, "SKIP:oom", "unconfirmed"),
        (-signal.SIGKILL, "", UNCHANGED, False, "FAIL:killed", None),
        (137, "", UNCHANGED, False, "FAIL:killed", None),
        (-signal.SIGKILL, "", UNREADABLE, False, "SKIP:oom", "unconfirmed"),
        (137, "", UNREADABLE, False, "SKIP:oom", "unconfirmed"),
        # The allocator said so before the kill: an OOM whatever the counters say.
        (-signal.SIGKILL, CUDA_OOM, UNCHANGED, False, "SKIP:oom", "signature"),
        (134, "terminate called after throwing an instance of 'std::bad_alloc'", UNCHANGED,
         False, "SKIP:oom", "signature"),
        (134, "Aborted (core dumped)", UNREADABLE, False, "FAIL:bench", None),
        # Only SIGKILL is what the OOM killer sends; another signal is not an OOM by itself.
        (-signal.SIGSEGV, "Segmentation fault", GREW, False, "FAIL:bench", None),
        (1, "", GREW, False, "FAIL:bench", None),
        (0, "all good", UNREADABLE, False, "FAIL:no_output", None),
        (0, "out of memory", GREW, False, "FAIL:no_output", None),
    ],
)  # fmt: skip
def test_verdict_from_exit(
    returncode: int,
    output: str,
    kills: KillEvidence,
    timed_out: bool,
    token: str,
    evidence: str | None,
) -> None:
    verdict = verdict_from_exit(returncode, match_signature(output), kills, timed_out=timed_out)
    assert (verdict.token, verdict.evidence) == (token, evidence)


def test_a_kill_verdict_says_what_the_counters_said() -> None:
    assert "/proc/vmstat oom_kill +1" in verdict_from_exit(-9, None, GREW).reason
    assert "no kernel log is readable to tell whose" in verdict_from_exit(-9, None, GREW).reason
    assert "killed pid 4242 (python), the cell's" in verdict_from_exit(-9, None, OF_CELL).reason
    assert "1 OOM kill(s) in other cgroups" in verdict_from_exit(-9, None, ELSEWHERE).reason
    assert verdict_from_exit(137, None, UNCHANGED).reason == (
        "exit 137 (SIGKILL), not by oomrec and not by the OOM killer: no OOM kill counted "
        "(/proc/vmstat, cgroup v1 memory.oom_control oom_kill unchanged)"
    )
    assert "no OOM-kill counter or kernel log readable here, so not confirmed" in (
        verdict_from_exit(-9, None, UNREADABLE).reason
    )


OK = (
    'm,./models/m,512,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?"'
)
SKIPPED = 'm,./models/m,,,,,,,2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?"'


@pytest.mark.parametrize(
    ("row", "token"),
    [
        (OK + ",512", "ok"),
        (OK, "ok"),
        (SKIPPED + ",32768,SKIP:oom", "SKIP:oom"),
        (SKIPPED + ",32768,FAIL:killed", "FAIL:killed"),
        (SKIPPED + ",,FAIL:bench", "FAIL:bench"),
        (SKIPPED + ",,,SKIP:oom_estimate", "SKIP:oom_estimate"),
        (SKIPPED + ",FAIL:warmup", "FAIL:warmup"),
        ('m,./m,,,,,,,2026-07-03,,,,32,"say "no, SKIP:oom" here",512,FAIL:bench\r', "FAIL:bench"),
        ('m,./m,1,2,3,4,5,6,2026-07-03,,,,32,"ends, SKIP:oom"', "ok"),
    ],
)
def test_verdict_from_row_reads_the_last_field(row: str, token: str) -> None:
    assert verdict_from_row(row)[0].token == token


def test_trailing_tokens_of_the_real_harness_csvs_match_the_manifest() -> None:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"reference corpus not found at {SHARED_CORPUS}")
    with (SHARED_CORPUS / "MANIFEST.tsv").open(newline="") as fh:
        manifest = list(csv.DictReader(fh, delimiter="\t"))
    checked = 0
    for entry in manifest:
        # The bench_decode family: 14, 15, 17 columns and the ROCm variants.
        if not entry["header_line"].startswith("model,model_path,prompt_tokens,"):
            continue
        text = (SHARED_CORPUS / entry["path"]).read_text(encoding="utf-8")
        rows = [line for line in text.splitlines()[1:] if line.strip()]
        found = {line_token(row) for row in rows} - {None}
        expected = {t for t in entry["trailing_tokens"].split(";") if t}
        assert found == expected, entry["path"]
        # Every row is either a success or carries a token: the runner's verdict is never lost.
        assert {verdict_from_row(row)[0].token for row in rows} <= expected | {"ok"}
        checked += 1
    assert checked >= 100


def test_the_counters_readable_here_compare_as_the_kernel_counts() -> None:
    before = read_counters()
    if not before.values:
        pytest.skip("no OOM-kill counter is readable on this machine")
    assert compare(before, before) == KillEvidence(
        grew=(), readable=tuple(w for w, _ in before.values)
    )
    grown = OomCounters(tuple((where, count + 2) for where, count in before.values))
    assert compare(before, grown).grew == tuple((where, 2) for where, _ in before.values)
    # A counter readable only before (or only after) says nothing either way.
    assert compare(before, OomCounters(())).unreadable


def test_tokens_are_one_enum_and_unknown_ones_stay_plain_strings() -> None:
    """Every token oomrec writes is a Token, equal to the text the harness writes; a token oomrec
    does not know is read as the row wrote it, so nothing a harness adds is lost."""
    assert [t.value for t in Token] == [
        "SKIP:oom", "SKIP:oom_backstop", "SKIP:oom_record", "SKIP:oom_guard", "FAIL:timeout",
        "FAIL:bench", "FAIL:no_output", "FAIL:killed", "ok",
    ]  # fmt: skip
    assert {"SKIP:oom", "SKIP:oom_guard"} == RECORDED_TOKENS
    known = line_token('m,m,,,,,,,2026-07-03,,,,32,"",512,SKIP:oom_guard')
    assert known == Token.OOM_GUARD and known in RECORDED_TOKENS
    unknown = line_token('m,m,,,,,,,2026-07-03,,,,32,"",512,SKIP:oom_estimate')
    assert unknown == "SKIP:oom_estimate" and type(unknown) is str
    assert unknown not in set(Token)
    # Written as the text itself, wherever a token goes: rows, JSON, messages.
    assert json.dumps({Token.TRUE_OOM: Token.TRUE_OOM}) == '{"SKIP:oom": "SKIP:oom"}'
    assert f"{Token.FAIL_BENCH}" == "FAIL:bench"
    # The dry run's actions are the tokens their rows get, or words for what writes no row.
    assert [a.value for a in Action] == [
        "run", "probe", "SKIP:oom_backstop", "SKIP:oom_record", "SKIP:oom", "done",
    ]  # fmt: skip


def test_a_sigsegv_is_an_oom_only_at_the_address_space_limit() -> None:
    near, far = (950 << 20, 1 << 30), (300 << 20, 1 << 30)
    for status in (-signal.SIGSEGV, 139):
        at_limit = verdict_from_exit(status, None, UNCHANGED, address_space=near)
        assert (at_limit.token, at_limit.evidence) == ("SKIP:oom", "address-space limit")
        assert verdict_from_exit(status, None, UNCHANGED, address_space=far).token == ("FAIL:bench")
        assert verdict_from_exit(status, None, UNCHANGED).token == "FAIL:bench"
    # Another signal near the limit is not this case.
    assert verdict_from_exit(-signal.SIGABRT, None, UNCHANGED, address_space=near).token == (
        "FAIL:bench"
    )
