"""Policies: installers that add behaviour around every call through the runtime's stages.

Each installer returns a disposer; the policies compose (approvals answer ``Ask`` decisions, the
timeout wraps execution, spill bounds what reaches the model). The output budget
(:func:`install_output_budget`) is on by default: every ``ToolRuntime`` installs it on itself. The
default deadline (:func:`install_default_deadline`) is installed by hand for now.
"""

from toolrt.policies._approvals import (
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
