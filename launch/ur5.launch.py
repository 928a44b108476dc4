"""`ros2 launch mbsim_ros ur5.launch.py [pacing:=...]`: sim.launch.py with config/ur5.yaml."""
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

ROBOT = "ur5"


def generate_launch_description() -> LaunchDescription:
    sim = PathJoinSubstitution([FindPackageShare("mbsim_ros"), "launch", "sim.launch.py"])
    return LaunchDescription([IncludeLaunchDescription(
        PythonLaunchDescriptionSource(sim), launch_arguments={"robot": ROBOT}.items())])
