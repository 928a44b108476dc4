"""The package's own files agree: setup.py (the one list of dependencies), package.xml, the
Makefile, CI and the README."""
import ast
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_dependencies() -> dict[str, dict[str, str]]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def test_package_xml_lists_every_dependency_of_setup_py():
    deps = setup_dependencies()
    package = ET.parse(ROOT / "package.xml").getroot()
    assert package.get("format") == "3"
    assert package.findtext("name") == "mbsim_ros"
    assert package.find("export/build_type").text == "ament_python"
    exec_keys = {e.text for e in package.findall("exec_depend")}
    test_keys = {e.text for e in package.findall("test_depend")}
    assert set(deps["RUNTIME"].values()) | set(deps["ROS"].values()) <= exec_keys
    assert set(deps["TEST"].values()) <= test_keys
    declared = set(deps["RUNTIME"].values()) | set(deps["ROS"].values()) | {"ament_copyright",
                                                                          "ament_flake8"}
    assert exec_keys | test_keys <= declared | set(deps["TEST"].values()), \
        "package.xml names a dependency that setup.py does not install"


def test_benchmark_peers_are_an_extra_only():
    """The peers of bench/peers install with `.[bench]` (make bench), never with the package."""
    deps = setup_dependencies()
    names = {name.split(">")[0].split("=")[0] for name in deps["BENCH"]}
    assert names == {"mujoco", "pybullet", "dartpy"}
    package_xml = (ROOT / "package.xml").read_text()
    assert not any(name in package_xml for name in names)
    setup_text = (ROOT / "setup.py").read_text()
    assert '"bench": list(BENCH)' in setup_text
    assert ".[ros,test,bench]" in (ROOT / "Makefile").read_text()


def test_installed_data_exists():
    assert (ROOT / "resource" / "mbsim_ros").is_file()
    for name in ("pendulum", "double_pendulum", "arm7"):
        assert (ROOT / "urdf" / f"{name}.urdf").is_file()
    assert list((ROOT / "config").glob("*.yaml"))


def test_make_targets_and_ci():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run:", "test:", "bench:"):
        assert target in makefile
    assert "-m venv $(VENV)" in makefile and "pip install" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert ".venv/" in (ROOT / ".gitignore").read_text()
