"""Where a bash command runs: unconfined, or under the sandbox's confinement like a Code Mode program.

Why a sandbox for a shell at all: a model's command runs with the user's rights, and one wrong
``rm -rf`` or ``curl | sh`` is enough. Confined (:func:`toolrt.sandbox.confine_command`, the same
backend ladder and layers as Code Mode), the command sees the system read-only, the workspace
read-write, a private ``/tmp``, no network unless ``allow_network``, and, on the bwrap backend, its
own pid namespace, so everything it starts dies with it, ``setsid`` or not. Its environment is a
fresh minimal one: the host's variables (API keys among them) do not reach it.

The confinement always starts a command in the workspace, so a ``cwd`` below it is entered by a
tiny shell prefix (``cd -- "$1" && exec bash -c "$2"``): the command's own text is untouched.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolrt.sandbox import CommandConfinement

__all__ = [
    "CommandLine",
    "Confinement",
    "SandboxedCommands",
    "Unconfined",
    "choose_confinement",
    "refused_reason",
]

_PROBE_TIMEOUT_S = 10.0
_QUIET_TOOLS = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
"""Nobody is at a terminal to press ``q``: pagers off, no colour codes."""


@dataclass(frozen=True)
class CommandLine:
    """What to start: the argv, the environment (``None``: the host's), the fds to pass, and
    whether the leader forks the command (bubblewrap does: see ``ShellProcess.start``)."""

    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    pass_fds: Sequence[int] = field(default_factory=tuple)
    forks: bool = False


class Confinement(Protocol):
    """Turns a shell command into the command line that runs it (confined or not), and says how."""

    @property
    def report(self) -> Mapping[str, Any] | None:
        """The isolation in force, as JSON (``None``: none)."""

    def command(self, shell: str, command: str, cwd: Path) -> CommandLine:
        """The command line that runs ``shell -c command`` in ``cwd``."""


class Unconfined:
    """Commands run as the host's own processes, in the host's environment (pagers off)."""

    @property
    def report(self) -> Mapping[str, Any] | None:
        """No isolation: ``None``."""
        return None

    def command(self, shell: str, command: str, cwd: Path) -> CommandLine:
        """``shell -c command``, started in ``cwd`` by the caller."""
        return CommandLine((shell, "-c", command), {**os.environ, **_QUIET_TOOLS})


class SandboxedCommands:
    """Commands run under :func:`toolrt.sandbox.confine_command` (checked to work at construction)."""

    def __init__(self, workspace: Path, *, allow_network: bool) -> None:
        from toolrt.sandbox import CommandConfinement, confine_command

        self._confinement: CommandConfinement = CommandConfinement(workspace, allow_network=allow_network)
        self.workspace = workspace
        # Raises SandboxUnavailableError here, once, rather than at the model's first command.
        probe = confine_command(["/bin/true"], self._confinement)
        _check_runs(probe.argv, probe.env, workspace)
        self._report: Mapping[str, Any] = {
            **probe.report.as_json(),
            "workspace": str(workspace),
            "network": allow_network,
        }

    @property
    def report(self) -> Mapping[str, Any] | None:
        """The enforcement in force (the sandbox's isolation report), with the workspace and network."""
        return self._report

    def command(self, shell: str, command: str, cwd: Path) -> CommandLine:
        """``shell -c command`` behind the sandbox's launcher, entering ``cwd`` first."""
        from toolrt.sandbox import confine_command

        argv = [shell, "-c", command]
        if cwd != self.workspace:
            argv = [shell, "-c", 'cd -- "$1" && exec "$0" -c "$2"', shell, str(cwd), command]
        confined = confine_command(argv, self._confinement)
        forks = "bwrap" in confined.report.layers
        return CommandLine(confined.argv, {**confined.env, **_QUIET_TOOLS}, confined.pass_fds, forks)


def _check_runs(argv: Sequence[str], env: Mapping[str, str], workspace: Path) -> None:
    """Run the confined ``/bin/true`` once: a backend that is there but cannot start a command here
    (an interpreter the sandbox cannot reach, a refused namespace) counts as no sandbox."""
    from toolrt.sandbox import SandboxUnavailableError

    try:
        done = subprocess.run(
            list(argv),
            env=dict(env),
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailableError(f"a confined command did not run: {error}") from error
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).decode("utf-8", errors="replace").strip()[-300:]
        raise SandboxUnavailableError(f"a confined command exited {done.returncode}: {tail or 'no message'}")


def choose_confinement(workspace: Path, *, sandbox: bool | None, allow_network: bool) -> Confinement:
    """``sandbox=None``: the sandbox when it works here, else unconfined; ``True``: the sandbox or
    ``RuntimeError`` saying why not; ``False``: unconfined."""
    if sandbox is False:
        return Unconfined()
    from toolrt.sandbox import SandboxUnavailableError

    try:
        return SandboxedCommands(workspace, allow_network=allow_network)
    except SandboxUnavailableError as error:
        if sandbox is True:
            raise RuntimeError(
                f"bash sandbox=True, but the sandbox is not available here: {error.reason}"
            ) from error
        return Unconfined()


def refused_reason(output: str, returncode: int | None) -> str | None:
    """The launcher's refusal (``toolrt-confine: <reason>``) if the sandbox refused to run a command."""
    from toolrt.sandbox import LAUNCH_REFUSED

    if returncode != LAUNCH_REFUSED:
        return None
    for line in output.splitlines():
        if line.startswith("toolrt-confine:"):
            return line.removeprefix("toolrt-confine:").strip()
    return None
