"""Fixtures for the OpenTelemetry tests: a real SDK tracer and meter provider per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from telemetry_support import Telemetry, make_telemetry


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """Providers of this test alone, shut down after it."""
    made = make_telemetry()
    yield made
    made.tracer_provider.shutdown()
    made.meter_provider.shutdown()
