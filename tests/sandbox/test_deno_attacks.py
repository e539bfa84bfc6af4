"""The sandbox attacks that apply to Deno (contract §5.3 and SD9), each judged by host-side
evidence: a file outside the sandbox the host checks, a listening socket that records every
connection, canaries (a secret file, an environment variable of the host) that must never appear
in a result. On every confined backend here, as root and (CI's second pass) as an unprivileged
user; one warm runtime per backend.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from deno_host import DenoHost
from listener import Listener
from machine import confined_backends

from toolrt.codemode import CodeRunResult

pytest.importorskip("deno", reason="the typescript extra (deno) is not installed")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the Deno runtime's tests need Linux")

BACKENDS = confined_backends()
CANARY_ENV = "TOOLRT_DENO_CANARY"


class Canaries:
    """A world-readable secret in a world-writable directory outside every sandbox, and an
    environment variable of the host process."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="toolrt-deno-canary-", dir="/tmp"))
        self.dir.chmod(0o777)
        self.secret = "SECRET-" + secrets.token_hex(12)
        self.secret_file = self.dir / "secret.txt"
        self.secret_file.write_text(self.secret)
        self.secret_file.chmod(0o644)
        self.env = "ENVCANARY-" + secrets.token_hex(12)
        os.environ[CANARY_ENV] = self.env

    def leaked(self, result: CodeRunResult) -> list[str]:
        text = json.dumps([result.logs, repr(result.value), repr(result.error)])
        return [token for token in (self.secret, self.env) if token in text]

    def close(self) -> None:
        os.environ.pop(CANARY_ENV, None)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module", params=BACKENDS)
def deno(request: pytest.FixtureRequest) -> Iterator[DenoHost]:
    host = DenoHost(request.param)
    yield host
    host.close()


@pytest.fixture
def canaries() -> Iterator[Canaries]:
    found = Canaries()
    yield found
    found.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def attempts(deno: DenoHost, *snippets: str) -> CodeRunResult:
    """Run every snippet in its own try/catch; the program returns what each one said."""
    body = "\n".join(
        f"try {{ out.push(String(await (async () => {{ {snippet} }})())); }}"
        " catch (e) { out.push(String(e)); }"
        for snippet in snippets
    )
    return deno.run(f"const out: string[] = [];\n{body}\nreturn out;")


def test_files_outside_are_neither_read_nor_written(deno: DenoHost, canaries: Canaries) -> None:
    """SD9 (SA1, SA3): reading a world-readable secret (``Deno.readTextFile``, a static-looking
    dynamic ``import``, ``fetch("file://...")``) and writing into a world-writable directory fail:
    the secret never reaches the result, the host finds no new file."""
    target = canaries.dir / "written.txt"
    secret = canaries.secret_file
    result = attempts(
        deno,
        f"return await Deno.readTextFile({str(secret)!r});",
        f"return JSON.stringify(await import({secret.as_uri()!r}));",
        f"return await (await fetch({secret.as_uri()!r})).text();",
        f"await Deno.writeTextFile({str(target)!r}, 'x'); return 'wrote';",
        "return JSON.stringify(await import('file:///etc/passwd'));",
    )
    assert result.error is None, result.error
    assert not canaries.leaked(result)
    assert not target.exists()
    assert all("root:x:0:0" not in line for line in result.value)  # /etc/passwd stayed unread
    assert "wrote" not in result.value


def test_no_network_and_no_remote_imports(deno: DenoHost, listener: Listener) -> None:
    """SD9 (SA12, network imports): ``fetch``, ``Deno.connect``, a WebSocket, a remote and a
    dynamic ``import`` of a loopback URL, and ``import("https://esm.sh/x")``: the host's listener
    never accepts a connection."""
    url = f"http://127.0.0.1:{listener.port}"
    result = attempts(
        deno,
        f"return (await fetch({url!r})).status;",
        f"await Deno.connect({{hostname: '127.0.0.1', port: {listener.port}}}); return 'connected';",
        f"return JSON.stringify(await import({url + '/mod.ts'!r}));",
        "return JSON.stringify(await import('https://esm.sh/x'));",
        f"const ws = new WebSocket({('ws://127.0.0.1:' + str(listener.port))!r}); "
        "await new Promise((r) => { ws.onerror = r; ws.onopen = r; setTimeout(r, 500); });"
        " return ws.readyState;",
    )
    assert result.error is None, result.error
    threading.Event().wait(0.3)
    assert listener.accepted == 0, "a Deno program reached a host listener"
    assert "connected" not in result.value


