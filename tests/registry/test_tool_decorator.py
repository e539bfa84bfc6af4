"""``@tool``: ToolDefinitions from functions — metadata, calling convention, conversions, validation."""

import asyncio
import dataclasses
import enum
import inspect
import threading
from typing import Annotated, Any, Literal, TypedDict

import pydantic
import pytest

from toolrt import AbortSignal, ToolArgsError, ToolDefinition, ToolExecutionInput, ToolRunContext, ToolRuntime
from toolrt._tool_decorator import tool
from toolrt.lowlevel import FrozenDict, FrozenList, ToolExecution, snapshot_json


def context(arguments: Any = None) -> ToolExecution:
    return ToolExecution(
        call_id="c",
        root_call_id="c",
        name="x",
        arguments=snapshot_json(arguments if arguments is not None else {}),
        agent=None,
        parent=None,
        signal=AbortSignal(),
    )


async def run(definition: ToolDefinition, arguments: dict[str, Any], ctx: Any = None) -> Any:
    """Call ``execute`` the way the pipeline does: frozen arguments, awaited when async."""
    args = snapshot_json(arguments)
    ctx = ctx if ctx is not None else context(arguments)
    if definition.body_is_async:
        return await definition.execute(args, ctx)  # type: ignore[misc]
    return definition.execute(args, ctx)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


# --- the definition -----------------------------------------------------------------------------------


def test_bare_decorator_builds_a_validated_definition() -> None:
    assert isinstance(add, ToolDefinition)
    assert add.name == "add"
    assert add.description == "Add two integers."
    assert add.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend."},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert add.output.schema == {"type": "integer"}
    assert add.body_is_async is True
    pending = add.execute({"a": 1, "b": 2}, None)  # the tool's own coroutine, awaited by the pipeline
    assert inspect.iscoroutine(pending)
    pending.close()
    assert add.schema() == {"name": "add", "description": add.description, "parameters": add.parameters}
    assert add.output.render({}, 3) == [{"type": "text", "text": "3"}]
    assert add.timeout_ms is None and add.present_call is None and add.run_inline is False


async def test_execute_calls_the_function_and_keeps_it_reachable() -> None:
    assert await run(add, {"a": 1, "b": 2}) == 3
    original = add.execute.__wrapped__  # type: ignore[attr-defined]
    assert await original(2, 3) == 5
    assert add.execute.__name__ == "add"


def test_schemas_are_frozen() -> None:
    with pytest.raises(TypeError):
        add.parameters["properties"]["a"]["type"] = "string"  # type: ignore[index]
    with pytest.raises(TypeError):
        add.output.schema["type"] = "string"  # type: ignore[index]


def test_options_are_forwarded() -> None:
    seen: list[Any] = []

    def render(args: Any, value: Any) -> list[dict[str, Any]]:
        return [{"type": "text", "text": f"<{value}>"}]

    def meta(args: Any, value: Any) -> Any:
        return {"length": len(value)}

    def finalize(execution: Any, result: Any) -> None:
        return None

    @tool(
        name="read",
        description="Read a file.",
        timeout_ms=5000,
        is_concurrency_safe=lambda args: True,
        present_call=lambda args: seen.append(args) or {"card": "generic", "title": args["path"]},
        present_result=lambda args, result: None,
        render=render,
        presentation_meta=meta,
        finalize_content=finalize,
        run_inline=True,
    )
    def read_file(path: Annotated[str, "Absolute path"], ctx: ToolRunContext, offset: int = 0) -> str:
        """Docstring summary, overridden by description=."""
        return path

    assert read_file.name == "read"
    assert read_file.description == "Read a file."
    assert read_file.parameters["properties"] == {
        "path": {"type": "string", "description": "Absolute path"},
        "offset": {"type": "integer", "default": 0},
    }
    assert read_file.timeout_ms == 5000
    assert read_file.run_inline is True
    assert read_file.output.render is render
    assert read_file.output.presentation_meta is meta
    assert read_file.finalize_content is finalize
    # Presenters and the classifier are wrapped softly, exactly like define_tool's.
    assert read_file.is_concurrency_safe is not None and read_file.present_call is not None
    assert read_file.is_concurrency_safe({"path": "/a"}) is True
    assert read_file.is_concurrency_safe({"path": 1}) is False
    assert read_file.present_call({"path": 1}) is None
    assert read_file.present_call({"path": "/a"}) == {"card": "generic", "title": "/a"}
    assert seen == [{"path": "/a"}]


@pytest.mark.parametrize("timeout_ms", [0, -1, float("inf"), float("nan"), True])
def test_invalid_timeout_fails(timeout_ms: Any) -> None:
    with pytest.raises(TypeError, match="timeout_ms must be a positive finite number"):

        @tool(timeout_ms=timeout_ms)
        def f() -> None:
            pass


