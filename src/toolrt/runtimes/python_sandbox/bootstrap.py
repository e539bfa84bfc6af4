"""The sandbox child: boot, confine, report, run ONE program, report, exit.

Run as ``<python> -I -S -X utf8 bootstrap.py <fd>`` with an empty environment (plus
``MALLOC_ARENA_MAX=1``). Standard library only, and no ``toolrt`` import: the child must not read the
host's site-packages. ``confine.py`` is loaded from this file's directory by path, before anything
untrusted runs. The wire protocol is documented in ``protocol.py`` (the host side); this module
carries its own tiny encoder/decoder so that booting does not import ``json`` (and with it ``re``).

Order of events (never changes): move the channel to fd 3 → if PID 1, fork and reap → read the boot
frame → pre-import (warm children) → confine (rlimits, uid drop, no_new_privs, Landlock, seccomp) →
send ``ready`` with the enforcement report → wait for the program → compile and run it → send
exactly one ``done`` → ``os._exit``. The program runs as the body of ``async def __dsh_main__()``:
the AST of the program text is wrapped (no text splicing), so line numbers match the program and
triple-quoted strings are untouched. A fall-through ``return <nonce marker>`` is appended to tell
"no return" (``NO_VALUE``) from ``return None``. ``print`` (and ``sys.stdout``) become ``log``
frames; failures are rendered as a traceback of the program's own frames only (``<run_code>``).

Binding calls go out as ``call`` frames and come back as ``reply`` frames. Without ``asyncio`` a tiny
coroutine driver runs the program (one call in flight at a time); a program that mentions
``asyncio`` (or imports dynamically) runs on an ``asyncio`` event loop instead, where calls overlap,
bounded by a semaphore of ``maxInFlight`` slots (a slot is returned only when the host's reply
arrives, so the host never sees more calls in flight than it allows).
"""

from __future__ import annotations

import _ast
import _socket
import _thread
import builtins
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing at run time would cost the child ~9 ms (it pulls in re)
    from typing import Any

CHANNEL_FD = 3
FILENAME = "<run_code>"
MAX_JSON_DEPTH = 400  # keep equal to protocol.MAX_JSON_DEPTH
_MAX_SAFE_INTEGER = 2**53 - 1
_TRACEBACK_FRAMES = 60  # frames kept at each end of a very long traceback
_MESSAGE_CHARS = 32 * 1024

# --- JSON without importing json ------------------------------------------------------------------

try:
    import _json

    class _ScanContext:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        memo: dict[Any, Any] = {}  # noqa: RUF012 - read by the C scanner only

        @staticmethod
        def parse_constant(token: str) -> Any:
            raise ValueError(f"{token} is not JSON")

    _scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]
    _quote = _json.encode_basestring_ascii

    def _loads(text: str) -> Any:
        try:
            value, end = _scan(text, 0)
        except StopIteration as stop:
            raise ValueError(f"malformed JSON at {stop.value}") from None
        if end != len(text):
            raise ValueError("trailing data after JSON value")
        return value

except Exception:  # pragma: no cover - interpreters without the C accelerator
    import json as _json_module

    def _loads(text: str) -> Any:
        return _json_module.loads(text)

    _quote = _json_module.encoder.encode_basestring_ascii


class _NotLossless(Exception):
    pass


_END = object()


def _float_text(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):  # noqa: PLR0124 - NaN test
        raise _NotLossless("NaN and infinities are not JSON numbers")
    if value == 0.0 and str(value).startswith("-"):
        raise _NotLossless("-0.0 is not lossless JSON")
    return float.__repr__(value)


def _int_text(value: int) -> str:
    if not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        try:
            exact = float(value) == value
        except OverflowError:
            exact = False
        if not exact:
            raise _NotLossless("integer is not exactly representable as a JSON number")
    return int.__repr__(value)


