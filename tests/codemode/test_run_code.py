"""Code Mode presentation: what each mode contributes to the prompt, the ``run_code`` schema flavors,
direct construction, executor collapse, and per-agent presentation.

Ports of upstream ``code-mode.spec.ts`` (describes *mode-aware wire contribution*, the construction /
collapse cases of *the run_code dispatch bridge*, and *per-agent presentation*) plus contract §2.7
(P1–P9, C1–C4), §2.15 B1–B3 and §4.1 item 8. The bridge and its scheduler are in
``test_bridge.py``.

Python adaptations (contract §0 / ADR 0001): developer-facing runtime errors say ``toolrt:`` instead of
``dsh-tools:`` and point at ``ToolRuntime(code_runtime=...)``, so those tests assert the key phrases;
model-facing text (flavor descriptions, the code-only rule, the collapse denial) is asserted byte for
byte. Upstream's ``Context`` + plugins become ``ToolRuntime`` + ``SystemPrompt(chain=runtime_chain(...))``
+ ``connect_runtime``; ``agent.ctx`` becomes ``runtime.scope(agent)``; fiber disposal becomes
``runtime.close()``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from code_mode_fakes import FakeRuntime, register_echo, run_code, run_program, setup, setup_with_echo
from helpers import call_input, content_tool, failure, text
from toolrt import AbortSignal, ToolDefinition, ToolOutput, ToolRuntime, ToolSuccess
from toolrt._prompt import Assembly, PromptContext, SystemPrompt, connect_runtime, runtime_chain
from toolrt.codemode._code_runtime import CodeErrorClass, CodeRunRequest, CodeRunResult
from toolrt.lowlevel import ExecutionToken

RUN_CODE = "run_code"
REST = "<unlisted-tools>"

# --- upstream's model-facing text, byte for byte (contract P7, B2) --------------------------------

CODE_ONLY_RULE = (
    "`run_code` is the only tool you can call directly — a tool call naming any other tool fails. "
    "Reach every tool the SDK declares below from inside the program."
)
TS_DESCRIPTION = (
    "Execute a TypeScript program against the available tools. Takes two required arguments: `code`, "
    "the BODY of an async function (erasable syntax only; top-level `await` and `return` work), and "
    "`description`, a short summary of what the program does. Call tools as `await tools.name(args)` "
    "per the declarations in the system prompt. Only what you print or return comes back — curate it."
)
TS_CODE_PARAM = "The program: the body of an async TypeScript function."
PY_DESCRIPTION = (
    "Execute a Python program against the available tools. Takes two required arguments: `code`, the "
    "BODY of an async function (top-level `await` and `return` work), and `description`, a short "
    "summary of what the program does. Call tools as `await tools.name(args)` per the declarations in "
    "the system prompt. Answer with `print(...)` and/or `return <value>` — only that comes back, so "
    "curate it."
)
PY_CODE_PARAM = "The program: the body of an async Python function."
DESCRIPTION_PARAM = (
    "Clear, concise description of what this program does in active voice, 5-10 words (shown in the "
    'UI). Examples: "Count TODO markers across packages"; "Read failing test and its fixture"; '
    '"Rename config key in every cordis.yml".'
)


def wire_parameters(code_description: str) -> str:
    """The exact wire JSON of ``run_code``'s parameters (B2), key order included."""
    return json.dumps(
        {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": code_description},
                "description": {"type": "string", "description": DESCRIPTION_PARAM},
            },
            "required": ["code", "description"],
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def section_text(assembly: Assembly, name: str) -> str | None:
    section = assembly.section(name)
    return None if section is None else section.text


def scoped_over_echoes(mode: str, *names: str) -> tuple[Any, Any]:
    """A deployment in ``mode`` with an echo tool per name registered globally, and its ``scoped`` agent."""
    deployment = setup(mode)
    for name in names:
        register_echo(deployment.runtime, name)
    return deployment, deployment.runtime.scope("scoped")


def sdk_text(assembly: Assembly) -> str:
    """The text of the ``tools:sdk`` section, which must be present."""
    sdk = section_text(assembly, "tools:sdk")
    assert sdk is not None
    return sdk


def section_names(assembly: Assembly) -> list[str]:
    return [section.name for section in assembly.sections]


def run_code_schema(assembly: Assembly) -> dict[str, Any]:
    (schema,) = [tool for tool in assembly.tools if tool["name"] == RUN_CODE]
    return dict(schema)


async def binding_names(request: CodeRunRequest) -> CodeRunResult:
    """A program returning its sorted binding names, comma-joined (``Object.keys(tools).sort()``)."""
    return CodeRunResult(value=",".join(sorted(request.bindings[0].functions)))


# =================================================================================================
# describe: mode-aware wire contribution
# =================================================================================================


async def test_native_mode_contributes_every_schema_and_no_sdk_without_a_runtime() -> None:
    """mode 'native' contributes every schema, no run_code, no SDK section — and needs no runtime"""
    deployment = setup_with_echo("native", language=None)

    assembly = await deployment.prompt.assemble()

    assert assembly.tool_names == ("echo",)
    assert assembly.section("tools:sdk") is None
    assert assembly.section("tools:code-only") is None
    assert deployment.runtime.get(RUN_CODE) is None


async def test_code_mode_contributes_only_run_code_plus_an_sdk_declaring_the_other_tools() -> None:
    """mode 'code' contributes exactly [run_code] plus the SDK section declaring the other tools"""
    deployment = setup_with_echo("code")

    assembly = await deployment.prompt.assemble()

    assert assembly.tool_names == (RUN_CODE,)
    sdk = sdk_text(assembly)
    assert "declare const tools: {" in sdk
    assert "echo: {" in sdk
    assert "run_code:" not in sdk
    assert "run_code" not in sdk.split("The available tools:")[1]


async def test_code_mode_states_the_run_code_only_rule_before_per_tool_guidance() -> None:
    """mode 'code' states the run_code-only rule BEFORE the per-tool guidance that names each tool"""
    deployment = setup_with_echo("code")
    deployment.prompt.section("tool:echo", 100, "Use the echo tool.")

    assembly = await deployment.prompt.assemble()

    assert section_text(assembly, "tools:code-only") == CODE_ONLY_RULE
    names = section_names(assembly)
    assert names.index("tools:code-only") < names.index("tool:echo") < names.index("tools:sdk")
    rendered = assembly.render()
    assert rendered.index(CODE_ONLY_RULE) < rendered.index("Use the echo tool.")


async def test_both_mode_omits_the_run_code_only_rule() -> None:
    """mode 'both' omits the run_code-only rule, because native calls do execute there"""
    deployment = setup_with_echo("both")

    assembly = await deployment.prompt.assemble()

    # Registered (the deployment is non-native) but empty, so rendering drops it.
    assert section_text(assembly, "tools:code-only") == ""
    assert "only tool you can call directly" not in assembly.render()
    assert "echo" in assembly.tool_names


async def test_projects_a_deeply_nested_output_schema_into_the_sdk_without_recursion() -> None:
    """projects deeply nested output schemas into the Code Mode SDK without structured-clone recursion"""
    deployment = setup("code")
    output: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        output = {"oneOf": [output, {"type": "null"}]}

    async def execute(args: Any, ctx: Any) -> str:
        return "ok"

    deployment.runtime.register(
        ToolDefinition(
            name="deep_output",
            description="Return a deeply nested output union.",
            parameters={"type": "object", "properties": {}},
            output=ToolOutput(
                schema=output,
                render=lambda _args, value: [
                    {"type": "text", "text": value if isinstance(value, str) else "null"}
                ],
            ),
            execute=execute,
        )
    )

    assembly = await deployment.prompt.assemble()

    sdk = sdk_text(assembly)
    assert "deep_output: Record<string, JsonValue>;" in sdk
    assert "deep_output: string | null" in sdk


@pytest.mark.parametrize("mode", ["code", "both"])
async def test_treats_an_assemble_listeners_output_as_authoritative(mode: str) -> None:
    """treats expert assembly output as authoritative in mode %s"""
    deployment = setup_with_echo(mode)

    async def strip(assembly: Assembly, context: PromptContext, next_: Any) -> Assembly:
        built = await next_()
        return built.replace(
            sections=[section for section in built.sections if section.name != "tools:sdk"],
            tools=[tool for tool in built.tools if tool["name"] != RUN_CODE],
        )

    deployment.prompt.on_assemble(strip, prepend=True)

    assembly = await deployment.prompt.assemble()

    assert assembly.section("tools:sdk") is None
    assert RUN_CODE not in assembly.tool_names
    # Nothing restores what the listener removed, on any later assembly either.
    again = await deployment.prompt.assemble()
    assert again.section("tools:sdk") is None
    assert RUN_CODE not in again.tool_names


@pytest.mark.parametrize("mode", ["code", "both"])
async def test_one_scope_can_shadow_the_default_sdk_section(mode: str) -> None:
    """lets one scope shadow the default SDK section in mode %s"""
    deployment = setup_with_echo(mode)
    agent = deployment.runtime.scope("scoped")
    deployment.prompt.section("tools:sdk", 150, "SCOPED SDK", scope=agent)

    scoped = await deployment.prompt.assemble(agent)
    global_ = await deployment.prompt.assemble()

    assert section_text(scoped, "tools:sdk") == "SCOPED SDK"
    global_sdk = section_text(global_, "tools:sdk")
    assert global_sdk is not None
    assert "declare const tools:" in global_sdk


async def test_both_mode_contributes_every_native_schema_plus_run_code_and_the_sdk() -> None:
    """mode 'both' contributes every native schema plus run_code, and the SDK section"""
    deployment = setup_with_echo("both")

    assembly = await deployment.prompt.assemble()

    assert assembly.tool_names == ("echo", RUN_CODE)
    sdk = sdk_text(assembly)
    assert "echo: {" in sdk


@pytest.mark.parametrize("mode", ["code", "both"])
async def test_run_code_stays_outside_scoped_allow_list_filtering(mode: str) -> None:
    """keeps the run_code transport outside scoped allow-list filtering in mode %s"""
    deployment, agent = scoped_over_echoes(mode, "echo", "hidden")
    lift = agent.restrict(allow=["echo"])

    assembly = await deployment.prompt.assemble(agent)
    assert assembly.tool_names == ((RUN_CODE,) if mode == "code" else ("echo", RUN_CODE))
    sdk = sdk_text(assembly)
    assert "echo: {" in sdk
    assert "hidden:" not in sdk

    result = await run_program(deployment, binding_names, "return Object.keys(tools)", agent=agent)
    assert result.is_error is False
    assert result.content == text("echo")

    lift()
    unrestricted = await deployment.prompt.assemble(agent)
    assert unrestricted.tool_names == ((RUN_CODE,) if mode == "code" else ("echo", "hidden", RUN_CODE))


@pytest.mark.parametrize("mode", ["code", "both"])
async def test_run_code_stays_outside_scoped_deny_list_filtering(mode: str) -> None:
    """keeps the run_code transport outside scoped deny-list filtering in mode %s"""
    deployment, agent = scoped_over_echoes(mode, "denied", "kept")
    agent.restrict(deny=["denied"])

    assembly = await deployment.prompt.assemble(agent)
    assert assembly.tool_names == ((RUN_CODE,) if mode == "code" else ("kept", RUN_CODE))
    sdk = sdk_text(assembly)
    assert "denied:" not in sdk
    assert "kept: {" in sdk

    result = await run_program(deployment, binding_names, "return Object.keys(tools)", agent=agent)
    assert result.is_error is False
    assert result.content == text("kept")


@pytest.mark.parametrize("mode", ["code", "both"])
async def test_run_code_is_reserved_against_scoped_shadows_and_restrictions(mode: str) -> None:
    """reserves run_code against scoped shadows and explicit restrictions in mode %s

    Also spec B15: a scope's own tool joins the SDK, the wire schema (under ``both``) and the program's
    bindings alike.
    """
    deployment = setup(mode)
    runtime = deployment.runtime
    agent = runtime.scope("scoped")

    def impostor() -> ToolDefinition:
        return content_tool(
            name=RUN_CODE, description="Scoped impostor.", execute=lambda a, c: text("impostor")
        )

    with pytest.raises(ValueError, match="reserved for the Code Mode presentation transport"):
        agent.register(impostor())
    with pytest.raises(ValueError, match="reserved for the Code Mode presentation transport"):
        runtime.register(impostor())
    with pytest.raises(ValueError, match="cannot name reserved Code Mode presentation transport"):
        agent.restrict(allow=[RUN_CODE])
    with pytest.raises(ValueError, match="cannot name reserved Code Mode presentation transport"):
        agent.restrict(deny=[RUN_CODE])
    deployment.prompt.section("scoped-note", 149, "safe note", scope=agent)
    agent.register(
        content_tool(name="scoped_safe", description="Safe scoped tool.", execute=lambda a, c: text("safe"))
    )

    assembly = await deployment.prompt.assemble(agent)

    transports = [tool for tool in assembly.tools if tool["name"] == RUN_CODE]
    assert len(transports) == 1
    assert "Execute a TypeScript program" in transports[0]["description"]
    assert section_text(assembly, "scoped-note") == "safe note"
    sdk = sdk_text(assembly)
    assert "scoped_safe:" in sdk
    assert ("scoped_safe" in assembly.tool_names) is (mode == "both")
    assert runtime.get(RUN_CODE, agent) is runtime.get(RUN_CODE)
    assert runtime.get(RUN_CODE) is not None

    result = await run_code(runtime, "return 1", agent=agent)
    assert result.content == text("(run_code completed with no output)")

    deployment.code.behavior = binding_names
    bound = await run_code(runtime, "return Object.keys(tools)", agent=agent)
    assert bound.content == text("scoped_safe")


@pytest.mark.parametrize("mode", ["code", "both"])
async def test_run_code_is_in_the_tool_order_universe_but_no_restriction_target(mode: str) -> None:
    """keeps run_code in the toolOrder universe without exposing it as a restriction target in mode %s"""
    deployment = setup_with_echo(mode, tool_order=[RUN_CODE, REST])
    agent = deployment.runtime.scope("scoped")

    assembly = await deployment.prompt.assemble(agent)

    assert assembly.tool_names == ((RUN_CODE,) if mode == "code" else (RUN_CODE, "echo"))
    with pytest.raises(ValueError, match="cannot name reserved Code Mode presentation transport"):
        agent.restrict(deny=[RUN_CODE])


async def test_programs_never_see_run_code_even_under_both() -> None:
    """never exposes run_code to programs, even under mode 'both' (no recursive dispatch path)"""
    deployment = setup_with_echo("both")
    seen: dict[str, Any] = {}

    async def behavior(request: CodeRunRequest) -> CodeRunResult:
        (namespace,) = request.bindings
        seen["global"] = namespace.name
        seen["error_class"] = namespace.error_class
        seen["names"] = sorted(namespace.functions)
        seen["run_code"] = namespace.functions.get(RUN_CODE)
        seen["signal"] = request.signal
        seen["program"] = request.program
        return CodeRunResult(value="ok")

    result = await run_program(deployment, behavior, "the program text")

    assert result.is_error is False
    assert seen["global"] == "tools"
    assert seen["error_class"] == CodeErrorClass("ToolCallError", "toolName")
    assert seen["names"] == ["echo"]
    assert seen["run_code"] is None
    assert seen["program"] == "the program text"
    assert isinstance(seen["signal"], AbortSignal)


async def test_sdk_text_is_byte_identical_across_assemblies_of_an_unchanged_tool_set() -> None:
    """renders byte-identical SDK text across consecutive assemblies of an unchanged tool set"""
    deployment = setup_with_echo("code")

    first = await deployment.prompt.assemble()
    second = await deployment.prompt.assemble()

    first_sdk = section_text(first, "tools:sdk")
    assert first_sdk
    assert first_sdk == section_text(second, "tools:sdk")
    assert first.render() == second.render()
    assert compact(list(first.tools)) == compact(list(second.tools))


async def test_every_assembly_fails_when_a_non_native_mode_has_no_code_runtime() -> None:
    """Issue 12 item 4 (was: every assembly fails): a code mode without a code runtime now fails at
    construction, before any assembly, naming the fix."""
    with pytest.raises(ValueError, match="requires a code runtime") as raised:
        setup_with_echo("code", language=None)
    message = str(raised.value)
    assert message.startswith('ToolRuntime(mode="code") requires a code runtime')
    assert "ToolRuntime(code_runtime=...)" in message


async def test_every_assembly_fails_when_the_runtime_language_has_no_sdk_renderer() -> None:
    """rejects every assembly when the runtime language has no registered SDK renderer"""
    deployment = setup_with_echo("code", language="ruby")

    for _ in range(2):
        with pytest.raises(
            RuntimeError, match='no SDK renderer registered for runtime language "ruby"'
        ) as raised:
            await deployment.prompt.assemble()
        assert str(raised.value).startswith("toolrt: ")
        assert '(known: "typescript", "python")' in str(raised.value)


async def test_a_python_runtime_selects_the_python_sdk_renderer() -> None:
    """assembles under a python runtime by picking the Python SDK renderer"""
    deployment = setup_with_echo("code", language="python")

    assembly = await deployment.prompt.assemble()

    sdk = sdk_text(assembly)
    assert "class Tools(Protocol):" in sdk
    assert "async def echo(self, args:" in sdk
    assert "top-level `await`" in sdk
    assert "declare const tools" not in sdk


async def test_a_python_runtime_under_both_gives_python_sdk_and_python_schema() -> None:
    """assembles under a python runtime in mode 'both' as well, SDK and schema together"""
    deployment = setup_with_echo("both", language="python")

    assembly = await deployment.prompt.assemble()

    sdk = sdk_text(assembly)
    assert "class Tools(Protocol):" in sdk
    assert run_code_schema(assembly)["description"] == PY_DESCRIPTION
    assert "echo" in assembly.tool_names


async def test_a_typescript_runtime_gets_the_typescript_flavored_run_code_schema() -> None:
    """emits a TypeScript-flavored run_code schema under a typescript runtime"""
    deployment = setup_with_echo("code", language="typescript")

    schema = run_code_schema(await deployment.prompt.assemble())

    assert schema["description"] == TS_DESCRIPTION
    assert compact(schema["parameters"]) == wire_parameters(TS_CODE_PARAM)


async def test_a_python_runtime_gets_the_python_flavored_run_code_schema() -> None:
    """emits a Python-flavored run_code schema under a python runtime (matches the SDK language)"""
    deployment = setup_with_echo("code", language="python")

    schema = run_code_schema(await deployment.prompt.assemble())

    assert schema["description"] == PY_DESCRIPTION
    assert "TypeScript" not in schema["description"]
    assert compact(schema["parameters"]) == wire_parameters(PY_CODE_PARAM)


async def test_the_run_code_flavor_resolves_lazily_and_fails_loud_on_an_unknown_language() -> None:
    """resolves the run_code schema flavor lazily and fails loud on a language absent from the flavor table

    Python adaptation: a ``ToolDefinition`` is a frozen dataclass, not an object with getters, so the
    loud failure happens where the schema is *projected* (``runtime.schemas()``), and "lazily" means
    configuring the runtime never raises and swapping ``runtime.code_runtime`` re-flavors ``run_code``.
    """
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime("ruby"))  # configuring never raises

    with pytest.raises(ValueError) as raised:
        runtime.schemas()
    assert str(raised.value) == (
        'toolrt: no run_code schema flavor registered for runtime language "ruby" '
        '(known: "typescript", "python")'
    )

    runtime.code_runtime = FakeRuntime("python")
    (schema,) = runtime.schemas()
    assert schema["description"] == PY_DESCRIPTION
    runtime.code_runtime = FakeRuntime("typescript")
    (schema,) = runtime.schemas()
    assert schema["description"] == TS_DESCRIPTION


