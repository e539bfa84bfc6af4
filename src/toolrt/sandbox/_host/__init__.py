"""The host side of the sandbox: trusted code that starts, feeds, watches and reaps children.

:mod:`.runtime` (``PythonSandboxRuntime``), :mod:`.run` (one program run: binding calls, limits,
its one outcome), :mod:`.process` (one child process: spawn, boot, channel, pipes, reaping),
:mod:`.pool` (the warm pool), :mod:`.limits` (limits, usage, what a killed child's exit means),
:mod:`.workdir` (work dir removal), :mod:`.protocol` (the frames, and the rules for a hostile
child's) and :mod:`.code_table` (the child modules' precompiled code). Nothing a child sends is
trusted here: every frame is parsed and bounded by :mod:`.protocol`.
"""
