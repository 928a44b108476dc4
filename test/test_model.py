"""URDF -> Model: conventions equal to pinocchio's, forests, and clear errors for bad input."""
import numpy as np
import pinocchio as pin
import pytest

from mbsim_ros.model import (FREE_FLYER, REVOLUTE, Model, ModelError, chain_urdf,
                             example_robot_urdf, load_urdf, merge, shipped_urdf)


def test_layout_and_names_match_pinocchio(robot):
    label, model, pm = robot
    assert model.joint_names == list(pm.names)[1:]
    continuous = sum(k == "continuous" for k in model.joint_kinds)
    assert model.nv == pm.nv
    assert model.nq == pm.nq - continuous  # one angle where pinocchio stores (cos, sin)
    assert list(model.idx_v) == list(pm.idx_vs)[1:]
    assert list(model.parent + 1) == list(pm.parents)[1:]
    assert model.total_mass == pytest.approx(sum(I.mass for I in pm.inertias), rel=1e-12)


def test_continuous_joints_take_one_angle():
    model = load_urdf(example_robot_urdf("pr2"))
    continuous = [i for i, k in enumerate(model.joint_kinds) if k == "continuous"]
    assert continuous, "PR2 has continuous wheel joints"
    for i in continuous:
        iq = model.idx_q[i]
        assert model.lower_position_limit[iq] == -np.inf
        assert model.upper_position_limit[iq] == np.inf


def test_free_flyer_layout():
    model = load_urdf(shipped_urdf("arm7"), floating_base=True)
    assert model.joint_names[0] == "root_joint"
    assert model.joint_kinds[0] == "free_flyer"
    assert (model.nq, model.nv) == (14, 13)
    q = model.neutral()
    np.testing.assert_array_equal(q[:7], [0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(q[7:], np.zeros(7))


def test_limits_damping_friction_from_urdf():
    model = load_urdf(shipped_urdf("arm7"))
    pm = pin.buildModelFromUrdf(str(shipped_urdf("arm7")))
    np.testing.assert_allclose(model.lower_position_limit, pm.lowerPositionLimit)
    np.testing.assert_allclose(model.upper_position_limit, pm.upperPositionLimit)
    np.testing.assert_allclose(model.effort_limit, [176, 176, 110, 110, 110, 40, 40])
    np.testing.assert_allclose(model.velocity_limit, pm.velocityLimit)
    np.testing.assert_allclose(model.damping, 0.1)
    np.testing.assert_allclose(model.friction, 0.0)
    assert model.body_names[-1] == "link7"  # tool0 (fixed joint) merged into link7's body


def test_fixed_joint_mass_is_merged_into_the_parent_body():
    model = load_urdf(shipped_urdf("arm7"))
    pm = pin.buildModelFromUrdf(str(shipped_urdf("arm7")))
    assert model.joint_real[-1, 15] == pytest.approx(pm.inertias[-1].mass)
    assert model.total_mass == pytest.approx(22.8)


def test_xml_string_and_path_give_the_same_model():
    path = shipped_urdf("double_pendulum")
    a, b = load_urdf(path), load_urdf(path.read_text())
    np.testing.assert_array_equal(a.joint_real, b.joint_real)
    np.testing.assert_array_equal(a.joint_int, b.joint_int)


def test_gravity_is_settable_and_validated():
    model = load_urdf(shipped_urdf("pendulum"))
    np.testing.assert_array_equal(model.gravity, [0, 0, -9.81])
    model.gravity = [0.0, 0.0, -1.62]
    np.testing.assert_array_equal(model.gravity, [0, 0, -1.62])
    with pytest.raises(ValueError, match="gravity"):
        model.gravity = [0.0, np.nan, 0.0]
    with pytest.raises(ValueError, match="gravity"):
        model.gravity = [0.0, 1.0]


def test_merge_makes_a_forest():
    arm = load_urdf(shipped_urdf("arm7"))
    pendulum = load_urdf(shipped_urdf("pendulum"), floating_base=True)
    forest = merge([arm, pendulum], prefixes=["a/", "p/"])
    assert forest.njoints == arm.njoints + pendulum.njoints
    assert (forest.nq, forest.nv) == (arm.nq + pendulum.nq, arm.nv + pendulum.nv)
    assert list(forest.parent).count(-1) == 2
    assert forest.joint_names[arm.njoints] == "p/root_joint"
    assert forest.joint_type[arm.njoints] == FREE_FLYER
    with pytest.raises(ModelError, match="prefixes"):
        merge([arm, arm])


def test_chain_generator():
    model = load_urdf(chain_urdf(12, link_mass=0.5))
    assert (model.nq, model.nv, model.njoints) == (12, 12, 12)
    assert model.total_mass == pytest.approx(6.0)
    assert all(t == REVOLUTE for t in model.joint_type)
    with pytest.raises(ValueError):
        chain_urdf(0)


# --- bad input: every error names the element and the reason --------------------------------

GOOD_JOINT = """<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
  <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>"""
GOOD_LINK = """<link name="l1"><inertial><mass value="1"/>
  <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>"""


def robot_xml(body: str) -> str:
    return f'<robot name="r"><link name="base"/>{body}</robot>'


@pytest.mark.parametrize("xml, pattern", [
    ("<robot name='r'><link name='base'>", "not well-formed XML"),
    ("<model name='r'/>", "expected <robot>"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('type="revolute"', 'type="planar"')),
     "joint 'j1'.*'planar' is not supported"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('type="revolute"', 'type="hinge"')),
     "joint 'j1'.*unknown joint type 'hinge'"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('link="l1"', 'link="nowhere"')),
     "joint 'j1'.*child link 'nowhere' is not defined"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('<parent link="base"/>', '')),
     "joint 'j1'.*missing <parent"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace(
        '<limit lower="-1" upper="1" effort="1" velocity="1"/>', '')),
     "joint 'j1'.*needs a <limit>"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('lower="-1" upper="1"', 'lower="1" upper="-1"')),
     "joint 'j1'.*exceeds upper"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('xyz="0 0 1"', 'xyz="0 0 0"')),
     "joint 'j1'.*axis is zero"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('xyz="0 0 1"', 'xyz="0 a 1"')),
     "joint 'j1'.*not numbers"),
    (robot_xml(GOOD_LINK.replace('value="1"', 'value="-2"') + GOOD_JOINT),
     "link 'l1'.*mass -2.0"),
    (robot_xml(GOOD_LINK.replace('ixx="0.1"', 'ixx="-0.5"') + GOOD_JOINT),
     r"link 'l1': principal moments \(-0.5, 0.1, 0.1\).*balance_inertia=True"),
    (robot_xml(GOOD_LINK.replace('ixy="0"', 'ixy="0.5"') + GOOD_JOINT),
     r"link 'l1': principal moments \(-0.4, 0.1, 0.6\).*balance_inertia=True"),
    (robot_xml(GOOD_LINK.replace('value="1"', 'value="one"') + GOOD_JOINT),
     "link 'l1'.*'one' is not a number"),
    (robot_xml(GOOD_LINK + GOOD_LINK + GOOD_JOINT), "link 'l1' is defined twice"),
    (robot_xml(GOOD_LINK + GOOD_JOINT + GOOD_JOINT.replace('name="j1"', 'name="j2"')),
     "joint 'j2'.*already has a parent"),
    (robot_xml(GOOD_LINK + '<link name="l2"/>' + GOOD_JOINT), "exactly one root link"),
    (robot_xml(GOOD_LINK + GOOD_JOINT.replace('type="revolute"', 'type="floating"')
               .replace('<parent link="base"/>', '<parent link="l1"/>')
               .replace('<child link="l1"/>', '<child link="base"/>')),
     "floating joint"),
])
def test_malformed_urdf_names_the_element(xml, pattern):
    with pytest.raises(ModelError, match=pattern):
        load_urdf(xml)


