"""The package's layers, read from the source: the API at the bottom, no import circles.

`nodewright.api` is imported by infra/ and policies/ as well as by the rest of the
controller, so it imports nothing above it. No module of the package may import one that
imports it back (directly or through others), whether at the top of the file or inside a
function: a circle works only as long as the import order happens to suit it.
Imports under `if TYPE_CHECKING:` are for type checkers only and are left out.
"""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "controller" / "nodewright"
LAYERS_ABOVE_API = ("nodewright.scheduling", "nodewright.cloud", "nodewright.cli",
                    "nodewright.policy", "nodewright.cluster", "nodewright.controllers",
                    "nodewright.sim", "nodewright.runtime", "nodewright.operator")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(path: Path) -> set[str]:
    """Every nodewright module `path` imports when it runs (top level or in a function)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("nodewright"))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("nodewright")
        ):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if _exists(submodule) else str(node.module))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _exists(module: str) -> bool:
    relative = Path(*module.split("."))
    return (PACKAGE.parent / relative).with_suffix(".py").is_file() or (
        PACKAGE.parent / relative / "__init__.py"
    ).is_file()


def import_graph() -> dict[str, set[str]]:
    return {module: set(targets) for module, targets in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    """Parsed once per test process: the source does not change while the tests run."""
    return {
        _module_name(path): frozenset(runtime_imports(path))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules (first == last), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in graph or target == module:
                continue
            if state.get(target) == "open":
                return [*stack[stack.index(target):], target]
            if target not in state and (circle := visit(target)):
                return circle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (circle := visit(module)):
            return circle
    return None


def test_the_api_imports_nothing_above_it() -> None:
    offenders = {
        module: sorted(t for t in targets if t.startswith(LAYERS_ABOVE_API))
        for module, targets in import_graph().items()
        if module.startswith("nodewright.api")
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_quantities_have_one_home_in_the_api() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("nodewright.scheduling.quantity")


FOUNDATION = ("nodewright.api", "nodewright.scheduling", "nodewright.cloud")


def test_no_module_of_the_foundation_imports_itself_back() -> None:
    """The pure layers and the cloud providers, which everything else builds on."""
    graph = {
        module: {target for target in targets if target.startswith(FOUNDATION)}
        for module, targets in import_graph().items()
        if module.startswith(FOUNDATION)
    }
    assert find_circle(graph) is None


def test_no_module_of_the_package_imports_itself_back() -> None:
    """Everywhere, not only in the foundation: the in-memory API server knows nothing of the
    actors that play a cluster on it, the controllers nothing of the operator that runs them."""
    assert find_circle(import_graph()) is None


# The package's layers, bottom first (docs/design/layout.md): a package imports only
# itself and packages of lower layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("nodewright", "api", "runtime", "metrics"),
    ("scheduling", "policy"),
    ("cluster",),
    ("cloud", "state", "install"),
    ("controllers",),
    ("operator", "sim"),
    ("cli",),
    ("__main__",),
)


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else parts[0]
    for rank, layer in enumerate(LAYERS):
        if package in layer:
            return package, rank
    raise AssertionError(f"{module}: package {package!r} is in no layer of LAYERS")


def test_packages_import_only_downward() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if (source := _layer(module))[0] != (dest := _layer(target))[0]
        and dest[1] >= source[1]
    )
    assert upward == []


def test_the_in_memory_api_server_knows_nothing_of_its_actors() -> None:
    graph = import_graph()
    store = "nodewright.cluster.memory.store"
    reachable: set[str] = set()
    todo = [store]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target in graph and target not in reachable:
                reachable.add(target)
                todo.append(target)
    actors = ("nodewright.cluster.memory.actors", "nodewright.cluster.memory.kubelet",
              "nodewright.cluster.memory.kube_scheduler", "nodewright.cluster.memory.workloads",
              "nodewright.cluster.memory.disruption")
    assert sorted(module for module in reachable if module.startswith(actors)) == []


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check itself can fail: catalog -> offline_data at function level, back at the top."""
    (tmp_path / "catalog.py").write_text(
        "def offline():\n    from nodewright.scheduling import offline_data\n"
    )
    (tmp_path / "offline_data.py").write_text(
        "from nodewright.scheduling.catalog import build_catalog\n"
    )
    graph = {
        "nodewright.scheduling.catalog": {"nodewright.scheduling.offline_data"},
        "nodewright.scheduling.offline_data": {"nodewright.scheduling.catalog"},
    }
    monkeypatch.setattr(
        "tests.test_layers._exists", lambda module: module.endswith("offline_data")
    )
    assert runtime_imports(tmp_path / "catalog.py") == {"nodewright.scheduling.offline_data"}
    assert runtime_imports(tmp_path / "offline_data.py") == {"nodewright.scheduling.catalog"}
    assert find_circle(graph) == [
        "nodewright.scheduling.catalog",
        "nodewright.scheduling.offline_data",
        "nodewright.scheduling.catalog",
    ]


def test_test_doubles_and_harnesses_live_under_tests() -> None:
    """The package ships what the controller runs; worlds, fakes and stubs are tests'."""
    package = REPO_ROOT / "controller" / "nodewright"
    shipped = [path.relative_to(package).as_posix() for path in package.rglob("*.py")
               if path.stem in ("harness", "fakes", "stubs")
               or any(line.startswith(("class Fake", "class Stub"))
                      for line in path.read_text().splitlines())]
    assert shipped == []


# The folders (and modules) of `controllers/`, bottom first (docs/design/layout.md): one
# imports only itself and those of lower rows, so no two sibling folders import each other.
# `common` holds what they share (the decision log, patching, log fields, pod rules,
# NodePools' registration health); `registry` builds them all from its one list.
CONTROLLER_LAYERS: tuple[tuple[str, ...], ...] = (
    ("common", "driver"),
    ("provisioning",),
    ("nodeclaim",),
    ("node", "nodepool", "static", "interruption", "metrics", "nodeclass",
     "capacityreservation", "nodeoverlay", "capacitybuffer"),
    ("disruption",),
    ("options",),
    ("registry",),
)


def _controller_folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "controllers" else None


def controller_folder_edges() -> dict[tuple[str, str], set[str]]:
    """(folder, folder it imports) -> the module imports behind it."""
    edges: dict[tuple[str, str], set[str]] = {}
    for module, targets in import_graph().items():
        source = _controller_folder(module)
        for target in targets:
            dest = _controller_folder(target)
            if source and dest and source != dest:
                edges.setdefault((source, dest), set()).add(f"{module} -> {target}")
    return edges


def test_no_two_controller_folders_import_each_other() -> None:
    edges = controller_folder_edges()
    both_ways = sorted(f"{a} <-> {b}: {sorted(edges[(a, b)])[0]}; {sorted(edges[(b, a)])[0]}"
                       for a, b in edges if (b, a) in edges and a < b)
    assert both_ways == []


def test_controller_folders_import_only_lower_rows() -> None:
    rank = {folder: row for row, folders in enumerate(CONTROLLER_LAYERS) for folder in folders}
    package = PACKAGE / "controllers"
    present = {path.stem if path.is_file() else path.name for path in package.iterdir()
               if path.name != "__init__.py" and not path.name.startswith(("_", "."))
               and (path.suffix == ".py" or (path / "__init__.py").is_file())}
    assert sorted(present - set(rank)) == [], "a controllers/ folder in no row"
    upward = sorted(f"{sorted(imports)[0]} ({source} -> {dest})"
                    for (source, dest), imports in controller_folder_edges().items()
                    if rank[dest] >= rank[source])
    assert upward == []
