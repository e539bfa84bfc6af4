"""CC → harness tool-name translation (contract §2.20 CC1–CC5; port of dsh-cc ``tests/cc-names.spec.ts``).

Test names follow the upstream ``describe``/``it`` titles; every example in §2.20 is an assertion.
The authoritative harness tool set is mirrored here so a registry change fails loudly instead of
silently drifting.
"""

from __future__ import annotations

import types

import pytest

from toolrt.integrations.claude_code._tool_names import (
    CC_TO_HARNESS_TOOLS,
    KNOWN_HARNESS_TOOLS,
    cc_canonical_tool_name,
    cc_tool_aliases,
    translate_tool_names,
)

AUTHORITATIVE_HARNESS_TOOLS = [
    "EnterWorktree", "ExitWorktree", "NotebookEdit", "Sleep", "ToolSearch",
    "ask_user_question", "bash", "create_goal", "edit", "exit_plan_mode",
    "get_goal", "glob", "grep", "interrupt_agent", "job_kill", "job_list",
    "job_output", "list_agents", "ralph", "read", "read_image", "send_message",
    "skill", "subagent", "subagent_fork", "todo_write", "update_goal",
    "web_fetch", "web_search", "workflow", "write",
]  # fmt: skip

TABLE = [
    ("Read", ("read", "read_image")),
    ("Write", ("write",)),
    ("Edit", ("edit",)),
    ("MultiEdit", ("edit",)),
    ("NotebookEdit", ("NotebookEdit",)),
    ("Bash", ("bash",)),
    ("BashOutput", ("job_output",)),
    ("KillBash", ("job_kill",)),
    ("Grep", ("grep",)),
    ("Glob", ("glob",)),
    ("WebFetch", ("web_fetch",)),
    ("WebSearch", ("web_search",)),
    ("TodoWrite", ("todo_write",)),
    ("Task", ("subagent", "subagent_fork")),
    ("Skill", ("skill",)),
    ("AskUserQuestion", ("ask_user_question",)),
    ("ExitPlanMode", ("exit_plan_mode",)),
    ("Workflow", ("workflow",)),
    ("Sleep", ("Sleep",)),
    ("ToolSearch", ("ToolSearch",)),
    ("EnterWorktree", ("EnterWorktree",)),
    ("ExitWorktree", ("ExitWorktree",)),
]

EMPTY_RESTRICTION = "dropping all CC tool names — resulting tool restriction is empty"


def dropped(name: str) -> str:
    return f'dropping unknown tool name "{name}" from CC tool list'


# --- describe: CC_TO_HARNESS_TOOLS -------------------------------------------------------------------


class TestCcToHarnessTools:
    def test_maps_every_value_to_an_authoritative_harness_tool_name(self) -> None:
        known = set(AUTHORITATIVE_HARNESS_TOOLS)
        for harness_names in CC_TO_HARNESS_TOOLS.values():
            for harness_name in harness_names:
                assert harness_name in known
                assert harness_name in KNOWN_HARNESS_TOOLS

    def test_aligns_known_harness_tools_with_the_authoritative_registry(self) -> None:
        assert sorted(KNOWN_HARNESS_TOOLS) == sorted(AUTHORITATIVE_HARNESS_TOOLS)
        assert len(KNOWN_HARNESS_TOOLS) == 31
        assert isinstance(KNOWN_HARNESS_TOOLS, frozenset)

    def test_read_maps_to_both_read_and_read_image_one_to_many(self) -> None:
        assert CC_TO_HARNESS_TOOLS["Read"] == ("read", "read_image")

    def test_is_the_full_table_in_table_order(self) -> None:
        assert list(CC_TO_HARNESS_TOOLS.items()) == TABLE

    def test_is_immutable(self) -> None:
        assert isinstance(CC_TO_HARNESS_TOOLS, types.MappingProxyType)
        with pytest.raises(TypeError):
            CC_TO_HARNESS_TOOLS["LS"] = ("ls",)  # type: ignore[index]
        assert all(isinstance(v, tuple) for v in CC_TO_HARNESS_TOOLS.values())

    @pytest.mark.parametrize("name", ["LS", "EnterPlanMode", "CronCreate", "CronDelete", "CronList"])
    def test_leaves_the_deliberately_unmapped_names_out(self, name: str) -> None:
        assert name not in CC_TO_HARNESS_TOOLS
        assert not any(key.startswith("mcp__") for key in CC_TO_HARNESS_TOOLS)


