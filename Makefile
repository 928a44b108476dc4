# Two commands on a fresh machine: `make run` and `make test`. Both create .venv/ when it is
# missing and install the package editable with everything it and its tests need (setup.py).
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat setup.py | md5sum | cut -c1-12)

.PHONY: run test bench venv clean

venv: $(STAMP)

$(STAMP): setup.py
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[ros,test]'
	rm -f $(VENV)/.installed-*
	touch $@

# Until the node lands: an offline simulation of the default 7-DOF arm, with a summary.
run: $(STAMP)
	$(VENV)/bin/mbsim-ros simulate --urdf urdf/arm7.urdf --config config/arm7.yaml \
	    --integrator variational --dt 0.001 --steps 5000 --out runs/arm7.npz
	$(VENV)/bin/mbsim-ros plot runs/arm7.npz --out runs/arm7.png

test: $(STAMP)
	$(PY) -m pytest -q test

bench: $(STAMP)
	$(PY) bench/dynamics.py
	$(PY) bench/variational.py

clean:
	rm -rf $(VENV) runs
