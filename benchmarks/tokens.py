"""Context tokens: native tool calling vs Code Mode, counted with tiktoken ``o200k_base``.

Run by hand (never from the test suite), from the repository root::

    .venv-bench/bin/pip install tiktoken
    .venv-bench/bin/python benchmarks/tokens.py --fetch-encoding   # once: o200k_base, offline (below)
    .venv-bench/bin/python benchmarks/tokens.py                    # the two tables
    .venv-bench/bin/python benchmarks/tokens.py --show             # + every transcript's turns

**The tokenizer, offline.** tiktoken downloads ``o200k_base.tiktoken`` from OpenAI's blob store on
first use, which this machine cannot reach. The ``litellm`` wheel on PyPI ships the very same file
(``litellm/litellm_core_utils/tokenizers/fb374d419588a4632f3f557e76b4b70aebbca790``, named as
tiktoken's cache names it: the SHA-1 of its download URL). ``--fetch-encoding`` downloads that wheel
with pip (no install, no dependencies), extracts that one file into ``TIKTOKEN_CACHE_DIR`` (default
``~/.cache/toolrt-bench/tiktoken``) and checks its SHA-256 against the one tiktoken itself pins
(``446a9538…1a2d``); tiktoken verifies it again on load. Without the file the script stops; with
``--approx`` it counts ``ceil(UTF-8 bytes / 4)`` instead, and says so on every table.

**Table 1 — what a tool set costs per request.** Native: the OpenAI ``tools`` array
(``to_openai_tools(schemas)`` as JSON — what is sent). Code Mode: the ``tools:code-only`` rule and
the ``tools:sdk`` section (toolrt's own renderers, Python and TypeScript) plus the ``run_code``
schema as a ``tools`` array. Both come from a real ``SystemPrompt`` assembly (``connect_runtime``).

**Table 2 — multi-step tasks** (fixtures in ``_tasks.py``). Each task has a scripted *optimal*
trajectory per mode, run for real through toolrt:

- native: every assistant message and its tool calls (independent calls batched in one message, as
  parallel tool calls), each call executed by ``ToolRuntime.call`` so the tool message holds the
  content toolrt renders for the model; then the final answer.
- Code Mode: one ``run_code`` call whose Python program is executed by toolrt's real ``run_code``
  transport and bridge (every binding call goes through the pipeline) in toolrt's
  ``PythonSandboxRuntime`` when it is importable and passes a probe, else (or with ``--executor
  inprocess``) in a tiny in-process executor defined here (no isolation — benchmark only); the table
  says which ran. The tool message is toolrt's rendering of what the program printed. The printed
  output must equal the answer computed directly from the data, so it is genuine and correct. Then
  the same final answer as native.

The conversation is resent at every model turn, so **context tokens = Σ over model turns of the whole
prompt at that turn**: system prompt (a short persona, plus the Code Mode sections) + the ``tools``
array + every message so far (Chat Completions shape via ``to_openai_messages``). Per message 3
tokens of framing, per tool call 3 more plus its name and argument JSON, 3 to prime the reply — the
usual tiktoken approximation, identical for both modes. "generated" counts the assistant's own
tokens (tool-call arguments incl. the program, and the final answer); "peak" is the largest single
prompt.

Published numbers to compare with (contract BM4 in ``docs/contract.md``): Anthropic programmatic tool
calling −37 % tokens on complex research tasks, −24 % on agentic search; Code Mode −81 % on complex
batch tasks vs −32 % on simple ones (secondary source); "code execution with MCP" −98.7 % on a
document-shuttling example.

**Limits — read before quoting numbers.**

- Scripted trajectories are the best case for BOTH modes: no exploration, no retries, no reasoning
  tokens, no wrong turns; the native model is assumed to aggregate 200 records in its head without a
  mistake (in practice the weak spot Code Mode removes, not measured here). Real runs cost more in
  both modes, and more turns hurt native more (every turn resends everything).
- Code Mode moves work into GENERATED tokens (the program): fewer input tokens, more output tokens,
  which are priced several times higher and produced far slower. The "generated" columns show it;
  neither latency nor price is modelled here.
- Prompt caching is ignored: cached prefix tokens are billed cheaper and served faster, which softens
  native's resend cost in money and latency — but not in context-window use ("peak").
- o200k_base is OpenAI's tokenizer; Claude, Gemini, DeepSeek etc. count differently (same direction,
  other magnitudes). Providers also re-render tool schemas in their own hidden format (OpenAI: a
  compact TypeScript-like namespace), so the billed native schema cost is usually BELOW the JSON
  counted here, while Code Mode's SDK text is billed as written: the fixed-cost comparison is, if
  anything, tilted toward Code Mode.
- Native paging is sequential: page 2 is requested after page 1 reveals ``total_pages``. A model that
  guessed the page count would save one native turn (refunds: 3 → 2).
- Only the Python SDK is exercised by the tasks (the programs are Python); table 1 shows how much
  smaller the TypeScript SDK is for the same tools.
- The synthetic data is deterministic and sized to look real (API-shaped JSON, diffs, tracebacks);
  native tool results are compact JSON (toolrt's default rendering), not pretty-printed, which favors
  native. Real MCP servers often return larger, indented payloads.
- Schemas stay within toolrt's JSON-Schema subset (no ``format``/``minimum``/``pattern``), so native
  schemas are a little smaller than many real MCP servers' — and Code Mode's SDK includes OUTPUT
  types, which native schemas never send.
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import traceback
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _fixtures import build_tool_set
from _fixtures.dataset import Fixture, build_fixture
from _fixtures.monorepo import Workspace
from _tasks import TASKS, Task
from toolrt import ToolDefinition, ToolOutput, ToolRuntime, content_text
from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain
from toolrt.codemode._code_runtime import (
    NO_VALUE,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunError,
    CodeRunRequest,
    CodeRunResult,
    IsolationReport,
)
from toolrt.loop._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from toolrt.loop._openai_format import to_openai_messages, to_openai_tools

ENCODING = "o200k_base"
O200K_CACHE_KEY = "fb374d419588a4632f3f557e76b4b70aebbca790"  # sha1 of the blob-store URL
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
LITELLM_WHEEL = "litellm==1.110.2"
LITELLM_MEMBER = f"litellm/litellm_core_utils/tokenizers/{O200K_CACHE_KEY}"
DEFAULT_CACHE = Path.home() / ".cache" / "toolrt-bench" / "tiktoken"
TARGET_REDUCTION = 0.60
PERSONA = (
    "You are a careful software and operations assistant working for Acme. Use the available tools to "
    "answer the user's question from real data; never guess numbers. Be concise: answer with the facts "
    "requested, one item per line."
)

# --- the tokenizer --------------------------------------------------------------------------------------


class Counter:
    """Counts tokens with o200k_base, or (``--approx``) ceil(bytes / 4), memoised per text."""

    def __init__(self, encode: Callable[[str], list[int]] | None) -> None:
        self._encode = encode
        self._memo: dict[str, int] = {}
        self.label = (
            f"tiktoken {ENCODING}" if encode else "APPROXIMATION ceil(UTF-8 bytes / 4), NOT o200k_base"
        )

    def __call__(self, text: str) -> int:
        count = self._memo.get(text)
        if count is None:
            if self._encode is not None:
                count = len(self._encode(text))
            else:
                count = math.ceil(len(text.encode()) / 4)
            self._memo[text] = count
        return count


def _cache_dir() -> Path:
    return Path(os.environ.get("TIKTOKEN_CACHE_DIR") or DEFAULT_CACHE)


def fetch_encoding() -> Path:
    """Put o200k_base into the tiktoken cache from the litellm wheel on PyPI (pip, no install)."""
    target = _cache_dir() / O200K_CACHE_KEY
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                scratch,
                LITELLM_WHEEL,
            ],
            check=True,
        )
        [wheel] = Path(scratch).glob("litellm-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(LITELLM_MEMBER)
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise SystemExit(f"{LITELLM_MEMBER} has sha256 {digest}, expected {O200K_SHA256}; not installed")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def load_counter(approx: bool) -> Counter:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(DEFAULT_CACHE)
    if not (_cache_dir() / O200K_CACHE_KEY).is_file():
        if approx:
            return Counter(None)
        raise SystemExit(
            f"o200k_base is not in {_cache_dir()} and cannot be downloaded here. Run once:\n"
            f"  {sys.executable} benchmarks/tokens.py --fetch-encoding\n"
            "or pass --approx for a clearly labelled bytes/4 approximation."
        )
    try:
        import tiktoken
    except ImportError:
        if approx:
            return Counter(None)
        raise SystemExit(
            "tiktoken is not installed: .venv-bench/bin/pip install tiktoken (or pass --approx)"
        ) from None
    encoding = tiktoken.get_encoding(ENCODING)  # tiktoken re-checks the file's sha256 here
    assert encoding.encode("hello world") == [24912, 2375], "unexpected o200k_base vocabulary"
    return Counter(lambda text: encoding.encode(text, disallowed_special=()))


# --- a tiny in-process Python executor (benchmark only: no isolation at all) ----------------------------


class InProcessPython:
    """Runs a ``run_code`` program in this process, as the body of an async function.

    Binds ``tools`` (attribute and subscript access), the error class, a capturing ``print`` and
    ``asyncio``. Enough to execute the benchmark programs genuinely; it confines nothing.
    """

    language = "python"
    isolation = IsolationReport("in-process", "none", notes=("benchmark executor; no isolation",))

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        logs: list[str] = []
        [namespace] = request.bindings
        error = namespace.error_class
        assert error is not None
        error_class = type(error.name, (Exception,), {})

        def bind(name: str) -> Callable[[Any], Any]:
            function = namespace.functions[name]

            async def call(args: Any = None) -> Any:
                try:
                    return await function(args)
                except Exception as failure:
                    raised = error_class(str(failure))
                    setattr(raised, error.member_name_property, name)
                    raise raised from None

            return call

        class Tools:
            def __getattr__(self, name: str) -> Any:
                if name not in namespace.functions:
                    raise AttributeError(f"tools has no tool {name!r}")
                return bind(name)

            def __getitem__(self, name: str) -> Any:
                return self.__getattr__(name)

        def captured_print(*values: Any, sep: str | None = " ", **_: Any) -> None:
            logs.append((" " if sep is None else sep).join(str(value) for value in values))

        source = "async def __program__():\n" + textwrap.indent(request.program, "    ") + "\n    pass\n"
        scope: dict[str, Any] = {
            "__builtins__": builtins,
            namespace.name: Tools(),
            error.name: error_class,
            "print": captured_print,
            "asyncio": asyncio,
        }
        try:
            exec(compile(source, "<run_code>", "exec"), scope)
            value = await scope["__program__"]()
        except Exception:
            return CodeRunResult(
                logs=tuple(logs), error=CodeRunError("exception", traceback.format_exc(limit=3))
            )
        return CodeRunResult(logs=tuple(logs), value=NO_VALUE if value is None else value)

    async def aclose(self) -> None:
        return None


class _RenderOnly:
    """A code runtime that only names a language: enough to render that language's SDK."""

    isolation = IsolationReport("none", "none")

    def __init__(self, language: str) -> None:
        self.language = language

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        raise RuntimeError("render-only code runtime")

    async def aclose(self) -> None:
        return None


