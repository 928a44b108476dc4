"""Start the mbsim simulation node.

    ros2 launch mbsim_ros sim.launch.py [robot:=arm7] [config:=/path/params.yaml]
        [pacing:=realtime|fast|lockstep] [integrator:=variational|euler] [namespace:=...]

``robot`` picks ``config/<robot>.yaml`` from this package (arm7, double_pendulum, panda, ur5);
``config`` replaces it with any parameters file. ``pacing`` and ``integrator``, when given,
override the file. The node is ``mbsim`` (``/mbsim/effort_commands``, ``/joint_states``,
``/clock``); controllers that follow it set ``use_sim_time: true``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

PACKAGE = "mbsim_ros"
EXECUTABLE = "mbsim_node"
ROBOTS = ("arm7", "double_pendulum", "panda", "ur5")


def _node(context):
    overrides = {}
    for name in ("pacing", "integrator"):
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = value
    return [Node(
        package=PACKAGE, executable=EXECUTABLE, name="mbsim",
        namespace=LaunchConfiguration("namespace"), output="screen", emulate_tty=True,
        parameters=[LaunchConfiguration("config").perform(context), overrides],
    )]


def generate_launch_description() -> LaunchDescription:
    default_config = PathJoinSubstitution(
        [FindPackageShare(PACKAGE), "config", [LaunchConfiguration("robot"), ".yaml"]])
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="arm7", choices=list(ROBOTS),
                              description="shipped robot config (config/<robot>.yaml)"),
        DeclareLaunchArgument("config", default_value=default_config,
                              description="parameters file (overrides robot)"),
        DeclareLaunchArgument("pacing", default_value="",
                              description="realtime | fast | lockstep (default: the config's)"),
        DeclareLaunchArgument("integrator", default_value="",
                              description="integrator name (default: the config's)"),
        DeclareLaunchArgument("namespace", default_value="", description="node namespace"),
        OpaqueFunction(function=_node),
    ])
