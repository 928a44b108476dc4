"""How we compile. ``kernel``: entry points called from Python. ``step``: small passes
(a few dozen lines, per body) that numba inlines into the caller at IR level, so views and
scalars stay in registers with no call or reference-count traffic per body. ``routine``: larger
compiled functions called from kernels without IR inlining (inlining them multiplies the
caller's size and numba's compile time grows much faster than linearly with it); a routine's
code is optimised and emitted only inside the kernels that call it (below: what Python calls is
a kernel).
``parallel_kernel``: entry points whose outer loop is a ``prange`` (batches of independent
problems, e.g. the particles of mbsim_ros.estimation). ``allocating``: a kernel that allocates
arrays or returns one; kernels and routines are compiled without numba's reference-counted
memory, these with it (below, at the decorators).
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
import copy
import hashlib
import json
import logging
import os
import platform
import shutil
import sys
from pathlib import Path

import numba
from llvmlite import binding as llvm
from llvmlite import ir as llvm_ir
from numba import njit
from numba.core import cgutils, event
from numba.core import ir as numba_ir
from numba.core import inline_closurecall, lowering, targetconfig
from numba.core.base import BaseContext
from numba.core.caching import UserProvidedCacheLocator
from numba.core.codegen import CPUCodeLibrary, JITCPUCodegen
from numba.core.compiler_lock import global_compiler_lock
from numba.core.cpu import CPUContext
from numba.core.inline_closurecall import InlineWorker
from numba.core.registry import CPUDispatcher, cpu_target
from numba.core.typing import signature as call_signature
from numba.core.types import functions as numba_functions

# -- Portable machine code ----------------------------------------------------------------------
# numba compiles for this machine's CPU by default, and files each cached function under its name
# and features. We compile for LLVM's generic CPU of the architecture instead: the same speed
# within noise on our benches (docs/SPEED.md, "Compiled code shipped with the package") and a
# cache that any machine of the architecture can load, so a wheel can ship its compiled code.
# numba reads the setting when it first generates code, so it is set here, before any of ours is
# compiled or loaded; NUMBA_CPU_NAME set by the user wins, and so does a process that generated
# code before importing us (then the shipped code does not match and is not used).
PORTABLE_CPU = "generic"
if os.environ.get("NUMBA_CPU_NAME") is None \
        and "_toplevel_target_context" not in vars(cpu_target):
    numba.config.CPU_NAME = PORTABLE_CPU
    numba.config.CPU_FEATURES = ""

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


# -- Compiled code shipped with the package -----------------------------------------------------
# A wheel built by `make wheel` carries, in mbsim_ros/_compiled/<digest>, the cache that
# `mbsim-ros warm --ship` compiled for the generic CPU. A process whose own cache for these
# sources does not exist yet starts from a copy of it: its first run loads instead of compiling.
SHIPPED_MANIFEST = "manifest.json"


def shipped_root() -> Path:
    """Where the shipped compiled code lives: ``$MBSIM_ROS_SHIPPED_DIR``, else the package's own
    ``_compiled`` folder (empty in a source checkout)."""
    return Path(os.environ.get("MBSIM_ROS_SHIPPED_DIR") or Path(_PACKAGE_DIR) / "_compiled")


def code_identity() -> dict:
    """What a cached function's machine code depends on besides its source: numba's version
    (numba discards an index written by another), the interpreter (the cache's file names carry
    its tag), the architecture and the CPU compiled for."""
    return {"numba": numba.__version__, "python": sys.implementation.cache_tag,
            "machine": platform.machine(), "cpu": numba.config.CPU_NAME}


def seed_cache(cache_dir: Path, shipped: Path) -> bool:
    """Start ``cache_dir`` (absent) as a copy of the shipped compiled code ``shipped`` when
    that was compiled for what this process runs (code_identity); whether it did. The copy is
    made beside it and renamed into place, so processes starting together never see half of
    it (the first rename wins, the others drop their copy)."""
    manifest = shipped / SHIPPED_MANIFEST
    if cache_dir.exists() or not manifest.is_file() \
            or json.loads(manifest.read_text()) != code_identity():
        return False
    copy = cache_dir.with_name(f".{cache_dir.name}.{os.getpid()}.seeding")
    try:
        cache_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(shipped, copy)
        copy.rename(cache_dir)
    except OSError:  # another process seeded it (or its numba made the folder) first; or the
        shutil.rmtree(copy, ignore_errors=True)  # cache's place is not writable: compile
        return False
    return True


def ship_cache(cache_root_dir: Path, into: Path) -> Path:
    """Copy the cache compiled under ``cache_root_dir`` for these sources into ``into`` with
    its manifest, for a wheel to carry (`mbsim-ros warm --ship`); the folder written."""
    if numba.config.CPU_NAME != PORTABLE_CPU:
        raise RuntimeError(f"the cache is compiled for CPU {numba.config.CPU_NAME!r}, not "
                           f"{PORTABLE_CPU!r}: unset NUMBA_CPU_NAME to ship it")
    digest = _source_digest()
    shipped = into / digest
    shutil.rmtree(shipped, ignore_errors=True)
    shutil.copytree(cache_root_dir / digest, shipped)
    (shipped / SHIPPED_MANIFEST).write_text(json.dumps(code_identity()))
    return shipped


if not os.environ.get("NUMBA_CACHE_DIR"):
    _digest = _source_digest()
    numba.config.CACHE_DIR = str(cache_root() / _digest)
    if numba.config.CPU_NAME == PORTABLE_CPU:
        seed_cache(Path(numba.config.CACHE_DIR), shipped_root() / _digest)
    if hasattr(numba.config, "CACHE_LOCATOR_CLASSES") \
            and not numba.config.CACHE_LOCATOR_CLASSES:  # older numba: by absolute path
        numba.config.CACHE_LOCATOR_CLASSES = ",".join(
            [f"{__name__}.{PackageCacheLocator.__name__}", *_NUMBA_LOCATORS])

# ``_nrt=False``: compiled without numba's reference-counted memory (NRT). Our kernels and routines
# work on arrays their callers own and allocate none, and numba's lowering otherwise emits an
# increment and a decrement of every array's count (each of the 41 views of a namedtuple) at every
# assignment of a variable holding one: a tenth of the variational tree's cold compile
# (docs/SPEED.md, "Cold compile: specializations"). Without NRT numba refuses to compile what
# allocates (np.empty, np.linalg, array expressions) and boxes an array returned to Python as its
# parent object (a view would come back as its whole base): what allocates or returns an array is
# declared ``allocating`` (NRT on), and _CompileNotice refuses an array returned from code compiled
# without NRT. ``step`` functions are inlined and take their caller's setting.
# ``no_cfunc_wrapper``: numba also wraps every function for C callers (a first-class function
# value), which we never take: about 2 % of a cold compile.
KERNEL_OPTIONS = {"error_model": "numpy", "_nrt": False, "no_cfunc_wrapper": True}
kernel = njit(cache=True, **KERNEL_OPTIONS)
step = njit(cache=True, error_model="numpy", inline="always")
ALLOCATING_OPTIONS = {**KERNEL_OPTIONS, "_nrt": True}
allocating = njit(cache=True, **ALLOCATING_OPTIONS)
parallel_kernel = njit(cache=True, error_model="numpy", parallel=True)


# -- Routines: linked into their kernels, not emitted on their own ------------------------------
# numba gives every compiled function a code library of its own and finalises it (links every
# callee's library into it, runs LLVM's O3 module pipeline on the whole and emits machine code
# for it), so that it can be called from Python and cached on its own. A routine is called only
# from compiled code, which links the routine's IR into its own library and optimises and
# emits it again there: the routine's own optimisation and machine code were never used, and
# along a chain of thin routines the same tree was optimised and emitted once per level (the
# variational step's four levels: 5.5 s of a 37 s cold compile, docs/SPEED.md "Cold compile,
# round 8"). A routine's library is therefore finalised linked only: its callees' IR linked in,
# nothing optimised or emitted; the kernel that calls it optimises the whole tree once (the
# same O3 pipeline: the same machine code within LLVM's choices, bit for bit the same
# results, as floating point is never reassociated without fast-math) and emits it. Its cache
# entry holds that IR (kind LINKED), read back for a caller compiled in a later process without
# emitting anything. Called from Python (tests, benches: kernels are what Python calls), a
# routine is optimised and emitted at that first call (_Linked.executable), not cached.
# This changes numba's codegen (0.68) at four points, guarded so that a numba without them
# compiles routines as it compiles kernels (ROUTINES_LINKED False).
LINKED = "mbsim_ros-linked"  # the cache's kind for a routine's library (numba's: object, bitcode)


class _Linked:
    """The entry point of a routine compiled linked only: it keys the routine's implementation
    for its compiled callers (numba keys them on the entry point) and makes it executable
    when Python calls it."""

    def __init__(self) -> None:
        self.entry = None  # numba's entry point, once made executable

    def executable(self, dispatcher):
        """The routine's machine code (optimised and emitted now) as numba's entry point,
        installed in ``dispatcher`` for this signature."""
        with global_compiler_lock:
            if self.entry is None:
                cres = next(cres for cres in dispatcher.overloads.values()
                            if cres.entry_point is self)
                library, context = cres.library, cres.target_context
                library._linked_only = False
                library._optimize_final_module()
                library._final_module.verify()
                library._finalize_final_module()
                self.entry = context.get_executable(library, cres.fndesc, cres.environment)
                context.insert_user_function(self.entry, cres.fndesc, [library])
                CPUDispatcher.add_overload(dispatcher, cres._replace(entry_point=self.entry))
            return self.entry


class RoutineDispatcher(CPUDispatcher):
    """numba's dispatcher for a ``routine``: an overload compiled linked only is typed and
    linked by its callers but left out of the table Python calls dispatch on, so that a call
    from Python comes to _compile_for_args, which makes it executable."""

    def add_overload(self, cres) -> None:
        if isinstance(cres.entry_point, _Linked):
            self.overloads[tuple(cres.signature.args)] = cres
        else:
            super().add_overload(cres)

    def _compile_for_args(self, *args, **kws):
        entry = super()._compile_for_args(*args, **kws)
        return entry.executable(self) if isinstance(entry, _Linked) else entry


def _finalize_linked(library) -> None:
    """CPUCodeLibrary.finalize less its optimisation and emission: the callees' modules linked
    into the library's, the result checked."""
    library._raise_if_finalized()
    seen = set()
    for callee in library._linking_libraries:
        if callee not in seen:
            seen.add(callee)
            library._reload_init.update(callee._reload_init)
            library._final_module.link_in(callee._get_module_for_linking(), preserve=True)
    library._final_module.verify()
    library._finalize_dynamic_globals()
    library._linked_only = True
    library._finalized = True