def test_floating_joint_inside_the_tree_is_rejected():
    xml = robot_xml(GOOD_LINK + GOOD_JOINT + GOOD_LINK.replace('"l1"', '"l2"')
                    + GOOD_JOINT.replace('"j1"', '"j2"').replace('type="revolute"',
                                                               'type="floating"')
                    .replace('<parent link="base"/>', '<parent link="l1"/>')
                    .replace('<child link="l1"/>', '<child link="l2"/>'))
    with pytest.raises(ModelError, match="joint 'j2'.*floating joint"):
        load_urdf(xml)


def test_floating_root_joint_becomes_a_free_flyer():
    xml = ('<robot name="r"><link name="world"/>' + GOOD_LINK
           + GOOD_JOINT.replace('type="revolute"', 'type="floating"')
           .replace('<parent link="base"/>', '<parent link="world"/>') + "</robot>")
    model = load_urdf(xml)
    assert model.joint_kinds == ["free_flyer"]
    assert model.joint_names == ["j1"]
    assert load_urdf(xml, floating_base=True).njoints == 1  # not a second free-flyer


def test_missing_file():
    with pytest.raises(ModelError, match="not found: /no/such/robot.urdf"):
        load_urdf("/no/such/robot.urdf")


def test_inconsistent_inertia_only_warns():
    xml = robot_xml(GOOD_LINK.replace('izz="0.1"', 'izz="0.5"') + GOOD_JOINT)
    with pytest.warns(UserWarning, match="triangle inequality"):
        model = load_urdf(xml)
    assert model.nv == 1


def test_model_rejects_a_child_before_its_parent():
    spec = load_urdf(shipped_urdf("pendulum")).joint_specs()[0]
    from dataclasses import replace
    with pytest.raises(ModelError, match="parent must come before"):
        Model([replace(spec, parent=0)])
