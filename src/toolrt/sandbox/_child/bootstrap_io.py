"""What the running program sees of the host: ``print`` (and ``sys.stdout``) become ``log``
frames, binding calls go out as ``call`` frames and come back as ``reply`` frames.

Without ``asyncio`` a tiny coroutine driver (:func:`drive`) runs the program (one call in flight at
a time); a program that mentions ``asyncio`` (or imports dynamically) runs on an ``asyncio`` event
loop instead (:func:`run_asyncio`), where calls overlap, bounded by a semaphore of ``maxInFlight``
slots (a slot is returned only when the host's reply arrives, so the host never sees more calls in
flight than it allows). Part of the child bootstrap (:mod:`bootstrap` loads it by path under
``python -I -S``); standard library only, no ``toolrt`` import.

The names of what the program can touch (``_print``, ``_LogStream``, ``_Namespace``, ``_Binding``,
``_Await``, ``_invoke``) are part of what it sees, in error messages and reprs: keep them.
"""

from __future__ import annotations

import builtins

try:  # imported as part of the toolrt.sandbox._child package
    from toolrt.sandbox._child.bootstrap_wire import CHANNEL_FD, Channel, NotLossless, dumps, quote
except ImportError:  # a top-level module: loaded by path in the child
    from bootstrap_wire import (  # type: ignore[no-redef,import-not-found]
        CHANNEL_FD,
        Channel,
        NotLossless,
        dumps,
        quote,
    )

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing at run time would cost the child ~9 ms (it pulls in re)
    from typing import Any

__all__ = ["STDOUT", "drive", "program_globals", "run_asyncio", "state"]

# --- process state -----------------------------------------------------------------------------------


class _State:
    """The child's state for its one run, shared by the program's I/O and :mod:`bootstrap`."""

    chan: Channel
    out_left = 0
    value_limit = 0
    max_in_flight = 1
    next_id = 0
    loop: Any = None
    semaphore: Any = None
    pending: dict[int, Any]
    replies: dict[int, dict[str, Any]]
    reserve: bytearray | None = None

    def __init__(self) -> None:
        self.pending = {}
        self.replies = {}


state = _State()


# --- output ------------------------------------------------------------------------------------------


def _emit_log(text: str) -> None:
    # Strict UTF-8, as a real stdout: a lone surrogate raises UnicodeEncodeError in the program
    # (the host refuses one in a log frame). Each entry costs one byte more than its text, the
    # newline that joins it to the next in the rendered output, as the host counts it: so empty
    # lines are not free, and the number of entries is bounded by the output limit.
    size = len(text.encode("utf-8")) + 1
    if size > state.out_left:
        # Send just enough to take the host over its cap (it kills the run), then wait to be killed.
        state.chan.send_text('{"t":"log","text":' + quote(text[: state.out_left + 1]) + "}")
        state.out_left = -1
        while True:
            state.chan.fill()
    state.out_left -= size
    state.chan.send_text('{"t":"log","text":' + quote(text) + "}")


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


STDOUT = _LogStream()
_real_print = builtins.print


def _print(
    *values: object, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
) -> None:
    if file is not None and file is not STDOUT:
        _real_print(*values, sep=sep, end=end, file=file, flush=flush)
        return
    if sep is not None and type(sep) is not str:
        raise TypeError(f"sep must be None or a string, not {type(sep).__name__}")
    STDOUT.flush()
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
            text: str | None = dumps(payload)
        except NotLossless:
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
    state.next_id += 1
    call_id = state.next_id
    return call_id, (
        f'{{"t":"call","id":{call_id},"ns":{quote(namespace)},"name":{quote(name)},"args":{args}}}'
    )


def _call_blocking(request: _Await) -> dict[str, Any]:
    call_id, frame = _call_frame(request.namespace, request.name, request.args)
    state.chan.send_text(frame)
    while call_id not in state.replies:
        reply = state.chan.recv()
        if reply.get("t") == "reply" and type(reply.get("id")) is int:
            state.replies[reply["id"]] = reply
    return state.replies.pop(call_id)


async def _call_async(namespace: str, name: str, args: str) -> dict[str, Any]:
    await state.semaphore.acquire()
    future = state.loop.create_future()
    try:
        call_id, frame = _call_frame(namespace, name, args)
        state.pending[call_id] = future
        state.chan.send_text(frame)
    except BaseException:
        state.semaphore.release()
        raise
    reply: dict[str, Any] = await future
    return reply


def _on_readable() -> None:
    """asyncio mode: read what the host sent and resolve the matching calls."""
    state.chan.fill()
    while True:
        frame = state.chan.pop()
        if frame is None:
            return
        call_id = frame.get("id")
        future = (
            state.pending.pop(call_id, None) if frame.get("t") == "reply" and type(call_id) is int else None
        )
        if future is not None:
            state.semaphore.release()
            if not future.done():
                future.set_result(frame)


async def _invoke(namespace: _Namespace, name: str, args: str | None) -> Any:
    if args is None:
        raise namespace._dsh_raise(name, "binding arguments must be lossless JSON")
    if state.loop is not None:
        reply = await _call_async(namespace._dsh_global, name, args)
    else:
        reply = await _Await(namespace._dsh_global, name, args)
    if reply.get("ok") is True:
        return reply.get("value")
    message = reply.get("message")
    raise namespace._dsh_raise(name, message if type(message) is str else "binding call failed")


def _error_class(name: str, member: str) -> type[Exception]:
    return type(name, (Exception,), {"__module__": "builtins", "__qualname__": name, member: None})


def program_globals(bindings: list[dict[str, Any]]) -> dict[str, Any]:
    """The program's globals: the builtins with ``print`` sending log frames, and one namespace
    object per binding global (with its error class, when the binding declares one)."""
    program_builtins = dict(builtins.__dict__)
    program_builtins["print"] = _print
    namespace: dict[str, Any] = {
        "__builtins__": program_builtins,
        "__name__": "__run_code__",
        "__doc__": None,
    }
    for binding in bindings:
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
    return namespace


# --- driving the program ---------------------------------------------------------------------------


def drive(coroutine: Any) -> Any:
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


def run_asyncio(main: Any) -> Any:
    """Run the program's ``main`` on a real ``asyncio`` event loop (a program that uses asyncio)."""
    import asyncio

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    state.loop = loop
    state.semaphore = asyncio.Semaphore(state.max_in_flight)
    loop.add_reader(CHANNEL_FD, _on_readable)
    return loop.run_until_complete(main())