def test_decoration_errors_are_type_errors_naming_the_parameter() -> None:
    with pytest.raises(TypeError, match=r'^@tool .*\.bad: parameter "data": complex cannot be expressed'):

        @tool
        def bad(data: complex) -> None:
            pass

    with pytest.raises(TypeError, match="already a ToolDefinition"):
        tool(add)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"pass @tool\(name=\.\.\.\)"):
        tool(lambda: None)
    assert tool(name="noop")(lambda: None).name == "noop"


# --- sync and async bodies ----------------------------------------------------------------------------


def test_a_sync_function_gives_a_sync_execute() -> None:
    threads: list[int] = []

    @tool
    def echo(text: str) -> str:
        """Echo."""
        threads.append(threading.get_ident())
        return text

    assert echo.body_is_async is False
    assert not inspect.iscoroutinefunction(echo.execute)
    assert echo.execute(snapshot_json({"text": "hi"}), context()) == "hi"


async def test_an_async_callable_object_stays_async() -> None:
    class Adder:
        async def __call__(self, a: int) -> int:
            return a + 1

    definition = tool(name="inc")(Adder())
    assert definition.body_is_async is True
    assert definition.parameters["properties"] == {"a": {"type": "integer"}}
    assert await run(definition, {"a": 1}) == 2


# --- argument conversion ------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@dataclasses.dataclass
class Shape:
    name: str
    points: list[Point]
    color: Color = Color.RED


class Query(pydantic.BaseModel):
    text: str
    max_results: int = pydantic.Field(default=10, alias="maxResults")


class Options(TypedDict):
    verbose: bool
    tags: list[str]


async def test_dataclass_pydantic_enum_and_tuple_arguments_are_converted() -> None:
    received: dict[str, Any] = {}

    @tool
    async def draw(
        shape: Shape,
        query: Query,
        color: Color,
        accent: Literal[Color.GREEN] | None,
        around: Point | None,
        scale: tuple[float, ...],
        options: Options,
        labels: list[str],
    ) -> None:
        received.update(locals())

    arguments = {
        "shape": {"name": "tri", "points": [{"x": 1}, {"x": 2, "y": 3}], "color": "green"},
        "query": {"text": "q", "maxResults": 3},
        "color": "red",
        "accent": "green",
        "around": None,
        "scale": [1, 2.5],
        "options": {"verbose": True, "tags": ["a"]},
        "labels": ["x", "y"],
    }
    args = snapshot_json(arguments)
    assert draw.validate_arguments is not None and draw.validate_arguments(args) == []
    assert await draw.execute(args, context(arguments)) is None  # type: ignore[misc]
    assert received["shape"] == Shape("tri", [Point(1), Point(2, 3)], Color.GREEN)
    assert received["query"] == Query(text="q", maxResults=3)
    assert received["color"] is Color.RED
    assert received["accent"] is Color.GREEN
    assert received["around"] is None
    assert received["scale"] == (1, 2.5)
    # Issue 13 reversed the old rule (bodies got the frozen snapshot): JSON-shaped parameters
    # arrive as fresh plain lists and dicts; mutating them leaves the pipeline's record untouched.
    assert received["options"] == {"verbose": True, "tags": ["a"]} and type(received["options"]) is dict
    assert type(received["options"]["tags"]) is list and type(received["labels"]) is list
    assert received["labels"] == ["x", "y"] and received["labels"] is not args["labels"]
    received["options"]["verbose"] = False
    received["labels"].append("z")
    assert args["options"]["verbose"] is True and args["labels"] == ["x", "y"]
    assert isinstance(args["labels"], FrozenList) and isinstance(args["options"], FrozenDict)
    assert type(received["shape"].points) is list


async def test_optional_dataclass_argument_and_integral_floats() -> None:
    @tool
    def locate(at: Point | None, count: int, counts: list[int]) -> list[Any]:
        return [at, count, counts]

    assert await run(locate, {"at": {"x": 1.5}, "count": 2.0, "counts": [1, 2.0]}) == [Point(1.5), 2, [1, 2]]
    at, count, counts = await run(locate, {"at": None, "count": 3, "counts": [4]})
    assert at is None and type(count) is int and type(counts[0]) is int


class Mixed(enum.Enum):
    NAME = "name"
    ONE = 1


async def test_enum_with_mixed_value_types_inside_a_union_converts_both_ways() -> None:
    received: list[Any] = []

    @tool
    def pick(choice: Mixed | None) -> Mixed | None:
        received.append(choice)
        return choice

    assert pick.parameters["properties"]["choice"] == {
        "oneOf": [{"type": "string", "enum": ["name"]}, {"type": "integer", "enum": [1]}, {"type": "null"}]
    }
    assert [await run(pick, {"choice": value}) for value in ("name", 1, None)] == ["name", 1, None]
    assert received == [Mixed.NAME, Mixed.ONE, None]