async def test_the_run_code_flavor_degrades_to_typescript_without_a_runtime() -> None:
    """degrades the run_code flavor to TypeScript when no runtime is mounted"""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())

    definition = runtime.get(RUN_CODE)

    assert definition is not None
    assert definition.description == TS_DESCRIPTION
    assert definition.parameters["properties"]["code"]["description"] == TS_CODE_PARAM
    (schema,) = runtime.schemas()
    assert compact(schema["parameters"]) == wire_parameters(TS_CODE_PARAM)


async def test_tool_order_naming_a_tool_code_mode_no_longer_contributes_rejects_assembly() -> None:
    """rejects the assembly when toolOrder names a native tool that mode 'code' no longer contributes"""
    deployment = setup_with_echo("code", tool_order=["echo", REST])

    with pytest.raises(ValueError) as raised:
        await deployment.prompt.assemble()
    assert str(raised.value) == 'toolOrder lists unregistered tool "echo"; known tools: run_code'


async def test_closing_the_runtime_removes_run_code_and_the_sdk_section() -> None:
    """removes run_code and the SDK section when the registry fiber disposes (HMR safety)

    Python adaptation: the registry fiber is the runtime; disposing it is ``runtime.close()``.
    """
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)
    prompt.section("persona", 0, "You are a test.")
    assert runtime.get(RUN_CODE) is not None
    before = await prompt.assemble()
    assert before.tool_names == (RUN_CODE,)
    assert before.section("tools:sdk") is not None

    runtime.close()

    assembly = await prompt.assemble()
    assert assembly.tools == ()
    assert assembly.section("tools:sdk") is None
    assert assembly.section("tools:code-only") is None
    assert assembly.render() == "You are a test."


