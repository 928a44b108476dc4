"""Side by side with the peers: MuJoCo, PyBullet, DART and pinocchio against our integrators on
the same models (``python bench/peers --quick``; ``make bench`` writes docs/BENCHMARKS.md).
Modules: models (one description written as URDF / MJCF), engines (one stepping interface per
engine), contact and quadruped (the contact workloads), svi_proxy (DRNEA against a dense DEL
evaluation), dispatch (what a call costs from Python: aba against pinocchio, Simulator.step
over its kernel, rollouts against mujoco.rollout), report (the Markdown page), timing (the one
timing helper), __main__ (the run)."""
