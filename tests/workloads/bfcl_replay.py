"""Replaying BFCL v4's multi-turn ground truth: the direct-call oracle and toolrt's three paths.

The Berkeley Function Calling Leaderboard (``bfcl-eval`` on PyPI) ships eight executable Python back
ends and 200 multi-turn "base" entries whose ground truth is a list of call strings per turn
(``cd(folder='document')``). None of it was written for toolrt, which is the point: its hints,
docstrings and return values are what real tool code looks like.

The oracle mirrors BFCL's own ``execute_multi_turn_func_call``: one fresh instance per involved
class, ``_load_scenario(deepcopy(initial_config[cls]), long_context=False)`` unless the class is
stateless, then every public method called directly. toolrt's paths get their own instances, loaded
the same way, with every public method registered through plain ``toolrt.tool``:

* ``native``: ``await runtime.call(name, args)`` per ground-truth call;
* ``agent``: a :class:`toolrt.Agent` whose :class:`toolrt.ScriptedModel` answers each turn with the
  turn's calls as one parallel step, then a text reply;
* ``code``: one Code Mode program per turn in the real sandbox, awaiting the calls in order.

Each call's outcome (the value, or the failure's code) and each instance's final state are then
compared with the oracle's. Calls are parsed with :mod:`ast` (never ``eval``).
"""

from __future__ import annotations

import ast
import copy
import datetime
import fcntl
import importlib
import inspect
import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrt import UNBOUNDED, ToolRuntime, tool
from toolrt.loop import Agent, AssistantMessage, ScriptedModel, ToolCall

BFCL_VERSION = "2026.3.23"
# bfcl-eval declares 32 requirements (sentence-transformers, faiss-cpu, provider SDKs...). The eight
# multi-turn back ends import only the standard library, bfcl_eval itself and mpmath (math_api).
BACKEND_REQUIREMENTS = (f"bfcl-eval=={BFCL_VERSION}", "mpmath==1.4.1")
BACKEND_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
BACKENDS = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
STATELESS = frozenset({"MathAPI"})  # BFCL's STATELESS_CLASSES: no _load_scenario