# =================================================================================================
# describe: the run_code dispatch bridge — construction, presentation and collapse cases
# =================================================================================================


def test_direct_construction_rejects_a_non_positive_parallel_sub_call_cap() -> None:
    """direct construction rejects a non-positive parallel sub-call cap at load

    Python adaptation: the option is ``max_parallel_sub_calls``; P1 also rejects non-integers.
    """
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="max_parallel_sub_calls must be a positive integer"):
            ToolRuntime(mode="code", max_parallel_sub_calls=bad, code_runtime=FakeRuntime())  # type: ignore[arg-type]
    capped = ToolRuntime(mode="code", max_parallel_sub_calls=1, code_runtime=FakeRuntime())
    assert capped.max_parallel_sub_calls == 1


def test_direct_construction_in_code_mode_defaults_the_parallel_sub_call_cap() -> None:
    """direct construction in code mode defaults the parallel sub-call cap"""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())

    assert runtime.max_parallel_sub_calls == 10
    assert runtime.get(RUN_CODE) is not None


async def test_direct_construction_without_config_defaults_to_native() -> None:
    """defaults to native mode under direct construction with no config"""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)

    assert runtime.mode == "native"
    assert runtime.get(RUN_CODE) is None
    assembly = await prompt.assemble()
    assert assembly.section("tools:sdk") is None
    assert assembly.section("tools:code-only") is None


