"""``bash`` and its background jobs: ``bash``, ``job_output``, ``job_kill``, ``job_list``.

A model with a shell can do almost anything a developer can, so the tool is built around what can
go wrong. Every command is its own process group, killed whole on timeout, cancellation, or when the
runtime closes (nothing it started outlives it). Its output is bounded (head and tail kept, a note
in place of the middle) and always valid text. Its working directory starts inside the workspace.
And, where the host has the sandbox, it runs confined: read-only system, read-write workspace, no
network unless allowed. ``cwd`` alone is no boundary (a command may ``cd /``); the sandbox is.

A nonzero exit, a signal, a timeout are *answers*, not tool failures (``isError`` stays false): the
model asked what ``make test`` does, and "it exits 2 with this output" is the answer. The value
says so (``exitCode``, ``signal``, ``timedOut``). Only a call toolrt could not carry out is an error:
a ``cwd`` outside the workspace, an unknown job, a command that cannot start.

>>> import asyncio, tempfile
>>> from toolrt import ToolRuntime
>>> from toolrt.tools import install_bash
>>> async def main() -> None:
...     runtime = ToolRuntime()
...     install_bash(runtime, tempfile.mkdtemp(), sandbox=False)
...     result = await runtime.call("bash", {"command": "echo hi; exit 3"})
...     print(result.value["exitCode"], result.value["output"].strip(), result.is_error)
...     runtime.close()
>>> asyncio.run(main())
3 hi False
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrt._abort import AbortSignal
from toolrt._content import ContentBlock
from toolrt._errors import MAX_ECHO_CHARS, OutsideRootError, ToolArgsError, ToolrtError, clip_text
from toolrt._execution import ToolRunContext
from toolrt._json import text_block_content
from toolrt._tool_decorator import tool
from toolrt._tool_definition import PresentedResult, ToolDefinition
from toolrt.cards._views import GenericCallView, TerminalCallView, TerminalResultView, ToolResultView
from toolrt.tools._bash_confinement import CommandLine, Confinement, choose_confinement, refused_reason
from toolrt.tools._bash_output import OutputCapture
from toolrt.tools._bash_process import KILL_GRACE_S, ShellProcess, signal_name
from toolrt.tools._jobs import DEFAULT_JOB_BUFFER_BYTES, MAX_RUNNING_JOBS, JobTable

if TYPE_CHECKING:
    from toolrt._tool_runtime import ToolRuntime

__all__ = ["MAX_TIMEOUT_MS", "BashTools", "install_bash"]

MAX_TIMEOUT_MS = 600_000
"""The longest a foreground command may run (10 minutes) whatever ``timeout_ms`` asks; longer
work belongs in a background job."""

_MAX_WAIT_MS = 60_000  # job_output's longest wait for news
_OUTPUT_DRAIN_S = 0.5  # after the group is gone, how long a writer outside it may hold the pipe
_EXIT_WAIT_S = 5.0
_SHELL = "/bin/bash"
_TITLE_CHARS = 200
_STATUS = re.compile(r"\[(?:exit code (?P<code>-?\d+)|killed by (?P<signal>SIG\w+)[^\]]*)\]\s*$")


class BashTools:
    """A shell for a model, confined to ``workspace``; its tools come from :meth:`definitions`.

    ``sandbox``: ``None`` (default) confines commands when the host can (the isolation in force is
    :attr:`isolation`), ``True`` requires it (``RuntimeError`` here if the host cannot), ``False``
    runs them unconfined. ``allow_network`` keeps the network inside the sandbox. ``timeout_ms`` is
    a foreground command's default deadline (a call may ask for another, up to
    :data:`MAX_TIMEOUT_MS`); ``max_output_chars`` bounds what the model reads of one command (or
    one ``job_output``). ``job_buffer_bytes`` bounds each job's unread output (1 MiB), ``max_jobs``
    how many jobs run at once (16).
    Close with :meth:`aclose` (or through the runtime, see :func:`install_bash`): it kills every job.

    >>> import tempfile
    >>> bash = BashTools(tempfile.mkdtemp(), sandbox=False)
    >>> [definition.name for definition in bash.definitions()]
    ['bash', 'job_output', 'job_kill', 'job_list']
    >>> bash.isolation is None
    True
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        sandbox: bool | None = None,
        allow_network: bool = False,
        timeout_ms: int = 120_000,
        max_output_chars: int = 30_000,
        job_buffer_bytes: int = DEFAULT_JOB_BUFFER_BYTES,
        max_jobs: int = MAX_RUNNING_JOBS,
    ) -> None:
        root = Path(workspace).resolve()
        if not root.is_dir():
            raise NotADirectoryError(f"bash workspace {str(root)!r} is not a directory")
        if not _positive_int(timeout_ms):
            raise ValueError(f"timeout_ms must be a positive integer, got {timeout_ms!r}")
        if not _positive_int(max_output_chars) or max_output_chars < 100:
            raise ValueError(f"max_output_chars must be an integer of at least 100, got {max_output_chars!r}")
        if not _positive_int(job_buffer_bytes) or not _positive_int(max_jobs):
            raise ValueError(
                f"job_buffer_bytes and max_jobs must be positive integers, got {job_buffer_bytes!r}, "
                f"{max_jobs!r}"
            )
        self.workspace = root
        self.timeout_ms = timeout_ms
        self.max_timeout_ms = max(timeout_ms, MAX_TIMEOUT_MS)
        self.max_output_chars = max_output_chars
        self.allow_network = allow_network
        self._confinement: Confinement = choose_confinement(
            root, sandbox=sandbox, allow_network=allow_network
        )
        self._jobs = JobTable(buffer_bytes=job_buffer_bytes, max_running=max_jobs)
        self._foreground: set[ShellProcess] = set()

    @property
    def isolation(self) -> Mapping[str, Any] | None:
        """The confinement commands run under (``None``: unconfined), as the result's meta shows it.

        The sandbox's isolation report as JSON (``kind``, ``enforcement``, ``layers`` such as
        ``bwrap``, ``landlock``, ``seccomp``, ``notes``) with the ``workspace`` and ``network``.
        """
        return self._confinement.report

    def definitions(self) -> list[ToolDefinition]:
        """The four tools: ``bash``, ``job_output``, ``job_kill``, ``job_list``."""
        return [self._bash_tool(), self._job_output_tool(), self._job_kill_tool(), self._job_list_tool()]

    async def aclose(self) -> None:
        """Kill every job and every running command (their whole groups) and wait for their end."""
        processes = list(self._foreground)
        await asyncio.gather(self._jobs.aclose(), *(process.terminate() for process in processes))

    def close_now(self) -> None:
        """Synchronous :meth:`aclose` (a runtime's ``close()`` is synchronous): kill everything now."""
        self._jobs.close_now()
        for process in list(self._foreground):
            process.kill_now()

    # --- the tools -------------------------------------------------------------------------------

    def _bash_tool(self) -> ToolDefinition:
        owner = self

        async def bash(
            command: str,
            description: str = "",
            *,
            ctx: ToolRunContext,
            timeout_ms: int | None = None,
            cwd: str = ".",
            background: bool = False,
        ) -> dict[str, Any]:
            """Run a shell command (bash) in the workspace and return its output and exit code.

            Output is stdout and stderr combined; long output keeps its head and tail. A nonzero
            exit code is reported, not raised. Use background=true for servers and watchers, then
            job_output to read them and job_kill to stop them.

            Args:
                command: The bash command line to run.
                description: What the command does, in a few words (shown to the user).
                timeout_ms: Deadline in ms for a foreground command (default 120000, at most 600000).
                cwd: Working directory, relative to the workspace (it must stay inside it).
                background: Start it as a background job and return its job id at once.
            """
            return await owner._run(
                command, ctx.signal, timeout_ms=timeout_ms, cwd=cwd, background=background
            )

        return tool(
            # The body has its own deadline and kills its group; the runtime's must not cut it first.
            timeout_ms=self.max_timeout_ms + int(3 * KILL_GRACE_S * 1000) + 5_000,
            max_output_chars=self.max_output_chars + 1_000,
            render=self._render_bash,
            presentation_meta=self._bash_meta,
            present_call=self._present_bash_call,
            present_result=self._present_bash_result,
        )(bash)

    def _job_output_tool(self) -> ToolDefinition:
        jobs = self._jobs
        cap = self.max_output_chars

        async def job_output(job_id: str, wait_ms: int = 0) -> dict[str, Any]:
            """Read a background job's output that arrived since the last read, with its status.

            Args:
                job_id: The id bash returned (e.g. "job-1").
                wait_ms: Wait up to this long (at most 60000) for new output or the job's end.
            """
            if not isinstance(wait_ms, int) or wait_ms < 0:
                raise ToolArgsError(['"wait_ms" must be a non-negative integer'])
            return await jobs.read(job_id, max_chars=cap, wait_ms=min(wait_ms, _MAX_WAIT_MS))

        return tool(
            is_concurrency_safe=lambda args: True,
            max_output_chars=cap + 1_000,
            render=_render_job_output,
            presentation_meta=_job_meta,
            present_result=_present_job_result,
        )(job_output)

    def _job_kill_tool(self) -> ToolDefinition:
        jobs = self._jobs

        async def job_kill(job_id: str) -> dict[str, Any]:
            """Stop a background job: its whole process group gets SIGTERM, then SIGKILL.

            Args:
                job_id: The id bash returned (e.g. "job-1").
            """
            return await jobs.kill(job_id)

        return tool(job_kill)

    def _job_list_tool(self) -> ToolDefinition:
        jobs = self._jobs

        async def job_list() -> dict[str, Any]:
            """List the background jobs with their status, exit code and unread output size."""
            return {"jobs": jobs.list()}

        return tool(is_concurrency_safe=lambda args: True)(job_list)

    # --- running a command -----------------------------------------------------------------------

    async def _run(
        self, command: str, signal: AbortSignal, *, timeout_ms: int | None, cwd: str, background: bool
    ) -> dict[str, Any]:
        if not command.strip():
            raise ToolArgsError(['"command" must not be empty'])
        if "\x00" in command:
            raise ToolArgsError(['"command" must not contain a NUL character'])
        if timeout_ms is not None and (not _positive_int(timeout_ms)):
            raise ToolArgsError(['"timeout_ms" must be a positive integer'])
        directory, shown = self._resolve_cwd(cwd)
        try:
            line = self._confinement.command(_SHELL, command, directory)
        except (ValueError, RuntimeError) as error:  # the workspace went away, the sandbox with it
            raise ToolrtError(f"the command could not be confined: {error}", "SANDBOX_REFUSED") from error
        if background:
            try:
                job = self._jobs.start(
                    line.argv,
                    command=command,
                    cwd=directory,
                    shown_cwd=shown,
                    env=line.env,
                    pass_fds=line.pass_fds,
                    forks=line.forks,
                )
            except OSError as error:
                raise _cannot_start(error) from error
            return {"kind": "background", "jobId": job.id, "cwd": shown}
        deadline_ms = min(timeout_ms if timeout_ms is not None else self.timeout_ms, self.max_timeout_ms)
        return await self._foreground_run(
            line,
            directory=directory,
            shown=shown,
            deadline_ms=deadline_ms,
            signal=signal,
        )

    async def _foreground_run(
        self,
        line: CommandLine,
        *,
        directory: Path,
        shown: str,
        deadline_ms: int,
        signal: AbortSignal,
    ) -> dict[str, Any]:
        capture = OutputCapture(self.max_output_chars)
        started = time.monotonic()
        try:
            process = ShellProcess.start(
                line.argv,
                cwd=directory,
                env=line.env,
                sink=capture.feed,
                pass_fds=line.pass_fds,
                forks=line.forks,
            )
        except OSError as error:
            raise _cannot_start(error) from error
        self._foreground.add(process)
        timed_out = False
        try:
            exit_wait = asyncio.ensure_future(process.wait_exit())
            abort_wait = asyncio.ensure_future(signal.wait())
            try:
                done, _ = await asyncio.wait(
                    {exit_wait, abort_wait}, timeout=deadline_ms / 1000, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                exit_wait.cancel()
                abort_wait.cancel()
            timed_out = not done
        finally:
            # Shielded: a cancelled call still returns only once its whole group is gone.
            await asyncio.shield(self._finish(process))
        code = process.returncode
        text, truncated = capture.text()
        refusal = refused_reason(text, code)
        if refusal is not None:
            raise ToolrtError(f"the sandbox refused to run the command: {refusal}", "SANDBOX_REFUSED")
        return {
            "kind": "foreground",
            "exitCode": code if code is not None and code >= 0 else None,
            "signal": signal_name(-code) if code is not None and code < 0 else None,
            "timedOut": timed_out,
            "output": text,
            "truncated": truncated,
            "durationMs": int((time.monotonic() - started) * 1000),
            "timeoutMs": deadline_ms,
            "cwd": shown,
        }

    async def _finish(self, process: ShellProcess) -> None:
        try:
            # The command is its group: whatever the shell left behind goes too (use background=true
            # for something that must keep running).
            await process.terminate(KILL_GRACE_S)
            with contextlib.suppress(TimeoutError):
                # Bounded: a process stuck in the kernel (D state) must not hang the call forever.
                await asyncio.wait_for(process.wait_exit(), _EXIT_WAIT_S)
            await process.wait_output(_OUTPUT_DRAIN_S)
        finally:
            process.close()
            self._foreground.discard(process)

    def _resolve_cwd(self, cwd: str) -> tuple[Path, str]:
        try:
            candidate = (self.workspace / cwd).resolve()
        except (OSError, ValueError) as error:
            raise ToolArgsError(
                [f'"cwd" {clip_text(repr(cwd), MAX_ECHO_CHARS)} is not a usable path: {error}']
            ) from error
        if candidate != self.workspace and self.workspace not in candidate.parents:
            raise OutsideRootError(cwd)
        if not candidate.is_dir():
            raise ToolrtError(
                f"cwd {clip_text(repr(cwd), MAX_ECHO_CHARS)} is not a directory in the workspace",
                "NOT_A_DIRECTORY",
            )
        shown = "." if candidate == self.workspace else str(candidate.relative_to(self.workspace))
        return candidate, shown

    # --- what the model and the user see ---------------------------------------------------------

    def _render_bash(self, args: Any, value: Any) -> Sequence[ContentBlock]:
        if value.get("kind") == "background":
            job = value["jobId"]
            return text_block_content(
                f'Started background job {job}. Read its output with job_output({{"job_id": "{job}"}}); '
                "stop it with job_kill."
            )
        output = value["output"]
        body = output if output.endswith("\n") or not output else output + "\n"
        return text_block_content((body or "(no output)\n") + _status_line(value))

    def _bash_meta(self, args: Any, value: Any) -> dict[str, Any]:
        meta: dict[str, Any] = {"kind": value.get("kind"), "isolation": self.isolation}
        for key in ("jobId", "exitCode", "signal", "timedOut", "truncated", "cwd"):
            if key in value:
                meta[key] = value[key]
        return meta

    def _present_bash_call(self, args: Any) -> TerminalCallView | GenericCallView:
        command = str(args.get("command", ""))
        title = clip_text(command, _TITLE_CHARS)
        if args.get("background") is True:
            return {"card": "generic", "title": f"background job: {title}", "kind": "execute"}
        view: TerminalCallView = {"card": "terminal", "title": title}
        description = args.get("description")
        if isinstance(description, str) and description:
            view["description"] = clip_text(description, _TITLE_CHARS)
        cwd = args.get("cwd")
        if isinstance(cwd, str) and cwd not in ("", "."):
            view["cwd"] = cwd
        return view

    def _present_bash_result(self, args: Any, result: PresentedResult) -> ToolResultView | None:
        meta = result.get("meta")
        text = _content_text(result.get("content", ()))
        if result.get("is_error") or (isinstance(meta, Mapping) and meta.get("kind") == "background"):
            return None  # the generic card shows an error or a job's start as its text
        # The card shows the exit code or signal in fields of its own; the model's status line would
        # repeat it under the output (a timeout's line says more than the fields, so it stays).
        status = _STATUS.search(text)
        output = text[: status.start()].rstrip("\n") if status and "timed out" not in status[0] else text
        view: TerminalResultView = {"card": "terminal", "title": _isolation_title(meta), "output": output}
        code, name = _exit_of(meta, text)
        if code is not None:
            view["exitCode"] = code
        if name is not None:
            view["signal"] = name
        return view


def install_bash(runtime: ToolRuntime, workspace: str | os.PathLike[str], **options: Any) -> BashTools:
    """Register ``bash``, ``job_output``, ``job_kill`` and ``job_list`` on ``runtime``.

    ``options`` are :class:`BashTools`'s. The runtime's ``close()`` kills every job and running
    command (``runtime.on_close``), so nothing a model started outlives the runtime.

    >>> import tempfile
    >>> from toolrt import ToolRuntime
    >>> runtime = ToolRuntime()
    >>> bash = install_bash(runtime, tempfile.mkdtemp(), sandbox=False)
    >>> sorted(schema["name"] for schema in runtime.schemas())
    ['bash', 'job_kill', 'job_list', 'job_output']
    >>> runtime.close()
    """
    tools = BashTools(workspace, **options)
    for definition in tools.definitions():
        runtime.register(definition)
    runtime.on_close(tools.close_now)
    return tools


# --- helpers ------------------------------------------------------------------------------------


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _cannot_start(error: OSError) -> ToolrtError:
    return ToolrtError(f"the command could not start: {error.strerror or error}", "COMMAND_NOT_STARTED")


def _status_line(value: Mapping[str, Any]) -> str:
    if value.get("timedOut"):
        how = (
            f"killed by {value.get('signal') or 'SIGKILL'}"
            if value.get("signal")
            else "exit code " + str(value.get("exitCode"))
        )
        return f"[{how}: timed out after {value['timeoutMs']:,} ms; the whole process group was killed]"
    if value.get("signal"):
        return f"[killed by {value['signal']}]"
    return f"[exit code {value.get('exitCode')}]"


def _exit_of(meta: Any, text: str) -> tuple[int | None, str | None]:
    """The exit code and signal: from the result's meta, else parsed from its status line (replay)."""
    if isinstance(meta, Mapping) and ("exitCode" in meta or "signal" in meta):
        code, name = meta.get("exitCode"), meta.get("signal")
        return (code if isinstance(code, int) else None), (name if isinstance(name, str) else None)
    match = _STATUS.search(text)
    if match is None:
        return None, None
    return (int(match["code"]) if match["code"] else None), match["signal"]


def _isolation_title(meta: Any) -> str:
    isolation = meta.get("isolation") if isinstance(meta, Mapping) else None
    if not isinstance(isolation, Mapping):
        return "bash"
    network = "network allowed" if isolation.get("network") else "no network"
    layers = isolation.get("layers")
    shown = "+".join(str(layer) for layer in layers) if isinstance(layers, Sequence) and layers else "sandbox"
    return f"bash (sandboxed: {shown}, {isolation.get('enforcement')} enforcement, {network})"


def _content_text(content: Any) -> str:
    parts = [
        block.get("text", "")
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    ]
    return "".join(part for part in parts if isinstance(part, str))


def _job_status_line(value: Mapping[str, Any]) -> str:
    status = value.get("status")
    if status == "running":
        state = "running"
    elif value.get("signal"):
        state = f"{status}, killed by {value['signal']}"
    else:
        state = f"{status} with code {value.get('exitCode')}"
    notes = [f"job {value.get('jobId')}: {state}"]
    if value.get("droppedBytes"):
        notes.append(f"{value['droppedBytes']:,} bytes of older output were dropped unread")
    if value.get("more"):
        notes.append("more output is waiting: call job_output again")
    return "[" + "; ".join(notes) + "]"


def _render_job_output(args: Any, value: Any) -> Sequence[ContentBlock]:
    output = value["output"]
    body = output if output.endswith("\n") or not output else output + "\n"
    return text_block_content(body + _job_status_line(value))


def _job_meta(args: Any, value: Any) -> dict[str, Any]:
    return {
        key: value[key] for key in ("jobId", "status", "exitCode", "signal", "droppedBytes") if key in value
    }


def _present_job_result(args: Any, result: PresentedResult) -> ToolResultView | None:
    if result.get("is_error"):
        return None
    meta = result.get("meta")
    view: TerminalResultView = {
        "card": "terminal",
        "title": f"job {args.get('job_id')}",
        "output": _content_text(result.get("content", ())),
    }
    if isinstance(meta, Mapping):
        if isinstance(meta.get("exitCode"), int):
            view["exitCode"] = meta["exitCode"]
        if isinstance(meta.get("signal"), str):
            view["signal"] = meta["signal"]
    return view
