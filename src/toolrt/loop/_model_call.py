"""One model call run under an :class:`~toolrt.AbortSignal`: the abort contract both SDK models share.

Why a separate task: an abort may come from any thread while the SDK is awaiting the network, and
cancelling the task that owns the HTTP stream is what closes that stream. The caller then sees one
error, ``AbortError("model call aborted", "ABORTED")``, whether the SDK surfaced the abort as a
cancellation or as its own connection error, and only once the request has really ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from toolrt._abort import AbortSignal
from toolrt.loop._chat_model import ModelResponse, model_call_aborted, raise_if_aborted

__all__ = ["call_abortably"]


async def call_abortably(call: Coroutine[Any, Any, ModelResponse], signal: AbortSignal) -> ModelResponse:
    """Await ``call`` in its own task, cancelled when ``signal`` aborts; an abort raises ``ABORTED``.

    An outer cancellation (not caused by the signal) propagates as a plain ``CancelledError``.
    """
    loop = asyncio.get_running_loop()
    task = loop.create_task(call)

    def on_abort(_reason: object) -> None:
        # Callbacks run on whichever thread aborts; the loop may already be gone.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(task.cancel)

    remove = signal.add_callback(on_abort)
    try:
        # An outer cancellation cancels the task too, and waits for it to close its stream.
        response = await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if signal.aborted and (current is None or current.cancelling() == 0):
            raise model_call_aborted() from None
        raise
    except Exception as exc:
        if signal.aborted:
            raise model_call_aborted() from exc
        raise
    finally:
        remove()
    raise_if_aborted(signal)  # aborted while the response was completing: the caller no longer wants it
    return response