async def test_presents_the_description_as_the_execute_card_title() -> None:
    """presents the model-authored description as the execute-card title over the program input"""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    definition = runtime.get(RUN_CODE)
    assert definition is not None
    assert definition.present_call is not None

    card = definition.present_call({"code": "return 1", "description": "Return the constant one"})

    assert card == {
        "card": "generic",
        "title": "Return the constant one",
        "kind": "execute",
        "rawInput": "return 1",
    }
    assert definition.present_result is None
    assert definition.is_concurrency_safe is None  # B3: always exclusive
    # B3 says "no presentationMeta"; toolrt deliberately projects the code runtime's own report (its
    # isolation) as result meta, so only the observable is pinned: a runtime reporting nothing
    # yields no meta (see test_bridges_tool_calls_returns_the_curated_output_and_logs_each_dispatch).


async def test_a_model_direct_native_call_under_code_mode_is_unknown_tool() -> None:
    """denies a model-direct native-tool call under code mode as UNKNOWN_TOOL"""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    calls = register_echo(runtime, "write")
    seen: list[str] = []
    runtime.on("tools/pre-execute", lambda execution, next_: seen.append("pre") or next_())
    runtime.on("tools/result", lambda execution, result: seen.append("result"))

    result = await runtime.execute(call_input("write", {"text": "hello"}, call_id="call-1"))

    assert result == failure(
        'unknown tool "write": only `run_code` is callable directly — call `write` from inside a '
        "`run_code` program instead",
        "ToolNotFoundError",
        "UNKNOWN_TOOL",
    )
    assert calls == []
    assert seen == ["result"]  # C2: no policy stage runs; tools/result does


