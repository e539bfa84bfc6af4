"""The sandbox child: boot, confine, report, run ONE program, report, exit.

Run as ``<python> -I -S -X utf8 bootstrap.py <fd> [<table>]`` with an empty environment (plus
``MALLOC_ARENA_MAX=1``); ``<table>`` is the host's file of precompiled code for the modules below
(``_host/code_table.py`` on the host side), read before anything else happens. Standard library only, and no
``toolrt`` import: the child must not read the host's site-packages. The child's other modules are
loaded from this file's directory by path, before anything untrusted runs: its own parts at
start-up, ``confine.py`` and its layer modules once the boot frame asks for confinement. This module
is the run loop; the parts are

- :mod:`bootstrap_wire`: the channel (lossless JSON without importing ``json``, framing);
- :mod:`bootstrap_program`: compiling the program, and its failures as tracebacks of its own frames;
- :mod:`bootstrap_io`: what the program sees of the host (log output, binding calls, the drivers);
- :mod:`confine`: the kernel confinement, with its layer modules.

Order of events (never changes): read the host's table of precompiled code → load the boot
modules → move the channel to fd 3 → if PID 1, fork and reap → read the boot
frame → pre-import (warm children) → confine (rlimits, uid drop, no_new_privs, Landlock, seccomp) →
send ``ready`` with the enforcement report → wait for the program → compile and run it → send
exactly one ``done`` → ``os._exit``. The program runs as the body of ``async def __dsh_main__()``;
a fall-through ``return <nonce marker>`` tells "no return" (``NO_VALUE``) from ``return None``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing at run time would cost the child ~9 ms (it pulls in re)
    from typing import Any

# The child's modules besides this one, each list in load order (a module's imports come first).
# CHILD_FILES is the one list of the child's files: this folder's modules (a test checks that it
# names every one and that the order follows their imports), and what the host compiles into its
# code table, copies for a uid-dropped child and binds read-only under bwrap.
_BOOT_MODULES = ("bootstrap_wire", "bootstrap_program", "bootstrap_io")
_CONFINE_MODULES = (
    "seccomp_tables",
    "confine_syscalls",
    "confine_policy",
    "confine_grants",
    "confine_process",
    "confine_landlock",
    "confine_seccomp",
)
CHILD_FILES = (
    "bootstrap.py",
    *[name + ".py" for name in _BOOT_MODULES + _CONFINE_MODULES],
    "confine.py",
    "command_launcher.py",
)
_HERE = os.path.dirname(os.path.abspath(__file__))


_PRECOMPILED: dict[str, Any] = {}
"""The host's code for this directory's modules, by file name (see :func:`_precompiled`)."""


def _load_by_path(name: str, path: str) -> Any:
    """Run ``path`` as module ``name`` (registered first, so later modules import it by that name),
    without touching ``sys.path``: from the host's precompiled code when it came with this child,
    else compiled from source; never from ``__pycache__``."""
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    code = _PRECOMPILED.pop(os.path.basename(path), None)
    if type(code) is not type(_load_by_path.__code__):
        with open(path, "rb") as handle:
            source = handle.read()
        code = compile(source, path, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


def _precompiled(argv: list[str]) -> dict[str, Any]:
    """The host's table of precompiled code (``argv[2]``, see the host's ``code_table``) as
    ``{file name: code}`` when its magic number is this interpreter's, else nothing (the modules
    are then compiled from source). Never raises: a missing or unreadable table only costs time."""
    if len(argv) < 3:
        return {}
    try:
        with open(argv[2], "rb") as handle:
            data = handle.read()
    except OSError:
        return {}
    bootstrap_external = sys.modules.get("_frozen_importlib_external")
    magic = getattr(bootstrap_external, "MAGIC_NUMBER", None)
    if type(magic) is not bytes or data[: len(magic)] != magic:
        return {}
    import marshal

    try:
        table = marshal.loads(data[len(magic) :])
    except (EOFError, ValueError, TypeError):
        return {}
    return table if type(table) is dict else {}


try:  # imported as toolrt.sandbox._child.bootstrap (the host's tests)
    from toolrt.sandbox._child.bootstrap_io import STDOUT, drive, program_globals, run_asyncio, state
    from toolrt.sandbox._child.bootstrap_program import (
        compile_program,
        failure_kind,
        format_failure,
        needs_asyncio,
        safe_str,
        syntax_lines,
    )
    from toolrt.sandbox._child.bootstrap_wire import (
        CHANNEL_FD,
        Channel,
        NotLossless,
        dumps,
        quote,
    )
except ImportError:  # the child's script: ``-I`` keeps this directory off sys.path, so load by path
    _PRECOMPILED.update(_precompiled(sys.argv))
    for _name in _BOOT_MODULES:
        _load_by_path(_name, os.path.join(_HERE, _name + ".py"))
    from bootstrap_io import (  # type: ignore[no-redef,import-not-found]
        STDOUT,
        drive,
        program_globals,
        run_asyncio,
        state,
    )
    from bootstrap_program import (  # type: ignore[no-redef,import-not-found]
        compile_program,
        failure_kind,
        format_failure,
        needs_asyncio,
        safe_str,
        syntax_lines,
    )
    from bootstrap_wire import (  # type: ignore[no-redef,import-not-found]
        CHANNEL_FD,
        Channel,
        NotLossless,
        dumps,
        quote,
    )

__all__ = ["CHILD_FILES", "main"]


# --- process ---------------------------------------------------------------------------------------


def _become_reaper() -> None:
    """PID 1 ignores default-action signals (RLIMIT_CPU's SIGXCPU included): fork, reap, relay."""
    child = os.fork()
    if child == 0:
        return
    os.close(CHANNEL_FD)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        if pid == child:
            if os.WIFSIGNALED(status):
                os._exit(128 + os.WTERMSIG(status))
            os._exit(os.WEXITSTATUS(status))


# --- confinement -------------------------------------------------------------------------------------


def _load_confine() -> tuple[Any, Any]:
    """Load ``confine.py`` (after its layer modules and syscall tables) from this directory by path,
    as ``(confine_policy, confine)``: ``-I`` keeps the directory off ``sys.path``, and it stays off
    it afterwards."""
    saved = list(sys.path)
    try:
        layers = {name: _load_by_path(name, os.path.join(_HERE, name + ".py")) for name in _CONFINE_MODULES}
        confine = _load_by_path("toolrt_sandbox_confine", os.path.join(_HERE, "confine.py"))
        return layers["confine_policy"], confine
    finally:
        sys.path[:] = saved


def _rlimits_only(policy: dict[str, Any]) -> dict[str, Any]:
    """The unconfined backend: resource limits only (no uid drop, Landlock or seccomp)."""
    import resource

    cpu = int(policy["cpuSeconds"])
    limits = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, int(policy["memoryBytes"]), int(policy["memoryBytes"])),
        (resource.RLIMIT_FSIZE, int(policy["maxFileBytes"]), int(policy["maxFileBytes"])),
        (resource.RLIMIT_NOFILE, int(policy["maxOpenFiles"]), int(policy["maxOpenFiles"])),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    notes = ["unconfined: only resource limits apply; the program can reach the host"]
    for which, soft, hard in limits:
        try:
            resource.setrlimit(which, (soft, hard))
        except ValueError as error:  # EINVAL: macOS refuses RLIMIT_AS (python/cpython#78783)
            linux = sys.platform == "linux"  # (a plain bool, for mypy on every platform)
            if linux or which != resource.RLIMIT_AS:
                raise
            notes.append(f"rlimits: as not supported here ({error}): the kernel does not enforce that limit")
    return {"layers": ["rlimits"], "landlockAbi": None, "enforcement": "none", "notes": notes}


