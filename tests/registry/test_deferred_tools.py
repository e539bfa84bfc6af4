"""``reserve`` / ``is_admitted`` (dsh-cc fork addition; contract §2.3 RS1–RS4, §3.2 item 37, §4.1 #6).

Port of dsh-cc ``tests/reserve.spec.ts``. A reserved name is known and restrictable but never
visible; ``is_admitted`` answers "would every restriction on this scope's chain let the name through",
independent of registration.
"""

from __future__ import annotations

import pytest

from helpers import raw_tool
from toolrt import ToolFailure, ToolRuntime
from toolrt.lowlevel import ToolsChange

RUN_CODE_RESERVED = (
    'tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered '
    "or shadowed"
)


def unknown_global(name: str, known: str) -> str:
    return f'tools.restrict() names unknown global tool "{name}"; known global tools: {known}'


# --- tools.reserve() ------------------------------------------------------------------------------


async def test_makes_a_name_known_and_restrictable_without_making_it_visible() -> None:
    """tools.reserve() › makes a name known and restrictable without making it visible."""
    runtime = ToolRuntime()
    runtime.reserve("heavy_tool")
    scope = runtime.scope("agent")

    assert runtime.schemas() == []
    assert runtime.get("heavy_tool") is None
    assert runtime.get("heavy_tool", scope) is None
    result = await runtime.call("heavy_tool", agent=scope)
    assert isinstance(result, ToolFailure)
    assert result.error.message == 'unknown tool "heavy_tool"'

    scope.restrict(deny=["heavy_tool"])  # known, so restrictable

    assert runtime.is_admitted("heavy_tool", scope) is False
    assert scope.is_admitted("heavy_tool") is False
    assert runtime.is_admitted("heavy_tool") is True


def test_reserved_names_are_listed_among_the_known_global_tools() -> None:
    """RS2 / RX4: a reserved name joins the restrictable (known) set named by restrict errors."""
    runtime = ToolRuntime()
    runtime.register(raw_tool("real_tool"))
    runtime.reserve("heavy_tool")
    scope = runtime.scope("agent")

    with pytest.raises(ValueError) as raised:
        scope.restrict(allow=["ghost"])
    assert str(raised.value) == unknown_global("ghost", "heavy_tool, real_tool")


def test_a_name_may_be_both_reserved_and_registered() -> None:
    """RS1: no check against registered tools; the registered definition stays visible."""
    runtime = ToolRuntime()
    definition = raw_tool("both_ways")
    runtime.register(definition)
    dispose = runtime.reserve("both_ways")

    assert runtime.get("both_ways") is definition
    assert [schema["name"] for schema in runtime.schemas()] == ["both_ways"]
    dispose()
    assert runtime.get("both_ways") is definition


def test_tears_the_reservation_down_with_its_disposer() -> None:
    """tools.reserve() › tears the reservation down with its disposer."""
    runtime = ToolRuntime()
    changes: list[ToolsChange] = []
    runtime.on("tools/change", changes.append)
    dispose = runtime.reserve("heavy_tool")
    scope = runtime.scope("agent")
    lift = scope.restrict(deny=["heavy_tool"])
    lift()

    dispose()

    with pytest.raises(ValueError) as raised:
        scope.restrict(deny=["heavy_tool"])
    assert str(raised.value) == unknown_global("heavy_tool", "(none)")
    assert [(change.kind, change.name) for change in changes] == [
        ("reserve", "heavy_tool"),
        ("restrict", None),
        ("unrestrict", None),
        ("unreserve", "heavy_tool"),
    ]
    dispose()  # idempotent
    runtime.reserve("heavy_tool")  # and the name can be reserved again


def test_rejects_a_duplicate_reservation_and_the_reserved_transport_name() -> None:
    """tools.reserve() › rejects a duplicate reservation and the reserved transport name."""
    runtime = ToolRuntime()
    scope = runtime.scope("agent")
    runtime.reserve("heavy_tool")

    with pytest.raises(ValueError) as raised:
        runtime.reserve("heavy_tool")
    assert str(raised.value) == 'tool name "heavy_tool" is already reserved in this scope'

    scope.reserve("heavy_tool")  # another layer: fine
    with pytest.raises(ValueError) as raised:
        scope.reserve("heavy_tool")
    assert str(raised.value) == 'tool name "heavy_tool" is already reserved in this scope'

    for target in (runtime, scope):
        with pytest.raises(ValueError) as raised:
            target.reserve("run_code")
        assert str(raised.value) == RUN_CODE_RESERVED


def test_reclaims_a_scoped_reservation_on_dispose() -> None:
    """tools.reserve() › reclaims a scoped reservation on dispose.

    Also pins the RS4 quirk: a name reserved in the restricting scope's *own* layer is restrictable.
    """
    runtime = ToolRuntime()
    scope = runtime.scope("agent")
    dispose = scope.reserve("x")
    lift = scope.restrict(deny=["x"])  # RS4: own-layer reservation is restrictable
    assert scope.is_admitted("x") is False
    lift()

    dispose()

    with pytest.raises(ValueError) as raised:
        scope.restrict(deny=["x"])
    assert str(raised.value) == unknown_global("x", "(none)")
    assert scope.is_admitted("x") is True
    scope.reserve("x")  # the emptied layer was reclaimed; reserving again works


