"""`ros2 launch mbsim_ros arm7_ros2_control.launch.py`: the arm as the hardware side of a
ros2_control stack driven by topic_based_ros2_control (config/arm7_ros2_control.yaml: position
servos on every joint). Commands arrive on /robot_joint_command, states leave on
/robot_joint_states (topic_based_ros2_control's defaults; newer releases use
/robot_joint_commands: pass joint_commands_topic:=...), and /joint_states is left to the
JointStateBroadcaster."""
from launch import LaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch_ros.substitutions import FindPackageShare

ROBOT = "arm7_ros2_control"
COMMANDS_TOPIC = "/robot_joint_command"
STATES_TOPIC = "/robot_joint_states"


def generate_launch_description() -> LaunchDescription:
    sim = PathJoinSubstitution([FindPackageShare("mbsim_ros"), "launch", "sim.launch.py"])
    return LaunchDescription([
        DeclareLaunchArgument("joint_commands_topic", default_value=COMMANDS_TOPIC),
        DeclareLaunchArgument("joint_states_topic", default_value=STATES_TOPIC),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(sim), launch_arguments={
            "robot": ROBOT,
            "joint_commands_topic": LaunchConfiguration("joint_commands_topic"),
            "joint_states_topic": LaunchConfiguration("joint_states_topic")}.items()),
    ])