_ROUTINES: set = set()  # (module, qualified name) of every routine


def _get_executable(original):
    def get_executable(context, library, fndesc, env):
        if (fndesc.modname, fndesc.qualname) in _ROUTINES and not library._finalized:
            _finalize_linked(library)
        if getattr(library, "_linked_only", False):
            return _Linked()
        return original(context, library, fndesc, env)
    return get_executable


def _serialize(original):
    def serialize_using_object_code(library):
        if getattr(library, "_linked_only", False):
            return library.name, LINKED, library._final_module.as_bitcode()
        return original(library)
    return serialize_using_object_code


def _unserialize(original):
    def unserialize(cls, codegen, state):
        name, kind, data = state
        if kind != LINKED:
            return original(cls, codegen, state)
        library = codegen.create_library(name)
        library._final_module = llvm.parse_bitcode(data)
        library._finalize_dynamic_globals()
        library._linked_only = True
        library._finalized = True
        return library
    return classmethod(unserialize)


def _set_env(original):
    def set_env(codegen, env_name, env):
        # a routine's environment, loaded with its linked-only library, has no address until
        # the library is emitted (numba writes it at every load)
        if codegen._engine.get_global_value_address(env_name):
            original(codegen, env_name, env)
    return set_env


# what the changes use of numba's codegen, besides what they replace
_NUMBA_PARTS = ("_finalize_dynamic_globals", "_get_module_for_linking", "_optimize_final_module",
                "_finalize_final_module", "_raise_if_finalized")