# --- return conversion --------------------------------------------------------------------------------


async def test_return_values_become_json() -> None:
    @tool
    def model() -> Query:
        return Query(text="q", maxResults=5)

    @tool
    def shape() -> Shape:
        return Shape("s", [Point(1, 2)], Color.GREEN)

    @tool
    def color() -> Color:
        return Color.RED

    @tool
    def pair() -> tuple[int, ...]:
        return (1, 2)

    @tool
    def points() -> list[Point]:
        return [Point(0), Point(1, 1)]

    @tool
    def maybe() -> Point | None:
        return None

    @tool
    def anything():  # type: ignore[no-untyped-def]
        return Point(3, 4)

    @tool
    async def text() -> str:
        return "plain"

    assert await run(model, {}) == {"text": "q", "maxResults": 5}
    assert await run(shape, {}) == {"name": "s", "points": [{"x": 1, "y": 2}], "color": "green"}
    assert await run(color, {}) == "red"
    assert await run(pair, {}) == [1, 2]
    assert await run(points, {}) == [{"x": 0, "y": 0.0}, {"x": 1, "y": 1}]
    assert await run(maybe, {}) is None
    assert await run(anything, {}) == {"x": 3, "y": 4}
    assert await run(text, {}) == "plain"


# --- context injection and **kwargs -------------------------------------------------------------------


async def test_context_is_injected_by_annotation() -> None:
    seen: list[Any] = []

    @tool
    async def whoami(ctx: ToolRunContext, suffix: str) -> str:
        seen.append(ctx)
        return ctx.call_id + suffix

    @tool
    def positional(execution: ToolExecution, /, n: int) -> str:
        return f"{execution.name}:{n}"

    assert "ctx" not in whoami.parameters["properties"]
    ctx = context({"suffix": "!"})
    assert await run(whoami, {"suffix": "!"}, ctx) == "c!"
    assert seen == [ctx]
    assert await run(positional, {"n": 2}) == "x:2"


async def test_var_keyword_receives_undeclared_keys_but_never_the_context_name() -> None:
    @tool
    def collect(ctx: ToolRunContext, a: int, **rest: Any) -> Any:
        return {"a": a, "rest": rest}

    assert collect.parameters["additionalProperties"] is True
    assert await run(collect, {"a": 1, "b": [2]}) == {"a": 1, "rest": {"b": [2]}}
    with pytest.raises(ToolArgsError, match='"ctx" is not a declared property'):
        await run(collect, {"a": 1, "ctx": "forged"})


# --- argument validation ------------------------------------------------------------------------------


def test_validate_arguments_reports_violations() -> None:
    validate = add.validate_arguments
    assert validate is not None
    assert validate({"a": 1, "b": 2}) == []
    assert validate({"a": "x", "b": 2}) == ['"a" must be an integer']
    assert validate({"a": "x"}) == ['missing required property "b"', '"a" must be an integer']
    assert validate({"a": 1, "b": 2, "c": 3}) == [
        '"c" is not a declared property (additionalProperties: false)'
    ]
    assert validate(None) == ['"arguments" must be an object']


# --- end to end ---------------------------------------------------------------------------------------


async def test_end_to_end_through_the_runtime() -> None:
    @tool
    def locate(at: Point, color: Color = Color.RED) -> Shape:
        """Wrap a point in a shape."""
        return Shape("one", [at], color)

    rt = ToolRuntime()
    rt.register(add)
    rt.register(locate)
    result = await rt.execute(
        ToolExecutionInput(call_id="c1", name="add", arguments={"a": 1, "b": 2}, signal=AbortSignal())
    )
    assert result.is_error is False
    assert result.value == 3
    assert [schema["name"] for schema in rt.schemas()] == ["add", "locate"]

    result = await rt.call("locate", {"at": {"x": 1}, "color": "green"})
    assert result.is_error is False, result
    assert result.value == {"name": "one", "points": [{"x": 1, "y": 0.0}], "color": "green"}

    bad = await rt.call("add", {"a": "one", "b": 2, "c": 3})
    assert bad.is_error is True
    assert bad.error.info is not None and bad.error.info.code == "INVALID_ARGS"  # type: ignore[union-attr]
    assert '"a" must be an integer' in bad.error.message  # type: ignore[union-attr]


async def test_sync_tools_run_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()

    @tool
    def where() -> bool:
        return threading.get_ident() != loop_thread

    rt = ToolRuntime()
    rt.register(where)
    result = await rt.call("where")
    assert result.is_error is False and result.value is True
    await asyncio.sleep(0)


