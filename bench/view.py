"""The live view's cost to the step loop: Solo12 standing on the floor (compliant, 1 ms),
N steps without and with a Viewer updating at 30 Hz (no browser connected: the server still
computes and serializes every frame). Prints us/step both ways and the frames sent."""
import time

import numpy as np

from mbsim_ros.contact.standing import standing_scene
from mbsim_ros.model.resources import example_robot_urdf
from mbsim_ros.sim import Simulator
from mbsim_ros.view.live import Viewer

STEPS = 5000


def run(sim, steps: int) -> np.ndarray:
    costs = np.empty(steps)
    for k in range(steps):
        start = time.perf_counter()
        sim.step()
        costs[k] = time.perf_counter() - start
    return costs * 1e6


def main() -> None:
    scene = standing_scene(example_robot_urdf("solo12"))
    sim = Simulator.from_scene(scene, dt=1e-3, integrator="compliant")
    run(sim, 200)  # compiled and warm
    without = run(sim, STEPS)
    with Viewer(sim, port=0) as viewer:
        start = time.perf_counter()
        with_view = run(sim, STEPS)
        elapsed = time.perf_counter() - start
        frames = viewer.frames
    for label, costs in (("without the view", without), ("with the view", with_view)):
        print(f"{label:18s} median {np.median(costs):6.1f} us, mean {costs.mean():6.1f} us, "
              f"p99 {np.percentile(costs, 99):7.1f} us per step")
    print(f"frames sent: {frames} in {elapsed:.2f} s ({frames / elapsed:.1f} Hz)")


if __name__ == "__main__":
    main()