def _link_routines() -> bool:
    """Install the four changes to numba's codegen (above); whether they are in place."""
    unserialize = vars(CPUCodeLibrary).get("_unserialize")
    if not (numba.__version__.startswith("0.68.") and isinstance(unserialize, classmethod)
            and all(hasattr(CPUCodeLibrary, name) for name in _NUMBA_PARTS)):
        return False
    CPUContext.get_executable = _get_executable(CPUContext.get_executable)
    CPUCodeLibrary.serialize_using_object_code = _serialize(
        CPUCodeLibrary.serialize_using_object_code)
    CPUCodeLibrary._unserialize = _unserialize(unserialize.__func__)
    JITCPUCodegen.set_env = _set_env(JITCPUCodegen.set_env)
    return True


ROUTINES_LINKED = _link_routines()


# -- IR inlining: a callee's scope copied once per call site ------------------------------------
# numba inlines a ``step`` by deep-copying its IR block by block (InlineWorker.inline_ir, twice
# per call site), and each block's copy copies the function's scope, every variable of the
# function with it: a step of B blocks and V variables costs B copies of V variables per site
# (a fifth of a cold compile went to copy.deepcopy, docs/SPEED.md "Cold compile, round 8").
# Within one inlining, a scope is copied once and that copy shared by every block copied from
# it, as one deep copy of all the blocks would have it (numba's inliner takes the first block's
# scope as the callee's only scope). Outside an inlining a scope is copied as before.
_SHARED_SCOPES: list = []  # per inlining in progress: id(scope) -> (scope, its copy)


def _copy_scope(scope, memo):
    shared = _SHARED_SCOPES[-1] if _SHARED_SCOPES else None
    if shared is not None and id(scope) in shared:
        memo[id(scope)] = shared[id(scope)][1]
        return shared[id(scope)][1]
    copied = numba_ir.Scope.__new__(numba_ir.Scope)
    memo[id(scope)] = copied
    copied.__dict__.update(copy.deepcopy(scope.__dict__, memo))
    if shared is not None:
        shared[id(scope)] = (scope, copied)
    return copied


def _inline_ir(original):
    def inline_ir(worker, *args, **kws):
        _SHARED_SCOPES.append({})
        try:
            return original(worker, *args, **kws)
        finally:
            _SHARED_SCOPES.pop()
    return inline_ir


def _share_scopes() -> bool:
    """Install the two changes (above) where numba's inliner is the one they were made for."""
    if not (numba.__version__.startswith("0.68.") and hasattr(InlineWorker, "inline_ir")
            and "__deepcopy__" not in vars(numba_ir.Scope)):
        return False
    numba_ir.Scope.__deepcopy__ = _copy_scope
    InlineWorker.inline_ir = _inline_ir(InlineWorker.inline_ir)
    return True


SCOPES_SHARED = _share_scopes()


