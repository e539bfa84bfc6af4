"""Background jobs: commands that keep running between calls, read a little at a time.

A job is one :class:`~toolrt.tools._bash_process.ShellProcess` (its own process group) whose output
goes into a bounded buffer of unread bytes. ``job_output`` hands the model what arrived since its
last read; when a job prints faster than the model reads, the oldest unread bytes are dropped and
counted (``droppedBytes``), so memory stays bounded and the model knows there is a gap.

Why jobs die with their table: a job nobody can name any more (the runtime closed, the CLI exited)
is a leak, a server holding a port, a watcher burning CPU. :meth:`JobTable.close_now` (the
runtime's close hook) and :meth:`JobTable.aclose` kill every job's group and wait until it is empty.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolrt._errors import MAX_ECHO_CHARS, ToolrtError, clip_text
from toolrt.tools._bash_process import KILL_GRACE_S, ShellProcess, signal_name

__all__ = ["DEFAULT_JOB_BUFFER_BYTES", "MAX_RUNNING_JOBS", "Job", "JobStatus", "JobTable"]

DEFAULT_JOB_BUFFER_BYTES = 1 << 20
"""Unread output kept per job (1 MiB); past it the oldest unread bytes are dropped and counted."""

MAX_RUNNING_JOBS = 16
"""Jobs running at once per table: a model in a loop cannot fork the machine to death."""

_MAX_FINISHED = 64  # finished jobs remembered for job_output / job_list, oldest forgotten first
_OUTPUT_DRAIN_S = 0.5  # after the group is gone, how long a writer outside it may hold the pipe

JobStatus = Literal["running", "exited", "killed"]


@dataclass(eq=False)
class Job:
    """One background command (the table owns it; tools see :meth:`JobTable.snapshot`)."""

    id: str
    command: str
    cwd: str
    started_at: float
    buffer_limit: int
    process: ShellProcess | None = None
    unread: bytearray = field(default_factory=bytearray)
    dropped_bytes: int = 0
    total_bytes: int = 0
    killed: bool = False
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )
    pending_text: str = ""
    watcher: asyncio.Task[None] | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, chunk: bytes) -> None:
        """The process's sink: buffer ``chunk``, dropping the oldest unread bytes past the limit."""
        if not chunk:
            self.arrived.set()
            return
        self.total_bytes += len(chunk)
        self.unread += chunk
        excess = len(self.unread) - self.buffer_limit
        if excess > 0:
            del self.unread[:excess]
            self.dropped_bytes += excess
            # A cut may land inside a UTF-8 sequence: start the decoder afresh at the cut.
            self.decoder.reset()
        self.arrived.set()

    @property
    def status(self) -> JobStatus:
        """``running`` until the job's group is gone; then ``killed`` (job_kill / close) or ``exited``."""
        if not self.finished.is_set():
            return "running"
        return "killed" if self.killed else "exited"

    def exit_fields(self) -> dict[str, Any]:
        """``exitCode`` (an int, or ``None`` while running or after a signal) and ``signal``."""
        code = None if self.process is None else self.process.returncode
        if code is None or not self.finished.is_set():
            return {"exitCode": None, "signal": None}
        if code < 0:
            return {"exitCode": None, "signal": signal_name(-code)}
        return {"exitCode": code, "signal": None}


