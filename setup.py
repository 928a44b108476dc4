"""mbsim_ros: ament_python package and pip-installable library. Every dependency is declared here
(and only here); package.xml carries the matching rosdep keys, checked by test/test_packaging.py."""
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

try:  # setuptools >= 70.1 has its own; before, the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # neither: no wheel is built here (pip's isolated build has one)
        bdist_wheel = None

PACKAGE = "mbsim_ros"
# The compiled code `make wheel` puts in mbsim_ros/_compiled (`mbsim-ros warm --ship`; nothing in
# a source checkout): numba's cache for the generic CPU, valid for one Python and one numba.
COMPILED = sorted(str(path.relative_to(PACKAGE))
                  for path in Path(PACKAGE, "_compiled").rglob("*") if path.is_file())

# pip name -> rosdep key (package.xml must list each key; test_packaging checks it)
RUNTIME = {
    "numpy>=1.24": "python3-numpy",
    "scipy>=1.10": "python3-scipy",
    "numba>=0.59": "python3-numba",
    "pin>=3.0": "pinocchio",
    "osqp>=0.6": "python3-osqp-pip",
    "clarabel>=0.7": "python3-clarabel-pip",
    "pyyaml>=6.0": "python3-yaml",
    "matplotlib>=3.6": "python3-matplotlib",
    "pydantic>=2.7": "python3-pydantic",  # the input schemas (mbsim_ros/schema)
    # test campaigns (mbsim_ros/campaign): the task engine, the results table, the progress bar
    "ray>=2.52": "python3-ray-pip",  # token authentication (docs/CAMPAIGNS.md, clusters)
    "pyarrow>=14": "python3-pyarrow-pip",
    "tqdm>=4.60": "python3-tqdm",
    # recordings (mbsim_ros/recording): the MCAP container and the ROS 2 CDR encoder
    "mcap>=1.2": "python3-mcap-pip",
    "mcap-ros2-support>=0.5": "python3-mcap-ros2-support-pip",
    # the 3D view (mbsim_ros/view): the browser viewer (ships its client build), meshes
    "viser>=1.0": "python3-viser-pip",
    "trimesh>=4.0": "python3-trimesh-pip",
    "pycollada>=0.8": "python3-pycollada-pip",  # trimesh's reader of .dae meshes
}
# In a ROS 2 workspace these come from the distribution; from PyPI they are wheels.
ROS = {
    "ros-kilted-rclpy": "rclpy",
    "ros-kilted-rmw-fastrtps-cpp": "rmw_fastrtps_cpp",
    "ros-kilted-sensor-msgs": "sensor_msgs",
    "ros-kilted-std-msgs": "std_msgs",
    "ros-kilted-geometry-msgs": "geometry_msgs",
    "ros-kilted-rosgraph-msgs": "rosgraph_msgs",
    "ros-kilted-std-srvs": "std_srvs",
    "ros-kilted-diagnostic-msgs": "diagnostic_msgs",
    "ros-kilted-visualization-msgs": "visualization_msgs",
    "ros-kilted-nav-msgs": "nav_msgs",
}
TEST = {
    "pytest>=7": "python3-pytest",
    "hypothesis>=6.100": "python3-hypothesis",  # the schemas' fuzz tests
    "jsonschema>=4": "python3-jsonschema",  # the exported JSON Schemas checked as editors do
    "flake8>=6": "python3-flake8",  # the linter `make test` runs first (setup.cfg [flake8])
    "example-robot-data>=4.0": "example-robot-data",
    # test/browser.py drives Debian's chromium over the DevTools protocol (make browser)
    "websockets>=12": "python3-websockets",
    "pillow>=9": "python3-pil",
    # test/test_colcon.py builds the package in a workspace; in a ROS installation rosdep's
    # one key for colcon brings them all
    "colcon-core>=0.15": "python3-colcon-common-extensions",
    "colcon-ros>=0.4": "python3-colcon-common-extensions",
    "colcon-python-setup-py>=0.2.8": "python3-colcon-common-extensions",
    "colcon-package-selection>=0.2.10": "python3-colcon-common-extensions",
}
# The peers that bench/peers compares against (`pip install .[bench]`, `make bench`): wheels
# from PyPI, not dependencies of the ROS package, so they have no rosdep key and package.xml
# does not list them.
BENCH = {
    "mujoco>=3.0": None,
    "pybullet>=3.2": None,
    "dartpy>=6.20": None,
}

COMMANDS = {}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """With compiled code inside, the wheel is for this Python and platform only."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = not COMPILED

    COMMANDS["bdist_wheel"] = PlatformWheel

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Multibody simulator for robot control loops: variational and compliant-contact "
                "integrators, a 1 kHz ROS 2 node, and a Python library",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={PACKAGE: COMPILED},
    cmdclass=COMMANDS,
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/config/scenes", glob("config/scenes/*.yaml")),
        (f"share/{PACKAGE}/config/sensors", glob("config/sensors/*.yaml")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
    ],
    install_requires=list(RUNTIME),
    extras_require={"ros": list(ROS), "test": list(TEST), "bench": list(BENCH)},
    zip_safe=True,
    tests_require=list(TEST),
    entry_points={
        "console_scripts": [
            "mbsim-ros = mbsim_ros.cli:main",
            "mbsim_node = mbsim_ros.cli:node_main",
        ],
        # the pytest plugin (mbsim_ros/testing, docs/TESTING.md): the `mbsim` fixture
        "pytest11": ["mbsim_ros = mbsim_ros.testing.plugin"],
    },
)