# --- prompts and transcripts ----------------------------------------------------------------------------


def make_runtime(tools: Sequence[ToolDefinition], mode: str, code_runtime: Any = None) -> ToolRuntime:
    runtime = ToolRuntime(mode=mode, code_runtime=code_runtime)  # type: ignore[arg-type]
    for definition in tools:
        runtime.register(definition)
    return runtime


async def assemble(runtime: ToolRuntime, persona: str | None) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the OpenAI ``tools`` array toolrt's prompt assembly produces."""
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    if persona:
        prompt.section("persona", 0, persona)
    assembly = await prompt.assemble()
    return assembly.render(), [dict(tool) for tool in to_openai_tools(assembly.tools)]


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class Transcript:
    """A conversation being scripted: counts the whole prompt at every model turn."""

    def __init__(self, count: Counter, system: str, tools: list[dict[str, Any]], user: str) -> None:
        self.count = count
        self.system = system
        self.tools_tokens = count(json_text(tools)) if tools else 0
        self.messages: list[Message] = [UserMessage(content=[{"type": "text", "text": user}])]
        self.prompts: list[int] = []
        self.generated = 0
        self.calls = 0
        self.log: list[str] = []

    def _message_tokens(self, message: Any) -> int:
        total = 3 + self.count(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            total += 3 + self.count(call["function"]["name"]) + self.count(call["function"]["arguments"])
        return total

    def prompt_tokens(self) -> int:
        wire = to_openai_messages(self.system, self.messages)
        return self.tools_tokens + 3 + sum(self._message_tokens(message) for message in wire)

    def model_turn(self, message: AssistantMessage) -> None:
        """The model reads the whole prompt so far and emits ``message``."""
        self.prompts.append(self.prompt_tokens())
        generated = self.count(message.text) + sum(
            3 + self.count(call.name) + self.count(call.arguments) for call in message.tool_calls
        )
        self.generated += generated
        self.calls += len(message.tool_calls)
        self.messages.append(message)
        tally: dict[str, int] = {}
        for call in message.tool_calls:
            tally[call.name] = tally.get(call.name, 0) + 1
        names = ", ".join(f"{n} ×{k}" if k > 1 else n for n, k in tally.items()) or "final answer"
        self.log.append(
            f"turn {len(self.prompts)}: prompt {self.prompts[-1]:,} tokens -> {names} "
            f"({generated:,} generated)"
        )

    def results(self, results: Sequence[ToolResultMessage]) -> None:
        self.messages.extend(results)
        for result in results:
            self.log.append(f"    {result.name} result: {self.count(content_text(result.content)):,} tokens")


_call_ids = iter(range(1, 1_000_000))


async def execute_turn(
    transcript: Transcript, runtime: ToolRuntime, calls: Sequence[tuple[str, dict[str, Any]]]
) -> list[Any]:
    """One assistant message with ``calls``, each run through toolrt; returns the canonical values."""
    tool_calls = tuple(ToolCall(f"call_{next(_call_ids)}", name, json_text(args)) for name, args in calls)
    transcript.model_turn(AssistantMessage(tool_calls=tool_calls))
    values, results = [], []
    for call, (name, args) in zip(tool_calls, calls, strict=True):
        result = await runtime.call(name, args, call_id=call.id)
        if result.is_error:
            raise AssertionError(f"{name} failed: {content_text(result.content)}")
        values.append(result.value)
        results.append(ToolResultMessage(call.id, name, result.content))
    transcript.results(results)
    return values


@dataclasses.dataclass
class Outcome:
    task: Task
    native: Transcript
    code: Transcript
    code_output: str


class _Native:
    def __init__(self, transcript: Transcript, runtime: ToolRuntime) -> None:
        self.transcript, self.runtime = transcript, runtime

    async def call(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        return await execute_turn(self.transcript, self.runtime, calls)


async def run_task(
    task: Task, fixture: Fixture, tools: Sequence[ToolDefinition], count: Counter, executor: Any
) -> Outcome:
    answer = AssistantMessage(text=task.answer(fixture))

    native_runtime = make_runtime(tools, "native")
    system, schemas = await assemble(native_runtime, PERSONA)
    native = Transcript(count, system, schemas, task.prompt)
    await task.native(_Native(native, native_runtime), fixture)
    native.model_turn(answer)

    code_runtime = make_runtime(tools, "code", executor)
    system, schemas = await assemble(code_runtime, PERSONA)
    assert [tool["function"]["name"] for tool in schemas] == ["run_code"]
    code = Transcript(count, system, schemas, task.prompt)
    [value] = await execute_turn(
        code, code_runtime, [("run_code", {"code": task.program, "description": task.description})]
    )
    output = content_text(code.messages[-1].content)  # type: ignore[union-attr]
    assert value is not None
    expected = task.expected(fixture)
    if output.strip() != expected.strip():
        raise AssertionError(f"{task.name}: the program printed\n{output}\n--- but the data says\n{expected}")
    code.model_turn(answer)
    return Outcome(task, native, code, output)


# --- tables ---------------------------------------------------------------------------------------------


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---:" if r else "---" for r in right) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def change(code: int, native: int) -> str:
    """Code Mode relative to native: ``-82.1%`` is 82.1 % fewer tokens; ``+12.0%`` costs more."""
    return f"{(code - native) / native:+.1%}" if native else "—"


async def tool_set_table(fixture: Fixture, workspace: Workspace, count: Counter) -> str:
    rows = []
    for name in ("file6", "mcp40", "mcp150"):
        tools = build_tool_set(name, fixture, workspace)
        _, native_tools = await assemble(make_runtime(tools, "native"), None)
        native = count(json_text(native_tools))
        untyped = [
            dataclasses.replace(t, output=ToolOutput(schema={}, render=t.output.render)) for t in tools
        ]
        row = [name, str(len(tools)), f"{native:,}"]
        output_types = []
        for language in ("python", "typescript"):
            text, code_tools = await assemble(make_runtime(tools, "code", _RenderOnly(language)), None)
            sdk, run_code = count(text), count(json_text(code_tools))
            row += [f"{sdk:,} + {run_code:,} = {sdk + run_code:,}", change(sdk + run_code, native)]
            bare, _ = await assemble(make_runtime(untyped, "code", _RenderOnly(language)), None)
            output_types.append(f"{sdk - count(bare):,}")
        rows.append([*row, " / ".join(output_types)])
    return markdown_table(
        [
            "tool set",
            "tools",
            "native `tools` JSON",
            "Code Mode Python: sections + run_code",
            "vs native",
            "Code Mode TypeScript: sections + run_code",
            "vs native",
            "of the SDK: output types (py / ts)",
        ],
        rows,
        [False, True, True, True, True, True, True, True],
    )


def task_table(outcomes: Sequence[Outcome]) -> tuple[str, list[str]]:
    rows, verdicts = [], []
    sums = [0, 0, 0, 0]
    for o in outcomes:
        n, c = o.native, o.code
        n_ctx, c_ctx = sum(n.prompts), sum(c.prompts)
        reduction = 1 - c_ctx / n_ctx
        sums[0] += n_ctx
        sums[1] += c_ctx
        sums[2] += n.generated
        sums[3] += c.generated
        rows.append(
            [
                f"{o.task.name} ({o.task.tool_set})",
                f"{len(n.prompts)} / {n.calls}",
                f"{n_ctx:,}",
                f"{max(n.prompts):,}",
                f"{n.generated:,}",
                f"{len(c.prompts)} / {c.calls}",
                f"{c_ctx:,}",
                f"{max(c.prompts):,}",
                f"{c.generated:,}",
                f"{reduction:.1%}" if reduction >= 0 else f"{reduction:.1%} (Code Mode costs MORE)",
            ]
        )
        met = "met" if reduction >= TARGET_REDUCTION else "NOT met"
        if reduction >= 0:
            what = f"{reduction:.1%} fewer context tokens"
        else:
            what = f"Code Mode uses {-reduction:.1%} MORE context tokens"
        verdicts.append(f"- {o.task.name}: {what} → target {met}. {o.task.note}.")
    total = 1 - sums[1] / sums[0]
    rows.append(
        [
            "**total**",
            "",
            f"**{sums[0]:,}**",
            "",
            f"{sums[2]:,}",
            "",
            f"**{sums[1]:,}**",
            "",
            f"{sums[3]:,}",
            f"**{total:.1%}**",
        ]
    )
    verdicts.append(
        f"- all tasks together: {total:.1%} fewer context tokens → target "
        f"{'met' if total >= TARGET_REDUCTION else 'NOT met'}."
    )
    header = [
        "task (tool set)",
        "native turns / calls",
        "native context",
        "native peak",
        "native generated",
        "Code Mode turns / calls",
        "Code Mode context",
        "Code Mode peak",
        "Code Mode generated",
        "context reduction",
    ]
    return markdown_table(header, rows, [False, *([True] * 9)]), verdicts


async def pick_executor(choice: str) -> tuple[Any, str]:
    """The code runtime the programs run in, and how to describe it.

    ``auto``: toolrt's ``PythonSandboxRuntime`` when it imports and runs a probe program, else the
    in-process executor (the fallback is announced, never silent).
    """
    fallback = ""
    if choice in ("auto", "sandbox"):
        try:
            from toolrt.sandbox import PythonSandboxRuntime

            sandbox = PythonSandboxRuntime(pool_size=1)
            probe = await sandbox.run(
                CodeRunRequest(
                    "print('ok')", [CodeBindingNamespace("tools", {}, CodeErrorClass("E", "toolName"))]
                )
            )
            if probe.error is not None or list(probe.logs) != ["ok"]:
                await sandbox.aclose()
                raise RuntimeError(f"probe failed: {probe.error}")
        except Exception as error:
            if choice == "sandbox":
                raise SystemExit(f"PythonSandboxRuntime is not usable here: {error!r}") from None
            fallback = f" (PythonSandboxRuntime unusable: {error!r})"
        else:
            report = sandbox.isolation
            layers = ", ".join(report.layers) or "no layers"
            return (
                sandbox,
                f"PythonSandboxRuntime ({report.kind}, enforcement {report.enforcement}: {layers})",
            )
    return InProcessPython(), "benchmark in-process executor (no isolation)" + fallback


async def main_async(args: argparse.Namespace) -> int:
    count = load_counter(args.approx)
    fixture = build_fixture()
    workspace = Workspace(fixture.files)
    executor, executor_label = await pick_executor(args.executor)
    try:
        tasks = list(TASKS)
        # The same task with 110 more (unused) tools visible: fixed per-turn cost grows in both modes.
        tasks.append(
            dataclasses.replace(
                TASKS[0], name="refunds@150", tool_set="mcp150", note="refunds with 150 tools visible"
            )
        )
        outcomes = []
        for task in tasks:
            if args.only and not any(part in task.name for part in args.only):
                continue
            tools = build_tool_set(task.tool_set, fixture, workspace)
            outcomes.append(await run_task(task, fixture, tools, count, executor))
        print("## Tool-set size: tokens per request")
        print()
        print(
            f"Tokenizer: {count.label}. Native = the OpenAI `tools` array JSON; "
            "Code Mode = the `tools:code-only` rule + "
            "`tools:sdk` section text + the `run_code` `tools` array JSON."
        )
        print()
        print(await tool_set_table(fixture, workspace, count))
        print()
        print("## Multi-step tasks: context tokens consumed (Σ prompt tokens over model turns)")
        print()
        print(
            f"Tokenizer: {count.label}. Scripted optimal trajectories (best case for both modes); Code Mode "
            f"programs executed for real through toolrt's run_code bridge in {executor_label}; their output "
            "is checked against the data. "
            f"Target: Code Mode ≥ {TARGET_REDUCTION:.0%} fewer context tokens."
        )
        print()
        table, verdicts = task_table(outcomes)
        print(table)
        print()
        print("\n".join(verdicts))
        if args.show:
            for o in outcomes:
                print(f"\n### {o.task.name}\n\nuser: {o.task.prompt}\n\nnative:")
                print("\n".join(o.native.log))
                print("\nCode Mode:")
                print("\n".join(o.code.log))
                print("\nrun_code program:\n" + textwrap.indent(o.task.program, "    "))
                print("run_code output (what the model reads):\n" + textwrap.indent(o.code_output, "    "))
    finally:
        workspace.close()
        await executor.aclose()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fetch-encoding", action="store_true", help="install o200k_base offline from the litellm wheel"
    )
    parser.add_argument(
        "--approx", action="store_true", help="if o200k_base is missing, count ceil(bytes/4) (labelled)"
    )
    parser.add_argument(
        "--show", action="store_true", help="print each transcript's turns, programs and outputs"
    )
    parser.add_argument("--only", nargs="*", help="run only tasks whose name contains one of these")
    parser.add_argument(
        "--executor",
        choices=("auto", "sandbox", "inprocess"),
        default="auto",
        help="where run_code programs run (auto: PythonSandboxRuntime if it works, else in-process)",
    )
    args = parser.parse_args()
    if args.fetch_encoding:
        print(f"o200k_base installed at {fetch_encoding()}")
        return 0
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
