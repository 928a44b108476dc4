"""Simulated sensors read from a Simulator after each step: IMUs, six-axis force-torque
sensors, contact switches and joint encoders, with the usual noise models (docs/SENSORS.md)."""
from .config import (ContactSwitch, Encoders, ForceTorque, Imu, Sensor, parse_encoders,
                     parse_sensors)
from .suite import SensorSuite

__all__ = ["ContactSwitch", "Encoders", "ForceTorque", "Imu", "Sensor", "SensorSuite",
           "parse_encoders", "parse_sensors"]
