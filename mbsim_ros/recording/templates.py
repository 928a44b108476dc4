"""Messages encoded once, refilled per sample.

A recorded topic's messages keep their layout from one sample to the next (the same names,
frame ids and array lengths); only numbers change. So each topic's message is encoded to CDR
once, by mcap_ros2's encoder from the definition text (definitions.py), with marker values in
the fields that change: a distinct float64 marker per changing number and one marker stamp.
The markers' positions in the encoded bytes (float64 fields sit 8-aligned and stamps 4-aligned
after the 4-byte encapsulation header, so they are searched in aligned views) are where each
sample's numbers are written: ``values`` (a float64 array in marker order) and the stamp, then
``data(t_ns)`` returns the message's bytes. No encoder runs per sample.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mcap_ros2._dynamic import serialize_dynamic

from .definitions import definition, schema_name

HEADER_BYTES = 4                   # CDR encapsulation header before the data
SEC_MARK = 0x7A5EC0DE              # the marker stamp (int32 sec, uint32 nanosec < 1e9)
NANOSEC_MARK = 0x3779A5E5
NS_PER_S = 1_000_000_000

_encoders: dict[str, Callable] = {}


def encoder(kind: str) -> Callable:
    """mcap_ros2's CDR encoder (a dict or object -> bytes) of message type ``kind``, built once
    from its definition text."""
    name = schema_name(kind)
    if name not in _encoders:
        _encoders[name] = serialize_dynamic(name, definition(name))[name]
    return _encoders[name]


def float_marker(k: int) -> float:
    """The k-th float marker: 2^1001 (1 + k 2^-52), distinct for every k, far from any
    simulated number."""
    return float.fromhex(f"0x1.{k:013x}p+1001")


class Markers:
    """Hands out markers while a template message is built: ``number()`` for each field that
    changes (in the order ``values`` will hold them), ``stamp()`` for each stamp."""

    def __init__(self) -> None:
        self.count = 0

    def number(self) -> float:
        self.count += 1
        return float_marker(self.count - 1)

    def numbers(self, n: int) -> list[float]:
        return [self.number() for _ in range(n)]

    @staticmethod
    def stamp() -> dict:
        return {"sec": SEC_MARK, "nanosec": NANOSEC_MARK}


class Template:
    """The CDR bytes of one message of type ``kind`` (``pkg/Type``) built with ``markers``;
    ``values`` holds its changing numbers (marker order), ``data(t_ns)`` the bytes with them
    and every stamp set to t_ns."""

    def __init__(self, kind: str, message: dict, markers: Markers) -> None:
        self._buffer = bytearray(encoder(kind)(message))
        words = (len(self._buffer) - HEADER_BYTES) // 8
        self._doubles = np.frombuffer(self._buffer, dtype="<f8", count=words,
                                      offset=HEADER_BYTES)
        self._words = np.frombuffer(self._buffer, dtype="<u4",
                                    count=(len(self._buffer) - HEADER_BYTES) // 4,
                                    offset=HEADER_BYTES)
        self._slots = np.array([self._find_number(k) for k in range(markers.count)],
                               dtype=np.int64)
        self._seconds = np.flatnonzero(self._words == SEC_MARK)
        if np.any(self._words[np.minimum(self._seconds + 1, self._words.size - 1)]
                  != NANOSEC_MARK):
            raise RuntimeError(f"{kind}: a stamp marker was not found whole in its encoding")
        self._nanoseconds = self._seconds + 1
        self.values = np.zeros(markers.count)

    def _find_number(self, k: int) -> int:
        found = np.flatnonzero(self._doubles == float_marker(k))
        if found.size != 1:
            raise RuntimeError(f"marker {k} found {found.size} times in a template message")
        return int(found[0])

    def data(self, t_ns: int) -> bytes:
        """The message's CDR bytes with ``values`` and every stamp at t_ns."""
        self._doubles[self._slots] = self.values
        if self._seconds.size:
            sec, nanosec = divmod(t_ns, NS_PER_S)
            self._words[self._seconds] = sec
            self._words[self._nanoseconds] = nanosec
        return bytes(self._buffer)


def header(frame_id: str) -> dict:
    """A std_msgs/Header with the marker stamp."""
    return {"stamp": Markers.stamp(), "frame_id": frame_id}


def vector3(markers: Markers) -> dict:
    x, y, z = markers.numbers(3)
    return {"x": x, "y": y, "z": z}


def quaternion(markers: Markers) -> dict:
    x, y, z, w = markers.numbers(4)
    return {"x": x, "y": y, "z": z, "w": w}
