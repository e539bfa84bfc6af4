"""System-prompt assembly (private package): ordered sections, the model-facing tool list, and
template variables.

Everything the model is told before a step comes from one :class:`SystemPrompt`::

    prompt = SystemPrompt(chain=runtime_chain(runtime))
    connect_runtime(prompt, runtime)                       # the runtime's tools, per scope
    prompt.section("persona", 0, "You are a careful engineer working in {{cwd}}.")
    prompt.section("tool:bash", 100, bash_guidance)        # tool guidance lives in 100-199
    prompt.variable("cwd", lambda context: os.getcwd())

    assembly = await prompt.assemble(agent)                # or assemble() for the global view
    request = ModelRequest(system=assembly.render(), messages=..., tools=assembly.tools)

**Sections** are sorted by ``order`` (ties keep registration order) and their text is resolved at
every assembly when it is a callable. A section whose text resolves to ``""`` stays in
:attr:`Assembly.sections` but :meth:`Assembly.render` drops it. Convention: ``-100`` identity,
``0`` persona, ``100``-``199`` tool guidance (Code Mode's sections use ``99`` and ``150``).

**Scopes.** A section, variable, tool provider or assemble listener can be registered for a scope
key (an agent, or a preset scope agents are parented to). It applies to assemblies for that key and
for every key whose *chain* reaches it; a scoped section or variable shadows the same-named global
(or farther ancestor's) one. The chain comes from the ``chain`` constructor argument — use
:func:`runtime_chain` so the prompt and a :class:`~toolrt.ToolRuntime` agree on parentage.

**Tools** are the union of every provider's schemas (a name contributed twice fails the assembly),
sorted by name in UTF-16 code-unit order — the order a JavaScript host produces — or placed by
``tool_order``: a list of names holding exactly one :data:`TOOL_ORDER_REST` entry, where every
unlisted tool lands, sorted. A listed name must be *known* to some provider (known names include
tools that exist but are hidden from this scope, so one ``tool_order`` serves every agent); a
known but invisible name is skipped, an unknown one fails every assembly.

**The assemble waterfall** (``system-prompt/assemble`` upstream): listeners registered with
:meth:`SystemPrompt.on_assemble` see the built :class:`Assembly` and return the one that is used.
Their result is authoritative — nothing re-sorts, re-adds or restores what a listener removed or
replaced — with one deliberate exception: a ``complete=True`` section (a deployment that owns the
whole prompt) is restored afterwards as the only section.

**Prefix-cache stability.** Unchanged registrations produce a byte-identical :meth:`Assembly.render`
and an identical ``tools`` list (same order, same key order) on every assembly, so a provider's
prompt cache keeps hitting.

**Presentations.** A scope presented as ``code`` or ``both`` contributes what the registered
:class:`PresentationPrompt` says (tools and sections); the prompt knows nothing else about it.

The modules: :mod:`.assembly` (what an assembly is for and produces), :mod:`.layers` (per-scope
storage), :mod:`.steps` (the assembly steps), :mod:`.system_prompt` (:class:`SystemPrompt`),
:mod:`.presentation` (the seam for non-native presentations), :mod:`.connection` (a runtime as the
tool source), :mod:`.tool_groups` (the native ``tools:groups`` section: each tool group described
once).

Errors about the prompt's own configuration raise :class:`PromptError` (a ``ValueError``); an
exception raised by a tool provider, a lazy text, a variable or a listener propagates unchanged
out of :meth:`SystemPrompt.assemble`, so every assembly fails loudly.
"""

from toolrt._errors import PromptError
from toolrt._prompt.assembly import (
    TOOL_ORDER_REST,
    AssembleListener,
    AssembleNext,
    Assembly,
    PromptContext,
    Section,
    SectionText,
    ToolContribution,
    ToolProvider,
    VariableValue,
)
from toolrt._prompt.connection import connect_runtime, runtime_chain
from toolrt._prompt.presentation import (
    PresentationPrompt,
    PresentationSection,
    PresentedTools,
    presentation_prompt,
    use_presentation_prompt,
)
from toolrt._prompt.system_prompt import SystemPrompt

__all__ = [
    "TOOL_ORDER_REST",
    "AssembleListener",
    "AssembleNext",
    "Assembly",
    "PresentationPrompt",
    "PresentationSection",
    "PresentedTools",
    "PromptContext",
    "PromptError",
    "Section",
    "SectionText",
    "SystemPrompt",
    "ToolContribution",
    "ToolProvider",
    "VariableValue",
    "connect_runtime",
    "presentation_prompt",
    "runtime_chain",
    "use_presentation_prompt",
]