def _confine(boot: dict[str, Any]) -> dict[str, Any]:
    policy = boot["policy"]
    if not boot["confine"]:
        return _rlimits_only(policy)
    policy_module, confine = _load_confine()
    drop_to = policy["dropTo"]
    config = policy_module.ConfinementPolicy(
        cpu_seconds=int(policy["cpuSeconds"]),
        memory_bytes=int(policy["memoryBytes"]),
        max_open_files=int(policy["maxOpenFiles"]),
        max_file_bytes=int(policy["maxFileBytes"]),
        max_processes=policy["maxProcesses"],
        read_paths=tuple(policy["readPaths"]),  # on top of confine_grants.default_read_paths()
        read_write_paths=tuple(policy["readWritePaths"]),
        drop_to=tuple(drop_to) if drop_to is not None else None,
        landlock=bool(policy["landlock"]),
        seccomp=bool(policy["seccomp"]),
        private_task_count=bool(policy.get("privateTaskCount", False)),
    )
    report = confine.confine(config)
    return {
        "layers": [str(layer) for layer in report.get("layers", ())],
        "landlockAbi": report.get("landlockAbi"),
        "enforcement": report.get("enforcement", "partial"),
        "notes": [str(note) for note in report.get("notes", ())],
    }


# --- the run  ------------------------------------------------------------------------------------------


