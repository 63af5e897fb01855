"""The package's import graph: no cycles, and imports go one way only.

Every module of `keras_msets` is parsed with `ast` (nothing is imported),
and every import is read, at module level or inside a function or class:
`import keras_msets.x`, `from keras_msets.x import y` (an edge to the module
`keras_msets.x.y` if there is one, else to `keras_msets.x`), relative
imports and `importlib.import_module("keras_msets.x")` with a literal name.

The layers, lowest first; a module may import its own layer and lower ones:

    0  keras_msets.utils (imports nothing else of keras_msets)
    1  ops, data, stats
    2  layers
    3  models
    4  training
    5  zoo
    6  estimators, cli, demo

`keras_msets/__init__.py` may import everything; `keras_msets.version`
imports nothing of keras_msets and anyone may import it. `keras_msets.testing`
is for tests: it may import product code, and product code (everything else)
never imports it. Each test prints every violation it finds, not only the
first.
"""

import ast
import os

import pytest

import keras_msets

PACKAGE = "keras_msets"
LAYERS = {
    "utils": 0,
    "ops": 1,
    "data": 1,
    "stats": 1,
    "layers": 2,
    "models": 3,
    "training": 4,
    "zoo": 5,
    "estimators": 6,
    "cli": 6,
    "demo": 6,
}
# Outside the layering: the package root, the version, the test helpers.
ROOT = PACKAGE
VERSION = f"{PACKAGE}.version"
TESTING = f"{PACKAGE}.testing"


# --------------------------------------------------------------------------
# Reading the import graph.
# --------------------------------------------------------------------------


def find_modules(package_dir, package=PACKAGE):
    """`{module name: file path}` of every .py file under `package_dir`."""
    modules = {}
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        relative = os.path.relpath(folder, package_dir)
        parts = [package] + ([] if relative == "." else relative.split(os.sep))
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            stem = file[:-3]
            name = ".".join(parts if stem == "__init__" else parts + [stem])
            modules[name] = os.path.join(folder, file)
    return modules


def _import_module_target(node):
    """The literal name of `importlib.import_module("...")`, or None."""
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else None
    name = func.id if isinstance(func, ast.Name) else name
    arg = node.args[0]
    if name == "import_module" and isinstance(arg, ast.Constant):
        if isinstance(arg.value, str):
            return arg.value
    return None


