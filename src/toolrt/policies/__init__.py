"""Policies: installers that add behaviour around every call through the runtime's stages.

Each installer returns a disposer; the policies compose (approvals answer ``Ask`` decisions, the
timeout wraps execution, spill bounds what reaches the model). The output budget
(:func:`install_output_budget`) and the default deadline (:func:`install_default_deadline`) are on
by default: every ``ToolRuntime`` installs them on itself. An approval waits for a person at most
``Approvals(wait_timeout_ms=...)`` (:data:`DEFAULT_APPROVAL_WAIT_MS`, 5 minutes).
"""

from toolrt.policies._approvals import (
    DEFAULT_APPROVAL_WAIT_MS,
    ApprovalRule,
    Approvals,
    describe_request,
    fingerprint,
    rule_answerer,
    terminal_answerer,
)
from toolrt.policies._spill import (
    SPILL_READER_NAME,
    SpillStore,
    install_output_budget,
    install_spill_policy,
    spill_reader_tool,
)
from toolrt.policies._timeout import TIMEOUT_CODE, install_default_deadline, install_timeout_policy

__all__ = [
    "DEFAULT_APPROVAL_WAIT_MS",
    "SPILL_READER_NAME",
    "TIMEOUT_CODE",
    "ApprovalRule",
    "Approvals",
    "SpillStore",
    "describe_request",
    "fingerprint",
    "install_default_deadline",
    "install_output_budget",
    "install_spill_policy",
    "install_timeout_policy",
    "rule_answerer",
    "spill_reader_tool",
    "terminal_answerer",
]
