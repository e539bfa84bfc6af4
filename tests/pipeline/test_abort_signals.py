"""Cooperative cancellation: ``AbortController`` / ``AbortSignal`` / ``fuse_signals`` (contract §2.21 #8,
§2.13 body-signal paragraph, decision 0001: thread-safe, awaitable ``wait()``)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from toolrt import AbortController, AbortError, AbortSignal
from toolrt.lowlevel import TOOL_ABORTED, fuse_signals


def test_a_fresh_signal_is_pending_with_no_reason() -> None:
    signal = AbortController().signal
    assert signal.aborted is False
    assert signal.reason is None
    assert AbortSignal.never().aborted is False


def test_abort_sets_the_reason_and_the_first_reason_wins() -> None:
    controller = AbortController()
    controller.abort("user pressed stop")
    controller.abort("second reason")

    assert controller.signal.aborted is True
    assert controller.signal.reason == "user pressed stop"


def test_abort_without_a_reason_uses_a_default() -> None:
    controller = AbortController()
    controller.abort()
    assert controller.signal.aborted is True
    assert controller.signal.reason == "aborted"


def test_callbacks_run_once_with_the_reason_in_registration_order() -> None:
    controller = AbortController()
    calls: list[tuple[str, object]] = []
    controller.signal.add_callback(lambda reason: calls.append(("first", reason)))
    controller.signal.add_callback(lambda reason: calls.append(("second", reason)))

    controller.abort("why")
    controller.abort("again")

    assert calls == [("first", "why"), ("second", "why")]


def test_the_remover_unsubscribes_a_callback_and_is_idempotent() -> None:
    controller = AbortController()
    calls: list[str] = []
    remove = controller.signal.add_callback(lambda reason: calls.append("removed"))
    controller.signal.add_callback(lambda reason: calls.append("kept"))

    remove()
    remove()
    controller.abort()

    assert calls == ["kept"]


def test_the_remover_of_one_registration_leaves_a_second_registration_of_the_same_callback() -> None:
    controller = AbortController()
    calls: list[object] = []
    remove = controller.signal.add_callback(calls.append)
    controller.signal.add_callback(calls.append)

    remove()
    controller.abort("r")

    assert calls == ["r"]


def test_a_callback_added_to_an_aborted_signal_fires_immediately() -> None:
    signal = AbortSignal.aborted_with("already")
    calls: list[object] = []

    remove = signal.add_callback(calls.append)

    assert calls == ["already"]
    remove()  # a harmless no-op
    assert calls == ["already"]


def test_a_raising_callback_does_not_stop_the_others() -> None:
    controller = AbortController()
    calls: list[str] = []

    def broken(reason: object) -> None:
        raise RuntimeError("subscriber exploded")

    controller.signal.add_callback(broken)
    controller.signal.add_callback(lambda reason: calls.append("after"))

    controller.abort()

    assert calls == ["after"]
    assert controller.signal.aborted


def test_aborted_with_builds_a_fired_signal() -> None:
    reason = ValueError("boom")
    signal = AbortSignal.aborted_with(reason)
    assert signal.aborted is True
    assert signal.reason is reason


def test_throw_if_aborted_raises_abort_error_with_code_aborted() -> None:
    controller = AbortController()
    controller.signal.throw_if_aborted()  # pending: no-op

    controller.abort("stop")
    with pytest.raises(AbortError) as raised:
        controller.signal.throw_if_aborted()
    assert raised.value.code == TOOL_ABORTED
    assert raised.value.name == "AbortError"


async def test_wait_returns_the_reason() -> None:
    controller = AbortController()
    reason = object()
    waiter = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done()

    controller.abort(reason)

    assert await asyncio.wait_for(waiter, 1) is reason


async def test_wait_on_an_aborted_signal_returns_immediately() -> None:
    signal = AbortSignal.aborted_with("done")
    assert await asyncio.wait_for(signal.wait(), 1) == "done"


async def test_many_waiters_all_wake() -> None:
    controller = AbortController()
    waiters = [asyncio.create_task(controller.signal.wait()) for _ in range(5)]
    await asyncio.sleep(0)
    controller.abort("all")
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1) == ["all"] * 5


async def test_a_cancelled_wait_does_not_break_later_waiters() -> None:
    controller = AbortController()
    cancelled = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    survivor = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    controller.abort("late")
    assert await asyncio.wait_for(survivor, 1) == "late"


async def test_abort_from_another_thread_wakes_an_awaiting_task() -> None:
    controller = AbortController()
    callback_threads: list[int] = []
    controller.signal.add_callback(lambda reason: callback_threads.append(threading.get_ident()))

    def abort_later() -> None:
        time.sleep(0.05)
        controller.abort("from thread")

    thread = threading.Thread(target=abort_later)
    started = time.monotonic()
    thread.start()
    try:
        reason = await asyncio.wait_for(controller.signal.wait(), 2)
    finally:
        thread.join()

    assert reason == "from thread"
    assert time.monotonic() - started < 1.5
    assert callback_threads == [thread.ident]  # callbacks run on the aborting thread


async def test_timeout_fires_after_the_delay_with_a_timeout_error() -> None:
    signal = AbortSignal.timeout(0.02)
    assert signal.aborted is False

    reason = await asyncio.wait_for(signal.wait(), 2)

    assert signal.aborted is True
    assert isinstance(reason, TimeoutError)
    assert signal.reason is reason


async def test_timeout_accepts_a_custom_reason() -> None:
    signal = AbortSignal.timeout(0.01, "deadline")
    assert await asyncio.wait_for(signal.wait(), 2) == "deadline"


async def test_timeout_does_not_fire_early() -> None:
    signal = AbortSignal.timeout(0.3)
    await asyncio.sleep(0.05)
    assert signal.aborted is False
    await asyncio.wait_for(signal.wait(), 2)
    assert signal.aborted is True


def test_timeout_requires_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        AbortSignal.timeout(1)


# --- fuse_signals ----------------------------------------------------------------------------------


def test_fusing_a_signal_with_itself_is_the_identity() -> None:
    controller = AbortController()
    fused, detach = fuse_signals(controller.signal, controller.signal)

    assert fused is controller.signal
    detach()
    controller.abort("x")
    assert fused.aborted


@pytest.mark.parametrize("which", ["first", "second"])
def test_a_fused_signal_fires_when_either_input_fires_and_the_first_reason_wins(which: str) -> None:
    first, second = AbortController(), AbortController()
    fused, _ = fuse_signals(first.signal, second.signal)
    assert fused is not first.signal
    assert fused is not second.signal
    assert fused.aborted is False
    calls: list[object] = []
    fused.add_callback(calls.append)

    winner, loser = (first, second) if which == "first" else (second, first)
    winner.abort(f"{which} fired")
    loser.abort("too late")

    assert fused.aborted is True
    assert fused.reason == f"{which} fired"
    assert calls == [f"{which} fired"]


def test_fusing_a_pre_aborted_input_yields_an_aborted_signal() -> None:
    live = AbortController()
    fused, _ = fuse_signals(AbortSignal.aborted_with("early"), live.signal)
    assert fused.aborted and fused.reason == "early"

    fused, _ = fuse_signals(live.signal, AbortSignal.aborted_with("late input"))
    assert fused.aborted and fused.reason == "late input"
    assert live.signal.aborted is False  # fusing never aborts an input

    fused, _ = fuse_signals(AbortSignal.aborted_with("one"), AbortSignal.aborted_with("two"))
    assert fused.reason == "one"


def test_detach_disconnects_the_fused_signal_from_its_inputs() -> None:
    first, second = AbortController(), AbortController()
    fused, detach = fuse_signals(first.signal, second.signal)

    detach()
    detach()  # idempotent
    first.abort("ignored")
    second.abort("ignored too")

    assert fused.aborted is False


def test_aborting_a_fused_signal_input_does_not_abort_the_other_input() -> None:
    caller, wrapper = AbortController(), AbortController()
    fused, _ = fuse_signals(caller.signal, wrapper.signal)

    caller.abort("caller stop")

    assert fused.aborted
    assert wrapper.signal.aborted is False


async def test_a_fused_signal_wakes_waiters() -> None:
    first, second = AbortController(), AbortController()
    fused, _ = fuse_signals(first.signal, second.signal)
    waiter = asyncio.create_task(fused.wait())
    await asyncio.sleep(0)
    second.abort("second")
    assert await asyncio.wait_for(waiter, 1) == "second"
