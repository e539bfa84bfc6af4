"""``toolrt prompt``: the system prompt and tool schemas a model is sent, with token counts (CL8)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from cli_helpers import toolrt


def sections(out: str) -> dict[str, str]:
    """The printed sections by heading (``── system prompt (...) ──`` ...)."""
    parts = re.split(r"^── (.+?) ──$", out, flags=re.MULTILINE)
    return {heading: body.strip("\n") for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def check_counts(out: str) -> None:
    """The counts are of what is printed: exact (o200k_base) or an estimate that says so."""
    parts = sections(out)
    tokens = next(heading for heading in parts if heading.startswith("tokens: "))
    counts = dict(
        re.findall(r"^(system prompt|tool schemas|total)\s+(?:≈ )?([\d,]+)$", parts[tokens], re.MULTILINE)
    )
    system, tools, total = (
        int(counts[key].replace(",", "")) for key in ("system prompt", "tool schemas", "total")
    )
    assert total == system + tools
    if "estimate" in tokens:
        assert "≈ " in parts[tokens]  # an estimate is never shown as if exact
        prompt = next(body for heading, body in parts.items() if heading.startswith("system prompt"))
        schemas = next(body for heading, body in parts.items() if heading.startswith("tool schemas"))
        compact = json.dumps(json.loads(schemas), ensure_ascii=False, separators=(",", ":"))
        assert tools == math.ceil(len(compact.encode()) / 4)
        if not prompt.startswith("(empty"):
            assert system == math.ceil(len(prompt.encode()) / 4)
    else:
        assert tokens == "tokens: o200k_base"


def test_native_mode_sends_every_tool_schema(tmp_path: Path) -> None:
    """CL8: native: each configured tool's schema, counted."""
    (tmp_path / "toolrt.toml").write_text("[tools]\nbuiltin = ['fs-readonly']\n", encoding="utf-8")
    done = toolrt("prompt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    parts = sections(done.stdout)
    # The assembly orders tools by name (no tool_order configured): the order a model is sent.
    schemas = json.loads(parts["tool schemas (3: glob, grep, read)"])
    assert [tool["name"] for tool in schemas] == ["glob", "grep", "read"]
    check_counts(done.stdout)


def test_code_mode_sends_one_run_code_tool_and_the_sdk(tmp_path: Path) -> None:
    """CL8: ``--mode code`` (overriding the config): one ``run_code`` tool; the prompt carries the SDK."""
    (tmp_path / "toolrt.toml").write_text(
        "mode = 'native'\n[tools]\nbuiltin = ['fs-readonly']\n", encoding="utf-8"
    )
    done = toolrt("prompt", "--mode", "code", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    parts = sections(done.stdout)
    prompt = parts["system prompt (code mode)"]
    assert "run_code" in prompt and "class ToolCallError(Exception):" in prompt
    assert "class ReadArgs(TypedDict):" in prompt
    assert "tool schemas (1: run_code)" in parts
    check_counts(done.stdout)


def test_code_mode_costs_more_prompt_and_fewer_schema_tokens_than_native(tmp_path: Path) -> None:
    """CL8: the figures move the way the modes differ (the SDK moves tool text into the prompt)."""

    def counts(mode: str) -> tuple[int, int]:
        out = toolrt("prompt", "--mode", mode, cwd=tmp_path).stdout
        found = dict(re.findall(r"^(system prompt|tool schemas)\s+(?:≈ )?([\d,]+)$", out, re.MULTILINE))
        return int(found["system prompt"].replace(",", "")), int(found["tool schemas"].replace(",", ""))

    native, code = counts("native"), counts("code")
    assert code[0] > native[0] and code[1] < native[1]


def test_without_a_tokenizer_the_count_is_an_estimate_that_says_so() -> None:
    """CL8: no o200k_base tokenizer importable: ceil(UTF-8 bytes / 4), labelled as an estimate."""
    from toolrt.cli._tokens import TokenCounter

    estimate = TokenCounter(encode=None)
    assert not estimate.exact and estimate.label.startswith("≈ estimate (UTF-8 bytes / 4")
    assert estimate("abcdefghi") == 3 and estimate("é") == 1
    exact = TokenCounter(encode=lambda text: list(range(len(text.split()))))
    assert exact.exact and exact.label == "o200k_base" and exact("two words") == 2