def _dumps(value: Any) -> str:
    """Compact ASCII JSON of a *lossless* JSON value; raises ``_NotLossless``. Iterative.

    The same rules as the host's ``snapshot_json``: str keys only, no NaN/±inf/-0.0, integers exactly
    representable as doubles, dict/list/tuple containers, no cycles, at most MAX_JSON_DEPTH deep.
    """
    out: list[str] = []
    append = out.append
    stack: list[list[Any]] = []  # [iterator, is_dict, id, first]
    ancestors: set[int] = set()
    item = value
    while True:
        kind = type(item)
        if item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif kind is str:
            append(_quote(item))
        elif kind is int:
            append(_int_text(item))
        elif kind is float:
            append(_float_text(item))
        elif isinstance(item, dict | list | tuple):
            if len(stack) >= MAX_JSON_DEPTH:
                raise _NotLossless(f"value nests deeper than {MAX_JSON_DEPTH} levels")
            ident = id(item)
            if ident in ancestors:
                raise _NotLossless("value is circular")
            ancestors.add(ident)
            if isinstance(item, dict):
                append("{")
                stack.append([iter(list(dict.items(item))), True, ident, True])
            else:
                append("[")
                stack.append([iter(list(item)), False, ident, True])
        elif isinstance(item, str):
            append(_quote(str.__str__(item)))
        elif isinstance(item, int):
            append(_int_text(int(item)))
        elif isinstance(item, float):
            append(_float_text(float(item)))
        else:
            raise _NotLossless(f"{kind.__name__} is not a JSON type")
        while stack:
            frame = stack[-1]
            following: Any = next(frame[0], _END)
            if following is _END:
                stack.pop()
                ancestors.discard(frame[2])
                append("}" if frame[1] else "]")
                continue
            if frame[3]:
                frame[3] = False
            else:
                append(",")
            if frame[1]:
                key, item = following
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise _NotLossless(f"object key {key!r} is not a string")
                    key = str.__str__(key)
                append(_quote(key))
                append(":")
            else:
                item = following
            break
        else:
            return "".join(out)


# --- the channel ------------------------------------------------------------------------------------


class _Channel:
    """Length-prefixed JSON frames over the inherited socket (blocking; see protocol.py)."""

    def __init__(self, fd: int) -> None:
        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
        self.buffer = bytearray()
        self.lock = _thread.allocate_lock()  # the program's threads may print concurrently

    def send_text(self, body: str) -> None:
        data = body.encode("ascii")
        with self.lock:
            self.sock.sendall(len(data).to_bytes(4, "big") + data)

    def send(self, frame: dict[str, Any]) -> None:
        self.send_text(_dumps(frame))

    def pop(self) -> dict[str, Any] | None:
        buffer = self.buffer
        if len(buffer) < 4:
            return None
        length = int.from_bytes(buffer[:4], "big")
        if len(buffer) < 4 + length:
            return None
        body = bytes(buffer[4 : 4 + length])
        del buffer[: 4 + length]
        frame = _loads(body.decode("utf-8"))
        if type(frame) is not dict:
            raise ValueError("host frame is not an object")
        return frame

    def fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            os._exit(0)  # the host went away: nothing left to report to
        self.buffer += chunk

    def recv(self) -> dict[str, Any]:
        while True:
            frame = self.pop()
            if frame is not None:
                return frame
            self.fill()


# --- process state -----------------------------------------------------------------------------------


class _State:
    chan: _Channel
    out_left = 0
    value_limit = 0
    max_in_flight = 1
    next_id = 0
    loop: Any = None
    semaphore: Any = None
    pending: dict[int, Any]
    replies: dict[int, dict[str, Any]]
    reserve: bytearray | None = None
    program_lines: list[str]
    marker: tuple[str, str] = ("", "")

    def __init__(self) -> None:
        self.pending = {}
        self.replies = {}
        self.program_lines = []


_S = _State()


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


def _load_by_path(name: str, path: str) -> Any:
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    with open(path, "rb") as handle:
        source = handle.read()
    exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    return module


