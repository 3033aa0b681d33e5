"""The package layout: wcbench's stages import only downstream of the flow (core -> data ->
models / pose -> scoring -> results -> report -> run -> cli), so reports read results and never
the code that makes them; no module-level import circles in wcbench or wctrain, wcbench never
imports wctrain, and the imports left inside functions are the lazy ones that have a reason
(optional heavy packages; the command-line front ends). No module is over 400 lines, and no
docstring or comment tells a version history or cites a commit (the code says what it does
now; git keeps its history)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("wcbench", "wctrain")

# The flow, upstream first: a module may import from its own stage or an earlier one. ``results``
# (the folder's records, strips, hashes, guard) is what ``report`` reads; ``run`` comes after
# both because it drives everything: it scores, writes results, and re-scores for submit/verify.
STAGES = {"core": 0, "data": 1, "models": 2, "pose": 2, "scoring": 3, "results": 4, "report": 5, "run": 6,
          "cli": 7, "__main__": 7}
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


def test_wctrain_models_stand_alone_and_the_ablations_stay_aside():
    """wctrain's models import no training code, and only the two dispatches import the ablations."""
    training = ("wctrain.rl", "wctrain.experimental", "wctrain.pretrain", "wctrain.checkpoint")
    from_models = [(m, t) for m, (top, inner) in IMPORTS.items() if m.startswith("wctrain.models")
                   for t in top + inner if t.startswith(training)]
    assert not from_models, from_models
    dispatches = {"wctrain.rl.trainer", "wctrain.rl.loss"}
    of_ablations = [(m, t) for m, (top, inner) in IMPORTS.items() if not m.startswith("wctrain.experimental")
                    and m not in dispatches for t in top + inner if t.startswith("wctrain.experimental")]
    assert not of_ablations, of_ablations


def test_wcbench_imports_follow_the_flow():
    """A stage imports only from itself and the stages before it (lazy imports included)."""
    unplaced = [m for m in MODULES if m.startswith("wcbench") and stage(m) is None]
    assert not unplaced, f"modules in no known stage (add their folder to STAGES): {unplaced}"
    upstream = [(m, t) for m, (top, inner) in IMPORTS.items() if m.startswith("wcbench")
                for t in sorted(_internal(top + inner)) if stage(t) is not None and stage(t) > stage(m)]
    assert not upstream, f"imports of later stages: {upstream}"


def test_report_never_imports_run():
    """Reports read a results folder (wcbench.results); they never import what makes one."""
    offenders = [(m, t) for m, (top, inner) in IMPORTS.items() if m.startswith("wcbench.report")
                 for t in top + inner if t.startswith("wcbench.run")]
    assert not offenders, offenders


def test_imports_inside_functions_have_a_reason():
    """Only optional packages, and the command modules of the two front ends, are imported lazily."""
    unexplained = [(m, t) for m, (_, inner) in IMPORTS.items() for t in inner
                   if t.split(".")[0] not in OPTIONAL and not m.startswith(FRONT_ENDS)]
    assert not unexplained, unexplained


MAX_LINES = 400


def test_no_module_is_over_400_lines():
    """A module past ~400 lines mixes concerns (STYLE.md): split it by concern, one module each."""
    lengths = {str(path.relative_to(REPO)): len(path.read_text().splitlines()) for path in MODULES.values()}
    long = {path: n for path, n in lengths.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines; split each by concern: {dict(sorted(long.items()))}"


# A version narrative ("version 3-11", "versions 1-6", "earlier versions wrote", "estimator v8") or a
# commit cited by hash ("commit f85a4f8"); "bump ``version``" and "the schema version" are fine.
HISTORY = re.compile(
    r"\bversions? \d+(?:\s*(?:-|to|and)\s*\d+)?\b"
    r"|\b(?:earlier|older|previous|former|prior|old) versions?\b"
    r"|\b(?:estimator|scorer|reward|renderer|tracker|model|quality|suite) v\d+\b"
    r"|\bcommit\b.{0,40}?\b(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"
    r"|\b(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b.{0,40}?\bcommit\b", re.IGNORECASE)


def docstrings_and_comments(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every docstring (module, class, function) and comment of a module."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if (docstring := ast.get_docstring(node, clean=False)) is not None:
                yield node.body[0].lineno, docstring
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_history_pattern_finds_narratives_and_passes_descriptions():
    for text in ("the version 3-11 changelog", "up to version 9 it counted", "versions 1-6 kept far tracks",
                 "the files earlier versions wrote", "22 min (estimator v8 reward)",
                 "before the refactor (commit f85a4f8)", "as 1a2b3c4d5e6f did in its commit"):
        assert HISTORY.search(text), text
    for text in ("bump ``version`` when scores change", "stamped with the schema version",
                 "a decade around the data", "sha256 of the video", "the suite's content hash"):
        assert not HISTORY.search(text), text


def test_no_docstring_or_comment_tells_a_version_history():
    """Docstrings and comments say what the code does now; what it did before is git's to keep."""
    found = [f"{path.relative_to(REPO)}:{line}: {match.group(0)!r}" for path in MODULES.values()
             for line, text in docstrings_and_comments(path)
             if (match := HISTORY.search(" ".join(text.split())))]
    assert not found, "version history or commit hashes in docstrings or comments:\n" + "\n".join(found)