def test_the_environment_is_not_visible(deno: DenoHost, canaries: Canaries) -> None:
    """SD9 (SA8, SA9, SA10): ``Deno.env``, ``/proc/self/environ`` and the host's
    ``/proc/<pid>/environ`` hold nothing of the host's environment."""
    result = attempts(
        deno,
        "return JSON.stringify(Deno.env.toObject());",
        f"return Deno.env.get({CANARY_ENV!r});",
        "return await Deno.readTextFile('/proc/self/environ');",
        f"return await Deno.readTextFile('/proc/{os.getpid()}/environ');",
        f"return await Deno.readTextFile('/proc/{os.getpid()}/cmdline');",
    )
    assert result.error is None, result.error
    assert not canaries.leaked(result)


def test_subprocesses_and_ffi_are_denied(deno: DenoHost, canaries: Canaries) -> None:
    """SD9 (SA18): ``Deno.Command`` and ``Deno.dlopen`` of libc (to call ``system``) both fail:
    the marker file each would create never appears."""
    marker = canaries.dir / "spawned"
    libc = next(
        (
            path
            for path in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6")
            if os.path.exists(path)
        ),
        "libc.so.6",
    )
    touch = f"/usr/bin/touch {marker}"
    result = attempts(
        deno,
        f"await new Deno.Command('/bin/sh', {{args: ['-c', {touch!r}]}}).output(); return 'spawned';",
        f"const lib = Deno.dlopen({libc!r}, {{system: {{parameters: ['buffer'], result: 'i32'}}}}); "
        f"return lib.symbols.system(new TextEncoder().encode({touch!r} + '\\0'));",
    )
    assert result.error is None, result.error
    assert not marker.exists(), "a Deno program ran a process"
    assert all("NotCapable" in line or "PermissionDenied" in line for line in result.value), result.value


def test_proc_of_the_host_is_not_readable(deno: DenoHost) -> None:
    """SD9 (SA11): the host's ``/proc`` (its pid 1, the test process) cannot be listed or read."""
    result = attempts(
        deno,
        "return JSON.stringify([...Deno.readDirSync('/proc')].map((e) => e.name));",
        "return Deno.readTextFileSync('/proc/1/cmdline');",
        f"return Deno.readTextFileSync('/proc/{os.getpid()}/status');",
    )
    assert result.error is None, result.error
    assert all(line.startswith(("NotCapable", "PermissionDenied")) for line in result.value), result.value


def test_workers_are_not_available(deno: DenoHost, listener: Listener) -> None:
    """SD9: a Worker (another isolate, outside the memory limit the host set) cannot be created;
    the one the program asks for never connects to the host's listener."""
    code = f'fetch("http://127.0.0.1:{listener.port}/")'
    result = attempts(
        deno,
        f"new Worker('data:application/javascript,{code}', {{type: 'module'}}); return 'worker started';",
        "return typeof Worker;",
    )
    assert result.error is None, result.error
    threading.Event().wait(0.3)
    assert listener.accepted == 0
    assert result.value[0] != "worker started" and result.value[1] == "undefined"


def test_webassembly_memory_growth_is_bounded(deno: DenoHost) -> None:
    """SD9 (SA28): growing WebAssembly memory to 4 GiB fails under the 512 MiB default; the run
    still completes and reports how far it got."""
    result = deno.run(
        "const m = new WebAssembly.Memory({initial: 1, maximum: 65536}); let pages = 1;"
        "try { while (pages < 65536) { m.grow(256); pages += 256; } }"
        " catch (e) { return [String(e), pages]; }"
        "return ['grew', pages];"
    )
    assert result.error is None, result.error
    assert result.value[0].startswith("RangeError")
    assert result.value[1] * 65536 < 1024**3