# -- IR inlining: a step's fresh IR inlined without copying it -----------------------------------
# To inline a ``step`` (inline="always"), numba builds the step's IR afresh at every call site
# (InlineWorker.inline_function: the untyped passes over its bytecode) and hands it to
# inline_ir, which deep-copies it twice before it merges it into the caller: once because it
# mutates what it is given, once to return an unmutated copy, which inline_function's caller
# (the InlineInlinables pass) drops. The IR built for that one call site is nobody else's: here
# inline_function gives it to inline_ir with the deep copy of its blocks made the identity (the
# only deep copy in numba's inline_closurecall; the IR built at each site, the IR merged in and
# so the compiled code are as before; copy_ir's shallow FunctionIR copies remain). A tenth of
# Euler's cold compile went to these copies (docs/SPEED.md, "Cold compile, round 9").
class _UncopiedBlocks:
    """Stands in for the ``copy`` module in inline_closurecall during one inline_ir call."""

    @staticmethod
    def deepcopy(value, memo=None):
        return value


def _inline_function(worker, caller_ir, block, i, function, arg_typs=None):
    callee_ir = worker.run_untyped_passes(function)  # nested steps inline themselves here
    inline_closurecall.copy = _UncopiedBlocks
    try:
        return worker.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars,
                                arg_typs=arg_typs)
    finally:
        inline_closurecall.copy = copy


def _inline_fresh_ir() -> bool:
    """Install the change (above) where numba's inliner is the one it was made for."""
    if not (numba.__version__.startswith("0.68.") and inline_closurecall.copy is copy
            and hasattr(InlineWorker, "run_untyped_passes")):
        return False
    InlineWorker.inline_function = _inline_function
    return True


FRESH_IR_INLINED = _inline_fresh_ir()


# -- Compile flags compared by their values, read directly -------------------------------------
# numba files the implementation of each @overload template (array indexing, arithmetic on
# arrays, range, ...) under the compile's Flags, among the argument types: every typing of such a
# call looks it up, hashes the Flags and compares them with the stored ones (each compile has
# its own Flags object). A Flags hashes to its class's sorted option names (the same for every
# instance) and compares by values(), a property read per option: 40,000 lookups and 2.4 million
# property reads in Euler's cold compile (docs/SPEED.md, "Cold compile, round 9"). Here values()
# reads the instance's set options and the class's defaults directly (what each property reads),
# two Flags of one class that set the same options to the same values are equal without it, and
# the hash is computed once per class: the same dicts, the same hash, the same lookups.
_CONFIG_HASHES: dict = {}  # TargetConfig subclass -> the hash of its sorted option names


def _config_values(config) -> dict:
    values = config._values
    return {name: values.get(name, option.default) for name, option in config.options.items()}


def _config_equal(config, other):
    if not isinstance(other, targetconfig.TargetConfig):
        return NotImplemented
    if type(config) is type(other) and config._values == other._values:
        return True  # the same options set to the same values: the same defaults for the rest
    return _config_values(config) == _config_values(other)


def _config_hash(config) -> int:
    kind = type(config)
    if kind not in _CONFIG_HASHES:
        _CONFIG_HASHES[kind] = hash(tuple(sorted(config.options)))
    return _CONFIG_HASHES[kind]


def _read_flags_directly() -> bool:
    """Install the three changes (above) where numba's TargetConfig is the one they were made
    for: every option a property reading ``_values`` with the option's default."""
    config = targetconfig.TargetConfig
    if not (numba.__version__.startswith("0.68.") and config.__slots__ == ["_values"]
            and all(name in vars(config) for name in ("values", "__hash__", "__eq__"))):
        return False
    config.values = _config_values
    config.__eq__ = _config_equal
    config.__hash__ = _config_hash
    return True


FLAGS_READ_DIRECTLY = _read_flags_directly()


# -- Call types remembered -----------------------------------------------------------------------
# numba types every call of a builtin or overloaded function (``a * b``, ``x[i, j]``, ``min``,
# ``range``) by trying that function's templates in turn until one accepts the argument types,
# each failure recorded with its message (types.functions.BaseFunction.get_call_type), and
# lowering asks again for every binary operator and index: 17,000 resolutions in the variational
# step's cold compile, of which 333 distinct (docs/SPEED.md, "Cold compile, round 10"). A
# function type is interned and its templates fixed (new templates make a new function type);
# a template's answer depends only on the typing context and the argument types, and the first
# resolution already records what lowering reads back (the implementation key of the accepted
# signature; an @overload's compiled implementation is cached by its template). So each
# function type keeps the signatures it resolved, by (context, argument types, keyword types),
# and answers a repeated question with the same Signature object; a question that failed is
# asked again (and fails again, with numba's message).
def _remembered_call_type(original):
    def get_call_type(function, context, args, kws):
        try:
            key = (context, tuple(args), tuple(sorted(kws.items())))
            known = function.__dict__.setdefault("_mbsim_ros_call_types", {})
            signature = known.get(key)
        except TypeError:  # an unhashable argument type: not remembered
            return original(function, context, args, kws)
        if signature is None:
            signature = original(function, context, args, kws)
            known[key] = signature
        return signature
    return get_call_type


def _remember_call_types() -> bool:
    """Install the change (above) where numba's function types are the ones it was made for."""
    base = numba_functions.BaseFunction
    if not (numba.__version__.startswith("0.68.") and "get_call_type" in vars(base)):
        return False
    base.get_call_type = _remembered_call_type(base.get_call_type)
    return True


CALL_TYPES_REMEMBERED = _remember_call_types()


