"""The package layering (issue 18): no module imports a private module of
another subpackage, and `jaxfric.simulate` imports nothing from
`jaxfric.friction` (the law families import their paths from simulate, so the
reverse would be an import cycle). Read from the sources with `ast`."""

import ast
import pathlib

import jaxfric as jf

ROOT = pathlib.Path(jf.__file__).parent


def _imports(path: pathlib.Path):
    """``(lineno, ["jaxfric", subpackage, module, ...])`` of each `from`
    import of a jaxfric module in `path`."""
    package = ["jaxfric", *path.relative_to(ROOT).parent.parts]
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = (node.module or "").split(".") if node.module else []
        if node.level:
            yield node.lineno, package[: len(package) - node.level + 1] + module
        elif module[:1] == ["jaxfric"]:
            yield node.lineno, module


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path


def test_no_private_module_of_another_subpackage_is_imported():
    found = []
    for name, path in _modules():
        own = path.relative_to(ROOT).parts[0]
        for line, target in _imports(path):
            other = len(target) > 1 and target[1] != own
            if other and any(part.startswith("_") for part in target[2:]):
                found.append(f"{name}:{line} imports {'.'.join(target)}")
    assert not found, found


def test_simulate_imports_nothing_from_friction():
    for name, path in _modules():
        if name.startswith("simulate/"):
            for line, target in _imports(path):
                assert target[1:2] != ["friction"], f"{name}:{line}"