def test_closing_the_scope_releases_its_reservations() -> None:
    """R1: a scoped reservation is disposed with its scope."""
    runtime = ToolRuntime()
    scope = runtime.scope("agent")
    scope.reserve("x")
    scope.close()

    reopened = runtime.scope("agent")
    with pytest.raises(ValueError, match='unknown global tool "x"'):
        reopened.restrict(deny=["x"])
    reopened.reserve("x")


def test_a_parent_reservation_is_restrictable_from_a_child_scope() -> None:
    """R4 step 5: reserved names of every layer on the chain are restrictable."""
    runtime = ToolRuntime()
    preset = runtime.scope("preset")
    child = runtime.scope("child", parent=preset)
    preset.reserve("deferred")

    child.restrict(deny=["deferred"])

    assert child.is_admitted("deferred") is False
    assert preset.is_admitted("deferred") is True
    sibling = runtime.scope("sibling")
    with pytest.raises(ValueError, match='unknown global tool "deferred"'):
        sibling.restrict(deny=["deferred"])


# --- tools.isAdmitted() ---------------------------------------------------------------------------


def test_is_true_without_any_restriction_globally_and_for_an_unconstrained_scope() -> None:
    """tools.isAdmitted() › is true without any restriction, globally and for an unconstrained scope."""
    runtime = ToolRuntime()
    runtime.reserve("heavy_tool")
    scope = runtime.scope("agent")

    assert runtime.is_admitted("heavy_tool") is True
    assert runtime.is_admitted("heavy_tool", scope) is True
    assert runtime.is_admitted("never-heard-of-it") is True
    assert runtime.is_admitted("never-heard-of-it", scope) is True
    assert runtime.is_admitted("heavy_tool", "not-an-open-scope") is True


def test_is_false_when_a_scope_denies_the_reserved_name() -> None:
    """tools.isAdmitted() › is false when a scope denies the reserved name."""
    runtime = ToolRuntime()
    runtime.reserve("heavy_tool")
    denying = runtime.scope("denying")
    other = runtime.scope("other")
    lift = denying.restrict(deny=["heavy_tool"])

    assert runtime.is_admitted("heavy_tool", denying) is False
    assert runtime.is_admitted("heavy_tool", other) is True
    assert runtime.is_admitted("heavy_tool") is True

    lift()
    assert runtime.is_admitted("heavy_tool", denying) is True


def test_is_false_when_a_scope_allow_list_omits_the_name_true_when_it_lists_it() -> None:
    """tools.isAdmitted() › is false when a scope allow-list omits the name, true when it lists it."""
    runtime = ToolRuntime()
    runtime.register(raw_tool("real_tool"))
    runtime.reserve("heavy_tool")
    scope = runtime.scope("agent")
    scope.restrict(allow=["real_tool", "heavy_tool"])

    assert scope.is_admitted("heavy_tool") is True
    assert scope.is_admitted("real_tool") is True
    assert scope.is_admitted("other") is False  # an unknown name under an allow-list

    scope.restrict(allow=["real_tool"])
    assert scope.is_admitted("heavy_tool") is False
    assert scope.is_admitted("real_tool") is True


def test_applies_to_registered_tools_as_well_as_reserved_ones() -> None:
    """tools.isAdmitted() › applies to registered tools as well as reserved ones."""
    runtime = ToolRuntime()
    runtime.register(raw_tool("bash"))
    runtime.register(raw_tool("read"))
    scope = runtime.scope("agent")
    scope.restrict(deny=["bash"])

    assert scope.is_admitted("bash") is False
    assert runtime.get("bash", scope) is None
    assert scope.is_admitted("read") is True
    assert runtime.get("read", scope) is not None


def test_is_admitted_follows_the_scope_chain_downward_only() -> None:
    """RS3: every layer on the chain must admit; a child's restriction never reaches its ancestor."""
    runtime = ToolRuntime()
    runtime.register(raw_tool("web"))
    runtime.register(raw_tool("bash"))
    preset = runtime.scope("preset")
    child = runtime.scope("child", parent=preset)
    grandchild = runtime.scope("grandchild", parent=child)
    preset.restrict(deny=["web"])
    child.restrict(deny=["bash"])

    assert [grandchild.is_admitted(name) for name in ("web", "bash")] == [False, False]
    assert [child.is_admitted(name) for name in ("web", "bash")] == [False, False]
    assert [preset.is_admitted(name) for name in ("web", "bash")] == [False, True]


def test_is_admitted_ignores_the_own_layer_exemption() -> None:
    """§4.1 #6: an allow-list omitting a scope's own tool makes is_admitted false, yet it stays visible."""
    runtime = ToolRuntime()
    runtime.register(raw_tool("read"))
    scope = runtime.scope("agent")
    own = raw_tool("report")
    scope.register(own)
    scope.restrict(allow=["read"])

    assert scope.is_admitted("report") is False
    assert runtime.get("report", scope) is own