async def test_a_pre_aborted_collapsed_call_is_aborted_before_dispatch() -> None:
    """routes a pre-aborted collapsed call through ABORTED_BEFORE_DISPATCH"""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    calls = register_echo(runtime, "write")

    result = await runtime.execute(
        call_input("write", {"text": "hello"}, AbortSignal.aborted_with("too-late"), call_id="call-1")
    )

    assert result == failure("tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH")
    assert calls == []


async def test_the_collapse_denial_drops_the_finalizer_but_a_pre_aborted_collapse_keeps_it() -> None:
    """C2 / §4.1 item 5: the ``UNKNOWN_TOOL`` collapse denial (and a non-aborted collapsed call's
    invalid-arguments failure) skips the visible tool's ``finalize_content``; the pre-aborted
    ``ABORTED_BEFORE_DISPATCH`` result of a collapsed call still applies it."""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    finalized: list[str] = []

    def finalize(execution: Any, result: Any) -> Any:
        finalized.append(execution.call_id)
        return text("finalized")

    register_echo(runtime, "write", finalize_content=finalize)

    denied = await runtime.execute(call_input("write", {"value": "x"}, call_id="denied"))
    invalid = await runtime.execute(call_input("write", {"value": {1}}, call_id="invalid"))
    aborted = await runtime.execute(
        call_input("write", {"value": "x"}, AbortSignal.aborted_with(), call_id="aborted")
    )

    assert denied.content[0]["text"].startswith('Error: unknown tool "write": only `run_code`')
    assert invalid.content == text("Error: tool execution arguments must be losslessly JSON-serializable")
    assert aborted.is_error is True
    assert aborted.content == text("finalized")
    assert finalized == ["aborted"]


