"""Recording simulations as ROS 2 bags: MCAP files of CDR messages in rosbag2's profile, on the
node's topics, that ``ros2 bag info``, Foxglove and PlotJuggler open (docs/RECORDING.md). No
ROS installation is needed to write or read them: the message definitions ship as text."""
from .frames import root_frame
from .recorder import Recorder, checked_path

__all__ = ["Recorder", "checked_path", "root_frame"]
