"""The module graph, module by module (the contracts of pyproject.toml see packages only): no import
cycle among the modules of the add-on, the backend or training, imports inside functions included
(grimp's graph, the one import-linter builds), and no module using another's private name
(``from x import _name`` or ``x._name``)."""
from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("blender_addon", "backend", "training")
LATENT = "blender_addon.latent"

# Private names used across modules: none (a new one fails the test; make it public instead).
KNOWN_PRIVATE: set = set()


@pytest.fixture(scope="module")
def graphs():
    return {p: grimp.build_graph(p, cache_dir=None) for p in PACKAGES}


def cycles(graph) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in graph.modules:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def describe(graph, component: list[str]) -> str:
    """One circle through the component and all its modules, for the failure message."""
    first = component[0]
    back = min((graph.find_shortest_chain(importer=m, imported=first) or () for m in
                graph.find_modules_directly_imported_by(first) if m in component), key=len, default=())
    circle = " -> ".join([first, *back[:-1], first])
    return circle if len(back) == len(component) else f"{circle} (in a knot of {len(component)}: {', '.join(component)})"


def test_no_import_cycle_outside_latent(graphs):
    bad = [describe(g, c) for g in graphs.values() for c in cycles(g) if not any(m.startswith(LATENT) for m in c)]
    assert not bad, "modules that import each other in a circle:\n" + "\n".join(bad)


def test_no_import_cycle_in_latent(graphs):
    graph = graphs["blender_addon"]
    bad = [describe(graph, c) for c in cycles(graph) if any(m.startswith(LATENT) for m in c)]
    assert not bad, "modules of latent/ that import each other in a circle:\n" + "\n".join(bad)


def test_the_cycle_finder_finds_a_circle():
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]
    assert describe(graph, ["p.a", "p.b", "p.c"]) == "p.a -> p.b -> p.c -> p.a"
    graph.add_import(importer="p.b", imported="p.a")
    assert describe(graph, ["p.a", "p.b", "p.c"]) == "p.a -> p.b -> p.a (in a knot of 3: p.a, p.b, p.c)"


def private_uses(path: Path, root: Path = ROOT) -> set[tuple[str, str]]:
    """(this module, another module's private name) for every ``from x import _n`` and ``x._n`` in the
    file, ``x`` one of this repository's packages or modules (or a name imported from one)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]  # (what a relative import starts from, for a package's __init__ too)
    module = ".".join(parts if parts[-1] != "__init__" else package)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names, found = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            if base.split(".")[0] not in PACKAGES:
                continue
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.add((module, f"{base}.{a.name}"))
                names[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    names[a.asname or a.name.split(".")[0]] = a.asname and a.name or a.name.split(".")[0]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.add((module, f"{names[node.value.id]}.{node.attr}"))
    return found


def test_no_module_uses_a_private_name_of_another():
    found = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found |= private_uses(path)
    new, gone = found - KNOWN_PRIVATE, KNOWN_PRIVATE - found
    assert not new, "private names used from another module (make them public, or keep the use inside):\n" + \
        "\n".join(f"{m}: {n}" for m, n in sorted(new))
    assert not gone, "no longer used: delete from KNOWN_PRIVATE:\n" + "\n".join(f"{m}: {n}" for m, n in sorted(gone))


def test_the_private_name_finder_sees_both_forms(tmp_path):
    pkg = tmp_path / "backend" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text("from . import other as o\nfrom .other import _x, y\nimport backend.z\n"
                              "o._hidden(); y._fine; backend._top; o.__doc__\n")
    assert private_uses(pkg / "m.py", tmp_path) == {
        ("backend.sub.m", "backend.sub.other._x"), ("backend.sub.m", "backend.sub.other._hidden"),
        ("backend.sub.m", "backend.sub.other.y._fine"), ("backend.sub.m", "backend._top")}
