"""The architecture rules of src/tierank (issue #28), checked on the source, not by importing it.

1. the layering in pyproject.toml's ``[tool.importlinter]`` holds (``lint-imports``);
2. no tierank module is imported inside a function or class body (``if TYPE_CHECKING:`` at module level is
   fine);
3. no module imports a ``_private`` name from another tierank module or reads ``module._private`` (private
   modules are fine: ``from . import _engines``, ``from ._kernel import name``);
4. no import cycles among the modules of src/tierank, function-level imports included;
5. no ``X.family.<field>`` reads outside src/tierank/measures/ and src/tierank/engine/;
6. a module is imported by name (``importlib.import_module``, ``__import__``) only by the one mechanism of
   lazy loading: a package face's module-level ``__getattr__`` (PEP 562) and the measure registry;
7. a ``__post_init__`` only in a dataclass (in a plain class nothing calls it).

Every check is a function of a repository root that returns its violations as ``path:line: what`` lines;
each has a test on the real tree and a test on a small tree in tmp_path that breaks it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tierank"
#: where measure knowledge may be read field by field (rule 5)
FAMILY_READERS = ("measures", "engine")
#: who may import a module by name (rule 6): a package face in its module-level __getattr__, the registry anywhere
LAZY_LOADERS = {"tierank": "__getattr__", "tierank.hashing": "__getattr__", "tierank.measures._registry": None}


# -- the source tree -------------------------------------------------------------------------------------
def _modules(root: Path) -> dict[str, Path]:
    """Every module of src/tierank by dotted name (a package by its own name, for its __init__.py)."""
    src = root / "src"
    found = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _where(root: Path, path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(root).as_posix()}:{node.lineno}"


def _imported_from(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from X import ...`` reads (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if _is_package(path) else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, *, type_checking: bool = True) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, at any depth (those under a module-level ``if TYPE_CHECKING:``
    only when ``type_checking``)."""
    skip: set[int] = set()
    if not type_checking:
        for stmt in tree.body:
            if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
                skip.update(id(n) for part in stmt.body for n in ast.walk(part))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The tierank modules an import statement loads: ``import a.b`` -> a.b; ``from p import n`` -> p.n when
    that is a module, else p (its __init__)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    base = _imported_from(module, path, node)
    if base not in modules:
        return []
    return sorted({f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names})