# --- describe: translateToolNames (strict) -----------------------------------------------------------


class TestTranslateToolNamesStrict:
    def test_translates_read_to_both_harness_names_in_a_deny_list_context(self) -> None:
        assert translate_tool_names(["Read"], "strict") == ["read", "read_image"]

    def test_passes_unknown_names_through_verbatim(self) -> None:
        names = ["LS", "EnterPlanMode", "mcp__github__foo", "pwsh"]
        diagnostics: list[str] = []
        assert translate_tool_names(names, "strict", diagnostics.append) == names
        assert diagnostics == []

    def test_strips_an_arg_spec_from_bash(self) -> None:
        assert translate_tool_names(["Bash(git status)"], "strict") == ["bash"]

    def test_strips_an_arg_spec_from_webfetch(self) -> None:
        assert translate_tool_names(["WebFetch(domain:example.com)"], "strict") == ["web_fetch"]

    def test_dedupes_preserving_first_occurrence_order(self) -> None:
        assert translate_tool_names(["Read", "read", "Grep"], "strict") == ["read", "read_image", "grep"]
        assert translate_tool_names(["grep", "Read", "Grep", "read_image"], "strict") == [
            "grep",
            "read",
            "read_image",
        ]
        assert translate_tool_names(["Edit", "MultiEdit", "pwsh", "pwsh"], "strict") == ["edit", "pwsh"]

    def test_returns_an_empty_array_for_empty_input_never_undefined(self) -> None:
        diagnostics: list[str] = []
        assert translate_tool_names([], "strict", diagnostics.append) == []
        assert diagnostics == []

    def test_strips_from_the_first_paren_and_passes_an_unknown_stripped_name_through(self) -> None:
        assert translate_tool_names(["pwsh(ls (x))"], "strict") == ["pwsh"]

    def test_returns_a_fresh_list_and_accepts_any_iterable(self) -> None:
        first = translate_tool_names(iter(["Task"]), "strict")
        assert first == ["subagent", "subagent_fork"]
        assert first is not None
        first.append("mutated")
        assert translate_tool_names(("Task",), "strict") == ["subagent", "subagent_fork"]
        assert CC_TO_HARNESS_TOOLS["Task"] == ("subagent", "subagent_fork")


# --- describe: translateToolNames (lenient) ----------------------------------------------------------


class TestTranslateToolNamesLenient:
    def test_translates_read(self) -> None:
        assert translate_tool_names(["Read"], "lenient") == ["read", "read_image"]

    def test_passes_an_existing_harness_name_through(self) -> None:
        diagnostics: list[str] = []
        assert translate_tool_names(["read"], "lenient", diagnostics.append) == ["read"]
        assert diagnostics == []

    def test_drops_unknown_names_and_collects_diagnostics_via_on_diagnostic(self) -> None:
        diagnostics: list[str] = []
        result = translate_tool_names(
            ["LS", "EnterPlanMode", "mcp__github__foo"], "lenient", diagnostics.append
        )
        assert result is None
        assert diagnostics == [
            'dropping unknown tool name "LS" from CC tool list',
            'dropping unknown tool name "EnterPlanMode" from CC tool list',
            'dropping unknown tool name "mcp__github__foo" from CC tool list',
            "dropping all CC tool names — resulting tool restriction is empty",
        ]

    def test_returns_undefined_with_a_diagnostic_when_every_input_is_dropped(self) -> None:
        diagnostics: list[str] = []
        assert translate_tool_names(["LS"], "lenient", diagnostics.append) is None
        assert EMPTY_RESTRICTION in diagnostics
        assert diagnostics == [dropped("LS"), EMPTY_RESTRICTION]

    def test_returns_none_with_only_the_empty_diagnostic_for_empty_input(self) -> None:
        diagnostics: list[str] = []
        assert translate_tool_names([], "lenient", diagnostics.append) is None
        assert diagnostics == [EMPTY_RESTRICTION]

    def test_strips_an_arg_spec_under_lenient_too(self) -> None:
        assert translate_tool_names(["Bash(git status)"], "lenient") == ["bash"]
        diagnostics: list[str] = []
        assert translate_tool_names(["pwsh(-c x)", "Read"], "lenient", diagnostics.append) == [
            "read",
            "read_image",
        ]
        assert diagnostics == [dropped("pwsh")]  # the diagnostic names the stripped name

    def test_ignores_mixed_known_unknown_input_known_passes_unknown_drops(self) -> None:
        diagnostics: list[str] = []
        assert translate_tool_names(["Bash", "pwsh"], "lenient", diagnostics.append) == ["bash"]
        assert diagnostics == ['dropping unknown tool name "pwsh" from CC tool list']

    def test_dedupes_preserving_first_occurrence_order(self) -> None:
        assert translate_tool_names(["Read", "read", "Grep", "grep"], "lenient") == [
            "read",
            "read_image",
            "grep",
        ]

    def test_default_on_diagnostic_is_a_noop(self) -> None:
        assert translate_tool_names(["LS"], "lenient") is None
        assert translate_tool_names(["LS", "ralph"], "lenient") == ["ralph"]