def _load_confine() -> Any:
    """Load ``confine.py`` (and its syscall tables) from this directory by path: ``-I`` keeps the
    directory off ``sys.path``, and it stays off it afterwards."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    try:
        _load_by_path("seccomp_tables", os.path.join(here, "seccomp_tables.py"))
        return _load_by_path("toolrt_sandbox_confine", os.path.join(here, "confine.py"))
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
    for which, soft, hard in limits:
        resource.setrlimit(which, (soft, hard))
    return {
        "layers": ["rlimits"],
        "landlockAbi": None,
        "enforcement": "none",
        "notes": ["unconfined: only resource limits apply; the program can reach the host"],
    }


def _confine(boot: dict[str, Any]) -> dict[str, Any]:
    policy = boot["policy"]
    if not boot["confine"]:
        return _rlimits_only(policy)
    confine = _load_confine()
    drop_to = policy["dropTo"]
    config = confine.ConfinementPolicy(
        cpu_seconds=int(policy["cpuSeconds"]),
        memory_bytes=int(policy["memoryBytes"]),
        max_open_files=int(policy["maxOpenFiles"]),
        max_file_bytes=int(policy["maxFileBytes"]),
        max_processes=policy["maxProcesses"],
        read_paths=tuple(policy["readPaths"]),  # on top of confine.default_read_paths()
        read_write_paths=tuple(policy["readWritePaths"]),
        drop_to=tuple(drop_to) if drop_to is not None else None,
        landlock=bool(policy["landlock"]),
        seccomp=bool(policy["seccomp"]),
    )
    report = confine.confine(config)
    return {
        "layers": [str(layer) for layer in report.get("layers", ())],
        "landlockAbi": report.get("landlockAbi"),
        "enforcement": report.get("enforcement", "partial"),
        "notes": [str(note) for note in report.get("notes", ())],
    }


# --- output ------------------------------------------------------------------------------------------


def _emit_log(text: str) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > _S.out_left:
        # Send just enough to take the host over its cap (it kills the run), then wait to be killed.
        _S.chan.send_text('{"t":"log","text":' + _quote(text[: _S.out_left + 1]) + "}")
        _S.out_left = -1
        while True:
            _S.chan.fill()
    _S.out_left -= size
    _S.chan.send_text('{"t":"log","text":' + _quote(text) + "}")


class _LogStream:
    """``sys.stdout`` inside the program: complete lines become log entries."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self) -> None:
        self._partial = ""

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        data = self._partial + text
        *lines, self._partial = data.split("\n")
        for line in lines:
            _emit_log(line)
        return len(text)

    def flush(self) -> None:
        if self._partial:
            partial, self._partial = self._partial, ""
            _emit_log(partial)

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


_STDOUT = _LogStream()
_real_print = builtins.print


def _print(
    *values: object, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
) -> None:
    if file is not None and file is not _STDOUT:
        _real_print(*values, sep=sep, end=end, file=file, flush=flush)
        return
    if sep is not None and type(sep) is not str:
        raise TypeError(f"sep must be None or a string, not {type(sep).__name__}")
    _STDOUT.flush()
    _emit_log((" " if sep is None else sep).join(str(value) for value in values))


# --- bindings ----------------------------------------------------------------------------------------


class _Namespace:
    """A binding global (``tools``): ``tools.name(args)`` and ``tools["name"](args)``."""

    __slots__ = ("_dsh_error", "_dsh_global", "_dsh_member", "_dsh_names")

    def __init__(self, name: str, names: list[str], error: type[Exception], member: str | None) -> None:
        self._dsh_global = name
        self._dsh_names = names
        self._dsh_error = error
        self._dsh_member = member

    def __getattr__(self, name: str) -> _Binding:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Binding(self, name)

    def __getitem__(self, name: str) -> _Binding:
        if type(name) is not str:
            raise TypeError(f"binding names are strings, not {type(name).__name__}")
        return _Binding(self, name)

    def __dir__(self) -> list[str]:
        return list(self._dsh_names)

    def __repr__(self) -> str:
        return f"<bindings {self._dsh_global}: {len(self._dsh_names)} functions>"

    def _dsh_raise(self, name: str, message: str) -> Exception:
        error = self._dsh_error(message)
        if self._dsh_member is not None:
            setattr(error, self._dsh_member, name)
        return error


class _Binding:
    __slots__ = ("name", "namespace")

    def __init__(self, namespace: _Namespace, name: str) -> None:
        self.namespace = namespace
        self.name = name

    def __repr__(self) -> str:
        return f"<binding {self.namespace._dsh_global}.{self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) > 1 or (args and kwargs):
            raise TypeError(
                f"{self.namespace._dsh_global}.{self.name}() takes one arguments object (or keywords)"
            )
        payload = args[0] if args else kwargs
        try:
            text: str | None = _dumps(payload)
        except _NotLossless:
            text = None
        return _invoke(self.namespace, self.name, text)