# -- 1. the layers ---------------------------------------------------------------------------------------
def lint_imports(root: Path) -> list[str]:
    """``lint-imports`` (import-linter, installed next to this Python) on the contracts of ``root``'s
    pyproject.toml, with ``root/src`` first on the path; its report when a contract is broken."""
    exe = Path(sys.executable).parent / "lint-imports"
    path = [str(root / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    proc = subprocess.run([str(exe), "--no-cache", "--no-logo"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode == 0:
        return []
    return [f"lint-imports exited with {proc.returncode}:", proc.stdout, proc.stderr]


# -- 2. imports inside functions and classes -------------------------------------------------------------
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _scoped_imports(node: ast.AST,
                    scope: str | None = None) -> Iterator[tuple[ast.Import | ast.ImportFrom, str | None]]:
    """(import statement, name of the innermost function or class around it, or None) under ``node``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, scope
        yield from _scoped_imports(child, child.name if isinstance(child, _SCOPES) else scope)


def function_level_imports(root: Path) -> list[str]:
    """Every tierank import made inside a function or class body."""
    found = []
    for module, path in _modules(root).items():
        for node, scope in _scoped_imports(_parse(path)):
            if scope is None:
                continue
            if isinstance(node, ast.Import):
                ours = any(_is_ours(alias.name) for alias in node.names)
            else:
                ours = _is_ours(_imported_from(module, path, node))
            if ours:
                found.append(f"{_where(root, path, node)}: `{ast.unparse(node)}` inside {scope}")
    return sorted(found, key=_by_place)


def _by_place(line: str) -> tuple[str, int, str]:
    path, number = line.split(":")[:2]
    return path, int(number), line


# -- 3. private names across modules ---------------------------------------------------------------------
def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_name_uses(root: Path) -> list[str]:
    """``from <tierank module> import _name`` (not a module) and ``<tierank module>._name`` reads."""
    modules = _modules(root)
    found = []
    for module, path in modules.items():
        tree = _parse(path)
        bound: dict[str, str] = {}   # local name -> the tierank module it is bound to
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        if alias.asname:
                            bound[alias.asname] = alias.name
                        else:
                            bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
                continue
            source = _imported_from(module, path, node)
            if source not in modules:
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:
                    bound[alias.asname or alias.name] = full
                elif _is_private(alias.name):
                    found.append(f"{_where(root, path, node)}: imports the private name {alias.name} of {source}")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if not (isinstance(value, ast.Name) and value.id in bound):
                continue
            owner = ".".join([bound[value.id], *reversed(chain)])
            if owner in modules and f"{owner}.{node.attr}" not in modules and owner != module:
                found.append(f"{_where(root, path, node)}: reads the private name {node.attr} of {owner}")
    return sorted(set(found), key=_by_place)


# -- 4. import cycles ------------------------------------------------------------------------------------
def import_graph(root: Path) -> dict[str, dict[str, str]]:
    """module -> {imported tierank module: where (path:line of the first such import)}, every import at any
    depth but those under a module-level ``if TYPE_CHECKING:`` (which never run)."""
    modules = _modules(root)
    graph: dict[str, dict[str, str]] = {m: {} for m in modules}
    for module, path in modules.items():
        for node in sorted(_imports(_parse(path), type_checking=False), key=lambda n: n.lineno):
            for target in _targets(module, path, node, modules):
                if target != module:
                    graph[module].setdefault(target, _where(root, path, node))
    return graph


def _strongly_connected(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _shortest_cycle(graph: dict[str, dict[str, str]], start: str, members: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside ``members`` (breadth first)."""
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node]):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if child not in parent:
                parent[child] = node
                queue.append(child)
    return []   # pragma: no cover - every member of a component lies on a cycle


def import_cycles(root: Path) -> list[str]:
    """Every group of modules that import each other (directly or not), with the shortest cycle through each
    member, each import with its place."""
    graph = import_graph(root)
    found = []
    for component in sorted(_strongly_connected(graph)):
        if len(component) < 2:
            continue
        cycles = set()
        for member in component:
            cycle = _shortest_cycle(graph, member, set(component))
            turn = cycle.index(min(cycle[:-1]))   # one rotation per cycle
            cycles.add(tuple(cycle[turn:-1] + cycle[:turn + 1]))
        found.append(f"{len(component)} modules import each other: {', '.join(component)}")
        for cycle in sorted(cycles, key=lambda c: (len(c), c)):
            steps = [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
            found.append("    cycle: " + "; ".join(steps))
    return found


# -- 5. family fields read outside measures/ and engine/ -------------------------------------------------
def family_field_reads(root: Path) -> list[str]:
    """Every ``X.family.Y`` outside src/tierank/measures/ and src/tierank/engine/."""
    found = []
    for module, path in _modules(root).items():
        parts = module.split(".")
        if len(parts) > 1 and parts[1] in FAMILY_READERS:
            continue
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "family":
                found.append(f"{_where(root, path, node)}: reads .family.{node.attr}")
    return sorted(set(found), key=_by_place)


# -- 6. modules imported by name --------------------------------------------------------------------------
def _imports_by_name(node: ast.AST, scope: str | None = None) -> Iterator[tuple[ast.Call, str | None]]:
    """(call of importlib.import_module / import_module / __import__, the module-level function it is in)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            f = child.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in ("import_module", "__import__"):
                yield child, scope
        inner = child.name if scope is None and isinstance(child, _SCOPES) else scope
        yield from _imports_by_name(child, inner)


def imports_by_name(root: Path) -> list[str]:
    """Every import of a module by name outside the lazy-loading mechanism (:data:`LAZY_LOADERS`)."""
    found = []
    for module, path in _modules(root).items():
        for call, scope in _imports_by_name(_parse(path)):
            if module in LAZY_LOADERS and LAZY_LOADERS[module] in (None, scope):
                continue
            found.append(f"{_where(root, path, call)}: `{ast.unparse(call)}` in {scope or 'the module'}")
    return sorted(found, key=_by_place)


# -- a __post_init__ only where a dataclass calls it ---------------------------------------------------------
def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == "dataclass") or (
        isinstance(target, ast.Attribute) and target.attr == "dataclass")


def orphan_post_inits(root: Path) -> list[str]:
    """Every ``__post_init__`` of a class that is not a dataclass: nothing calls it (a dataclass made a
    plain class keeps its checks only in its ``__init__``)."""
    found = []
    for path in _modules(root).values():
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.ClassDef) and not any(map(_is_dataclass_decorator, node.decorator_list)):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__post_init__":
                        found.append(f"{_where(root, path, item)}: {node.name}.__post_init__ is never called")
    return sorted(found, key=_by_place)


# -- the rules on the real tree --------------------------------------------------------------------------
def _report(problems: list[str]) -> str:
    return "\n" + "\n".join(problems)


def test_layers_hold():
    problems = lint_imports(ROOT)
    assert not problems, _report(problems)


def test_no_tierank_import_inside_functions_or_classes():
    problems = function_level_imports(ROOT)
    assert not problems, _report(problems)


def test_no_private_names_across_modules():
    problems = private_name_uses(ROOT)
    assert not problems, _report(problems)


def test_no_import_cycles():
    problems = import_cycles(ROOT)
    assert not problems, _report(problems)


def test_family_fields_are_read_only_in_measures_and_engine():
    problems = family_field_reads(ROOT)
    assert not problems, _report(problems)


def test_modules_are_imported_by_name_only_by_the_lazy_loaders():
    problems = imports_by_name(ROOT)
    assert not problems, _report(problems)


def test_post_inits_belong_to_dataclasses():
    problems = orphan_post_inits(ROOT)
    assert not problems, _report(problems)


# -- each check finds what it is for ---------------------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repository root with src/tierank/<path> for every file given (packages get an __init__.py)."""
    for name, text in files.items():
        path = tmp_path / "src" / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in [tmp_path / "src" / PACKAGE, *(tmp_path / "src" / PACKAGE).rglob("*")]:
        if folder.is_dir() and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("", encoding="utf-8")
    return tmp_path


def test_lint_imports_reports_an_upward_import(tmp_path):
    root = _tree(tmp_path, {"low.py": "def f():\n    from . import high\n", "high.py": "X = 1\n"})
    (root / "pyproject.toml").write_text('[tool.importlinter]\nroot_package = "tierank"\n'
                                         'exclude_type_checking_imports = true\n\n'
                                         '[[tool.importlinter.contracts]]\nname = "layers"\ntype = "layers"\n'
                                         'layers = ["tierank.high", "tierank.low"]\n', encoding="utf-8")
    problems = lint_imports(root)
    assert problems and "tierank.low is not allowed to import tierank.high" in problems[1], problems
    (root / "src" / PACKAGE / "low.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                                   "    from . import high\n", encoding="utf-8")
    assert lint_imports(root) == []


def test_function_level_imports_are_found(tmp_path):
    root = _tree(tmp_path, {
        "a.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n\n"
                 "def f():\n    import json\n    from .b import g\n    return g\n\n"
                 "class C:\n    from tierank import b\n"),
        "b.py": "def g():\n    import tierank.a\n    return lambda: __import__('json')\n",
    })
    assert function_level_imports(root) == [
        "src/tierank/a.py:7: `from .b import g` inside f",
        "src/tierank/a.py:11: `from tierank import b` inside C",
        "src/tierank/b.py:2: `import tierank.a` inside g",
    ]


def test_private_names_across_modules_are_found(tmp_path):
    root = _tree(tmp_path, {
        "_kernel.py": "_x = 1\ny = 2\n__all__ = ['y']\n",
        "pkg/__init__.py": "from .._kernel import y\n_hidden = 3\n",
        "pkg/_impl.py": "from .. import _kernel\nfrom . import _hidden\nfrom .._kernel import _x, y, __all__\n",
        "user.py": ("import tierank._kernel\nimport tierank.pkg as p\nfrom tierank import _kernel as k\n"
                    "a = tierank._kernel._x + k.y + k.__all__[0]\nb = p._hidden + p._impl.y\nc = k._x\n"
                    "self = object()\nd = self._x\n"),
    })
    assert private_name_uses(root) == [
        "src/tierank/pkg/_impl.py:2: imports the private name _hidden of tierank.pkg",
        "src/tierank/pkg/_impl.py:3: imports the private name _x of tierank._kernel",
        "src/tierank/user.py:4: reads the private name _x of tierank._kernel",
        "src/tierank/user.py:5: reads the private name _hidden of tierank.pkg",
        "src/tierank/user.py:6: reads the private name _x of tierank._kernel",
    ]


def test_import_cycles_are_found(tmp_path):
    root = _tree(tmp_path, {
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .pkg import c\n",
        "pkg/__init__.py": "",
        "pkg/c.py": "import tierank.a\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import e\n",
        "e.py": "from . import d\n",
        "f.py": "from .pkg import thing\n",
        "pkg/g.py": "from .. import f\n",
    })
    assert import_cycles(root) == [
        "3 modules import each other: tierank.a, tierank.b, tierank.pkg.c",
        "    cycle: tierank.a -> tierank.b (src/tierank/a.py:1); tierank.b -> tierank.pkg.c (src/tierank/b.py:2); "
        "tierank.pkg.c -> tierank.a (src/tierank/pkg/c.py:1)",
    ]
    (root / "src" / PACKAGE / "pkg" / "__init__.py").write_text("from . import g\n", encoding="utf-8")
    assert import_cycles(root)[2:] == [
        "3 modules import each other: tierank.f, tierank.pkg, tierank.pkg.g",
        "    cycle: tierank.f -> tierank.pkg (src/tierank/f.py:1); tierank.pkg -> tierank.pkg.g "
        "(src/tierank/pkg/__init__.py:1); tierank.pkg.g -> tierank.f (src/tierank/pkg/g.py:1)",
    ]


def test_family_field_reads_are_found(tmp_path):
    root = _tree(tmp_path, {
        "measures/ap.py": "def f(m):\n    return m.family.kernel\n",
        "engine/core.py": "def f(m):\n    return m.family.kernel\n",
        "report.py": "def f(m, x):\n    return m.family, x.measure.family.name, m.family.hook()\n",
    })
    assert family_field_reads(root) == ["src/tierank/report.py:2: reads .family.hook",
                                        "src/tierank/report.py:2: reads .family.name"]


def test_imports_by_name_are_found(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": ("import importlib\n\ndef __getattr__(name):\n    return importlib.import_module(name)\n\n"
                        "def other(name):\n    return importlib.import_module(name)\n"),
        "measures/_registry.py": "from importlib import import_module\nX = import_module('tierank.measures.ap')\n",
        "cli.py": ("import importlib\n\nclass Lazy:\n    def get(self, name):\n"
                   "        return importlib.import_module(f'tierank.{name}')\n\nm = __import__('tierank.report')\n"),
    })
    assert imports_by_name(root) == [
        "src/tierank/__init__.py:7: `importlib.import_module(name)` in other",
        "src/tierank/cli.py:5: `importlib.import_module(f'tierank.{name}')` in Lazy",
        "src/tierank/cli.py:7: `__import__('tierank.report')` in the module",
    ]


def test_orphan_post_inits_are_found(tmp_path):
    root = _tree(tmp_path, {
        "a.py": ("import dataclasses\nfrom dataclasses import dataclass\n\n@dataclass(frozen=True)\nclass A:\n"
                 "    x: int\n    def __post_init__(self):\n        pass\n\n@dataclasses.dataclass\nclass B:\n"
                 "    def __post_init__(self):\n        pass\n\nclass C:\n    def __init__(self):\n        pass\n\n"
                 "    def __post_init__(self):\n        pass\n"),
    })
    assert orphan_post_inits(root) == ["src/tierank/a.py:19: C.__post_init__ is never called"]