# --- bodies receive plain, mutable values (issue 13) ---------------------------------------------------


async def test_a_body_that_stores_and_later_mutates_its_list_argument_works() -> None:
    # The BFCL case: a method kept ``tags`` and called .append on it in a later call.
    store: dict[str, Any] = {}

    @tool
    def remember(tags: list[str], extra: dict[str, list[int]] | None = None) -> int:
        store.setdefault("tags", tags)
        store["tags"].append("seen")
        if extra is not None:
            extra.setdefault("k", []).append(1)
            store["extra"] = extra
        return len(store["tags"])

    assert await run(remember, {"tags": ["a"]}) == 2
    assert await run(remember, {"tags": ["b"], "extra": {"k": [0]}}) == 3
    assert store == {"tags": ["a", "seen", "seen"], "extra": {"k": [0, 1]}}
    assert type(store["tags"]) is list


@dataclasses.dataclass
class Bag:
    items: list[str]


async def test_dataclass_fields_and_dict_values_are_plain_and_the_snapshot_stays_frozen() -> None:
    received: list[Any] = []

    @tool
    def take(bag: Bag, counts: dict[str, int]) -> None:
        received.extend([bag, counts])

    args = snapshot_json({"bag": {"items": ["x"]}, "counts": {"a": 2.0}})
    assert take.execute(args, context({})) is None
    bag, counts = received
    assert type(bag.items) is list and bag.items == ["x"]
    assert counts == {"a": 2} and type(counts) is dict and type(counts["a"]) is int
    bag.items.append("y")
    assert args["bag"]["items"] == ["x"]


# --- issue 13 item 3, issue 12 item 5: argument conversions fail with a path, in toolrt's words ------


class Booking(pydantic.BaseModel):
    nights: int = pydantic.Field(ge=1, le=30)
    guests: list[str] = pydantic.Field(min_length=1)

    @pydantic.model_validator(mode="after")
    def enough_rooms(self) -> "Booking":
        if len(self.guests) > 2 * self.nights:
            raise ValueError("too many guests for the nights booked")
        return self


async def test_pydantic_constraints_become_keywords_and_pydantic_errors_read_as_invalid_args() -> None:
    """Reported: a value breaking gt=0/max_length came back as raw pydantic text with a docs URL."""

    @tool
    def book(booking: Booking) -> str:
        return f"{booking.nights} nights"

    properties = book.parameters["properties"]["booking"]["properties"]
    assert properties["nights"] == {"type": "integer", "minimum": 1, "maximum": 30}
    assert properties["guests"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    runtime = ToolRuntime()
    runtime.register(book)

    # The keywords are enforced by toolrt's validator before pydantic sees the value...
    bounds = await runtime.call("book", {"booking": {"nights": 0, "guests": []}})
    assert bounds.content[0]["text"] == (
        'Error: invalid arguments: "booking.nights" must be >= 1 (got 0); '
        '"booking.guests" must have at least 1 item (got 0)'
    )
    # ...and what only pydantic knows (a model validator) comes back at the model's path.
    crowded = await runtime.call("book", {"booking": {"nights": 1, "guests": ["a", "b", "c"]}})
    assert crowded.content[0]["text"] == (
        'Error: invalid arguments: "booking" is invalid: Value error, too many guests for the nights booked'
    )
    assert (await runtime.call("book", {"booking": {"nights": 2, "guests": ["a"]}})).value == "2 nights"


async def test_a_malformed_formatted_string_inside_a_dataclass_names_its_path() -> None:
    import datetime

    @dataclasses.dataclass
    class Slot:
        start: datetime.datetime
        end: datetime.datetime

    seen: list[Any] = []

    @tool
    def reserve(slots: list[Slot]) -> str:
        seen.append(slots)
        return "ok"

    slot = reserve.parameters["properties"]["slots"]["items"]
    assert slot["properties"]["start"] == {"type": "string", "format": "date-time"}
    runtime = ToolRuntime()
    runtime.register(reserve)
    good = {"start": "2026-12-02T09:00:00+01:00", "end": "2026-12-02T10:00:00+01:00"}
    result = await runtime.call("reserve", {"slots": [good, {**good, "end": "10am"}]})
    assert result.content[0]["text"] == (
        'Error: invalid arguments: "slots[1].end" must be an ISO 8601 date-time '
        '(format "date-time", e.g. "2026-12-02T09:30:00+00:00"), got "10am"'
    )
    assert seen == []  # the body never ran
    assert (await runtime.call("reserve", {"slots": [good]})).value == "ok"
    assert seen[0][0].start == datetime.datetime.fromisoformat(good["start"])