def module_imports(name, path, modules, package=PACKAGE):
    """`[(imported module, line)]`: the package's modules `name` imports.

    Names that are not modules of the tree (a data folder installed
    elsewhere, a module that no longer exists) are left out.
    """
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    is_package = os.path.basename(path) == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found = []

    def add(target, line):
        if target in modules and target != name:
            found.append((target, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = here.split(".")
                if node.level > 1:
                    base_parts = base_parts[: -(node.level - 1)]
                base = ".".join(base_parts)
                if node.module:
                    base = f"{base}.{node.module}"
            else:
                base = node.module or ""
            if base.split(".")[0] != package:
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else base, node.lineno)
        else:
            target = _import_module_target(node)
            if target and target.split(".")[0] == package:
                add(target, node.lineno)
    return sorted(set(found), key=lambda item: (item[1], item[0]))


def import_graph(package_dir, package=PACKAGE):
    """`(modules, {module: [(imported module, line)]})` of a package."""
    modules = find_modules(package_dir, package)
    graph = {
        name: module_imports(name, path, modules, package)
        for name, path in modules.items()
    }
    return modules, graph


# --------------------------------------------------------------------------
# Rules.
# --------------------------------------------------------------------------


def import_cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target, _ in graph.get(node, ()):
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
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def describe_cycles(graph, modules):
    lines = []
    for component in import_cycles(graph):
        members = set(component)
        lines.append(f"import cycle between {', '.join(component)}:")
        for name in component:
            for target, line in graph[name]:
                if target in members:
                    path = os.path.relpath(modules[name])
                    lines.append(f"    {path}:{line}: {name} -> {target}")
    return lines


def layer_of(name, package=PACKAGE):
    """The layer number of module `name`, or None outside the layering."""
    parts = name.split(".")
    if name in (package, f"{package}.version") or parts[1] == "testing":
        return None
    return LAYERS.get(parts[1], "unknown")


def layering_violations(graph, modules, package=PACKAGE):
    lines = []
    for name in sorted(graph):
        path = os.path.relpath(modules[name])
        if name == f"{package}.version" and graph[name]:
            targets = sorted({t for t, _ in graph[name]})
            lines.append(
                f"{path}: {name} must import nothing of {package}; it "
                f"imports {targets}"
            )
            continue
        level = layer_of(name, package)
        if level == "unknown":
            lines.append(
                f"{path}: {name} is in no layer; add "
                f"{name.split('.')[1]!r} to LAYERS in {__name__}"
            )
            continue
        if level is None:
            continue
        for target, line in graph[name]:
            if target == f"{package}.version":
                continue
            target_level = layer_of(target, package)
            if target == package:
                lines.append(
                    f"{path}:{line}: {name} (layer {level}) imports the "
                    f"package root {package}, which imports everything"
                )
            elif target_level is None or target_level == "unknown":
                continue  # the testing rule; unknown layers reported above
            elif level == 0 and target.split(".")[1] != "utils":
                lines.append(
                    f"{path}:{line}: {name} (layer 0) must import nothing "
                    f"else of {package}; it imports {target}"
                )
            elif target_level > level:
                lines.append(
                    f"{path}:{line}: {name} (layer {level}) imports the "
                    f"higher layer {target} (layer {target_level})"
                )
    return lines


def imports_of_testing(graph, modules, package=PACKAGE):
    testing = f"{package}.testing"
    lines = []
    for name in sorted(graph):
        if name == testing or name.startswith(testing + "."):
            continue
        for target, line in graph[name]:
            if target == testing or target.startswith(testing + "."):
                path = os.path.relpath(modules[name])
                lines.append(
                    f"{path}:{line}: product module {name} imports {target} "
                    "(test helpers only)"
                )
    return lines


def _fail_with(lines, what):
    if lines:
        report = "\n".join(lines)
        print(f"{len(lines)} line(s) of {what}:\n{report}")
        pytest.fail(f"{what}:\n{report}", pytrace=False)


# --------------------------------------------------------------------------
# The package.
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package_graph():
    package_dir = os.path.dirname(os.path.abspath(keras_msets.__file__))
    return import_graph(package_dir)


def test_no_import_cycles(package_graph):
    modules, graph = package_graph
    _fail_with(describe_cycles(graph, modules), "import cycles")


def test_lower_layers_never_import_higher_ones(package_graph):
    modules, graph = package_graph
    _fail_with(layering_violations(graph, modules), "layering violations")


def test_product_code_never_imports_testing(package_graph):
    modules, graph = package_graph
    lines = imports_of_testing(graph, modules)
    _fail_with(lines, "imports of keras_msets.testing")


# --------------------------------------------------------------------------
# The checker itself, on a small package written for the test.
# --------------------------------------------------------------------------

FAKE_PACKAGE = {
    "__init__.py": "from keras_msets import layers\n",
    "version.py": "__version__ = '0'\n",
    "utils/__init__.py": "",
    "utils/checks.py": "from keras_msets.utils import other\n",
    "utils/other.py": "",
    "ops/__init__.py": "from . import masked\n",
    "ops/masked.py": (
        "import keras_msets.utils.checks\n"
        "def f():\n"
        "    from ..layers import dense  # upward, inside a function\n"
    ),
    "layers/__init__.py": "from keras_msets.layers.dense import Dense\n",
    "layers/dense.py": (
        "from keras_msets.utils import checks\n"
        "from keras_msets.layers import pool\n"
        "from keras_msets import version\n"
    ),
    "layers/pool.py": "from .dense import Dense\n",
    "zoo/__init__.py": (
        "import importlib\n"
        "def load():\n"
        "    return importlib.import_module('keras_msets.testing.case')\n"
        "from keras_msets._presets import data\n"
    ),
    "testing/__init__.py": "",
    "testing/case.py": "from keras_msets.zoo import load\n",
    "extra/__init__.py": "",
}


@pytest.fixture
def fake_graph(tmp_path):
    package_dir = tmp_path / PACKAGE
    for relative, text in FAKE_PACKAGE.items():
        path = package_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(str(package_dir))


def test_checker_reads_every_import_form(fake_graph):
    _, graph = fake_graph
    targets = {name: [t for t, _ in edges] for name, edges in graph.items()}
    assert targets["keras_msets"] == ["keras_msets.layers"]
    assert targets["keras_msets.ops"] == ["keras_msets.ops.masked"]
    assert targets["keras_msets.ops.masked"] == [
        "keras_msets.utils.checks",
        "keras_msets.layers.dense",
    ]
    assert targets["keras_msets.layers.pool"] == ["keras_msets.layers.dense"]
    assert targets["keras_msets.utils.checks"] == ["keras_msets.utils.other"]
    # importlib.import_module is read; keras_msets._presets is not a module.
    assert targets["keras_msets.zoo"] == ["keras_msets.testing.case"]


def test_checker_finds_every_violation(fake_graph):
    modules, graph = fake_graph
    cycles = import_cycles(graph)
    assert cycles == [
        ["keras_msets.layers.dense", "keras_msets.layers.pool"],
        ["keras_msets.testing.case", "keras_msets.zoo"],
    ]
    assert len(describe_cycles(graph, modules)) == 6
    layering = layering_violations(graph, modules)
    assert len(layering) == 2, layering
    assert "keras_msets.extra is in no layer" in layering[0]
    assert "imports the higher layer keras_msets.layers.dense" in layering[1]
    testing = imports_of_testing(graph, modules)
    assert len(testing) == 1 and "keras_msets.zoo imports" in testing[0]
