"""No circles, no imports up a floor (issue 81, item 1).

Every module of `keras_bert/` and `pipelines/` stands on a floor, declared
once in `FLOORS`; a module imports modules on its own floor or below, and
packages import each other without a circle. Function-level imports count
as module-level ones do: a deferred import is still a tie. Read from the
source with `ast`; nothing here imports the code.

Python runs a package's `__init__` before any module under it; that implicit
import of a parent package is not counted (every module would import
`keras_bert/__init__.py`, which imports its classes by name on first use).
"""

import ast
import pathlib

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("keras_bert", "pipelines")

# Lowest first. A name stands for that module and every module under it
# (the longest name that matches decides); `keras_bert.__init__` is the
# package's own file alone. A module no name covers fails the check: a new
# package or command is given its floor here.
FLOORS = {
    "data pipelines": ("pipelines",),
    "plumbing": (
        "keras_bert.config_tree",
        "keras_bert.errors",
        "keras_bert.file_io",
        "keras_bert.model_sizes",
        "keras_bert.paths",
        "keras_bert.registry",
        "keras_bert.runtime",
    ),
    "layers": ("keras_bert.layers",),
    "models": ("keras_bert.models", "keras_bert.model_configs"),
    "optimization": ("keras_bert.optimization",),
    # Below `runs`: the export library is told what to refuse by its
    # command, and knows no run folder.
    "serving": ("keras_bert.serving",),
    "runs": ("keras_bert.runs",),
    "checkpoint formats": ("keras_bert.conversion",),
    "pre-training and fine-tuning": ("keras_bert.pretraining", "keras_bert.finetuning"),
    "distillation": ("keras_bert.distillation",),
    "commands": (
        "keras_bert.__init__",
        # The commands' harness: it registers the package's classes.
        "keras_bert.runtime.command",
        "keras_bert.convert",
        "keras_bert.data",
        "keras_bert.distill",
        "keras_bert.evaluate",
        "keras_bert.export",
        "keras_bert.finetune",
        "keras_bert.predict",
        "keras_bert.pretrain",
        "keras_bert.vocab",
    ),
}

# (importing module, imported module): why the import still stands. Only
# what is not fixed yet; an entry no longer needed fails the check.
ALLOWED = {}


def modules(root, packages):
    """`{module: path}` of every `.py` file under `packages`; a package's
    own file is `<package>.__init__`."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found[".".join(path.relative_to(root).with_suffix("").parts)] = path
    return found


def imports(module, path, known):
    """`(line, imported module)` for each import in the file, at any depth,
    of a module in `known`."""
    package = module.rpartition(".")[0]
    found = []

    def resolve(name):
        """The module `name` is, or the one that defines it; None outside `known`."""
        while name:
            for candidate in (name, f"{name}.__init__"):
                if candidate in known:
                    return candidate
            name = name.rpartition(".")[0]
        return None

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [resolve(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            # `from package import module` imports the module; `from module
            # import name`, the module.
            targets = [resolve(f"{base}.{alias.name}") or resolve(base) for alias in node.names]
        else:
            continue
        found += [(node.lineno, t) for t in dict.fromkeys(targets) if t and t != module]
    return found


def floor_of(module, floors):
    """`(index, floor name)` of the longest declared name covering `module`, or None."""
    best = None
    for index, (floor, names) in enumerate(floors.items()):
        for name in names:
            covers = module == name or (
                not name.endswith(".__init__") and module.startswith(f"{name}.")
            )
            if covers and (best is None or len(name) > best[0]):
                best = (len(name), index, floor)
    return best and best[1:]


def unit(module):
    """The package a module belongs to for circles: `keras_bert.<name>` or
    `pipelines.<name>` (a top-level module is its own)."""
    parts = module.split(".")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts[:2])


def shown(module):
    """A module's name as Python spells it: a package without `.__init__`."""
    return module.removesuffix(".__init__")