async def test_a_collapsed_call_with_non_lossless_arguments_reports_the_arguments() -> None:
    """C2: if argument materialization fails first, the invalid-arguments error wins over the collapse."""
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    register_echo(runtime, "write")

    result = await runtime.execute(call_input("write", {"value": {1, 2}}, call_id="call-1"))

    assert result == failure("tool execution arguments must be losslessly JSON-serializable")


async def test_collapse_makes_model_direct_calls_exclusive_but_not_nested_ones() -> None:
    """M2 / C3 / C4: under code a model-direct call is exclusive whatever its classifier says; a nested
    (parented) call keeps its classification; under ``both`` model-direct calls execute normally."""
    coded = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    register_echo(coded, "reader", safe=True)
    assert coded.execution_mode(call_input("reader", {"value": "x"})) == "exclusive"
    assert coded.execution_mode(call_input("reader", {"value": "x"}, parent=ExecutionToken())) == "parallel"

    both = ToolRuntime(mode="both", code_runtime=FakeRuntime())
    calls = register_echo(both, "reader", safe=True)
    assert both.execution_mode(call_input("reader", {"value": "x"})) == "parallel"
    result = await both.execute(call_input("reader", {"value": "direct"}))
    assert result.is_error is False
    assert result.value == "reader:direct"
    assert calls == [{"value": "direct"}]


