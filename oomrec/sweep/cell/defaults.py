"""A sweep's default values, apart from its options (sweep/options.py): `oomrec sweep --help`
shows them, and the help must not import what resolving the options takes (the guard, psutil,
the runner). Imports nothing."""

DEFAULT_MAX_TOKENS = 32
DEFAULT_WARMUP_TOKENS = 4

# The placeholders a runner template may name (sweep.cell.runner fills them), in the order the
# help lists them.
PLACEHOLDERS = (
    "model",
    "model_path",
    "length",
    "max_tokens",
    "warmup_tokens",
    "cell_csv",
    "cooldown",
    "big_cooldown",
)