class JobTable:
    """The background jobs of one :class:`~toolrt.tools.BashTools`."""

    def __init__(
        self, *, buffer_bytes: int = DEFAULT_JOB_BUFFER_BYTES, max_running: int = MAX_RUNNING_JOBS
    ) -> None:
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)
        self._buffer_bytes = buffer_bytes
        self._max_running = max_running
        self._closed = False

    def running(self) -> list[Job]:
        """The jobs whose group is still alive."""
        return [job for job in self._jobs.values() if not job.finished.is_set()]

    def start(
        self,
        argv: Sequence[str],
        *,
        command: str,
        cwd: Path,
        shown_cwd: str,
        env: Mapping[str, str] | None,
        pass_fds: Sequence[int] = (),
        forks: bool = False,
    ) -> Job:
        """Start ``argv`` as a new job and return it (``OSError`` if it cannot start)."""
        if self._closed:
            raise ToolrtError("background jobs are closed: the runtime is shutting down", "JOBS_CLOSED")
        if len(self.running()) >= self._max_running:
            raise ToolrtError(
                f"too many background jobs: {self._max_running} are running; "
                "read or kill one (job_list, job_kill) before starting another",
                "TOO_MANY_JOBS",
            )
        job = Job(
            id=f"job-{next(self._ids)}",
            command=command,
            cwd=shown_cwd,
            started_at=time.time(),
            buffer_limit=self._buffer_bytes,
        )
        job.process = ShellProcess.start(
            argv, cwd=cwd, env=env, sink=job.take, pass_fds=pass_fds, forks=forks
        )
        job.watcher = asyncio.get_running_loop().create_task(self._watch(job))
        self._jobs[job.id] = job
        self._forget_old()
        return job

    def get(self, job_id: str) -> Job:
        """The job named ``job_id``; an unknown id is a ``UNKNOWN_JOB`` error listing the known ones."""
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise ToolrtError(
                f"no background job {clip_text(repr(job_id), MAX_ECHO_CHARS)}; known jobs: {known}",
                "UNKNOWN_JOB",
            )
        return job

    async def read(self, job_id: str, *, max_chars: int, wait_ms: int = 0) -> dict[str, Any]:
        """What arrived since the last read (at most ``max_chars``; the rest stays unread).

        ``wait_ms`` waits up to that long for output or the job's end when nothing is unread yet.
        """
        job = self.get(job_id)
        if wait_ms > 0 and not job.unread and not job.pending_text and not job.finished.is_set():
            job.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.arrived.wait(), wait_ms / 1000)
        text = job.pending_text + job.decoder.decode(bytes(job.unread), final=job.finished.is_set())
        job.unread.clear()
        job.pending_text = text[max_chars:]
        dropped, job.dropped_bytes = job.dropped_bytes, 0
        return {
            **self.snapshot(job),
            "output": text[:max_chars],
            "droppedBytes": dropped,
            "more": bool(job.pending_text),
        }

    async def kill(self, job_id: str) -> dict[str, Any]:
        """Kill the job's whole group (SIGTERM, then SIGKILL after the grace) and wait for its end."""
        job = self.get(job_id)
        if not job.finished.is_set():
            job.killed = True
            assert job.process is not None
            await job.process.terminate(KILL_GRACE_S)
            await job.finished.wait()
        return self.snapshot(job)

    def snapshot(self, job: Job) -> dict[str, Any]:
        """The job as the model sees it in ``job_list`` and at the head of ``job_output``."""
        return {
            "jobId": job.id,
            "command": job.command,
            "cwd": job.cwd,
            "status": job.status,
            **job.exit_fields(),
            "unreadBytes": len(job.unread),
            "totalBytes": job.total_bytes,
        }

    def list(self) -> list[dict[str, Any]]:
        """Every remembered job, oldest first."""
        return [self.snapshot(job) for job in self._jobs.values()]

    def close_now(self) -> None:
        """Kill every job synchronously (a runtime's ``close()`` is synchronous); idempotent."""
        self._closed = True
        for job in self.running():
            job.killed = True
            assert job.process is not None
            job.process.kill_now()

    async def aclose(self) -> None:
        """Kill every job, gracefully and all at once, and wait for their ends; idempotent."""
        self._closed = True
        jobs = self.running()
        for job in jobs:
            job.killed = True
        await asyncio.gather(
            *(job.process.terminate(KILL_GRACE_S) for job in jobs if job.process is not None)
        )
        for job in jobs:
            if job.watcher is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await job.watcher

    async def _watch(self, job: Job) -> None:
        process = job.process
        assert process is not None
        try:
            await process.wait_exit()
            # The job is its group: what the shell left behind goes with it.
            await process.terminate(KILL_GRACE_S)
            await process.wait_output(_OUTPUT_DRAIN_S)
        finally:
            process.close()
            job.finished.set()
            job.arrived.set()

    def _forget_old(self) -> None:
        finished = [job_id for job_id, job in self._jobs.items() if job.finished.is_set()]
        for job_id in finished[: max(0, len(finished) - _MAX_FINISHED)]:
            del self._jobs[job_id]
