"""Claude Code compatibility: translate its tool names to toolrt's reference tool names and back.

>>> from toolrt.integrations.claude_code import translate_tool_names
>>> translate_tool_names(["Read", "Bash(git status)"], "strict")
['read', 'read_image', 'bash']
"""

from toolrt.integrations.claude_code._tool_names import (
    CC_TO_HARNESS_TOOLS,
    KNOWN_HARNESS_TOOLS,
    ToolNameTranslationPolicy,
    cc_canonical_tool_name,
    cc_tool_aliases,
    translate_tool_names,
)

__all__ = [
    "CC_TO_HARNESS_TOOLS",
    "KNOWN_HARNESS_TOOLS",
    "ToolNameTranslationPolicy",
    "cc_canonical_tool_name",
    "cc_tool_aliases",
    "translate_tool_names",
]
