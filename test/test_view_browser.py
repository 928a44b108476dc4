"""The view in a real browser (headless Chromium, WebGL in software): `mbsim-ros view --urdf`
on example-robot-data's Panda draws a scene (a screenshot that is not uniform, the link names
in the page), and `--record` plays a recording (two screenshots at different times differ).
MBSIM_VIEW_SCREENSHOTS=docs/figures keeps the screenshots (docs/VIEW.md shows them)."""
import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from browser import Browser, chromium_or_skip, free_port, wait_for
from mbsim_ros.model.resources import example_robot_urdf

ROOT = Path(__file__).resolve().parents[1]
STOP_LIVENESS = 60  # s: the view's exit on Ctrl-C (0.4 s here), on a loaded machine
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)


def keep(png: bytes, name: str) -> None:
    folder = os.environ.get("MBSIM_VIEW_SCREENSHOTS")
    if folder:
        (ROOT / folder).mkdir(parents=True, exist_ok=True)
        (ROOT / folder / name).write_bytes(png)


@pytest.fixture
def view():
    """A function starting `mbsim-ros view ARGS` on a free port: (process, url)."""
    chromium_or_skip()
    started = []

    def start(*args):
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "mbsim_ros.cli", "view", *args,
                                    "--port", str(port)], env=ENV, cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started.append(process)
        line = wait_for(lambda: process.stdout.readline() or process.poll() is not None, 120,
                        "the view's address")
        while "http://" not in str(line) and process.poll() is None:
            line = process.stdout.readline()
        assert process.poll() is None, f"mbsim-ros view exited {process.returncode}"
        # keep reading what it prints: a full pipe would block the view in a write, deaf to
        # Ctrl-C (its server logs a traceback for every connection that closes unopened)
        threading.Thread(target=process.stdout.read, daemon=True).start()
        return f"http://127.0.0.1:{port}"

    yield start
    for process in started:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=STOP_LIVENESS)


def open_page(url: str, text: str) -> Browser:
    browser = Browser(url)
    try:
        wait_for(lambda: text in (browser.evaluate("document.body.innerText") or ""), 45,
                 f"'{text}' in the page")
        browser.evaluate("document.querySelectorAll('button[aria-label=\"Close\"], "
                         ".mantine-Notification-closeButton').forEach(b => b.click())")
    except BaseException:
        browser.close()
        raise
    return browser


def test_the_view_draws_a_robot(view):
    url = view("--urdf", str(example_robot_urdf("panda")))
    browser = open_page(url, "panda_joint7")
    try:
        text = browser.evaluate("document.body.innerText")
        assert all(f"panda_link{k}" in text for k in range(8)), text
        image = wait_for(lambda: _drawn(browser.screenshot()), 30, "a drawn robot")
    finally:
        browser.close()
    keep(image, "view_panda.png")


def _drawn(png: bytes) -> bytes | None:
    """The screenshot when it is not uniform (a grid and a robot drawn), else None."""
    image = pixels(png)
    centre = image[100:-100, 300:-350]
    return png if centre.std() > 5 and len(np.unique(centre.reshape(-1, 3), axis=0)) > 50 \
        else None


def _moved(first: bytes, png: bytes) -> bytes | None:
    """The screenshot when more than a few hundred pixels differ from the first."""
    difference = np.abs(pixels(first) - pixels(png)).sum(axis=2)
    return png if np.count_nonzero(difference > 30) > 500 else None


def test_a_recording_plays(view, tmp_path):
    urdf = str(example_robot_urdf("panda"))
    record = tmp_path / "fall.mcap"
    subprocess.run([sys.executable, "-m", "mbsim_ros.cli", "simulate", "--urdf", urdf,
                    "--steps", "2000", "--out", str(tmp_path / "fall.npz"), "--record",
                    str(record), "--record-rate", "100"], env=ENV, cwd=ROOT, check=True,
                   capture_output=True)
    browser = open_page(view("--urdf", urdf, "--record", str(record)), "time (s)")
    try:
        first = wait_for(lambda: _drawn(browser.screenshot()), 30, "a drawn robot")
        second = wait_for(lambda: _moved(first, browser.screenshot()), 30, "the robot to move")
    finally:
        browser.close()
    keep(first, "view_recording_0.png")
    keep(second, "view_recording_1.png")


def test_a_heightfield_scene_is_drawn(view):
    """The slope example: Solo12 on a 15 degree heightfield ramp (the terrain as a mesh)."""
    url = view("--scene", "config/scenes/solo12_slope.yaml")
    browser = open_page(url, "FL_FOOT")
    try:
        image = wait_for(lambda: _drawn(browser.screenshot()), 30, "a drawn scene")
    finally:
        browser.close()
    keep(image, "view_slope.png")