# -- ABI sizes remembered ------------------------------------------------------------------------
# numba asks for the ABI size of an LLVM type (an array's item, an alloca's) about 1,900 times in
# the variational step's cold compile, and llvmlite answers each by writing a module that holds
# one global of the type, parsing it in LLVM and measuring the parsed type. A literal type is
# its text (the size a function of the text and the data layout), so each context keeps the
# sizes it measured by the type's text; named (identified) structs, whose text is only their
# name, are measured every time as before.
def _remembered_abi_size(original):
    def get_abi_sizeof(context, ty):
        if isinstance(ty, llvm_ir.IdentifiedStructType):
            return original(context, ty)
        known = context.__dict__.setdefault("_mbsim_ros_abi_sizes", {})
        key = (str(context.target_data), str(ty))
        if key not in known:
            known[key] = original(context, ty)
        return known[key]
    return get_abi_sizeof


def _remember_abi_sizes() -> bool:
    """Install the change (above) where numba's context measures sizes as it was made for."""
    if not (numba.__version__.startswith("0.68.") and "get_abi_sizeof" in vars(BaseContext)):
        return False
    BaseContext.get_abi_sizeof = _remembered_abi_size(BaseContext.get_abi_sizeof)
    return True


ABI_SIZES_REMEMBERED = _remember_abi_sizes()


# -- Lowering's probes answered once -------------------------------------------------------------
# Lowering asks for implementations that do not exist for arrays, on purpose: ``static_getitem``
# and ``static_setitem`` for a constant index (then falls back on getitem / setitem), and
# ``__array__`` for each array argument. A lookup that finds nothing makes the target context
# refresh itself from every registry (imports, the runtime, 20 registries, then the typing
# context) before it gives up: 3,500 refreshes in the variational step's cold compile. A refresh
# can only find a new implementation in a registry the context installs, so a probe that failed
# after a refresh fails again until one of those registries gains an implementation (or the
# context installs another registry): each context keeps its failed probes with the count of
# implementations registered at the time, and answers a probe asked again at the same count
# with the same NotImplementedError without the refresh.
_PROBES = ("__array__", "static_getitem", "static_setitem")


def _implementations_registered(context) -> tuple[int, int]:
    return len(context._registries), sum(len(registry.functions)
                                         for registry in context._registries)


def _remembered_probe(original):
    def get_function(context, fn, sig, _firstcall=True):
        if not (_firstcall and isinstance(fn, str) and fn in _PROBES):
            return original(context, fn, sig, _firstcall)
        failed = context.__dict__.setdefault("_mbsim_ros_failed_probes", {})
        key = (fn, sig.args)
        if failed.get(key) == _implementations_registered(context):
            raise NotImplementedError(f"No definition for lowering {fn}{sig}")
        try:
            return original(context, fn, sig, _firstcall)
        except NotImplementedError:
            failed[key] = _implementations_registered(context)
            raise
    return get_function


def _remember_probes() -> bool:
    """Install the change (above) where numba's target context looks up as it was made for."""
    if not (numba.__version__.startswith("0.68.") and "get_function" in vars(BaseContext)
            and hasattr(BaseContext, "refresh")):
        return False
    BaseContext.get_function = _remembered_probe(BaseContext.get_function)
    return True


PROBES_REMEMBERED = _remember_probes()


# -- Structures read from their values -----------------------------------------------------------
# numba's lowering reads a structure's fields (an array's data, shape and strides; a range's
# start, stop and step; an iterator's state pointers) through a copy in memory: each index,
# store, ``.shape`` or loop step makes the structure's proxy, which allocates a slot in the entry
# block (zero-filled), stores the structure's value into it and loads every field back through a
# GEP; LLVM's SROA folds it all away again. A quarter of the LLVM instructions of the
# variational step's cold compile were these (docs/SPEED.md, "Cold compile, round 11"), each
# built in Python, printed, parsed and optimised. Here a proxy made from a value reads its fields
# from that value (extract_value); the first time anything writes a field or asks for its memory
# (a pointer to it or to a field, its slot) it stores the value as numba's does and works through
# memory from then on (a write may sit in a branch, where a new value would not reach the code
# after it). Only in code compiled without numba's reference-counted memory (our kernels and
# routines, not the allocating ones, nor a user's own numba functions in the same process), for
# numba's value proxies that make their slot as its base class does and arrays of numba's plain
# Array type without an ``__array__`` implementation (whose slot numba's proxy would hold
# unwrapped). Not kept: the range metadata numba puts on the loads of an array's
# ``shape`` (numba's own comment: it improves nothing), which a value read cannot carry.
def _without_array_wrapper(context, array_type) -> bool:
    """No ``__array__`` implementation for the type (numba's proxy would call it)."""
    try:
        context.get_function("__array__", call_signature(array_type, array_type))
    except NotImplementedError:
        return True
    return False


_PROXY_PARTS = ("__init__", "__getattr__", "__getitem__", "__setitem__", "_get_ptr_by_index",
                "_getpointer", "_getvalue", "_setvalue")


