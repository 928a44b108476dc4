"""`ros2 launch mbsim_ros double_pendulum.launch.py [pacing:=...]`: sim.launch.py with
config/double_pendulum.yaml."""
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

ROBOT = "double_pendulum"


def generate_launch_description() -> LaunchDescription:
    sim = PathJoinSubstitution([FindPackageShare("mbsim_ros"), "launch", "sim.launch.py"])
    return LaunchDescription([IncludeLaunchDescription(
        PythonLaunchDescriptionSource(sim), launch_arguments={"robot": ROBOT}.items())])
