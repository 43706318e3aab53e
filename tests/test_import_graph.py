"""The import graph of `harness` and `channels` has no cycles.

Built from the source with `ast`, so imports inside functions count too: a function-local import
that dodges a cycle at import time is still a cycle in the design. `from pkg import name`
counts as importing `pkg.name` when that is a submodule, and as importing the package `pkg`
(its `__init__`) otherwise: a submodule that imports names from its own package while the
package's `__init__` imports that submodule is a cycle. A package whose names load on first use
(`__getattr__ = lazy_names(__name__, {name: submodule})`, `harness.lazy_names`) imports each
submodule of that table: it does when the name is asked for. Imports under `if TYPE_CHECKING:` are
left out: they never execute, and they are how two types that name each other (a `Runtime`
holds the registry of functions whose handlers take a `Context` holding the `Runtime`) say so.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "channels")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imported(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """Every project module `module` imports, anywhere in its body."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _known(alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, is_package, node)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield from _known(candidate if candidate in known else base, known)
        elif _is_lazy_names(node):
            homes = node.args[1]
            assert isinstance(homes, ast.Dict), f"{path}: lazy_names takes a literal table"
            for value in homes.values:
                assert isinstance(value, ast.Constant) and isinstance(value.value, str), (
                    f"{path}: a submodule name, literally"
                )
                yield from _known(f"{module}.{value.value}", known)


def _is_lazy_names(node: ast.AST) -> TypeGuard[ast.Call]:
    """A call `lazy_names(__name__, {...})`: the package imports the table's submodules."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "lazy_names"
        and len(node.args) == 2
    )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def _known(name: str, known: set[str]) -> Iterator[str]:
    if name in known:
        yield name


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: {target for target in _imported(name, path, known) if target != name}
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_import_graph_has_no_cycles() -> None:
    # Given every module of harness/ and channels/, with function-local imports
    graph = _graph()

    # When looking for groups of modules that import each other
    cycles = _cycles(graph)

    # Then there are none
    assert cycles == [], f"import cycles (each group imports itself through the others): {cycles}"


def test_import_graph_sees_function_local_and_relative_imports() -> None:
    # Given the graph the cycle check relies on
    graph = _graph()

    # Then it knows modules of both packages, and that a package imports its submodules
    assert "harness.runtime.bus" in graph["harness.runtime"], "package __init__ edges missing"
    assert any(name.startswith("channels.") for name in graph), "channels/ not scanned"


ASSEMBLY_POINTS = ("harness.web", "harness.commands", "harness.sidecar", "harness.composition")
"""The parts of `harness` that wire the channels in (the composition of a fleet process, the
web app's webhook routes, the CLI's `setup` and `doctor`, the sidecar's environment); everywhere
else `harness` does not know
`channels`: the channels plug into seams it defines (`harness.agent.platforms`)."""


def test_harness_knows_the_channels_only_where_it_assembles_them() -> None:
    # Given every module of harness/ and what it imports
    graph = _graph()
    # When looking for harness modules outside the assembly points that import channels
    offenders = {
        module: sorted(target for target in targets if target.split(".")[0] == "channels")
        for module, targets in graph.items()
        if module.startswith("harness") and not module.startswith(ASSEMBLY_POINTS)
    }
    offenders = {module: targets for module, targets in offenders.items() if targets}
    # Then there are none: the agent, the runtime and the rest reach channels through seams
    assert offenders == {}, f"harness modules importing channels: {offenders}"


PRODUCT_PACKAGES = ("harness.agent", "channels")


def test_engine_names_no_module_of_the_agent_or_the_channels() -> None:
    # Given every string literal in the engine's source (module names loaded by importlib)
    named = {
        (path.name, node.value)
        for path in sorted((ROOT / "harness" / "runtime").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }

    # When looking for names of the agent's or the channels' modules
    offenders = sorted(
        (file, value)
        for file, value in named
        if any(value == pkg or value.startswith(f"{pkg}.") for pkg in PRODUCT_PACKAGES)
    )

    # Then there are none: what a fleet worker loads is decided in `harness.composition`
    assert offenders == [], f"the engine names product modules: {offenders}"


ENGINE = "harness.runtime"
PRODUCT = ("harness.records", "harness.agent", "harness.web", "harness.commands", "channels")
"""The engine (`harness.runtime`: events, functions, steps, runs, leases, timers, the broker)
knows no product: the stores of the product's records, the agent, the channels, the web app
and the commands build on it, never the other way."""


def test_engine_imports_no_product_module() -> None:
    # Given every module of the engine and what it imports
    graph = _graph()
    # When looking for imports of the records, the agent, the channels, the web app, commands
    offenders = {
        module: sorted(target for target in targets if _within(target, PRODUCT))
        for module, targets in graph.items()
        if _within(module, (ENGINE,))
    }
    offenders = {module: targets for module, targets in offenders.items() if targets}
    # Then there are none
    assert offenders == {}, f"engine modules importing the product: {offenders}"


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(f"{package}.") for package in packages)
