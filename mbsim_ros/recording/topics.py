"""Topic names as the node resolves them, for a recording to use the same ones."""
from __future__ import annotations

NODE = "/mbsim"  # the node's fully qualified name without a namespace


def topic_segment(name: str) -> str:
    """A link name as a ROS topic name segment (letters, digits, _ and /)."""
    cleaned = "".join(ch if ch.isalnum() or ch in "_/" else "_" for ch in name).strip("/")
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"


def resolve(topic: str, node: str = NODE) -> str:
    """The absolute name of ``topic`` published by the node ``node`` (fully qualified, e.g.
    ``/left/mbsim``): ``~/x`` is the node's private ``/left/mbsim/x``, ``x`` its namespace's
    ``/left/x``, ``/x`` stays."""
    if topic.startswith("/"):
        return topic
    if topic.startswith("~/"):
        return f"{node.rstrip('/')}/{topic[2:]}"
    namespace = node.rsplit("/", 1)[0]
    return f"{namespace}/{topic}"
