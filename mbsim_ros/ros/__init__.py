"""The ROS 2 layer: the only part of mbsim_ros that imports rclpy (``node``, ``messages``).
``pacing`` and ``commands`` are plain Python so the library and its tests can use them
without ROS."""
