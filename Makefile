# Two commands on a fresh machine: `make run` and `make test`. Both create .venv/ when it is
# missing and install the package editable with everything it and its tests need (setup.py).
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat setup.py | md5sum | cut -c1-12)
BENCH_STAMP := $(VENV)/.bench-installed-$(shell cat setup.py | md5sum | cut -c1-12)
# The compiled-code cache warmed for these sources (mbsim_ros/_jit.py keys the cache on them)
WARM_STAMP := $(VENV)/.warm-$(shell find mbsim_ros -name '*.py' | sort | xargs cat | md5sum | cut -c1-12)
# What the shipped configs run: the arm's node (variational; its servos and sensors), the scenes
WARM_CONFIGS := config/arm7.yaml config/sensors/arm7.yaml config/scenes/ball_drop.yaml

.PHONY: run simulate test bench bench-node venv warm wheel browser clean

venv: $(STAMP)

# numba compiles our kernels at their first call (a minute or two on an empty cache): do it once
# here, saying what, so that `make run` starts at once and the tests find them cached.
warm: $(WARM_STAMP)

$(WARM_STAMP): $(STAMP)
	$(VENV)/bin/mbsim-ros warm $(WARM_CONFIGS)
	rm -f $(VENV)/.warm-*
	touch $@

# A wheel that carries the shipped configs' compiled code (numba's cache for the generic CPU, in
# mbsim_ros/_compiled): installed from it, the node's first run loads its kernels instead of
# compiling them (docs/SPEED.md, "Compiled code shipped with the package"). dist/*.whl, for this
# Python, platform and numba version (elsewhere it compiles at the first run, as from source).
wheel: $(STAMP)
	rm -rf mbsim_ros/_compiled dist
	$(VENV)/bin/mbsim-ros warm --ship mbsim_ros/_compiled $(WARM_CONFIGS)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist .

$(STAMP): setup.py
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[ros,test]'
	rm -f $(VENV)/.installed-*
	touch $@

# The simulation node on the default 7-DOF arm, realtime pacing at 1 kHz, a status line each
# second (rate, real-time factor, jitter); Ctrl-C stops it. ROS_ARGS adds node options, e.g.
# make run ROS_ARGS="-p pacing:=fast".
run: $(WARM_STAMP)
	$(VENV)/bin/mbsim-ros run --config config/arm7.yaml --ros-args -p print_status:=true $(ROS_ARGS)

# An offline run of the same arm, written to runs/arm7.npz and plotted to runs/arm7.png.
simulate: $(WARM_STAMP)
	$(VENV)/bin/mbsim-ros simulate --config config/arm7.yaml \
	    --integrator variational --dt 0.001 --steps 5000 --out runs/arm7.npz
	$(VENV)/bin/mbsim-ros plot runs/arm7.npz --out runs/arm7.png

# The linter first (setup.cfg [flake8]: pyflakes and pycodestyle, 100 columns), then the suite.
LINTED := mbsim_ros test bench examples launch setup.py

# Debian's chromium for the browser tests (test/test_view_browser.py); where apt-get is missing
# or fails, those tests skip and say why.
browser:
	command -v chromium >/dev/null || { command -v apt-get >/dev/null && \
	    apt-get update -qq && apt-get install -y -qq chromium; } || \
	    echo "make browser: no chromium installed: the browser tests will skip"

test: $(WARM_STAMP) browser
	$(PY) -m flake8 $(LINTED)
	$(PY) -m pytest -q test

# The peers (MuJoCo, PyBullet, DART) for bench/peers: only `make bench` installs them.
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[ros,test,bench]'
	rm -f $(VENV)/.bench-installed-*
	touch $@

bench: $(BENCH_STAMP)
	$(PY) bench/dynamics.py
	$(PY) bench/variational.py
	$(PY) bench/node.py --quick
	$(PY) bench/compliant.py --quick
	$(PY) bench/elastic_foundation.py --quick
	$(PY) bench/collision.py
	$(PY) bench/peers --report docs/BENCHMARKS.md
	$(PY) bench/zoo.py --report docs/ROBOTS.md

# The node's timing figures as the README reports them (60 s per measurement, ~4 minutes).
bench-node: $(STAMP)
	$(PY) bench/node.py

clean:
	rm -rf $(VENV) runs dist mbsim_ros/_compiled
