"""Routines linked into their kernels (mbsim_ros._jit, "Routines: linked into their kernels"):
a routine compiled for a kernel is neither optimised nor emitted on its own, its cache entry is
its IR, read back for a kernel compiled in a later process, and a routine called from Python
still runs (emitted at that first call). Each case runs in a fresh process on a cache of its
own, as a first run does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

MODULE = '''
from mbsim_ros._jit import kernel, routine


@routine
def scaled_sum(x, s):
    total = 0.0
    for k in range(x.shape[0]):
        total += s * x[k]
    return total


@kernel
def twice(x):
    return scaled_sum(x, 2.0)


@kernel
def thrice(x):
    return scaled_sum(x, 3.0)
'''

RUN = '''
import json, sys
import numpy as np
from mbsim_ros._jit import ROUTINES_LINKED, CompilerActivity, _Linked, load_cached
import probe_routines as m

x = np.arange(1.0, 5.0)
kernel = getattr(m, sys.argv[1])
with CompilerActivity() as activity:
    value = kernel(x)
overloads = list(m.scaled_sum.overloads.values())  # none: the kernel came from the cache
linked = [isinstance(o.entry_point, _Linked) and o.library._linked_only for o in overloads]
try:
    load_cached((m.scaled_sum,))
    refused = ""
except TypeError as error:
    refused = str(error)
print(json.dumps({"linked_flag": ROUTINES_LINKED, "value": value, "linked": linked,
                  "compiled": activity.compiled, "routine hits": sum(
                      m.scaled_sum.stats.cache_hits.values()),
                  "from python": m.scaled_sum(x, 5.0), "refused": refused}))
'''


def run(tmp_path, kernel: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    done = subprocess.run([sys.executable, "-c", RUN, kernel], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture()
def module(tmp_path):
    (tmp_path / "probe_routines.py").write_text(textwrap.dedent(MODULE))
    return tmp_path


def test_a_routine_is_linked_cached_as_ir_and_runs_from_python(module):
    """First process: the kernel compiles with its routine, which stays linked only (no
    machine code of its own), and the routine called from Python gives the same sums;
    load_cached refuses it (what Python calls at a step is declared `kernel`). Second process,
    same cache: another kernel calling the routine compiles, the routine read from the cache
    (its IR: a cache hit, not a compile), and both still compute the right sums. Third: the
    first kernel from the cache, the routine not even read."""
    first = run(module, "twice")
    assert first["linked_flag"] is True
    assert first["value"] == 20.0 and first["from python"] == 50.0
    assert first["linked"] == [True]
    assert sorted(first["compiled"]) == ["scaled_sum", "twice"]
    assert "is a routine" in first["refused"]

    second = run(module, "thrice")
    assert second["value"] == 30.0 and second["from python"] == 50.0
    assert second["compiled"] == ["thrice"] and second["routine hits"] == 1
    assert second["linked"] == [True]

    again = run(module, "twice")  # the kernel from the cache stands alone: the routine unread
    assert again["value"] == 20.0 and again["compiled"] == [] and again["linked"] == []
    assert again["from python"] == 50.0