def install_bfcl(cache: Path) -> Path:
    """Install the pinned back ends (no dependencies) under ``cache`` once, and put them on sys.path.

    A failed install raises with pip's output: this workload must run, not skip.
    """
    target = cache / f"bfcl-eval-{BFCL_VERSION}"
    marker = target / ".complete"
    cache.mkdir(parents=True, exist_ok=True)
    # Two test runs at once (engineers share a machine) must not install over each other.
    with (cache / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            _pip_install(target)
            marker.write_text(" ".join(BACKEND_REQUIREMENTS))
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    return target


def _pip_install(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    command += ["--upgrade", "--target", str(target), *BACKEND_REQUIREMENTS]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
        )


def backend_class(class_name: str) -> type:
    """The back end class, imported from the installed package."""
    module = importlib.import_module(f"{BACKEND_PREFIX}.{BACKENDS[class_name]}")
    cls: type = getattr(module, class_name)
    return cls


def public_methods(instance: object) -> list[tuple[str, Callable[..., Any]]]:
    """The methods BFCL exposes to a model: every bound method whose name has no leading underscore."""
    return [
        (name, method)
        for name, method in inspect.getmembers(instance, predicate=inspect.ismethod)
        if not name.startswith("_")
    ]


# --- the data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One ground-truth call: the method name and its keyword arguments (positional ones named)."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Entry:
    """One multi-turn entry: its id, involved classes, initial configuration and calls per turn."""

    id: str
    classes: tuple[str, ...]
    initial_config: Mapping[str, Any]
    turns: tuple[tuple[Call, ...], ...]


def load_entries(package_root: Path) -> list[Entry]:
    """Read ``BFCL_v4_multi_turn_base.json`` and its possible answers (JSON lines), joined by id."""
    data = package_root / "bfcl_eval" / "data"
    questions = _json_lines(data / "BFCL_v4_multi_turn_base.json")
    answers = {
        row["id"]: row["ground_truth"]
        for row in _json_lines(data / "possible_answer" / "BFCL_v4_multi_turn_base.json")
    }
    signatures = _signatures()
    entries = []
    for row in questions:
        truth = answers[row["id"]]
        turns = tuple(tuple(parse_call(text, signatures) for text in turn) for turn in truth)
        entries.append(Entry(row["id"], tuple(row["involved_classes"]), row["initial_config"], turns))
    return entries


def _json_lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _signatures() -> dict[str, inspect.Signature]:
    signatures: dict[str, inspect.Signature] = {}
    for class_name in BACKENDS:
        for name, method in public_methods(backend_class(class_name)()):
            signatures[name] = inspect.signature(method)
    return signatures


def parse_call(text: str, signatures: Mapping[str, inspect.Signature]) -> Call:
    """``"sort('a.pdf')"`` → ``Call("sort", {"file_name": "a.pdf"})``: literals only, via :mod:`ast`."""
    node = ast.parse(text, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text!r}")
    name = node.func.id
    args: dict[str, Any] = {}
    if node.args:
        params = [p for p in signatures[name].parameters.values() if p.kind is not p.VAR_KEYWORD]
        for param, value in zip(params, node.args, strict=False):
            args[param.name] = ast.literal_eval(value)
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ValueError(f"**kwargs in a ground-truth call: {text!r}")
        args[keyword.arg] = ast.literal_eval(keyword.value)
    return Call(name, args)


# --- outcomes and state ---------------------------------------------------------------------------


def load_instances(entry: Entry) -> dict[str, object]:
    """Fresh instances of the entry's classes, loaded as BFCL's ``execute_multi_turn_func_call`` does."""
    instances: dict[str, object] = {}
    for class_name in entry.classes:
        instance = backend_class(class_name)()
        if class_name not in STATELESS:
            config = copy.deepcopy(dict(entry.initial_config).get(class_name, {}))
            instance._load_scenario(config, long_context=False)
        instances[class_name] = instance
    return instances


def as_json(value: Any) -> Any:
    """The JSON a value becomes (tuples → lists, keys → strings): what any tool layer can return."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        # Not JSON (an mpmath number, NaN...): no tool layer can hand it over as it is.
        return ["<not JSON>", type(value).__name__, repr(value)]


@dataclass(frozen=True)
class Outcome:
    """What one call produced: a JSON ``value``, or a failure's ``code`` and ``message``."""

    value: Any = None
    code: str | None = None
    message: str | None = None
    failed: bool = False

    def __repr__(self) -> str:
        if not self.failed:
            return f"ok({self.value!r:.200})"
        return f"failed({self.code}, {self.message!r:.200})"


def ok(value: Any) -> Outcome:
    """A success carrying ``value`` as JSON."""
    return Outcome(value=as_json(value))


def failed(code: str | None, message: str | None) -> Outcome:
    """A failure: toolrt's error code (None: the body raised a plain exception) and message."""
    return Outcome(code=code, message=message, failed=True)


def snapshot(value: Any) -> Any:
    """A comparable picture of an instance's state: ``vars()`` all the way down.

    Non-data is left out: methods are not in ``vars()``, ``datetime`` values are wall-clock stamps
    (``File._last_modified``), and a seeded ``random.Random`` is compared by its state. An object met
    a second time (a directory's ``parent``, the file system's ``_current_dir``) becomes a reference
    to where it was first met, so cycles terminate and identity is compared too.
    """
    seen: dict[int, str] = {}

    def walk(item: Any, where: str) -> Any:
        if item is None or isinstance(item, (bool, int, float, str)):
            return item
        if isinstance(item, (datetime.datetime, datetime.date)):
            return "<timestamp>"
        if isinstance(item, random.Random):
            return ["<random>", repr(item.getstate())]
        if id(item) in seen:
            return ["<ref>", seen[id(item)]]
        seen[id(item)] = where
        if isinstance(item, Mapping):
            return {repr(key): walk(child, f"{where}[{key!r}]") for key, child in item.items()}
        if isinstance(item, (list, tuple, set, frozenset)):
            children = sorted(item, key=repr) if isinstance(item, (set, frozenset)) else item
            return [type(item).__name__, *(walk(child, f"{where}[{i}]") for i, child in enumerate(children))]
        attributes = getattr(item, "__dict__", None)
        if attributes is None:
            return ["<opaque>", type(item).__name__, repr(item)]
        return {
            "<class>": type(item).__name__,
            **{name: walk(child, f"{where}.{name}") for name, child in attributes.items()},
        }

    return walk(value, "")


def snapshots(instances: Mapping[str, object]) -> dict[str, Any]:
    """:func:`snapshot` of every instance, by class name."""
    return {name: snapshot(instance) for name, instance in instances.items()}


# --- known BFCL bugs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownBug:
    """A BFCL bug that makes toolrt refuse some ground-truth calls of one method.

    ``shows(args, value)`` says whether a call hits the bug: from its arguments alone for an
    argument refusal (``INVALID_ARGS``: the body never runs, ``value`` is None), from the value the
    method returned for an output refusal (the body ran; the value broke the declared return type).
    ``message`` is a fragment of the message the model reads; ``entries`` are the entries it hits.
    """

    method: str
    code: str
    message: str
    reason: str
    shows: Callable[[Mapping[str, Any], Any], bool]
    entries: frozenset[str]

    @property
    def body_runs(self) -> bool:
        """Whether the method runs before toolrt refuses (an output refusal) or not (arguments)."""
        return self.code != "INVALID_ARGS"


def _bug_for(bugs: Iterable[KnownBug], call: Call, value: Any, *, ran: bool) -> KnownBug | None:
    for bug in bugs:
        if bug.method == call.name and bug.body_runs == ran and bug.shows(call.args, value):
            return bug
    return None


# --- the oracle -----------------------------------------------------------------------------------


@dataclass
class Replay:
    """One path's record of an entry: every call's outcome (per turn) and the final states.

    The oracle also records which known bug each refused call hit (``hits``: turn, index, method).
    """

    outcomes: list[list[Outcome]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    hits: list[tuple[int, int, KnownBug]] = field(default_factory=list)


def replay_direct(entry: Entry, bugs: Iterable[KnownBug] = ()) -> Replay:
    """Call the methods directly, as BFCL does; a call that hits a known bug gets toolrt's refusal.

    An argument refusal means toolrt never runs the body, so the oracle skips it too: the later
    calls and the final state are then compared like any other.
    """
    bugs = tuple(bugs)
    instances = load_instances(entry)
    methods = {name: method for instance in instances.values() for name, method in public_methods(instance)}
    replay = Replay()
    for turn_index, turn in enumerate(entry.turns):
        outcomes: list[Outcome] = []
        for index, call in enumerate(turn):
            bug = _bug_for(bugs, call, None, ran=False)
            if bug is None:
                try:
                    value = methods[call.name](**copy.deepcopy(call.args))
                except Exception as error:
                    outcomes.append(failed(None, str(error)))
                    continue
                bug = _bug_for(bugs, call, value, ran=True)
                if bug is None:
                    outcomes.append(ok(value))
                    continue
            replay.hits.append((turn_index, index, bug))
            outcomes.append(failed(bug.code, bug.message))
        replay.outcomes.append(outcomes)
    replay.state = snapshots(instances)
    return replay


# --- toolrt's paths -------------------------------------------------------------------------------


def register_instances(runtime: ToolRuntime, instances: Mapping[str, object]) -> int:
    """Register every public method of every instance through plain ``tool``; returns how many."""
    count = 0
    for instance in instances.values():
        for _, method in public_methods(instance):
            runtime.register(tool(method))
            count += 1
    return count


def outcome_of(result: Any) -> Outcome:
    """A toolrt result as an :class:`Outcome` (a failure keeps its message without ``Error: ``)."""
    if result.is_error:
        info = result.error.info
        return failed(None if info is None else info.code, result.error.message)
    return ok(result.value)


def _thaw(value: Any) -> Any:
    # Frozen containers read like dicts and lists; a JSON round trip gives plain ones.
    return json.loads(json.dumps(value, default=list))


async def replay_native(entry: Entry) -> Replay:
    """Every call through ``await runtime.call(name, args)``."""
    instances = load_instances(entry)
    runtime = ToolRuntime(output_budget=UNBOUNDED)
    try:
        register_instances(runtime, instances)
        replay = Replay()
        for turn in entry.turns:
            replay.outcomes.append([outcome_of(await runtime.call(call.name, call.args)) for call in turn])
        replay.state = snapshots(instances)
        return replay
    finally:
        runtime.close()


async def replay_agent(entry: Entry) -> Replay:
    """Each turn as one model step that makes all the turn's calls in parallel, then a text reply.

    Values are read from ``tools/result`` observers (the model reads only content); the tools are
    not concurrency-safe, so the loop runs them one by one, in the model's order.
    """
    instances = load_instances(entry)
    runtime = ToolRuntime(output_budget=UNBOUNDED)
    results: dict[str, Outcome] = {}
    runtime.on(
        "tools/result", lambda execution, result: results.__setitem__(execution.call_id, outcome_of(result))
    )
    steps: list[Any] = []
    for turn_index, turn in enumerate(entry.turns):
        calls = tuple(
            ToolCall(f"t{turn_index}c{index}", call.name, json.dumps(call.args))
            for index, call in enumerate(turn)
        )
        # A turn without ground-truth calls (the model should ask, not act) is a text reply alone.
        steps += (
            [AssistantMessage(tool_calls=calls), f"turn {turn_index} done"] if calls else ["nothing to do"]
        )
    try:
        register_instances(runtime, instances)
        replay = Replay()
        model = ScriptedModel(steps)
        with Agent(runtime, model) as agent:
            for turn_index, turn in enumerate(entry.turns):
                ended = await agent.run_turn(f"turn {turn_index}")
                if ended.reason != "stop":
                    raise AssertionError(f"{entry.id} turn {turn_index}: the turn ended with {ended.reason}")
                replay.outcomes.append([results[f"t{turn_index}c{index}"] for index in range(len(turn))])
            if model.remaining:
                raise AssertionError(f"{entry.id}: the script was not played to its end")
        replay.state = snapshots(instances)
        return replay
    finally:
        runtime.close()


def turn_program(turn: Iterable[Call]) -> str:
    """One Code Mode program awaiting the turn's calls in order, collecting each value or error."""
    lines = ["out = []"]
    for call in turn:
        lines += [
            "try:",
            f"    out.append({{'value': await tools.{call.name}({call.args!r})}})",
            "except ToolCallError as error:",
            "    out.append({'error': str(error)})",
        ]
    lines.append("return out")
    return "\n".join(lines)


async def replay_code(entry: Entry, code_runtime: object) -> Replay:
    """One ``run_code`` program per turn in the sandbox; outcomes from the bridge's sub-calls.

    The program's own view is checked too: every value it got back equals the sub-call's value,
    and a failed sub-call reached it as ``ToolCallError``.
    """
    instances = load_instances(entry)
    runtime = ToolRuntime(mode="code", code_runtime=code_runtime, output_budget=UNBOUNDED)
    seen: list[Outcome] = []

    def record(execution: Any, result: Any) -> None:
        if execution.name != "run_code":
            seen.append(outcome_of(result))

    runtime.on("tools/result", record)
    try:
        register_instances(runtime, instances)
        replay = Replay()
        for turn_index, turn in enumerate(entry.turns):
            seen.clear()
            result = await runtime.call("run_code", {"code": turn_program(turn), "description": "replay"})
            if result.is_error:
                raise AssertionError(f"{entry.id} turn {turn_index}: run_code failed: {result.error.message}")
            if result.meta["isolation"]["enforcement"] not in ("full", "partial"):
                raise AssertionError(f"{entry.id} turn {turn_index}: the program ran unconfined")
            returned = _program_return(result.value)
            outcomes = list(seen)
            if len(outcomes) != len(turn) or len(returned) != len(turn):
                raise AssertionError(
                    f"{entry.id} turn {turn_index}: {len(outcomes)} sub-calls, {returned!r:.300}"
                )
            for outcome, program_view in zip(outcomes, returned, strict=True):
                if outcome.failed != ("error" in program_view):
                    raise AssertionError(
                        f"{entry.id} turn {turn_index}: {outcome} but the program saw {program_view}"
                    )
                if not outcome.failed and _canonical(as_json(program_view["value"])) != _canonical(
                    outcome.value
                ):
                    raise AssertionError(
                        f"{entry.id} turn {turn_index}: program got {program_view} for {outcome}"
                    )
            replay.outcomes.append(outcomes)
        replay.state = snapshots(instances)
        return replay
    finally:
        runtime.close()


def _program_return(value: Any) -> list[dict[str, Any]]:
    # run_code's value is {"logs": [...], "result": <what the program returned>}.
    returned = _thaw(value)["result"]
    if not isinstance(returned, list):
        raise AssertionError(f"the program returned {returned!r:.300}, not its list of outcomes")
    return returned


# --- comparing ------------------------------------------------------------------------------------


def differences(entry: Entry, path: str, direct: Replay, other: Replay) -> list[str]:
    """Every call whose outcome differs from the oracle's, and every instance whose state does.

    A failure matches when the codes agree; when both are plain exceptions the messages must too.
    """
    found: list[str] = []
    for turn_index, (expected_turn, actual_turn) in enumerate(
        zip(direct.outcomes, other.outcomes, strict=True)
    ):
        for index, (expected, actual) in enumerate(zip(expected_turn, actual_turn, strict=True)):
            call = entry.turns[turn_index][index]
            if not _same(expected, actual):
                found.append(
                    f"{entry.id} [{path}] turn {turn_index} #{index} {call.name}: {expected} != {actual}"
                )
    for class_name, state in direct.state.items():
        if _canonical(other.state.get(class_name)) != _canonical(state):
            found.append(f"{entry.id} [{path}] final state of {class_name} differs")
    return found


def _same(expected: Outcome, actual: Outcome) -> bool:
    if expected.failed != actual.failed:
        return False
    if not expected.failed:
        # Serialised, so True and 1, or 2 and 2.0, are different values (== would call them equal).
        return _canonical(expected.value) == _canonical(actual.value)
    if expected.code != actual.code:
        return False
    if expected.code is None:  # both raised: the same exception text
        return expected.message == actual.message
    return expected.message is None or expected.message in (actual.message or "")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def calls_in(entries: Iterable[Entry]) -> int:
    """How many ground-truth calls the entries hold."""
    return sum(len(turn) for entry in entries for turn in entry.turns)