class _Await:
    """What the tiny driver sees when the program awaits a binding call."""

    __slots__ = ("args", "name", "namespace")

    def __init__(self, namespace: str, name: str, args: str) -> None:
        self.namespace = namespace
        self.name = name
        self.args = args

    def __await__(self) -> Any:
        reply = yield self
        return reply


def _call_frame(namespace: str, name: str, args: str) -> tuple[int, str]:
    _S.next_id += 1
    call_id = _S.next_id
    return call_id, (
        f'{{"t":"call","id":{call_id},"ns":{_quote(namespace)},"name":{_quote(name)},"args":{args}}}'
    )


def _call_blocking(request: _Await) -> dict[str, Any]:
    call_id, frame = _call_frame(request.namespace, request.name, request.args)
    _S.chan.send_text(frame)
    while call_id not in _S.replies:
        reply = _S.chan.recv()
        if reply.get("t") == "reply" and type(reply.get("id")) is int:
            _S.replies[reply["id"]] = reply
    return _S.replies.pop(call_id)


async def _call_async(namespace: str, name: str, args: str) -> dict[str, Any]:
    await _S.semaphore.acquire()
    future = _S.loop.create_future()
    try:
        call_id, frame = _call_frame(namespace, name, args)
        _S.pending[call_id] = future
        _S.chan.send_text(frame)
    except BaseException:
        _S.semaphore.release()
        raise
    reply: dict[str, Any] = await future
    return reply


def _on_readable() -> None:
    """asyncio mode: read what the host sent and resolve the matching calls."""
    _S.chan.fill()
    while True:
        frame = _S.chan.pop()
        if frame is None:
            return
        call_id = frame.get("id")
        future = _S.pending.pop(call_id, None) if frame.get("t") == "reply" and type(call_id) is int else None
        if future is not None:
            _S.semaphore.release()
            if not future.done():
                future.set_result(frame)


async def _invoke(namespace: _Namespace, name: str, args: str | None) -> Any:
    if args is None:
        raise namespace._dsh_raise(name, "binding arguments must be lossless JSON")
    if _S.loop is not None:
        reply = await _call_async(namespace._dsh_global, name, args)
    else:
        reply = await _Await(namespace._dsh_global, name, args)
    if reply.get("ok") is True:
        return reply.get("value")
    message = reply.get("message")
    raise namespace._dsh_raise(name, message if type(message) is str else "binding call failed")


def _error_class(name: str, member: str) -> type[Exception]:
    return type(name, (Exception,), {"__module__": "builtins", "__qualname__": name, member: None})


# --- compiling and driving the program -----------------------------------------------------------


