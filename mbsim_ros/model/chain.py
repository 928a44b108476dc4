"""An N-link serial chain as URDF text (tests, benchmarks and the papers' chain examples)."""
from __future__ import annotations


def chain_urdf(n: int, *, link_length: float = 0.1, link_mass: float = 0.1,
               radius: float = 0.01, axes: str = "alternate", name: str | None = None) -> str:
    """URDF of ``n`` uniform solid-cylinder links hanging along -z from a fixed base.

    ``axes="y"`` makes a planar chain (every joint about y); ``"alternate"`` (default)
    alternates y and x so the chain moves in 3-D. Joints are revolute with +-pi limits,
    named ``joint1..joint<n>``; links ``link1..link<n>``.
    """
    if n < 1:
        raise ValueError(f"chain_urdf: n must be >= 1, got {n}")
    if axes not in ("y", "alternate"):
        raise ValueError(f"chain_urdf: axes must be 'y' or 'alternate', got {axes!r}")
    L, m, r = link_length, link_mass, radius
    i_xx = m * (3 * r * r + L * L) / 12.0
    i_zz = m * r * r / 2.0
    parts = [f'<?xml version="1.0"?>\n<robot name="{name or f"chain{n}"}">',
             '  <link name="base"/>']
    for k in range(1, n + 1):
        parent = "base" if k == 1 else f"link{k - 1}"
        z = 0.0 if k == 1 else -L
        axis = "0 1 0" if axes == "y" or k % 2 == 1 else "1 0 0"
        parts.append(
            f'  <joint name="joint{k}" type="revolute">\n'
            f'    <parent link="{parent}"/><child link="link{k}"/>\n'
            f'    <origin xyz="0 0 {z}" rpy="0 0 0"/><axis xyz="{axis}"/>\n'
            f'    <limit lower="-3.14159265" upper="3.14159265" effort="100" velocity="100"/>\n'
            f'  </joint>\n'
            f'  <link name="link{k}">\n'
            f'    <inertial><origin xyz="0 0 {-L / 2}"/><mass value="{m}"/>\n'
            f'      <inertia ixx="{i_xx}" ixy="0" ixz="0" iyy="{i_xx}" iyz="0" izz="{i_zz}"/>'
            f'</inertial>\n'
            f'    <collision><origin xyz="0 0 {-L / 2}"/>'
            f'<geometry><cylinder radius="{r}" length="{L}"/></geometry></collision>\n'
            f'  </link>')
    parts.append("</robot>\n")
    return "\n".join(parts)
