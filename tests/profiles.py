"""Hypothesis profiles, picked by OOMREC_HYPOTHESIS (default `ci`).

Each property test names its own example count, in proportion to what one example costs (a
real process or git repository per example gets a handful, a pure function hundreds); a
profile scales every count at once: `ci` as written (what CI and the README's command run),
`quick` a fifth, `thorough` ten times as many (before a release, or after touching a rule).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SCALES = {"quick": 0.2, "ci": 1.0, "thorough": 10.0}
PROFILE = os.environ.get("OOMREC_HYPOTHESIS", "ci")
if PROFILE not in SCALES:
    raise SystemExit(
        f"OOMREC_HYPOTHESIS={PROFILE!r} is not a profile; use one of {', '.join(SCALES)}"
    )

for _name in SCALES:
    # No deadline: an example's time depends on the machine's load, not on the code under test.
    settings.register_profile(
        _name, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
    )
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """`count` examples scaled by the profile (at least 2)."""
    return max(2, round(count * SCALES[PROFILE]))
