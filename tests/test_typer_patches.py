"""Typer's private API, which oomrec/cli/typer_patches.py patches, is pinned to the versions the
patches were checked against: another Typer fails here first, with what to do."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import typer

from oomrec.cli import typer_patches

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_typer_is_one_the_patches_were_checked_against() -> None:
    assert typer.__version__ in typer_patches.CHECKED, (
        f"Typer {typer.__version__} is installed, but oomrec/cli/typer_patches.py was checked "
        f"only against Typer {', '.join(typer_patches.CHECKED)}: read each patch against this "
        "version's source (its docstring says what each touches), then add the version to "
        "CHECKED and the pin in pyproject.toml"
    )


def test_the_pin_in_pyproject_holds_every_checked_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pin,) = [d for d in project["dependencies"] if re.match(r"typer\b", d)]
    low, high = re.fullmatch(r"typer>=([\d.]+),<([\d.]+)", pin).groups()  # type: ignore[union-attr]

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in version.split("."))

    for version in typer_patches.CHECKED:
        assert key(low) <= key(version) < key(high), f"{version} is outside the pin {pin}"


def test_only_the_patch_module_imports_typers_private_modules() -> None:
    private = re.compile(r"^\s*(from|import) typer\._\w+", re.MULTILINE)
    reaching = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "oomrec").rglob("*.py"))
        if private.search(path.read_text(encoding="utf-8"))
    ]
    assert reaching == ["oomrec/cli/typer_patches.py"]
