"""How we compile. ``kernel``: entry points called from Python. ``step``: small passes
(a few dozen lines, per body) that numba inlines into the caller at IR level, so views and
scalars stay in registers with no call or reference-count traffic per body. ``routine``: larger
compiled functions called from kernels without IR inlining (inlining them multiplies the
caller's size and numba's compile time grows much faster than linearly with it).
``parallel_kernel``: entry points whose outer loop is a ``prange`` (batches of independent
problems, e.g. the particles of mbsim_ros.estimation).
``error_model="numpy"``: a division by zero gives inf/nan (caught at the door or by the caller)
instead of a Python exception check on every division in the hot loop.

The compiled-code cache lives in ``$XDG_CACHE_HOME/mbsim_ros/numba/<digest of our sources>``;
``MBSIM_ROS_CACHE_DIR`` replaces ``$XDG_CACHE_HOME/mbsim_ros/numba`` (an empty directory: a cold
start, bench/compile.py), ``NUMBA_CACHE_DIR`` overrides it all (numba's own filing). numba
invalidates a cached function only when its own file changes, not when a function it calls or
inlines from another file does; keying the directory on the sources that hold compiled code (those
that import numba or this module) makes any edit to them start a fresh, correct cache, while edits
to pure-Python layers (node, CLI) keep it. Inside that directory our functions are filed by their
path within the package (numba's default files them by the absolute path of their folder), so every
copy of the same sources shares one cache: a colcon install tree, a worktree, the source checkout.
"""
import hashlib
import logging
import os
from pathlib import Path

import numba
from numba import njit
from numba.core import event
from numba.core.caching import UserProvidedCacheLocator


# Sources whose text ends up in compiled code: kernels, the workspace declarations they inline,
# and the modules whose constants numba freezes into them (status codes, the Model's columns).
_COMPILED_MARKS = (b"_jit import", b"numba", b"layout import")
_FROZEN_CONSTANTS = ("codes.py", "model/model.py")


def _source_digest() -> str:
    root = Path(__file__).resolve().parent
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        if not (any(mark in source for mark in _COMPILED_MARKS)
                or path.relative_to(root).as_posix() in _FROZEN_CONSTANTS):
            continue
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(source)
    return digest.hexdigest()[:16]


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# numba's own locators, in numba's order, after ours (which takes only our files)
_NUMBA_LOCATORS = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator",
                   "IPythonCacheLocator", "ZipCacheLocator")


class PackageCacheLocator(UserProvidedCacheLocator):
    """Files a function of ours under ``CACHE_DIR/<its folder within mbsim_ros>``. Safe only
    because CACHE_DIR is keyed on the digest of all our compiled sources (above), and numba
    still checks each function's own source by its content hash."""

    def __init__(self, py_func, py_file) -> None:
        super().__init__(py_func, py_file)
        folder = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _PACKAGE_DIR)
        self._cache_path = os.path.join(numba.config.CACHE_DIR, "package", folder)

    @classmethod
    def from_function(cls, py_func, py_file):
        inside = os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep)
        return super().from_function(py_func, py_file) if inside else None


def cache_root() -> Path:
    """Where the digest-keyed cache directories live: ``$MBSIM_ROS_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/mbsim_ros/numba`` (``~/.cache/mbsim_ros/numba``)."""
    chosen = os.environ.get("MBSIM_ROS_CACHE_DIR")
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mbsim_ros" / "numba"


if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = str(cache_root() / _source_digest())
    if hasattr(numba.config, "CACHE_LOCATOR_CLASSES") \
            and not numba.config.CACHE_LOCATOR_CLASSES:  # older numba: by absolute path
        numba.config.CACHE_LOCATOR_CLASSES = ",".join(
            [f"{__name__}.{PackageCacheLocator.__name__}", *_NUMBA_LOCATORS])

kernel = njit(cache=True, error_model="numpy")
step = njit(cache=True, error_model="numpy", inline="always")
routine = njit(cache=True, error_model="numpy")
parallel_kernel = njit(cache=True, error_model="numpy", parallel=True)


# The compile notice: a cold cache costs tens of seconds of silence at the first step; say what
# is compiled, once, before the wait. A logger (``mbsim_ros.compile``), so that library users can
# silence it; WARNING, so that it shows without any logging set up.
log = logging.getLogger("mbsim_ros.compile")
_subject = ["mbsim_ros's"]  # what the next compilation is for (compiling_for)
_told = set()               # the subjects already announced in this process


def compiling_for(subject: str) -> None:
    """Name what the kernels compiled from now on are for ("the euler integrator's"), in the
    notice that the first compilation for it prints."""
    _subject[0] = subject


class _CompileNotice(event.Listener):
    """Listens to numba's compile events, which fire only when a function is not found in the
    cache: the first of ours for a subject logs the notice."""

    def on_start(self, ev) -> None:
        function = ev.data["dispatcher"].py_func
        if not function.__module__.startswith(__package__ + ".") or _subject[0] in _told:
            return
        _told.add(_subject[0])
        log.warning("mbsim_ros: compiling %s kernels (once; cached in %s)", _subject[0],
                    numba.config.CACHE_DIR)

    def on_end(self, ev) -> None:
        pass


event.register("numba:compile", _CompileNotice())