class TestTranslateToolNamesArguments:
    def test_rejects_a_bare_string(self) -> None:
        with pytest.raises(TypeError):
            translate_tool_names("Read", "strict")

    def test_rejects_an_unknown_policy(self) -> None:
        with pytest.raises(ValueError, match="policy"):
            translate_tool_names(["Read"], "loose")  # type: ignore[arg-type]


# --- describe: ccToolAliases -------------------------------------------------------------------------


class TestCcToolAliases:
    def test_expands_a_harness_tool_to_its_cc_aliases(self) -> None:
        assert cc_tool_aliases("read") == ["read", "Read"]
        assert cc_tool_aliases("read_image") == ["read_image", "Read"]
        assert cc_tool_aliases("bash") == ["bash", "Bash"]
        assert cc_tool_aliases("edit") == ["edit", "Edit", "MultiEdit"]
        assert cc_tool_aliases("subagent_fork") == ["subagent_fork", "Task"]

    def test_returns_the_cc_name_first_for_a_cc_name_in_the_map(self) -> None:
        assert cc_tool_aliases("Bash") == ["Bash", "bash"]
        assert cc_tool_aliases("Read") == ["Read", "read", "read_image"]
        assert cc_tool_aliases("Task") == ["Task", "subagent", "subagent_fork"]

    def test_a_cc_key_yields_exactly_name_then_mapped(self) -> None:
        # CC4 is literally ``[name, ...mapped]`` for a key, so a self-mapped key repeats its name.
        assert cc_tool_aliases("NotebookEdit") == ["NotebookEdit", "NotebookEdit"]

    def test_returns_only_the_input_for_an_unknown_name(self) -> None:
        assert cc_tool_aliases("pwsh") == ["pwsh"]
        assert cc_tool_aliases("ralph") == ["ralph"]

    def test_returns_a_fresh_list(self) -> None:
        cc_tool_aliases("Read").append("x")
        assert cc_tool_aliases("Read") == ["Read", "read", "read_image"]
        assert CC_TO_HARNESS_TOOLS["Read"] == ("read", "read_image")


# --- describe: ccCanonicalToolName -------------------------------------------------------------------


class TestCcCanonicalToolName:
    def test_maps_a_harness_tool_to_its_cc_canonical_name(self) -> None:
        assert cc_canonical_tool_name("read") == "Read"
        assert cc_canonical_tool_name("read_image") == "Read"
        assert cc_canonical_tool_name("edit") == "Edit"
        assert cc_canonical_tool_name("subagent") == "Task"
        assert cc_canonical_tool_name("subagent_fork") == "Task"

    def test_passes_an_already_cc_or_harness_only_name_through_unchanged(self) -> None:
        assert cc_canonical_tool_name("Bash") == "Bash"
        assert cc_canonical_tool_name("pwsh") == "pwsh"
        assert cc_canonical_tool_name("ralph") == "ralph"

    def test_a_self_mapped_name_stays_itself(self) -> None:
        assert cc_canonical_tool_name("NotebookEdit") == "NotebookEdit"

    @pytest.mark.parametrize("harness_name", sorted({h for _, hs in TABLE for h in hs}))
    def test_round_trips_every_mapped_harness_name(self, harness_name: str) -> None:
        canonical = cc_canonical_tool_name(harness_name)
        assert harness_name in CC_TO_HARNESS_TOOLS[canonical]
        assert canonical in cc_tool_aliases(harness_name) or canonical == harness_name