def _finish(frame: str) -> None:
    state.chan.send_text(frame)
    os._exit(0)


def _fail(kind: str, message: str) -> None:
    _finish('{"t":"done","ok":false,"kind":' + quote(kind) + ',"message":' + quote(message) + "}")


def _run(run: dict[str, Any]) -> None:
    program = run["program"]
    limits = run["limits"]
    state.out_left = int(limits["outputBytes"])
    state.value_limit = int(limits["valueBytes"])
    state.max_in_flight = max(int(limits["maxInFlight"]), 1)
    program_lines = program.splitlines()
    marker = ("__dsh_no_value__", os.urandom(12).hex())  # a nonce: only the fall-through returns it
    namespace = program_globals(run["bindings"])

    try:
        code = compile_program(program, marker)
    except SyntaxError as error:
        _fail("exception", "\n".join(syntax_lines(error, program_lines)))
        return
    exec(code, namespace)
    main = namespace.pop("__dsh_main__")
    sys.stdout = STDOUT
    try:
        if needs_asyncio(program):
            result = run_asyncio(main)
        else:
            coroutine = main()
            if type(coroutine).__name__ != "coroutine":
                raise SyntaxError("'yield' is not allowed at the top level of a run_code program")
            result = drive(coroutine)
        STDOUT.flush()
    except BaseException as error:
        if isinstance(error, MemoryError):
            state.reserve = None
        _fail(failure_kind(error), format_failure(error, program_lines))
        return
    if type(result) is tuple and result == marker:
        _finish('{"t":"done","ok":true}')
        return
    try:
        value = dumps(result)
    except NotLossless as error:
        _fail("invalid-output", str(error))
        return
    if len(value) > state.value_limit:
        _fail("value-limit", f"completion value of {len(value)} bytes exceeds {state.value_limit}")
        return
    _finish('{"t":"done","ok":true,"value":' + value + "}")


def _preimport(names: Any) -> None:
    """Import what a pooled child should not pay for at run time (``asyncio``: ~70 ms here).

    ``ssl`` is kept out of that import (asyncio takes it when present): the program has no network,
    and ssl's C libraries and code objects cost every pooled child ~1.3 MB of heap and ~3 MB of
    mapped files, which its exit must free before it can be reaped. A program that imports ``ssl``
    itself still gets it.
    """
    blocked = "ssl" not in sys.modules
    if blocked:
        sys.modules["ssl"] = None  # type: ignore[assignment]  # makes ``import ssl`` raise ImportError
    try:
        for name in names:
            __import__(name)
    finally:
        if blocked and sys.modules.get("ssl", False) is None:
            del sys.modules["ssl"]


def main() -> None:
    """The child's one life: boot, confine, report, run the program, report, exit."""
    fd = int(sys.argv[1])
    if fd != CHANNEL_FD:
        os.dup2(fd, CHANNEL_FD, inheritable=False)
        os.close(fd)
    if os.getpid() == 1:
        _become_reaper()
    state.chan = Channel(CHANNEL_FD)
    boot = state.chan.recv()
    try:
        _preimport(boot.get("preimport", ()))
        report = _confine(boot)
        _PRECOMPILED.clear()  # what the boot did not load (an unconfined child's confine modules)
    except BaseException as error:
        state.chan.send({"t": "boot-failed", "message": f"{type(error).__name__}: {error}"})
        os._exit(3)
    state.chan.send({"t": "ready", "report": report})
    state.reserve = bytearray(1 << 18)  # released on MemoryError so the failure can still be reported
    run = state.chan.recv()
    try:
        _run(run)
    except MemoryError:
        state.reserve = None
        _fail("memory-limit", "MemoryError")
    except BaseException as error:
        _fail("exception", f"{type(error).__name__}: {safe_str(error)}")
    os._exit(0)


if __name__ == "__main__":
    main()
