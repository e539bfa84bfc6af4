"""TypeScript Code Mode on Deno (contract §5.5, SD1-SD7): programs, limits, failure kinds and the
SDK the prompt carries, on every confined backend here, with one warm runtime per backend.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from deno_host import DenoHost
from machine import confined_backends

from toolrt import ToolRuntime, tool
from toolrt.codemode import NO_VALUE, CodeRunLimits, CodeRunRequest
from toolrt.codemode._prompt_sections import render_sdk
from toolrt.sandbox import DenoTypeScriptRuntime
from toolrt.sandbox._backends.deno import DENO_FLAGS

pytest.importorskip("deno", reason="the typescript extra (deno) is not installed")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the Deno runtime's tests need Linux")

BACKENDS = confined_backends()


@pytest.fixture(scope="module", params=BACKENDS)
def deno(request: pytest.FixtureRequest) -> Iterator[DenoHost]:
    host = DenoHost(request.param)
    yield host
    host.close()


async def add(args: dict[str, Any]) -> Any:
    return args["a"] + args["b"]


async def slow_echo(args: dict[str, Any]) -> Any:
    await asyncio.sleep(args.get("delay", 0))
    return args["value"]


async def refuse(args: dict[str, Any]) -> Any:
    raise ValueError("refused: " + str(args.get("why")))


TOOLS = {"add": add, "echo": slow_echo, "refuse": refuse}


def test_the_flags_grant_nothing() -> None:
    """SD1: ``deno run --no-prompt --no-remote --no-npm --cached-only`` and no permission flag;
    never ``deno eval``."""
    assert DENO_FLAGS == ("run", "--no-prompt", "--no-remote", "--no-npm", "--cached-only")
    assert not any(flag.startswith("--allow") or flag == "eval" or flag == "-A" for flag in DENO_FLAGS)


def test_promise_all_over_safe_calls(deno: DenoHost) -> None:
    """SD2: calls overlap (``Promise.all``), their answers come back in order, types are stripped."""
    program = """
    interface Pair { a: number; b: number }
    type Sum = number;
    const pairs: Pair[] = [{a: 1, b: 2}, {a: 3, b: 4}, {a: 5, b: 6}];
    const sums: Sum[] = await Promise.all(pairs.map((p) => tools.add(p)));
    const echoed = await Promise.all([tools.echo({value: "slow", delay: 0.2}), tools.echo({value: "fast"})]);
    return {sums, echoed: echoed as string[]} satisfies Record<string, unknown>;
    """
    result = deno.run(program, TOOLS)
    assert result.error is None, result.error
    assert result.value == {"sums": [3, 7, 11], "echoed": ["slow", "fast"]}


def test_tool_errors_are_tool_call_errors(deno: DenoHost) -> None:
    """SD2: a failed call rejects with ``ToolCallError`` (``toolName`` set), which the program can
    catch; an unknown tool is one too, with the closest name."""
    program = """
    const out: string[] = [];
    try { await tools.refuse({why: "policy"}); } catch (e) {
      out.push(`${e instanceof ToolCallError} ${e.name} ${e.toolName} ${e.message.includes("policy")}`);
    }
    try { await tools.ad({a: 1, b: 2}); }
    catch (e) { out.push(`${e instanceof ToolCallError} ${e.message}`); }
    return out;
    """
    result = deno.run(program, TOOLS)
    assert result.error is None, result.error
    assert result.value[0] == "true ToolCallError refuse true"
    assert result.value[1].startswith('true unknown tool "ad"') and '"add"' in result.value[1]


def test_console_is_captured_and_values_returned(deno: DenoHost) -> None:
    """SD3: ``console.log/info/warn/error/debug`` become the run's output, in order; a returned
    value is the completion; no return is ``NO_VALUE``; ``return null`` is ``None``."""
    program = """
    console.log("log", 1, {a: [1, 2]});
    console.info("info"); console.warn("warn"); console.error("error"); console.debug("debug");
    return [1, "two", {three: 3.5}, null, true];
    """
    result = deno.run(program)
    assert result.error is None, result.error
    assert result.logs == ("log 1 { a: [ 1, 2 ] }", "info", "warn", "error", "debug")
    assert result.value == [1, "two", {"three": 3.5}, None, True]
    assert deno.run("const x = 1;").value is NO_VALUE
    assert deno.run("return null;").value is None


def test_enum_and_namespace_are_refused_before_running(deno: DenoHost) -> None:
    """SD4: ``enum`` and ``namespace`` fail as ``exception`` naming the line, and nothing runs."""
    calls: list[Any] = []

    async def record(args: dict[str, Any]) -> Any:
        calls.append(args)
        return None

    for program, word in (
        ("await tools.record({});\nenum Color { Red, Green }\nreturn Color.Red;", "enum"),
        ("await tools.record({});\nnamespace N { export const x = 1; }\nreturn N.x;", "namespace"),
    ):
        result = deno.run(program, {"record": record})
        assert result.error is not None and result.error.kind == "exception"
        assert f"line 2: TypeScript {word} is not supported" in result.error.message
    assert calls == []
    ok = deno.run('const s = "enum X { A }"; // namespace N { }\nreturn s;')
    assert ok.value == "enum X { A }"


def test_failure_kinds(deno: DenoHost) -> None:
    """SD5: a thrown error is ``exception`` (with the program's message); a value that is not
    lossless JSON is ``invalid-output``; an oversized value ``value-limit``; too much output
    ``output-limit``; a syntax error ``exception``."""
    thrown = deno.run('throw new TypeError("bad input");')
    assert thrown.error is not None and thrown.error.kind == "exception"
    assert "TypeError: bad input" in thrown.error.message
    for value in ("NaN", "new Map()", "10n", "[undefined]", "-0", "2 ** 53 + 2"):
        result = deno.run(f"return {value};")
        assert result.error is not None and result.error.kind == "invalid-output", value
    big = deno.run('return "x".repeat(2000);', limits=CodeRunLimits(value_bytes=1000))
    assert big.error is not None and big.error.kind == "value-limit"
    loud = deno.run(
        'for (let i = 0; i < 10000; i++) console.log("x".repeat(100));',
        limits=CodeRunLimits(output_bytes=10_000),
    )
    assert loud.error is not None and loud.error.kind == "output-limit"
    syntax = deno.run("return (;")
    assert syntax.error is not None and syntax.error.kind == "exception"


def test_wall_and_cpu_limits(deno: DenoHost) -> None:
    """SD5: a busy loop ends as ``cpu-limit`` under a small CPU budget, a program that awaits
    forever as ``timeout`` at the wall clock."""
    busy = deno.run("while (true) {}", limits=CodeRunLimits(cpu_seconds=1, wall_seconds=10))
    assert busy.error is not None and busy.error.kind == "cpu-limit", busy.error
    idle = deno.run(
        "await new Promise(() => setTimeout(() => {}, 100000));", limits=CodeRunLimits(wall_seconds=1.5)
    )
    assert idle.error is not None and idle.error.kind == "timeout", idle.error


def test_memory_limits(deno: DenoHost) -> None:
    """SD6: the memory limit is the program's: a 2 GiB ``ArrayBuffer`` fails (``memory-limit``, or
    a ``RangeError`` the program catches), WebAssembly memory cannot grow past it, and filling the
    heap ends the run as ``memory-limit``; an ordinary allocation still works."""
    buffer = deno.run("const b = new ArrayBuffer(2 * 1024 ** 3); return b.byteLength;")
    assert buffer.error is not None and buffer.error.kind == "memory-limit", buffer
    caught = deno.run(
        "try { new ArrayBuffer(2 * 1024 ** 3); return 'allocated'; } catch (e) { return String(e); }"
    )
    assert caught.value.startswith("RangeError")
    wasm = deno.run(
        "const m = new WebAssembly.Memory({initial: 1, maximum: 65536});"
        "try { for (let i = 0; i < 64; i++) m.grow(1024); }"
        " catch (e) { return [String(e), m.buffer.byteLength]; }"
        "return ['grew', m.buffer.byteLength];"
    )
    assert wasm.error is None and wasm.value[0].startswith("RangeError"), wasm
    assert wasm.value[1] < 1024**3
    heap = deno.run("const a: number[][] = []; while (true) a.push(new Array(1e6).fill(1.5));")
    assert heap.error is not None and heap.error.kind == "memory-limit", heap.error
    small = deno.run("return new Uint8Array(64 * 1024 * 1024).length;")
    assert small.value == 64 * 1024 * 1024


def test_the_report_is_honest_and_unconfined_needs_consent(deno: DenoHost) -> None:
    """SD7: every result reports the isolation it ran under (full here, Landlock and seccomp
    among its layers, the memory note); running without a sandbox takes ``allow_unconfined``."""
    result = deno.run("return 1;")
    isolation = result.meta["isolation"]
    assert isolation["enforcement"] == "full"
    assert {"landlock", "seccomp", "no-new-privs", "rlimits"} <= set(isolation["layers"])
    assert any(note.startswith("memory: RLIMIT_AS set once V8 started") for note in isolation["notes"])
    with pytest.raises(ValueError, match="allow_unconfined"):
        DenoTypeScriptRuntime(backend="unconfined")


def test_a_missing_deno_is_sandbox_unavailable() -> None:
    """SD7: without a Deno binary a run fails as ``sandbox-unavailable``, with the reason."""

    async def main() -> Any:
        runtime = DenoTypeScriptRuntime(pool_size=0, deno=os.path.join(os.sep, "nonexistent", "deno"))
        try:
            return await runtime.run(CodeRunRequest(program="return 1;", bindings=[]))
        finally:
            await runtime.aclose()

    result = asyncio.run(main())
    assert result.error is not None and result.error.kind == "sandbox-unavailable"
    assert "deno" in result.error.message


def test_the_prompt_carries_the_typescript_sdk() -> None:
    """SD8: ``ToolRuntime(mode="code", code_runtime=DenoTypeScriptRuntime())`` renders the
    TypeScript SDK (``declare const tools``), not the Python one."""

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    runtime = ToolRuntime(mode="code", code_runtime=DenoTypeScriptRuntime(pool_size=0))
    runtime.register(lookup)
    text = render_sdk(runtime, None)
    assert "declare const tools" in text
    assert "lookup" in text
    assert "async def" not in text