def _may_hold(proxy, context) -> bool:
    """Whether a proxy made from a value may hold it: in code compiled without NRT (ours:
    kernels and routines; not a user's own numba functions, nor our few allocating ones),
    numba's value proxies that make their slot as numba's base class does, and arrays
    without an ``__array__`` wrapper."""
    if context.enable_nrt:
        return False
    kind = type(proxy)
    if kind.__dict__.get("_mbsim_ros_array"):
        return _without_array_wrapper(context, proxy._fe_type)
    return isinstance(proxy, cgutils.ValueStructProxy) \
        and kind._make_refs is cgutils._StructProxy._make_refs


def _held_proxy(numbas: dict) -> dict:
    """The proxy's methods reading from a held value, numba's own (``numbas``) otherwise."""
    def __init__(self, context, builder, value=None, ref=None):
        self._held = None
        if value is None or ref is not None or not _may_hold(self, context):
            numbas["__init__"](self, context, builder, value, ref)
            return
        self._context, self._builder = context, builder
        self._datamodel = context.data_model_manager[self._fe_type]
        self._be_type = self._get_be_type(self._datamodel)
        self._held = value

    def in_memory(self):
        held = self.__dict__.get("_held")
        if held is not None:
            self._held = None
            numbas["__init__"](self, self._context, self._builder, held, None)

    def __getattr__(self, field):
        if field in ("_value", "_outer_ref") and self.__dict__.get("_held") is not None:
            in_memory(self)
            return self.__dict__[field]
        return numbas["__getattr__"](self, field)

    def __getitem__(self, index):
        held = self.__dict__.get("_held")
        if held is None:
            return numbas["__getitem__"](self, index)
        return self._cast_member_to_value(index, self._builder.extract_value(held, index))

    def __setitem__(self, index, value):
        in_memory(self)
        numbas["__setitem__"](self, index, value)

    def _get_ptr_by_index(self, index):
        in_memory(self)
        return numbas["_get_ptr_by_index"](self, index)

    def _getpointer(self):
        in_memory(self)
        return numbas["_getpointer"](self)

    def _getvalue(self):
        held = self.__dict__.get("_held")
        return numbas["_getvalue"](self) if held is None else held

    def _setvalue(self, value):
        in_memory(self)
        numbas["_setvalue"](self, value)
    return {"__init__": __init__, "__getattr__": __getattr__, "__getitem__": __getitem__,
            "__setitem__": __setitem__, "_get_ptr_by_index": _get_ptr_by_index,
            "_getpointer": _getpointer, "_getvalue": _getvalue, "_setvalue": _setvalue}


def _held_array_shape(proxy):
    if proxy.__dict__.get("_held") is None:
        return super(type(proxy), proxy).shape
    return proxy[proxy._datamodel.get_field_position("shape")]


_ARRAY_PROXIES: dict = {}  # array type -> numba's proxy class of it, reading from its value


def _array_from_value(original):
    def make_array(array_type):
        if type(array_type) is not numba.types.Array:
            return original(array_type)
        if array_type not in _ARRAY_PROXIES:
            base = original(array_type)
            _ARRAY_PROXIES[array_type] = type(base.__name__, (base,), {
                "_mbsim_ros_array": True, "shape": property(_held_array_shape)})
        return _ARRAY_PROXIES[array_type]
    make_array.numbas = original
    return make_array


def _read_structures_from_values() -> bool:
    """Install the change (above) where numba's structure proxies are the ones it was made
    for: the methods of cgutils._StructProxy, arrays' made by ``numba.np.arrayobj.make_array``
    (which the target context calls)."""
    from numba.np import arrayobj
    proxy = cgutils._StructProxy
    if not (numba.__version__.startswith("0.68.") and "make_array" in vars(BaseContext)
            and all(name in vars(proxy) for name in (*_PROXY_PARTS, "_make_refs"))):
        return False
    for name, method in _held_proxy({name: vars(proxy)[name] for name in _PROXY_PARTS}).items():
        setattr(proxy, name, method)
    arrayobj.make_array = _array_from_value(arrayobj.make_array)
    return True


STRUCTURES_READ_FROM_VALUES = _read_structures_from_values()


# -- C-ordered elements addressed without identities ----------------------------------------------
# For each element of a C-ordered array (every index an integer) numba's lowering reads the
# array's shape twice and its strides, which it does not use; emits the wrap of a negative index
# for every constant index too (a comparison, an addition and a select of constants); and sums
# the offset as 0 + i * (1 * n1 * ...) + ... + j * 1. Here such an element is addressed from one
# read of the shape, a constant index that is not negative is used as it is (the wrap would
# select it), and the offset is the same sum of the same products in the same order, less the
# multiplications by one and the addition of zero: the same integers, 6 to 12 instructions fewer
# per element (docs/SPEED.md, "Cold compile, round 11"). Views, slices, other layouts and bounds
# checking (NUMBA_BOUNDSCHECK) go through numba's own code.
def _constant_index_kept(original):
    def fix_index(builder, idx, size):
        if isinstance(idx, llvm_ir.Constant) and isinstance(idx.constant, int) \
                and idx.constant >= 0:
            return idx
        return original(builder, idx, size)
    fix_index.numbas = original
    return fix_index