def _compile(program: str) -> Any:
    ast: Any = _ast  # node constructors typed loosely: the marker constant is a tuple
    tree: Any = compile(program, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    body = list(tree.body)
    last = max((getattr(node, "end_lineno", None) or 1 for node in body), default=1)
    position = {"lineno": last, "col_offset": 0, "end_lineno": last, "end_col_offset": 0}
    fallthrough = ast.Return(value=ast.Constant(value=_S.marker, **position), **position)
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    function = ast.AsyncFunctionDef(
        name="__dsh_main__",
        args=arguments,
        body=[*body, fallthrough],
        decorator_list=[],
        returns=None,
        type_comment=None,
        lineno=1,
        col_offset=0,
        end_lineno=last,
        end_col_offset=0,
    )
    if "type_params" in ast.AsyncFunctionDef._fields:
        function.type_params = []
    module = ast.Module(body=[function], type_ignores=[])
    return compile(module, FILENAME, "exec", dont_inherit=True)


def _needs_asyncio(program: str) -> bool:
    return "asyncio" in program or "__import__" in program or "importlib" in program


def _drive(coroutine: Any) -> Any:
    """Run a coroutine whose only suspensions are binding calls (no event loop needed)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is not None:
                thrown, error = error, None
                yielded = coroutine.throw(thrown)
            else:
                yielded = coroutine.send(value)
        except StopIteration as stop:
            return stop.value
        value = None
        if type(yielded) is _Await:
            try:
                value = _call_blocking(yielded)
            except BaseException as failure:
                error = failure
        else:
            error = RuntimeError(
                "this program awaited something other than a binding call without an event loop; "
                "import asyncio to use asyncio features"
            )


def _run_asyncio(main: Any) -> Any:
    import asyncio

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _S.loop = loop
    _S.semaphore = asyncio.Semaphore(_S.max_in_flight)
    loop.add_reader(CHANNEL_FD, _on_readable)
    return loop.run_until_complete(main())


# --- rendering failures (program frames only) ---------------------------------------------------------


def _type_name(error: BaseException) -> str:
    kind = type(error)
    module = getattr(kind, "__module__", "builtins")
    qualname = getattr(kind, "__qualname__", kind.__name__)
    return qualname if module in ("builtins", "__main__", "__run_code__") else f"{module}.{qualname}"


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except BaseException:
        return "<exception str() failed>"


def _source_line(lineno: int | None) -> str:
    lines = _S.program_lines
    if lineno is not None and 0 < lineno <= len(lines):
        return lines[lineno - 1].strip()
    return ""


def _syntax_lines(error: SyntaxError) -> list[str]:
    out = [f'  File "{FILENAME}", line {error.lineno}']
    text = error.text if error.text is not None else _source_line(error.lineno)
    if text:
        stripped = text.rstrip("\n")
        indent = len(stripped) - len(stripped.lstrip())
        out.append("    " + stripped.strip())
        if error.offset:
            out.append("    " + " " * max(error.offset - 1 - indent, 0) + "^")
    out.append(f"{_type_name(error)}: {error.msg}")
    return out


def _frames(error: BaseException) -> list[str]:
    entries: list[tuple[int | None, str]] = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == FILENAME:
            name = "<module>" if code.co_name == "__dsh_main__" else code.co_name
            entries.append((tb.tb_lineno, name))
        tb = tb.tb_next
    out: list[str] = []
    previous: tuple[int | None, str] | None = None
    repeats = 0
    for index, entry in enumerate(entries):
        if len(entries) > 2 * _TRACEBACK_FRAMES and index == _TRACEBACK_FRAMES:
            out.append(f"  [... {len(entries) - 2 * _TRACEBACK_FRAMES} more frames ...]")
        if (
            len(entries) > 2 * _TRACEBACK_FRAMES
            and _TRACEBACK_FRAMES <= index < len(entries) - _TRACEBACK_FRAMES
        ):
            continue
        if entry == previous:
            repeats += 1
            if repeats >= 3:
                continue
        else:
            if repeats >= 3:
                out.append(f"  [Previous line repeated {repeats - 2} more times]")
            repeats = 0
        previous = entry
        out.append(f'  File "{FILENAME}", line {entry[0]}, in {entry[1]}')
        source = _source_line(entry[0])
        if source:
            out.append("    " + source)
    if repeats >= 3:
        out.append(f"  [Previous line repeated {repeats - 2} more times]")
    return out


def _render_one(error: BaseException, indent: str = "") -> list[str]:
    out: list[str] = []
    frames = _frames(error)
    if frames:
        out.append("Traceback (most recent call last):")
        out.extend(frames)
    if isinstance(error, SyntaxError) and error.filename == FILENAME:
        out.extend(_syntax_lines(error))
    else:
        message = _safe_str(error)
        out.append(f"{_type_name(error)}: {message}" if message else _type_name(error))
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list | tuple):
        out.extend(str(note) for note in notes)
    if isinstance(error, BaseExceptionGroup):
        for number, inner in enumerate(error.exceptions[:10], 1):
            out.append(f"+---------------- {number} ----------------")
            out.extend("| " + line for line in _render_one(inner))
    return [indent + line for line in out]


def _format_failure(error: BaseException) -> str:
    chain: list[tuple[BaseException, str]] = []
    seen: set[int] = set()
    current: BaseException | None = error
    link = ""
    while current is not None and id(current) not in seen and len(chain) < 10:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            link = "\nThe above exception was the direct cause of the following exception:\n"
            current = current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            link = "\nDuring handling of the above exception, another exception occurred:\n"
            current = current.__context__
        else:
            current = None
    lines: list[str] = []
    for index in range(len(chain) - 1, -1, -1):
        lines.extend(_render_one(chain[index][0]))
        if index:
            lines.append(chain[index][1])
    text = "\n".join(lines)
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "\n[... traceback truncated]"


def _failure_kind(error: BaseException) -> str:
    if isinstance(error, MemoryError):
        return "memory-limit"
    if isinstance(error, OSError) and error.errno in (27, 28, 122):  # EFBIG, ENOSPC, EDQUOT
        return "disk-limit"
    return "exception"


# --- main ------------------------------------------------------------------------------------------


def _finish(frame: str) -> None:
    _S.chan.send_text(frame)
    os._exit(0)


def _fail(kind: str, message: str) -> None:
    _finish('{"t":"done","ok":false,"kind":' + _quote(kind) + ',"message":' + _quote(message) + "}")


def _run(run: dict[str, Any]) -> None:
    program = run["program"]
    limits = run["limits"]
    _S.out_left = int(limits["outputBytes"])
    _S.value_limit = int(limits["valueBytes"])
    _S.max_in_flight = max(int(limits["maxInFlight"]), 1)
    _S.program_lines = program.splitlines()
    _S.marker = ("__dsh_no_value__", os.urandom(12).hex())

    program_builtins = dict(builtins.__dict__)
    program_builtins["print"] = _print
    namespace: dict[str, Any] = {
        "__builtins__": program_builtins,
        "__name__": "__run_code__",
        "__doc__": None,
    }
    for binding in run["bindings"]:
        error_spec = binding["errorClass"]
        if error_spec is not None:
            error_class = _error_class(error_spec["name"], error_spec["member"])
            namespace[error_spec["name"]] = error_class
            member: str | None = error_spec["member"]
        else:
            error_class, member = RuntimeError, None
        namespace[binding["global"]] = _Namespace(
            binding["global"], list(binding["names"]), error_class, member
        )

    try:
        code = _compile(program)
    except SyntaxError as error:
        _fail("exception", "\n".join(_syntax_lines(error)))
        return
    exec(code, namespace)
    main = namespace.pop("__dsh_main__")
    sys.stdout = _STDOUT
    try:
        if _needs_asyncio(program):
            result = _run_asyncio(main)
        else:
            coroutine = main()
            if type(coroutine).__name__ != "coroutine":
                raise SyntaxError("'yield' is not allowed at the top level of a run_code program")
            result = _drive(coroutine)
        _STDOUT.flush()
    except BaseException as error:
        if isinstance(error, MemoryError):
            _S.reserve = None
        _fail(_failure_kind(error), _format_failure(error))
        return
    if type(result) is tuple and result == _S.marker:
        _finish('{"t":"done","ok":true}')
        return
    try:
        value = _dumps(result)
    except _NotLossless:
        _fail("invalid-output", "program completion must be lossless JSON")
        return
    if len(value) > _S.value_limit:
        _fail("value-limit", f"completion value of {len(value)} bytes exceeds {_S.value_limit}")
        return
    _finish('{"t":"done","ok":true,"value":' + value + "}")


def main() -> None:
    fd = int(sys.argv[1])
    if fd != CHANNEL_FD:
        os.dup2(fd, CHANNEL_FD, inheritable=False)
        os.close(fd)
    if os.getpid() == 1:
        _become_reaper()
    _S.chan = _Channel(CHANNEL_FD)
    boot = _S.chan.recv()
    try:
        for name in boot.get("preimport", ()):
            __import__(name)
        report = _confine(boot)
    except BaseException as error:
        _S.chan.send({"t": "boot-failed", "message": f"{type(error).__name__}: {error}"})
        os._exit(3)
    _S.chan.send({"t": "ready", "report": report})
    _S.reserve = bytearray(1 << 18)  # released on MemoryError so the failure can still be reported
    run = _S.chan.recv()
    try:
        _run(run)
    except MemoryError:
        _S.reserve = None
        _fail("memory-limit", "MemoryError")
    except BaseException as error:
        _fail("exception", f"{type(error).__name__}: {_safe_str(error)}")
    os._exit(0)


if __name__ == "__main__":
    main()
