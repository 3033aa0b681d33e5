"""The package layout: wcbench's stages import only downstream of the flow (core -> data ->
models / pose -> scoring -> run -> report -> cli), no module-level import circles in wcbench
or wctrain, wcbench never imports wctrain, and the imports left inside functions are the lazy
ones that have a reason (optional heavy packages; the command-line front ends)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("wcbench", "wctrain")

# The flow, upstream first: a module may import from its own stage or an earlier one.
STAGES = {"core": 0, "data": 1, "models": 2, "pose": 2, "scoring": 3, "run": 4, "report": 5,
          "cli": 6, "__main__": 6}
# Imported inside functions on purpose: optional packages that are heavy or absent from a plain
# install (torch and accelerate come with the [train] extra, hpsv3 with [hpsv3], ...).
OPTIONAL = {"torch", "accelerate", "safetensors", "hpsv3"}
# The command-line front ends (wcbench.cli and its command modules, wctrain.cli) import each
# command's modules when it runs, so that `--help` does not wait for pandas, matplotlib, OpenCV,
# hydra (wcbench) or torch (wctrain).
FRONT_ENDS = ("wcbench.cli", "wctrain.cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))}


MODULES = sources()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The modules an import statement loads (``from pkg import mod`` names pkg.mod)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: resolve against this module's package
        package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def imports(module: str) -> tuple[list[str], list[str]]:
    """(module-level imports, imports inside functions) of one module, by target module name.
    Imports under ``if TYPE_CHECKING:`` never run and are left out."""
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    top: list[str] = []
    inner: list[str] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            (inner if in_function else top).extend(_targets(node, module))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            children = node.orelse
        else:
            children = list(ast.iter_child_nodes(node))
        nested = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in children:
            visit(child, nested)

    visit(tree, False)
    return top, inner


IMPORTS = {module: imports(module) for module in MODULES}


def _internal(targets: list[str]) -> set[str]:
    return {t for t in targets if t.split(".")[0] in PACKAGES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := walk(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def stage(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "wcbench":
        return None
    return STAGES.get(parts[1], None) if len(parts) > 1 else 0  # the package itself holds only __version__


def test_find_cycle_finds_a_circle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_module_level_import_circles():
    graph = {module: _internal(top) for module, (top, _) in IMPORTS.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_wcbench_never_imports_wctrain():
    offenders = [(m, t) for m, (top, inner) in IMPORTS.items() if m.startswith("wcbench")
                 for t in top + inner if t.split(".")[0] == "wctrain"]
    assert not offenders, offenders


def test_wcbench_imports_follow_the_flow():
    """A stage imports only from itself and the stages before it (lazy imports included)."""
    unplaced = [m for m in MODULES if m.startswith("wcbench") and stage(m) is None]
    assert not unplaced, f"modules in no known stage (add their folder to STAGES): {unplaced}"
    upstream = [(m, t) for m, (top, inner) in IMPORTS.items() if m.startswith("wcbench")
                for t in sorted(_internal(top + inner)) if stage(t) is not None and stage(t) > stage(m)]
    assert not upstream, f"imports of later stages: {upstream}"


def test_imports_inside_functions_have_a_reason():
    """Only optional packages, and the command modules of the two front ends, are imported lazily."""
    unexplained = [(m, t) for m, (_, inner) in IMPORTS.items() for t in inner
                   if t.split(".")[0] not in OPTIONAL and not m.startswith(FRONT_ENDS)]
    assert not unexplained, unexplained