# =================================================================================================
# describe: per-agent presentation
# =================================================================================================


def scoped_echo(mode: str) -> tuple[Any, list[dict[str, Any]], Any]:
    """A deployment in ``mode`` with ``echo`` registered: it, the echo calls and the ``scoped`` agent."""
    deployment = setup(mode)
    calls = register_echo(deployment.runtime)
    return deployment, calls, deployment.runtime.scope("scoped")


def code_only_sdk(assembly: Any) -> str:
    """Check ``assembly`` presents Code Mode only (``run_code`` and the code-only rule); its SDK text."""
    assert assembly.tool_names == (RUN_CODE,)
    assert section_text(assembly, "tools:code-only") == CODE_ONLY_RULE
    return sdk_text(assembly)


async def test_a_scope_presenting_before_the_prompt_connects_still_gets_its_sections() -> None:
    """P2 (Python wiring): ``connect_runtime`` picks up scopes that already present ``code``."""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    register_echo(runtime)
    agent = runtime.scope("early")
    agent.present_as("code")
    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)

    assembly = await prompt.assemble(agent)

    sdk = code_only_sdk(assembly)
    assert "echo: {" in sdk


async def test_one_agent_presents_code_while_the_deployment_stays_native() -> None:
    """gives one agent Code Mode while the deployment stays native"""
    deployment, calls, agent = scoped_echo("native")
    runtime = deployment.runtime

    agent.present_as("code")

    coded = await deployment.prompt.assemble(agent)
    sdk = code_only_sdk(coded)
    assert "echo" in sdk
    denied = await runtime.execute(
        call_input("echo", {"value": "coded"}, call_id="coded-direct", agent=agent)
    )
    assert denied.is_error is True
    assert denied.error.info is not None
    assert (denied.error.info.name, denied.error.info.code) == ("ToolNotFoundError", "UNKNOWN_TOOL")
    assert calls == []
    native = await deployment.prompt.assemble()
    assert native.tool_names == ("echo",)
    assert native.section("tools:sdk") is None


async def test_a_standing_preset_scopes_mode_reaches_parented_agents_only() -> None:
    """inherits a STANDING preset scope's mode down the chain, agents beside it unaffected

    The echo tool is declared concurrency-safe so the ``execution_mode`` assertion can fail: a
    collapse reading the deployment default instead of the scope chain would say ``parallel``.
    """
    deployment = setup("native")
    runtime = deployment.runtime
    calls = register_echo(runtime, safe=True)
    standing = runtime.scope("preset:code-like")
    standing.present_as("code")
    joined = runtime.scope("joined-agent", parent="preset:code-like")
    loner = runtime.scope("loner-agent")

    assert runtime.get(RUN_CODE, joined) is not None
    coded = await deployment.prompt.assemble(joined)
    assert coded.tool_names == (RUN_CODE,)
    sdk = sdk_text(coded)
    assert "echo: {" in sdk
    assert runtime.execution_mode(call_input("echo", {"value": "joined"}, agent=joined)) == "exclusive"
    denied = await runtime.execute(
        call_input("echo", {"value": "joined"}, call_id="preset-coded-direct", agent=joined)
    )
    assert denied.is_error is True
    assert denied.error.info is not None
    assert (denied.error.info.name, denied.error.info.code) == ("ToolNotFoundError", "UNKNOWN_TOOL")
    assert calls == []

    assert runtime.get(RUN_CODE, loner) is None
    native = await deployment.prompt.assemble(loner)
    assert native.tool_names == ("echo",)
    assert runtime.execution_mode(call_input("echo", {"value": "loner"}, agent=loner)) == "parallel"
    allowed = await runtime.execute(
        call_input("echo", {"value": "loner"}, call_id="native-sibling-direct", agent=loner)
    )
    assert isinstance(allowed, ToolSuccess)
    assert allowed.value == "echo:loner"
    assert calls == [{"value": "loner"}]


