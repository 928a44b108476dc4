"""Start the mbsim simulation node.

    ros2 launch mbsim_ros sim.launch.py [robot:=arm7] [config:=/path/params.yaml]
        [pacing:=realtime|fast|lockstep] [integrator:=variational|euler] [namespace:=...]

``robot`` picks ``config/<robot>.yaml`` from this package (arm7, arm7_ros2_control,
double_pendulum, panda, ur5); ``config`` replaces it with any parameters file. ``pacing`` and
``integrator``, when given, override the file. ``joint_commands_topic`` / ``joint_states_topic``,
when given, remap the node's ``~/joint_commands`` and ``joint_states`` there (the hardware side
of a ros2_control stack: arm7_ros2_control.launch.py). The node is ``mbsim``
(``/mbsim/effort_commands``, ``/joint_states``, ``/clock``); controllers that follow it set
``use_sim_time: true``.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

PACKAGE = "mbsim_ros"
EXECUTABLE = "mbsim_node"
ROBOTS = ("arm7", "arm7_ros2_control", "double_pendulum", "panda", "ur5")


def _node(context):
    overrides = {}
    for name in ("pacing", "integrator"):
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = value
    namespace = LaunchConfiguration("namespace").perform(context).strip("/")
    prefix = f"/{namespace}" if namespace else ""
    remappings = []
    for name, topic in ((f"{prefix}/mbsim/joint_commands", "joint_commands_topic"),
                        ("joint_states", "joint_states_topic")):
        target = LaunchConfiguration(topic).perform(context)
        if target:
            remappings.append((name, target))
    return [Node(
        package=PACKAGE, executable=EXECUTABLE, name="mbsim",
        namespace=LaunchConfiguration("namespace"), output="screen", emulate_tty=True,
        parameters=[LaunchConfiguration("config").perform(context), overrides],
        remappings=remappings,
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
        DeclareLaunchArgument("joint_commands_topic", default_value="",
                              description="remap ~/joint_commands here (default: no remap)"),
        DeclareLaunchArgument("joint_states_topic", default_value="",
                              description="remap joint_states here (default: no remap)"),
        OpaqueFunction(function=_node),
    ])
