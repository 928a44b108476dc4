"""What rosbag2's MCAP storage plugin (rosbag2_storage_mcap) reads besides the MCAP profile
``ros2``: each channel's ``offered_qos_profiles`` (a YAML list of QoS profiles) and a metadata
record named ``rosbag2`` whose ``serialized_metadata`` is the bag's metadata as YAML.

The metadata is written as version 8, the last version whose QoS enums are integers (rmw's
values), so that every rosbag2 reads the QoS of the channels the same way: Humble and Iron read
integers whatever the record says; Jazzy and later read the version from the record (and take
8 when there is none), then integers for version 8. ``ros2 bag info`` then takes the counts,
start and duration from the file's statistics.
"""
from __future__ import annotations

from dataclasses import dataclass

import yaml

METADATA_VERSION = 8
# rmw's enum values (rmw/types.h)
KEEP_LAST, RELIABLE, VOLATILE, TRANSIENT_LOCAL, AUTOMATIC = 1, 1, 2, 1, 1
INFINITE = {"sec": 9223372036, "nsec": 854775807}  # RMW_DURATION_INFINITE


class _Dumper(yaml.SafeDumper):
    """Plain YAML: a mapping used twice is written twice, not as an anchor and an alias."""

    def ignore_aliases(self, data) -> bool:
        return True


def _dump(data) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


@dataclass(frozen=True)
class Qos:
    """The QoS a topic's publisher offers (the node's: reliable, depth 10, volatile)."""

    depth: int = 10
    durability: int = VOLATILE

    def offered(self) -> str:
        """The channel's ``offered_qos_profiles`` value."""
        return _dump([{
            "history": KEEP_LAST, "depth": self.depth, "reliability": RELIABLE,
            "durability": self.durability, "deadline": INFINITE, "lifespan": INFINITE,
            "liveliness": AUTOMATIC, "liveliness_lease_duration": INFINITE,
            "avoid_ros_namespace_conventions": False}])


@dataclass
class TopicCount:
    """A recorded topic with its type (``pkg/msg/Type``), QoS and message count."""

    name: str
    kind: str
    qos: Qos
    count: int = 0


def serialized_metadata(file_name: str, topics: list[TopicCount], start_ns: int, end_ns: int,
                        custom_data: dict[str, str]) -> str:
    """The ``rosbag2`` metadata record's ``serialized_metadata``: the bag's metadata (one file,
    uncompressed messages, chunks compressed by MCAP itself)."""
    duration = {"nanoseconds": max(end_ns - start_ns, 0)}
    start = {"nanoseconds_since_epoch": start_ns}
    total = sum(topic.count for topic in topics)
    return _dump({
        "version": METADATA_VERSION,
        "storage_identifier": "mcap",
        "duration": duration,
        "starting_time": start,
        "message_count": total,
        "topics_with_message_count": [
            {"topic_metadata": {"name": topic.name, "type": topic.kind,
                                "serialization_format": "cdr",
                                "offered_qos_profiles": topic.qos.offered(),
                                "type_description_hash": ""},
             "message_count": topic.count} for topic in topics],
        "compression_format": "",
        "compression_mode": "",
        "relative_file_paths": [file_name],
        "files": [{"path": file_name, "starting_time": start, "duration": duration,
                   "message_count": total}],
        "custom_data": custom_data,
        "ros_distro": "",
    })