async def test_run_code_is_not_in_a_native_agents_dispatch_table() -> None:
    """keeps run_code out of a native agent's dispatch table"""
    deployment = setup("native")
    runtime = deployment.runtime
    register_echo(runtime)
    coded = runtime.scope("coded")
    plain = runtime.scope("plain")
    coded.present_as("code")

    assert runtime.get(RUN_CODE, coded) is not None
    assert runtime.get(RUN_CODE, plain) is None
    assert runtime.get(RUN_CODE) is None
    result = await run_code(runtime, agent=plain)
    assert result == failure('unknown tool "run_code"', "ToolNotFoundError", "UNKNOWN_TOOL")
    assert deployment.code.requests == []


async def test_an_agent_can_opt_out_of_a_code_mode_deployment() -> None:
    """lets an agent opt out of a code-mode deployment"""
    deployment, calls, agent = scoped_echo("code")
    runtime = deployment.runtime

    agent.present_as("native")

    assembly = await deployment.prompt.assemble(agent)
    assert assembly.tool_names == ("echo",)
    # The deployment's global sections still reach this scope, rendered empty.
    assert section_text(assembly, "tools:sdk") == ""
    assert section_text(assembly, "tools:code-only") == ""
    assert runtime.get(RUN_CODE, agent) is None
    result = await runtime.execute(call_input("echo", {"value": "native"}, agent=agent))
    assert result.is_error is False
    assert calls == [{"value": "native"}]


@pytest.mark.parametrize("unload", ["disposer", "scope.close()"])
async def test_unloading_the_agent_restores_the_deployment_default(unload: str) -> None:
    """restores the deployment default when the agent unloads

    Python adaptation: "unloading" is the ``present_as`` disposer or closing the agent's scope.
    """
    deployment, _calls, agent = scoped_echo("native")
    runtime = deployment.runtime
    dispose = agent.present_as("code")
    assert (await deployment.prompt.assemble("scoped")).tool_names == (RUN_CODE,)

    if unload == "disposer":
        dispose()
    else:
        agent.close()

    assert runtime.mode_for("scoped") == "native"
    assembly = await deployment.prompt.assemble("scoped")
    assert assembly.tool_names == ("echo",)
    assert assembly.section("tools:sdk") is None
    assert runtime.get(RUN_CODE, "scoped") is None


def test_a_second_declaration_for_the_same_agent_is_refused() -> None:
    """refuses a second declaration for the same agent"""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    agent = runtime.scope("scoped")
    agent.present_as("code")

    with pytest.raises(ValueError) as raised:
        agent.present_as("both")
    assert 'conflicts with "code" already declared' in str(raised.value)
    assert str(raised.value) == (
        'tools.present_as("both") conflicts with "code" already declared for this scope; one '
        "composition selects one presentation"
    )
    assert runtime.mode_for(agent) == "code"


def test_an_unscoped_declaration_is_refused() -> None:
    """refuses an unscoped declaration"""
    runtime = ToolRuntime(code_runtime=FakeRuntime())

    with pytest.raises(ValueError, match="requires a scoped context"):
        runtime.present_as("code")
    assert runtime.mode == "native"


@pytest.mark.parametrize("where", ["global", "scoped"])
def test_run_code_is_reserved_even_where_no_agent_presents_it(where: str) -> None:
    """reserves run_code even where no agent presents it"""
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    target = runtime if where == "global" else runtime.scope("plain")

    with pytest.raises(ValueError, match="is reserved"):
        register_echo(target, RUN_CODE)
    with pytest.raises(ValueError, match="is reserved"):
        runtime.reserve(RUN_CODE)


async def test_a_missing_runtime_is_reported_against_the_agents_own_mode() -> None:
    """Issue 12 item 4 (was: reported at assembly, and by run_code): present_as names the agent's
    own mode when it is declared, and declares nothing."""
    deployment = setup_with_echo("native", language=None)
    agent = deployment.runtime.scope("scoped")

    for mode in ("both", "code"):
        with pytest.raises(ValueError, match=f'present_as\\("{mode}"\\) requires a code runtime'):
            agent.present_as(mode)  # type: ignore[arg-type]
    assert (await deployment.prompt.assemble(agent)).tool_names == ("echo",)
    assert (await deployment.prompt.assemble()).tool_names == ("echo",)
