"""The ROS 2 message definitions a recording uses, as text: nothing from ROS needs to be
installed to write or read one.

Each type's own ``.msg`` text is kept here (fields and constants as the ROS 2 packages define
them, without their comments); ``definition(name)`` concatenates it with its dependencies the
way rosbag2 stores a schema (``ros2msg`` encoding): the type's text, then for every type it
uses, depth first and once, a line of 80 ``=``, ``MSG: pkg/Type`` and that type's text.
Schema names are rosbag2's ``pkg/msg/Type``.
"""
from __future__ import annotations

SEPARATOR = "=" * 80

MESSAGES = {
    "builtin_interfaces/Time": "int32 sec\nuint32 nanosec\n",
    "std_msgs/Header": "builtin_interfaces/Time stamp\nstring frame_id\n",
    "std_msgs/Bool": "bool data\n",
    "std_msgs/MultiArrayDimension": "string label\nuint32 size\nuint32 stride\n",
    "std_msgs/MultiArrayLayout": "std_msgs/MultiArrayDimension[] dim\nuint32 data_offset\n",
    "std_msgs/Float64MultiArray": "std_msgs/MultiArrayLayout layout\nfloat64[] data\n",
    "rosgraph_msgs/Clock": "builtin_interfaces/Time clock\n",
    "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/Point": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/Quaternion": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
    "geometry_msgs/Pose": "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n",
    "geometry_msgs/PoseWithCovariance": "geometry_msgs/Pose pose\nfloat64[36] covariance\n",
    "geometry_msgs/Twist": "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular\n",
    "geometry_msgs/TwistWithCovariance": "geometry_msgs/Twist twist\nfloat64[36] covariance\n",
    "geometry_msgs/Transform": "geometry_msgs/Vector3 translation\n"
                               "geometry_msgs/Quaternion rotation\n",
    "geometry_msgs/TransformStamped": "std_msgs/Header header\nstring child_frame_id\n"
                                      "geometry_msgs/Transform transform\n",
    "geometry_msgs/Wrench": "geometry_msgs/Vector3 force\ngeometry_msgs/Vector3 torque\n",
    "geometry_msgs/WrenchStamped": "std_msgs/Header header\ngeometry_msgs/Wrench wrench\n",
    "tf2_msgs/TFMessage": "geometry_msgs/TransformStamped[] transforms\n",
    "nav_msgs/Odometry": "std_msgs/Header header\nstring child_frame_id\n"
                         "geometry_msgs/PoseWithCovariance pose\n"
                         "geometry_msgs/TwistWithCovariance twist\n",
    "sensor_msgs/JointState": "std_msgs/Header header\nstring[] name\nfloat64[] position\n"
                              "float64[] velocity\nfloat64[] effort\n",
    "sensor_msgs/Imu": "std_msgs/Header header\n"
                       "geometry_msgs/Quaternion orientation\n"
                       "float64[9] orientation_covariance\n"
                       "geometry_msgs/Vector3 angular_velocity\n"
                       "float64[9] angular_velocity_covariance\n"
                       "geometry_msgs/Vector3 linear_acceleration\n"
                       "float64[9] linear_acceleration_covariance\n",
}


def short_name(name: str) -> str:
    """``pkg/Type`` of ``pkg/msg/Type`` (or of ``pkg/Type``)."""
    package, *_, kind = name.split("/")
    return f"{package}/{kind}"


def schema_name(name: str) -> str:
    """rosbag2's ``pkg/msg/Type`` of a message type."""
    package, *_, kind = name.split("/")
    return f"{package}/msg/{kind}"


def _dependencies(name: str) -> list[str]:
    """The message types ``name``'s fields use, in field order."""
    found = []
    for line in MESSAGES[name].splitlines():
        kind = line.split()[0].split("[")[0]
        if "/" in kind and kind not in found:
            found.append(kind)
    return found


def definition(name: str) -> str:
    """The concatenated definition of message type ``name`` (``pkg/Type`` or ``pkg/msg/Type``):
    what a rosbag2 MCAP schema of that type holds."""
    root = short_name(name)
    if root not in MESSAGES:
        raise ValueError(f"no message definition for '{name}' (known: "
                         f"{', '.join(sorted(MESSAGES))})")
    order: list[str] = []

    def visit(kind: str) -> None:
        for used in _dependencies(kind):
            if used not in order:
                order.append(used)
                visit(used)

    visit(root)
    parts = [MESSAGES[root]] + [f"{SEPARATOR}\nMSG: {kind}\n{MESSAGES[kind]}" for kind in order]
    return "\n".join(parts)
