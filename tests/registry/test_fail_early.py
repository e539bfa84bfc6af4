"""Issue 12 item 4: a code presentation without a code runtime fails where it is declared.

The lazy alternative surfaced the mistake only at the model's first ``run_code``, as a message to
the model; these pin that the developer hears it first, with the fix named.
"""

from __future__ import annotations

import pytest

from code_mode_fakes import FakeRuntime
from toolrt import ToolRuntime


@pytest.mark.parametrize("mode", ["code", "both"])
def test_a_code_mode_runtime_without_a_code_runtime_is_refused_at_construction(mode: str) -> None:
    with pytest.raises(ValueError) as raised:
        ToolRuntime(mode=mode)  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith(f'ToolRuntime(mode="{mode}") requires a code runtime')
    assert "ToolRuntime(code_runtime=...)" in message
    assert 'mode="native"' in message


@pytest.mark.parametrize("mode", ["code", "both"])
def test_a_code_mode_runtime_with_a_code_runtime_is_accepted(mode: str) -> None:
    runtime = ToolRuntime(mode=mode, code_runtime=FakeRuntime())  # type: ignore[arg-type]
    assert runtime.mode == mode


@pytest.mark.parametrize("mode", ["code", "both"])
def test_present_as_a_code_mode_without_a_code_runtime_is_refused_when_declared(mode: str) -> None:
    runtime = ToolRuntime()
    scope = runtime.scope("agent")
    with pytest.raises(ValueError, match=rf'^scope\.present_as\("{mode}"\) requires a code runtime'):
        scope.present_as(mode)  # type: ignore[arg-type]
    # Nothing was declared: the scope may still choose.
    assert runtime.declared_presentations() == {}
    scope.present_as("native")
    assert runtime.mode_for("agent") == "native"


def test_present_as_a_code_mode_with_a_code_runtime_is_accepted() -> None:
    runtime = ToolRuntime(code_runtime=FakeRuntime())
    runtime.scope("agent").present_as("code")
    assert runtime.mode_for("agent") == "code"


def test_unsetting_the_code_runtime_while_a_code_mode_needs_it_is_refused() -> None:
    runtime = ToolRuntime(mode="code", code_runtime=FakeRuntime())
    with pytest.raises(ValueError, match='mode "code" is in use and requires a code runtime'):
        runtime.code_runtime = None
    assert runtime.code_runtime is not None

    scoped = ToolRuntime(code_runtime=FakeRuntime())
    scoped.scope("agent").present_as("both")
    with pytest.raises(ValueError, match='mode "both" is in use'):
        scoped.code_runtime = None

    native = ToolRuntime(code_runtime=FakeRuntime())
    native.code_runtime = None
    assert native.code_runtime is None
