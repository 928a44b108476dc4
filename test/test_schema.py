"""One schema per input: every typo a new user made (a misspelt key, a string for a number)
refused with its path and the nearest valid key, every shipped file accepted, the JSON Schema
export accepting what the schemas accept, and docs/CONFIG.md equal to the schemas."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

from mbsim_ros.campaign.spec import CampaignSpec
from mbsim_ros.cli import reference_page
from mbsim_ros.config import ConfigError, ConfigSpec, config_from, read_config
from mbsim_ros.contact.scene import SceneError, load_scene, read_scene
from mbsim_ros.schema import SchemaError, load_yaml
from mbsim_ros.contact.heightfield import grid as grid_of
from mbsim_ros.schema.scene import SceneSpec

ROOT = Path(__file__).resolve().parents[1]
BALL = {"ground": {"friction": 0.6},
        "models": [{"sphere": {"radius": 0.05}, "position": [0.0, 0.0, 0.3], "name": "ball"}]}


def refused(load, data, error=SchemaError) -> str:
    with pytest.raises(error) as caught:
        load(data)
    assert isinstance(caught.value, ValueError)
    return str(caught.value)


@pytest.mark.parametrize("change, words", [
    ({"ground": {"frction": 0.6}}, ["ground.frction: unknown key", "did you mean friction?",
                                    "youngs_modulus"]),
    ({"models": [{"sphere": {"radius": 0.05}, "positon": [0, 0, 0.3]}]},
     ["models[0].positon: unknown key", "did you mean position?"]),
    ({"grund": {}}, ["grund: unknown key", "did you mean ground?"]),
    ({"models": [{"sphere": {"radus": 0.05}}]}, ["models[0].sphere.radus", "did you mean radius?",
                                                 "models[0].sphere.radius: missing"]),
    ({"ground": {"friction": -0.1}}, ["ground.friction: must be non-negative", "-0.1"]),
    ({"ground": {"friction": "high"}}, ["ground.friction: expected a number", "'high'"]),
    ({"ground": {"poisson_ratio": 0.5}}, ["ground.poisson_ratio: must be < 0.5"]),
    ({"models": [{"sphere": {"radius": 0.05}, "orientation": [0, 0, 0, 2]}]},
     ["models[0].orientation", "unit quaternion"]),
    ({"models": [{"sphere": {"radius": 0.05}, "position": [0, 0]}]},
     ["models[0].position: too few items"]),
    ({"models": [{"sphere": {"radius": 0.05}, "floating_base": True}]},
     ["models[0].floating_base: only applies to a 'urdf' model"]),
    ({"models": []}, ["models: needs at least 1 item"]),
    ({"boxes": [{"size": [1, 1, 0]}]}, ["boxes[0].size[2]: must be positive"]),
])
def test_a_scene_typo_is_refused_with_its_path_and_the_nearest_key(change, words):
    message = refused(load_scene, {**BALL, **change}, SceneError)
    for word in words:
        assert word in message, message


def test_every_problem_of_one_scene_is_in_one_message():
    message = refused(load_scene, {"ground": {"frction": 0.6}, "models": [
        {"sphere": {"radius": 0.05}, "positon": [0, 0, 0.3]}]}, SceneError)
    assert message.startswith("scene: 2 problems:")
    assert "ground.frction" in message and "models[0].positon" in message


def test_a_joint_name_the_schema_cannot_know_is_checked_with_the_same_wording():
    scene = {"models": [{"urdf": "arm7", "armature": {"jont1": 0.1}}]}
    message = refused(load_scene, scene, SceneError)
    assert "models[0].armature" in message and "'jont1'" in message
    assert "did you mean joint1?" in message


@pytest.mark.parametrize("data, words", [
    ({"intial_positions": {"joint1": 0.5}}, ["intial_positions: unknown key",
                                             "did you mean initial_positions?"]),
    ({"urdf": "arm7"}, ["urdf: unknown key", "did you mean urdf_path?"]),
    ({"integrator": "eulr"}, ["integrator: 'eulr' is not one of", "did you mean euler?"]),
    ({"variational": {"tolerence": 1e-9}}, ["variational.tolerence", "did you mean tolerance?"]),
    ({"variational.tolerance": 2.0}, ["variational.tolerance: must be < 1"]),
    ({"compliant": {"cone": "pyramd"}}, ["compliant.cone", "did you mean pyramid?"]),
    ({"actuators.delay_tick": 2}, ["actuators.delay_tick", "did you mean delay_ticks?"]),
    ({"gains": {"joint1": {"P": 10.0}}}, ["gains.joint1.P", "did you mean p?"]),
    ({"dt": 0.0}, ["dt: must be >= 1e-06"]),
    ({"pacing": "real-time"}, ["pacing", "did you mean realtime?"]),
    ({"sensors": [{"type": "imu", "link": "tool0", "gyro_noise": 1.0}]},
     ["sensors[0].gyro_noise", "gyroscope_noise_density"]),
    ({"sensors": [{"type": "lidar", "link": "tool0"}]}, ["sensors[0].type", "'lidar'"]),
    ({"encoders": {"nosie": 0.1}}, ["encoders.nosie", "did you mean noise?"]),
    ({"closures": [{"frame_a": "a", "frame_b": "b", "directions": ["x", "w"]}]},
     ["closures[0].directions[1]", "'w'"]),
    ({"/**": {"ros__parameters": {"frame_prefx": "left/"}}}, ["frame_prefx",
                                                             "did you mean frame_prefix?"]),
])
def test_a_config_typo_is_refused_with_its_path_and_the_nearest_key(data, words):
    message = refused(config_from, data, ConfigError)
    for word in words:
        assert word in message, message


def test_the_cli_exits_2_with_one_message_naming_the_key(tmp_path):
    config = tmp_path / "arm.yaml"
    config.write_text("urdf_path: arm7\nintial_positions: {joint1: 0.5}\n")
    result = subprocess.run([sys.executable, "-m", "mbsim_ros.cli", "simulate", "--config",
                             str(config), "--steps", "5", "--out", str(tmp_path / "r.npz")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "intial_positions" in lines[0] \
        and "did you mean initial_positions?" in lines[0], result.stderr
    assert not (tmp_path / "r.npz").exists()


def shipped(pattern: str) -> list[Path]:
    return sorted(ROOT.glob(pattern))


@pytest.mark.parametrize("path", shipped("config/*.yaml") + shipped("config/sensors/*.yaml")
                         + shipped("examples/*.yaml") + shipped("examples/*/*.yaml"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_is_valid(path):
    data = load_yaml(path.read_text())
    if "controller" in data and "duration" in data:  # a campaign spec (CampaignSpec's keys)
        CampaignSpec.model_validate(data)
    elif "models" in data:
        read_scene(path)
    else:
        read_config(path)


@pytest.mark.parametrize("path", shipped("config/scenes/*.yaml"),
                         ids=lambda p: p.name)
def test_every_shipped_scene_is_valid(path):
    spec, folder = read_scene(path)
    assert spec.models and folder == path.parent


@pytest.mark.parametrize("kind, schema, good, bad", [
    ("scene", SceneSpec, BALL, {**BALL, "ground": {"frction": 0.6}}),
    ("config", ConfigSpec, {"urdf_path": "arm7", "variational": {"order": 4}},
     {"urdf_path": "arm7", "intial_positions": {}}),
    ("campaign", CampaignSpec, None, {"urdf": "arm7", "duration": 1.0,
                                      "controller": {"type": "hold", "kp": 1.0}, "cheks": {}}),
])
def test_the_exported_json_schema_agrees_with_the_schema(kind, schema, good, bad):
    """`mbsim-ros schema KIND` prints a JSON Schema that an editor's validator (jsonschema
    here) applies with the same verdicts: shipped and good files pass, a typo fails."""
    result = subprocess.run([sys.executable, "-m", "mbsim_ros.cli", "schema", kind],
                            capture_output=True, text=True, timeout=300, check=True)
    exported = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(exported)
    validator = jsonschema.Draft202012Validator(exported)
    goods = [good] if good else [yaml.safe_load(p.read_text())
                                 for p in shipped("examples/campaigns/*.yaml")
                                 + shipped("examples/controllers/*.yaml")
                                 + shipped("examples/estimation/*.yaml")]
    for data in goods:
        assert not list(validator.iter_errors(data))
        schema.model_validate(data)
    assert list(validator.iter_errors(bad))


def test_config_md_is_generated_from_the_schemas():
    """docs/CONFIG.md cannot drift: regenerate it with `mbsim-ros schema markdown >
    docs/CONFIG.md`."""
    assert (ROOT / "docs" / "CONFIG.md").read_text() == reference_page()


def test_yaml_floats_are_read_as_yaml_1_2_reads_them():
    assert load_yaml("a: 2.0e11\nb: 1e-3\nc: '2e5'\nd: 3") == {"a": 2.0e11, "b": 1e-3,
                                                              "c": "2e5", "d": 3}


RAMP = {"heights": [[0.0, 0.1], [0.0, 0.1]], "size": [1.0, 1.0]}


@pytest.mark.parametrize("heightfield, ground, words", [
    ({**RAMP, "heights": [[0.0, 0.1], [0.0]]}, {}, ["heightfield.heights", "rectangular"]),
    ({**RAMP, "heights": [[0.0, 0.1]]}, {}, ["heightfield.heights", "at least 2 x 2", "1 x 2"]),
    ({**RAMP, "heights": [[0.0, 0.1], [0.0, math.inf]]}, {}, ["heightfield.heights[1][1]"]),
    ({**RAMP, "file": "ramp.npy"}, {}, ["heightfield", "either heights or file"]),
    ({"size": [1.0, 1.0]}, {}, ["heightfield", "either heights or file"]),
    ({"heights": RAMP["heights"]}, {}, ["heightfield.size: missing"]),
    (RAMP, {"height": 0.1}, ["replaces the ground plane", "not both"]),
])
def test_a_heightfield_is_refused_with_its_path(heightfield, ground, words):
    message = refused(load_scene, {**BALL, "ground": {"friction": 0.6, **ground},
                                   "heightfield": heightfield}, SceneError)
    for word in words:
        assert word in message, message


def test_heightfield_files_npy_and_png_give_the_grid(tmp_path):
    """A .npy file as stored, an 8- and a 16-bit PNG scaled by max_height (the image's top row
    the grid's last), relative to the scene's folder; a 1-D file names the file."""
    from PIL import Image

    grid = np.array([[0.0, 0.5, 1.0], [0.25, 0.75, 1.0]])
    np.save(tmp_path / "grid.npy", grid)
    Image.fromarray(np.round(grid[::-1] * 255).astype(np.uint8)).save(tmp_path / "grid8.png")
    Image.fromarray(np.round(grid[::-1] * 65535).astype(np.uint16)).save(tmp_path / "grid16.png")
    np.save(tmp_path / "line.npy", np.zeros(4))
    for name, tolerance in (("grid.npy", 0.0), ("grid8.png", 0.5 / 255),
                            ("grid16.png", 0.5 / 65535)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"ground: {{friction: 0.6}}\nheightfield: {{file: {name}, size: [2, 1], "
                        f"max_height: 2.0, position: [0, 0, 0.5]}}\n"
                        f"models: [{{sphere: {{radius: 0.05}}}}]\n")
        scene = load_scene(path)
        np.testing.assert_allclose(grid_of(scene.terrain)[2], 2.0 * grid * (name != "grid.npy")
                                   + grid * (name == "grid.npy") + 0.5, atol=2 * tolerance)
        assert not np.any(scene.ground)
    message = refused(load_scene, {**BALL, "heightfield": {"file": str(tmp_path / "line.npy"),
                                                           "size": [1, 1]}}, SceneError)
    assert "heightfield.file" in message and "line.npy" in message and "2-D" in message


def test_a_value_that_may_be_a_number_or_a_distribution_gets_one_line():
    """A union (a number or a distribution) fails all its branches at once: a value of
    neither kind is one line naming both; a mapping is judged as a distribution only."""
    from mbsim_ros.campaign.spec import load_spec

    spec = yaml.safe_load((ROOT / "examples" / "campaigns" / "solo12_push.yaml").read_text())
    spec["randomize"]["pushes"][0]["force"][1] = "fifty"
    spec["randomize"]["pushes"][0]["start"] = {"dist": "uniform", "low": 0.3, "hgh": 0.5}
    with pytest.raises(SchemaError) as refused:
        load_spec(spec)
    assert refused.value.problems == [
        "randomize.pushes[0].start.hgh: unknown key; valid keys here: dist, low, high, mean, "
        "std, values (did you mean high?)",
        "randomize.pushes[0].force[1]: expected a mapping or a number, got 'fifty'"]