def _c_offset(builder, shape, indices):
    """The offset of a C-ordered element: sum over the axes of index * (the product of the
    extents after the axis), in numba's order, without multiplications by one."""
    offset = None
    for axis, index in enumerate(indices):
        step = None
        for extent in shape[axis + 1:]:
            step = extent if step is None else builder.mul(step, extent)
        term = index if step is None else builder.mul(index, step)
        offset = term if offset is None else builder.add(offset, term)
    return offset


def _c_pointer(builder, ary, shape, indices):
    """The address of the C-ordered element at ``indices`` (fixed) of ``ary``, ``shape`` its
    extents read once."""
    return builder.gep(ary.data, [_c_offset(builder, shape, indices)])


def _c_item_pointer(original):
    def get_item_pointer(context, builder, aryty, ary, inds, wraparound=False,
                         boundscheck=False):
        if aryty.layout != "C" or wraparound or boundscheck or not inds:
            return original(context, builder, aryty, ary, inds, wraparound, boundscheck)
        return _c_pointer(builder, ary, cgutils.unpack_tuple(builder, ary.shape,
                                                             count=aryty.ndim), inds)
    get_item_pointer.numbas = original
    return get_item_pointer


def _c_element_indexing(original, arrayobj):
    def basic_indexing(context, builder, aryty, ary, index_types, indices, boundscheck=None):
        if boundscheck or aryty.layout != "C" or not 0 < aryty.ndim == len(index_types) \
                or not all(isinstance(kind, numba.types.Integer) for kind in index_types):
            return original(context, builder, aryty, ary, index_types, indices, boundscheck)
        shape = cgutils.unpack_tuple(builder, ary.shape, count=aryty.ndim)
        fixed = [arrayobj.fix_integer_index(context, builder, kind, index, extent)
                 for kind, index, extent in zip(index_types, indices, shape)]
        return _c_pointer(builder, ary, shape, fixed), [], []
    basic_indexing.numbas = original
    return basic_indexing


def _address_c_elements_directly() -> bool:
    """Install the three changes (above) where numba's indexing calls what they replace as it
    was made for: through the modules' attributes."""
    from numba.cpython import slicing
    from numba.np import arrayobj
    if not (numba.__version__.startswith("0.68.") and hasattr(slicing, "fix_index")
            and hasattr(cgutils, "get_item_pointer")
            and all(hasattr(arrayobj, name) for name in ("basic_indexing", "fix_integer_index"))):
        return False
    slicing.fix_index = _constant_index_kept(slicing.fix_index)
    cgutils.get_item_pointer = _c_item_pointer(cgutils.get_item_pointer)
    arrayobj.basic_indexing = _c_element_indexing(arrayobj.basic_indexing, arrayobj)
    return True


C_ELEMENTS_ADDRESSED_DIRECTLY = _address_c_elements_directly()


# -- Deletions lowered to nothing without reference counting --------------------------------------
# numba marks where each variable dies (an ``ir.Del``: half the statements of the variational
# step's typed IR, 16,000) and lowers each to a release of its references and, for a variable
# kept in a stack slot, a load of the slot and a store of zero into it (so that a second release
# finds nothing). Without numba's reference-counted memory (our kernels and routines, _nrt=False)
# there is nothing to release: the load is dead and the zero is never read. Here a deletion in
# such a function only does numba's bookkeeping (the variable's slot made if it has none; a
# variable deleted before its definition in a block no longer kept in a register), which decides
# how later statements are lowered.
def _delvar_without_nrt(original):
    def delvar(lower, name):
        if lower.context.enable_nrt:
            return original(lower, name)
        if name not in lower._blk_local_varmap and not lower._disable_sroa_like_opt:
            lower._singly_assigned_vars.discard(name)
        lower._alloca_var(name, lower.typeof(name))
    delvar.numbas = original
    return delvar


def _lower_deletions_without_nrt() -> bool:
    """Install the change (above) where numba's lowering deletes as it was made for."""
    if not (numba.__version__.startswith("0.68.") and "delvar" in vars(lowering.Lower)
            and all(hasattr(lowering.Lower, name) for name in ("_alloca_var", "typeof"))):
        return False
    lowering.Lower.delvar = _delvar_without_nrt(lowering.Lower.delvar)
    return True


DELETIONS_WITHOUT_NRT = _lower_deletions_without_nrt()


def _linked(options: dict):
    def decorate(function):
        if numba.config.DISABLE_JIT:
            return function
        if not ROUTINES_LINKED:
            return njit(cache=True, **options)(function)
        dispatcher = RoutineDispatcher(py_func=function, locals={}, targetoptions={
            "nopython": True, "boundscheck": None, **options})
        dispatcher.enable_caching()
        _ROUTINES.add((function.__module__, function.__qualname__))
        return dispatcher
    return decorate


# A compiled function called from kernels (module docstring): compiled once per signature and
# linked into each kernel that calls it (above).
routine = _linked(KERNEL_OPTIONS)


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


def _ours(function) -> bool:
    """Whether a compiled function is one of ours (a function numba makes itself, such as a
    jitclass's constructor, may have no module)."""
    return (function.__module__ or "").startswith(__package__ + ".")


