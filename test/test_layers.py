"""The layers of docs/ARCHITECTURE.md, enforced: every import inside mbsim_ros (module level and
function-local alike: a lazy import is still a dependency) goes to the same layer or a lower
one. A new module must be given a layer here, or this test names it."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mbsim_ros"

# Lowest first. A module or package is placed by its first dotted name under mbsim_ros.
LAYERS = [
    # shared codes, helpers, the arena's buffers, input schemas
    {"codes", "arrays", "arena", "_jit", "layout", "schema"},
    {"spatial"},                                       # SE(3)
    {"model"},                                         # Model, URDF, elements, resources
    {"dynamics"},                                      # RNEA, CRBA, ABA, DRNEA, closures
    {"solvers"},                                       # cone QP, active set, LCP, LU
    {"mechanism"},                                     # the building API (uses kinematics)
    {"contact"},                                       # scenes, geometry, detection
    {"integrators"},                                   # the step kernels, StepInfo, servos
    {"sim", "state", "actuators", "sensors"},          # Simulator, Data, State, its devices
    {"estimation", "config", "build", "plotting", "scenarios", "zoo"},  # on top of sim
    {"recording"},                                     # MCAP recordings of a Simulator
    {"view"},                                          # the 3D view in the browser (viser)
    {"ros"},                                           # the node, the loop link (rclpy)
    {"campaign", "testing"},                           # campaigns (Ray), the pytest plugin
    {"cli", "__init__", "__main__"},                   # entry points
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts


def imported(path: Path):
    """(line, dotted name under mbsim_ros) of every import of a package module in the file."""
    own = module_name(path)
    package = own if path.name == "__init__.py" else own[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                if node.module:
                    yield node.lineno, base + node.module.split(".")
                else:
                    for alias in node.names:
                        yield node.lineno, base + [alias.name]
            elif node.module and node.module.split(".")[0] == "mbsim_ros":
                yield node.lineno, node.module.split(".")[1:] or ["__init__"]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mbsim_ros":
                    yield node.lineno, alias.name.split(".")[1:] or ["__init__"]


def test_every_module_has_a_layer():
    unplaced = sorted({module_name(f)[0] for f in PACKAGE.rglob("*.py")} - set(RANK))
    assert not unplaced, f"give these modules a layer in test_layers.LAYERS: {unplaced}"


def test_no_module_imports_from_a_higher_layer():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = module_name(path)
        for line, target in imported(path):
            if RANK[target[0]] > RANK[own[0]]:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {'.'.join(own)} "
                              f"imports {'.'.join(target)}")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_scan_sees_relative_and_local_imports(tmp_path):
    """The walker itself: a function-local relative import is found and resolved."""
    found = list(imported(PACKAGE / "sim.py"))
    assert any(target[:2] == ["contact", "scene"] for _, target in found)  # local, in from_scene
    assert any(target == ["state"] for _, target in found)
