"""The layers, declared once (LAYERS, bottom to top) and checked on every import of every
module, those inside functions and under TYPE_CHECKING included: a module imports only from
its own layer or the layers below it, no modules import each other in a cycle, and an import
inside a function is there only for start-up time, as LAZY lists with its reason.
docs/architecture.md draws the same order (checked here too)."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import oomrec

PACKAGE = Path(oomrec.__file__).parent
ROOT = PACKAGE.parent

# Bottom to top. `oomrec` itself holds only the version.
LAYERS: tuple[str, ...] = (
    "oomrec",
    "oomrec.core",
    "oomrec.store",
    "oomrec.csvread",
    "oomrec.staleness",
    "oomrec.importer",
    "oomrec.report",
    "oomrec.sweep.cell",
    "oomrec.sweep",
    "oomrec.hooks",
    "oomrec.commands",
    "oomrec.cli",
    "oomrec.entry",
)

# Imports inside a function, by (importer's layer, imported module prefix): each only so that a
# command does not pay at start-up for what it may never run. Anything else imports at the top.
START_UP = "start-up: a command imports it only when it runs"
LAZY: dict[tuple[str, str], str] = {
    # Third-party libraries that take 50-300 ms to import.
    ("*", "polars"): "start-up: polars (~150 ms) only where CSVs are read",
    ("*", "git"): "start-up: GitPython (~80 ms) only where git is asked more than for-each-ref",
    ("*", "psutil"): "start-up: psutil only where processes or memory are watched",
    ("*", "rich"): "start-up: rich only where a table or a progress bar is drawn",
    ("*", "typer"): "start-up: Typer only for the CLI's parsing",
    ("*", "submitit"): "optional extra: slurm",
    ("*", "pynvml"): "optional extra: nvidia",
    ("oomrec.core", "oomrec.core.lock"): "start-up: only writers lock",
    # The CLI loads each command's verb, and the verbs their library code, when they run.
    ("oomrec.entry", "oomrec"): START_UP,
    ("oomrec.cli", "oomrec"): START_UP,
    ("oomrec.commands", "oomrec"): START_UP,
    ("oomrec.hooks", "oomrec"): START_UP,
    # The report's and the import's heavy parts (polars, git) when a view needs them.
    ("oomrec.report", "oomrec"): START_UP,
    ("oomrec.importer", "oomrec"): START_UP,
    ("oomrec.sweep", "oomrec"): START_UP,
    ("oomrec.sweep.cell", "oomrec"): START_UP,
    ("oomrec.staleness", "oomrec"): START_UP,
    ("oomrec.store", "oomrec"): START_UP,
    ("oomrec.csvread", "oomrec"): START_UP,
}
# Standard-library modules imported inside a function are not start-up's concern either way.
STDLIB = frozenset(sys.stdlib_module_names)


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(module imported, inside a function) for each import of `path`, at any depth."""

    def walk(node: ast.AST, inside: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            here = inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, here
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    yield (full if full in KNOWN else child.module), here
            yield from walk(child, here)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


MODULES = list(modules())
KNOWN = frozenset(name for name, _ in MODULES)


def layer_of(module: str) -> int:
    """The index in LAYERS of the longest layer `module` is in."""
    best = -1
    for i, name in enumerate(LAYERS):
        if (module == name or module.startswith(name + ".")) and (
            best < 0 or len(name) > len(LAYERS[best])
        ):
            best = i
    if module in ("oomrec.__main__",):
        return LAYERS.index("oomrec.entry")
    assert best >= 0, module
    return best


def own(name: str) -> str | None:
    """The module of oomrec that `name` names (a module, or a name in one), else None."""
    while name and name not in KNOWN:
        name = name.rpartition(".")[0]
    return name or None


def test_every_import_goes_to_the_same_layer_or_one_below() -> None:
    upward = []
    for module, path in MODULES:
        for name, _ in imports(path):
            target = own(name) if name.startswith("oomrec") else None
            if target is not None and layer_of(target) > layer_of(module):
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_no_modules_import_each_other_in_a_cycle() -> None:
    graph: dict[str, set[str]] = {module: set() for module, _ in MODULES}
    for module, path in MODULES:
        for name, _ in imports(path):
            target = own(name) if name.startswith("oomrec") else None
            # A package's __init__ is imported with any of its modules; it is no edge of them.
            if target is not None and target != module and not module.startswith(target + "."):
                graph[module].add(target)
    assert _cycles(graph) == []


def test_an_import_inside_a_function_is_listed_with_its_reason() -> None:
    unlisted = []
    for module, path in MODULES:
        for name, inside in imports(path):
            if not inside or name.split(".")[0] in STDLIB:
                continue
            if not any(_matches(module, name, key) for key in LAZY):
                unlisted.append(f"{module} imports {name} inside a function")
    assert unlisted == []


def test_the_architecture_doc_draws_the_layers_in_their_order() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    drawn = [
        m.group(1).rstrip("/").replace("/", ".") for m in re.finditer(r"^(oomrec/\S*)", block, re.M)
    ]
    packages = [name for name in reversed(LAYERS) if name not in ("oomrec", "oomrec.entry")]
    assert drawn == packages


def _matches(module: str, name: str, key: tuple[str, str]) -> bool:
    where, what = key
    in_layer = where == "*" or layer_of(module) == LAYERS.index(where)
    return in_layer and (name == what or name.startswith(what + "."))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_architecture_doc_names_every_module() -> None:
    """Module by module, as the doc lists them (cli/record_*.py and commands/ as groups)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"^  ([\w/]+\.py)\b", text, re.M))
    missing = []
    for _, path in MODULES:
        relative = path.relative_to(PACKAGE).as_posix()
        if path.name in ("__init__.py", "__main__.py") or relative.startswith("commands/"):
            continue
        if relative.startswith("cli/record_"):
            continue
        if relative not in named:
            missing.append(relative)
    assert missing == []