class _CompileNotice(event.Listener):
    """Listens to numba's compile events, which fire only when a function is not found in the
    cache: the first of ours for a subject logs the notice."""

    def on_start(self, ev) -> None:
        function = ev.data["dispatcher"].py_func
        if not _ours(function) or _subject[0] in _told:
            return
        _told.add(_subject[0])
        log.warning("mbsim_ros: compiling %s kernels (once; cached in %s)", _subject[0],
                    numba.config.CACHE_DIR)

    def on_end(self, ev) -> None:
        function = ev.data["dispatcher"]
        compiled = function.overloads.get(tuple(ev.data["args"]))
        if _ours(function.py_func) and compiled is not None \
                and not compiled.target_context.enable_nrt \
                and _holds_array(compiled.signature.return_type):
            raise TypeError(f"{function.py_func.__module__}.{function.py_func.__qualname__} "
                            f"returns {compiled.signature.return_type}, compiled without NRT: "
                            f"declare it `allocating` (mbsim_ros._jit)")


def _holds_array(kind) -> bool:
    """Whether a numba type is an array or a tuple holding one."""
    if isinstance(kind, numba.types.Array):
        return True
    return isinstance(kind, numba.types.BaseTuple) and any(map(_holds_array, kind.types))


event.register("numba:compile", _CompileNotice())


# -- Nothing loaded after construction ----------------------------------------------------------
# numba loads a cached function at its first call with those argument types: 2-10 ms each, and a
# contact step that first touches the floor called 15 of them (150 ms: 150 missed ticks at
# 1 kHz). Each integrator declares the compiled functions it can call from Python (``kernels``);
# the Simulator loads them at construction (load_cached).

def cached_signatures(function) -> list:
    """The signatures of ``function`` (a numba dispatcher of ours) that numba's cache holds for
    this machine and this version of its source: those ``function.compile(signature)`` loads
    without compiling. Read from numba's own cache classes (no public API lists them); with
    numba's internals changed, or no cache (cache=False, NUMBA_DISABLE_JIT), none: then nothing
    is loaded ahead, as before (test/test_first_steps.py fails on it)."""
    cache = getattr(function, "_cache", None)
    try:
        index = cache._cache_file
        codegen = function.targetctx.codegen()
        return [key[0] for key in index._load_index()
                if cache._index_key(key[0], codegen) == key]
    except AttributeError:
        return []


def load_cached(functions) -> int:
    """Load from numba's cache every signature it holds of each of ``functions`` that this
    process has not loaded yet (never compiling: a signature not in the cache is compiled at its
    first call, as before); how many were loaded. Each function's cache is read once per
    process (what this process compiles later is in memory already)."""
    loaded = 0
    for function in dict.fromkeys(functions):  # each once, in order
        if isinstance(function, RoutineDispatcher):
            raise TypeError(f"{function.py_func.__module__}.{function.py_func.__qualname__} is a "
                            f"routine (linked into kernels, never emitted on its own): what "
                            f"Python calls is declared `kernel` (mbsim_ros._jit)")
        if function in _read_caches:
            continue
        _read_caches.add(function)
        for signature in cached_signatures(function):
            arguments = tuple(getattr(signature, "args", signature))
            if arguments not in function.overloads:
                function.compile(signature)
                loaded += 1
    return loaded


_read_caches: set = set()  # the functions whose cache load_cached has read


class CompilerActivity:
    """Counts, from numba's events, what numba's compiler did while this is entered (any
    thread): ``compiles`` (functions compiled: not found in the cache) and ``loads``
    (functions loaded from the cache: entries into numba's compiler that ran LLVM without
    compiling; numba has no event of its own for a cache load). ``with CompilerActivity() as
    activity: ...``; ``activity.compiled`` names the functions compiled."""

    _KINDS = ("numba:compiler_lock", "numba:llvm_lock", "numba:compile")

    def __init__(self) -> None:
        self.compiles = 0
        self.loads = 0
        self.compiled: list[str] = []
        self._depth = 0         # the compiler lock's nesting
        self._linked = False    # LLVM ran inside the outermost lock
        self._compiling = False  # a compile event inside it
        self._installed = []

    def __enter__(self) -> "CompilerActivity":
        self._installed = list(zip(self._KINDS, (
            _Listener(self._lock_taken, self._lock_released), _Listener(self._llvm, None),
            _Listener(self._compile, None))))
        for kind, listener in self._installed:
            event.register(kind, listener)
        return self

    def __exit__(self, *exc) -> None:
        for kind, listener in self._installed:
            event.unregister(kind, listener)
        self._installed = []

    def _lock_taken(self, ev) -> None:
        if self._depth == 0:
            self._linked = self._compiling = False
        self._depth += 1

    def _lock_released(self, ev) -> None:
        self._depth -= 1
        if self._depth == 0 and self._linked and not self._compiling:
            self.loads += 1

    def _llvm(self, ev) -> None:
        self._linked = self._linked or self._depth > 0

    def _compile(self, ev) -> None:
        self._compiling = True
        self.compiles += 1
        self.compiled.append(ev.data["dispatcher"].py_func.__qualname__)


class _Listener(event.Listener):
    """A numba event listener calling ``start(event)`` and ``end(event)`` (None: nothing)."""

    def __init__(self, start, end) -> None:
        self._start, self._end = start, end

    def on_start(self, ev) -> None:
        self._start(ev)

    def on_end(self, ev) -> None:
        if self._end is not None:
            self._end(ev)