def _circles(edges):
    """Strongly connected groups of more than one package (Tarjan), each a
    sorted list."""
    graph = {}
    for importer, _, imported in edges:
        if unit(importer) != unit(imported):
            graph.setdefault(unit(importer), set()).add(unit(imported))
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _broken_rules(edges, floors, where):
    """`(lines, pairs)`: one line per import a floor up and per circle, and
    the `(importer, imported)` pairs behind them."""
    lines, pairs = [], set()
    for module, line, imported in edges:
        mine, theirs = floor_of(module, floors), floor_of(imported, floors)
        if mine and theirs and theirs[0] > mine[0]:
            pairs.add((module, imported))
            lines.append(
                f"{where[module]}:{line}: {shown(module)} ({mine[1]}) imports {shown(imported)}, "
                f"a floor up ({theirs[1]})"
            )
    for group in _circles(edges):
        inside = sorted(
            (m, line, i)
            for m, line, i in edges
            if unit(m) in group and unit(i) in group and unit(m) != unit(i)
        )
        pairs |= {(m, i) for m, _, i in inside}
        ties = "; ".join(f"{where[m]}:{line} imports {shown(i)}" for m, line, i in inside)
        lines.append(f"import circle between {', '.join(group)}: {ties}")
    return lines, pairs


def import_problems(root, packages, floors, allowed):
    """Every problem of the import graph of `packages` under `root`, one
    line each: a module on no floor, an import a floor up, a circle, and an
    `allowed` pair that breaks no rule (the others are left out)."""
    known = modules(root, packages)
    where = {module: path.relative_to(root).as_posix() for module, path in known.items()}
    edges = [
        (module, line, imported)
        for module, path in known.items()
        for line, imported in imports(module, path, known)
    ]
    unmapped = [
        f"{m}: on no floor; declare it in FLOORS" for m in sorted(known) if not floor_of(m, floors)
    ]
    _, broken = _broken_rules(edges, floors, where)
    lines, _ = _broken_rules([e for e in edges if (e[0], e[2]) not in allowed], floors, where)
    stale = [
        f"{shown(a)} -> {shown(b)}: allowed but breaks no rule; drop it"
        for a, b in allowed
        if (a, b) not in broken
    ]
    return unmapped + lines + stale


def test_no_circles_and_no_imports_up_a_floor():
    assert import_problems(ROOT, PACKAGES, FLOORS, ALLOWED) == []


def test_every_allowed_import_says_why():
    assert all(isinstance(why, str) and why.strip() for why in ALLOWED.values())


# === The check itself, on planted trees ===

FAKE_FLOORS = {"low": ("pkg.low",), "high": ("pkg.high", "pkg.__init__")}


def plant(tmp_path, files):
    for name, text in {"pkg/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_an_import_up_a_floor_is_named_with_its_line_even_inside_a_function(tmp_path):
    plant(
        tmp_path,
        {
            "pkg/low.py": "import os\n\n\ndef f():\n    from pkg.high import thing\n",
            "pkg/high.py": "thing = 1\n",
        },
    )
    assert import_problems(tmp_path, ("pkg",), FAKE_FLOORS, {}) == [
        "pkg/low.py:5: pkg.low (low) imports pkg.high, a floor up (high)"
    ]


def test_a_circle_on_one_floor_is_named_with_its_ties(tmp_path):
    plant(
        tmp_path,
        {
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "from pkg.low import b\n",
            "pkg/low/b.py": "import pkg.other.c\n",
            "pkg/other/__init__.py": "",
            "pkg/other/c.py": "from ..low import a\n",
            "pkg/high.py": "",
        },
    )
    floors = {"low": ("pkg.low", "pkg.other"), "high": ("pkg.high", "pkg.__init__")}
    assert import_problems(tmp_path, ("pkg",), floors, {}) == [
        "import circle between pkg.low, pkg.other: pkg/low/b.py:1 imports pkg.other.c; "
        "pkg/other/c.py:1 imports pkg.low.a"
    ]


def test_a_module_on_no_floor_fails(tmp_path):
    plant(tmp_path, {"pkg/low.py": "", "pkg/high.py": "", "pkg/new.py": ""})
    assert import_problems(tmp_path, ("pkg",), FAKE_FLOORS, {}) == [
        "pkg.new: on no floor; declare it in FLOORS"
    ]


def test_an_allowed_import_passes_until_it_is_no_longer_needed(tmp_path):
    plant(tmp_path, {"pkg/low.py": "import pkg.high\n", "pkg/high.py": "import pkg.low\n"})
    allowed = {("pkg.low", "pkg.high"): "not fixed yet"}
    assert import_problems(tmp_path, ("pkg",), FAKE_FLOORS, allowed) == []
    (tmp_path / "pkg/low.py").write_text("")
    assert import_problems(tmp_path, ("pkg",), FAKE_FLOORS, allowed) == [
        "pkg.low -> pkg.high: allowed but breaks no rule; drop it"
    ]
