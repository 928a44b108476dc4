"""The ROS 2 layer: the only part of mbsim_ros that imports rclpy or ROS messages (``node``,
``messages``, ``odometry``, ``state_interfaces``, ``simulation_services``, ``shutdown``).
``pacing``, ``commands`` and ``set_state`` are plain Python so the library and its tests can
use them without ROS."""
