"""Lossless JSON (``toolrt._json``; contract D15, §2.21 #1–#2).

Rules under test are those of the ``_json`` module docstring: bool is never a number; NaN, ±inf and
-0.0 are rejected; ints must be exactly representable as doubles; keys must be ``str``; cycles are
rejected but siblings may share; only dict/list/tuple containers; snapshots are FrozenDict/FrozenList
that read like plain data. ``js_number`` / ``js_string`` reproduce ``Number::toString`` and
``JSON.stringify``.

Deep (100,000-level) structures are built and inspected iteratively; they are never compared with
``==`` (which recurses).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import decimal
import enum
import fractions
import json
import math
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrt import NotLosslessJsonError
from toolrt._json import js_json_dumps, js_number, js_string
from toolrt.lowlevel import MAX_SAFE_INTEGER, FrozenDict, FrozenList, is_lossless_json, snapshot_json, thaw

DEEP = 100_000


# --- scalars ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, True, False, "", "text", 0, 1, -1, 0.0, 1.5, -2.25, 1e300])
def test_json_scalars_snapshot_to_themselves(value: Any) -> None:
    snapshot = snapshot_json(value)
    assert snapshot == value
    assert type(snapshot) is type(value)
    assert is_lossless_json(value)


def test_a_bool_is_a_boolean_never_a_number() -> None:
    """§2.21 #1: ``True`` stays a boolean in snapshots (not ``1``) and is not a JSON number."""
    assert snapshot_json(True) is True
    assert snapshot_json([True, 1])[0] is True
    assert type(snapshot_json([True, 1])[1]) is int
    assert type(snapshot_json({"flag": False})["flag"]) is bool
    with pytest.raises(TypeError):
        js_number(True)
    assert js_json_dumps([True, 1, False, 0]) == "[true,1,false,0]"


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, -0.0], ids=["nan", "inf", "-inf", "negative-zero"]
)
def test_nan_infinities_and_negative_zero_are_rejected(value: float) -> None:
    assert not is_lossless_json(value)
    assert not is_lossless_json([value])
    assert not is_lossless_json({"a": value})
    with pytest.raises(NotLosslessJsonError):
        snapshot_json(value)
    with pytest.raises(NotLosslessJsonError):
        snapshot_json({"nested": [1, value]})


def test_positive_zero_is_accepted() -> None:
    assert is_lossless_json(0.0)
    assert math.copysign(1.0, snapshot_json({"z": 0.0})["z"]) == 1.0


@pytest.mark.parametrize(
    ("value", "lossless"),
    [
        (MAX_SAFE_INTEGER, True),
        (-MAX_SAFE_INTEGER, True),
        (2**53, True),
        (2**53 + 1, False),
        (-(2**53 + 1), False),
        (2**60, True),
        (-(2**60), True),
        (2**60 + 1, False),
        (10**21, True),
        (10**21 + 1, False),
        (2**1023, True),
        (2**1024, False),
        (10**400, False),
    ],
    ids=repr,
)
def test_integers_must_be_exactly_representable_as_doubles(value: int, lossless: bool) -> None:
    assert MAX_SAFE_INTEGER == 2**53 - 1
    assert is_lossless_json(value) is lossless
    assert is_lossless_json({"n": value}) is lossless
    assert is_lossless_json([value]) is lossless
    if lossless:
        assert snapshot_json({"n": value})["n"] == value
    else:
        with pytest.raises(NotLosslessJsonError):
            snapshot_json([value])


def test_int_and_str_subclasses_snapshot_to_their_plain_values() -> None:
    class Color(enum.StrEnum):
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    snapshot = snapshot_json({"color": Color.RED, "level": Level.HIGH})
    assert snapshot == {"color": "red", "level": 3}
    assert type(snapshot["color"]) is str
    assert type(snapshot["level"]) is int


@dataclasses.dataclass
class _Point:
    x: int = 1


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        frozenset({1}),
        b"bytes",
        bytearray(b"x"),
        object(),
        _Point(),
        datetime.date(2024, 1, 1),
        decimal.Decimal("1.5"),
        fractions.Fraction(1, 3),
        1j,
        range(3),
        iter([1]),
        lambda: None,
        len,
        type,
        ...,
    ],
    ids=lambda value: type(value).__name__,
)
def test_non_json_types_are_rejected_at_any_depth(value: Any) -> None:
    assert not is_lossless_json(value)
    assert not is_lossless_json([value])
    assert not is_lossless_json({"a": {"b": [1, value]}})
    with pytest.raises(NotLosslessJsonError):
        snapshot_json({"a": [value]})


def test_not_lossless_error_is_a_type_error_naming_the_path() -> None:
    with pytest.raises(NotLosslessJsonError) as raised:
        snapshot_json({"a": [1, {"b": math.nan}]})
    assert isinstance(raised.value, TypeError)
    assert raised.value.path == "value.a[1].b"


@pytest.mark.parametrize("key", [1, 1.5, None, True, ("t",), b"k"], ids=repr)
def test_non_string_keys_are_rejected(key: Any) -> None:
    assert not is_lossless_json({key: "v"})
    assert not is_lossless_json({"outer": {key: "v"}})
    with pytest.raises(NotLosslessJsonError):
        snapshot_json([{key: 1}])


def test_cycles_are_rejected_but_sibling_sharing_is_fine() -> None:
    shared = {"k": [1, 2]}
    siblings = {"a": shared, "b": shared, "c": [shared, shared]}
    snapshot = snapshot_json(siblings)
    assert snapshot == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": [{"k": [1, 2]}, {"k": [1, 2]}]}

    looped: list[Any] = [1]
    looped.append(looped)
    assert not is_lossless_json(looped)

    own: dict[str, Any] = {}
    own["self"] = own
    with pytest.raises(NotLosslessJsonError) as raised:
        snapshot_json(own)
    assert raised.value.path == "value.self"

    indirect: dict[str, Any] = {"a": {"b": []}}
    indirect["a"]["b"].append(indirect)
    assert not is_lossless_json(indirect)


def test_tuples_and_other_mappings_of_the_right_kind_become_plain_json() -> None:
    snapshot = snapshot_json({"pair": (1, "two"), "nested": ((1,), [(2, 3)])})
    assert snapshot == {"pair": [1, "two"], "nested": [[1], [[2, 3]]]}
    assert type(snapshot["pair"]) is FrozenList
    assert type(snapshot_json((1, 2))) is FrozenList
    ordered = snapshot_json(OrderedDict([("b", 1), ("a", 2)]))
    assert type(ordered) is FrozenDict
    assert list(ordered) == ["b", "a"]


def test_snapshots_are_deep_copies_detached_from_the_source() -> None:
    source = {"list": [1, {"inner": "x"}]}
    snapshot = snapshot_json(source)
    source["list"][1]["inner"] = "changed"  # type: ignore[index]
    source["list"].append(99)  # type: ignore[attr-defined]
    assert snapshot == {"list": [1, {"inner": "x"}]}


def test_an_existing_snapshot_is_returned_as_is() -> None:
    snapshot = snapshot_json({"a": [1]})
    assert snapshot_json(snapshot) is snapshot
    wrapped = snapshot_json([snapshot])
    assert wrapped[0] is snapshot


# --- FrozenDict / FrozenList ---------------------------------------------------------------------

_DICT_MUTATIONS = {
    "setitem": lambda d: d.__setitem__("x", 1),
    "delitem": lambda d: d.__delitem__("a"),
    "ior": lambda d: d.__ior__({"x": 1}),
    "clear": lambda d: d.clear(),
    "pop": lambda d: d.pop("a"),
    "popitem": lambda d: d.popitem(),
    "setdefault": lambda d: d.setdefault("x", 1),
    "update": lambda d: d.update(x=1),
}

_LIST_MUTATIONS = {
    "setitem": lambda values: values.__setitem__(0, 9),
    "setslice": lambda values: values.__setitem__(slice(0, 1), [9]),
    "delitem": lambda values: values.__delitem__(0),
    "iadd": lambda values: values.__iadd__([9]),
    "imul": lambda values: values.__imul__(2),
    "append": lambda values: values.append(9),
    "extend": lambda values: values.extend([9]),
    "insert": lambda values: values.insert(0, 9),
    "pop": lambda values: values.pop(),
    "remove": lambda values: values.remove(1),
    "clear": lambda values: values.clear(),
    "sort": lambda values: values.sort(),
    "reverse": lambda values: values.reverse(),
}


@pytest.mark.parametrize("mutation", list(_DICT_MUTATIONS), ids=str)
def test_every_frozen_dict_mutator_raises_type_error(mutation: str) -> None:
    frozen = snapshot_json({"a": 1, "b": [2]})
    with pytest.raises(TypeError):
        _DICT_MUTATIONS[mutation](frozen)
    assert frozen == {"a": 1, "b": [2]}


@pytest.mark.parametrize("mutation", list(_LIST_MUTATIONS), ids=str)
def test_every_frozen_list_mutator_raises_type_error(mutation: str) -> None:
    frozen = snapshot_json([3, 1, 2])
    with pytest.raises(TypeError):
        _LIST_MUTATIONS[mutation](frozen)
    assert frozen == [3, 1, 2]


def test_augmented_assignment_on_frozen_containers_raises() -> None:
    frozen = snapshot_json({"d": {"a": 1}, "l": [1]})
    inner_dict, inner_list = frozen["d"], frozen["l"]
    with pytest.raises(TypeError):
        inner_dict |= {"b": 2}
    with pytest.raises(TypeError):
        inner_list += [2]
    with pytest.raises(TypeError):
        inner_list *= 2
    assert frozen == {"d": {"a": 1}, "l": [1]}


def test_frozen_containers_read_like_plain_data() -> None:
    frozen = snapshot_json({"a": [1, 2, {"b": None}], "c": "x"})
    plain = {"a": [1, 2, {"b": None}], "c": "x"}

    assert frozen == plain
    assert plain == frozen
    assert isinstance(frozen, dict)
    assert isinstance(frozen["a"], list)
    assert frozen["a"][2]["b"] is None
    assert frozen.get("missing", "default") == "default"
    assert list(frozen.items()) == [("a", [1, 2, {"b": None}]), ("c", "x")]
    assert frozen["a"][0:2] == [1, 2]
    assert json.dumps(frozen) == json.dumps(plain)
    assert json.loads(json.dumps(frozen)) == plain
    assert frozen | {"d": 1} == {**plain, "d": 1}  # non-mutating operators still work
    assert frozen["a"] + [3] == [1, 2, {"b": None}, 3]


def test_direct_construction_validates_and_freezes() -> None:
    frozen_dict = FrozenDict({"a": [1, {"b": 2}]}, c=3)
    assert frozen_dict == {"a": [1, {"b": 2}], "c": 3}
    assert type(frozen_dict["a"]) is FrozenList
    assert type(frozen_dict["a"][1]) is FrozenDict
    frozen_list = FrozenList([1, (2, 3)])
    assert frozen_list == [1, [2, 3]]
    with pytest.raises(TypeError):
        frozen_list[1].append(4)
    with pytest.raises(NotLosslessJsonError):
        FrozenDict({"a": math.nan})
    with pytest.raises(NotLosslessJsonError):
        FrozenList([{1, 2}])


def test_copy_deepcopy_and_thaw_give_mutable_plain_copies() -> None:
    frozen = snapshot_json({"a": [1, {"b": [2]}]})

    for thawed in (copy.deepcopy(frozen), thaw(frozen)):
        assert thawed == frozen
        assert type(thawed) is dict
        assert type(thawed["a"]) is list
        assert type(thawed["a"][1]) is dict
        assert type(thawed["a"][1]["b"]) is list
        thawed["a"][1]["b"].append(3)
        thawed["new"] = True
        assert frozen == {"a": [1, {"b": [2]}]}

    shallow = copy.copy(frozen)
    assert type(shallow) is dict
    shallow["x"] = 1
    assert "x" not in frozen
    assert type(copy.copy(frozen["a"])) is list

    outer = copy.deepcopy({"plain": frozen})
    assert type(outer["plain"]) is dict


def test_thaw_accepts_plain_values_and_tuples() -> None:
    assert thaw(5) == 5
    assert thaw(None) is None
    assert thaw((1, (2,))) == [1, [2]]
    source = {"a": [1]}
    thawed = thaw(source)
    assert thawed == source
    assert thawed is not source
    assert thawed["a"] is not source["a"]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_round_trips_frozen_snapshots(protocol: int) -> None:
    frozen = snapshot_json({"a": [1, {"b": "x"}], "c": None})

    restored = pickle.loads(pickle.dumps(frozen, protocol=protocol))

    assert restored == frozen
    assert type(restored) is FrozenDict
    assert type(restored["a"]) is FrozenList
    assert type(restored["a"][1]) is FrozenDict
    with pytest.raises(TypeError):
        restored["a"].append(2)
    restored_list = pickle.loads(pickle.dumps(snapshot_json([1, [2]]), protocol=protocol))
    assert type(restored_list) is FrozenList
    assert restored_list == [1, [2]]


# --- deep values (iterative walks) ----------------------------------------------------------------


def _deep_list(depth: int, leaf: Any = None) -> list[Any]:
    root: list[Any] = []
    cursor = root
    for _ in range(depth - 1):
        child: list[Any] = []
        cursor.append(child)
        cursor = child
    if leaf is not None:
        cursor.append(leaf)
    return root


def _deep_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cursor = root
    for _ in range(depth - 1):
        child: dict[str, Any] = {}
        cursor["k"] = child
        cursor = child
    cursor["leaf"] = 1
    return root


def _depth(value: Any, kind: type, container: type, inner: Callable[[Any], Any]) -> int:
    """How many ``kind`` levels nest through ``inner``, each asserted to be exactly ``container``."""
    depth = 0
    while isinstance(value, kind):
        assert type(value) is container
        depth += 1
        value = inner(value)
    return depth


def _list_depth(value: Any, container: type) -> int:
    return _depth(value, list, container, lambda level: level[0] if level else None)


def _dict_depth(value: Any, container: type) -> int:
    return _depth(value, dict, container, lambda level: level.get("k"))


def test_a_100000_deep_list_snapshots_checks_and_thaws_without_recursion() -> None:
    deep = _deep_list(DEEP)

    assert is_lossless_json(deep)
    snapshot = snapshot_json(deep)
    assert _list_depth(snapshot, FrozenList) == DEEP
    thawed = thaw(snapshot)
    assert _list_depth(thawed, list) == DEEP
    assert js_json_dumps(snapshot) == "[" * DEEP + "]" * DEEP


def test_a_100000_deep_dict_snapshots_checks_and_thaws_without_recursion() -> None:
    deep = _deep_dict(DEEP)

    assert is_lossless_json(deep)
    snapshot = snapshot_json(deep)
    assert _dict_depth(snapshot, FrozenDict) == DEEP
    thawed = thaw(snapshot)
    assert _dict_depth(thawed, dict) == DEEP


def test_a_100000_deep_value_with_a_bad_leaf_or_a_cycle_is_rejected_without_recursion() -> None:
    assert not is_lossless_json(_deep_list(DEEP, math.nan))
    assert not is_lossless_json(_deep_list(DEEP, {1, 2}))
    looped = _deep_list(DEEP)
    cursor = looped
    while cursor:
        cursor = cursor[0]
    cursor.append(looped)
    assert not is_lossless_json(looped)


# --- js_number (ECMAScript Number::toString) -----------------------------------------------------


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        # The §2.21 examples.
        (1.0, "1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        # Derived from Number::toString: k digits, n = decimal exponent.
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (42, "42"),
        (-7, "-7"),
        (100.0, "100"),
        (1.5, "1.5"),
        (-1.5, "-1.5"),
        (0.1, "0.1"),
        (1 / 3, "0.3333333333333333"),
        (123456789.125, "123456789.125"),
        (1e20, "100000000000000000000"),
        (9.999999999999999e20, "999999999999999900000"),
        (12345678901234567890.0, "12345678901234567000"),
        (1.5e-6, "0.0000015"),
        (1.5e-7, "1.5e-7"),
        (123e-20, "1.23e-18"),
        (-2.5e-7, "-2.5e-7"),
        (1e100, "1e+100"),
        (1.2345e25, "1.2345e+25"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (MAX_SAFE_INTEGER, "9007199254740991"),
        (2**53, "9007199254740992"),
        (10**21, "1e+21"),
        (-(10**21), "-1e+21"),
        (2**70, "1.1805916207174113e+21"),
        (float(2**60), "1152921504606847000"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
    ids=repr,
)
def test_js_number_follows_ecmascript_number_to_string(number: float, expected: str) -> None:
    assert js_number(number) == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [(2**56, "72057594037927940"), (2**60, "1152921504606847000"), (-(2**60), "-1152921504606847000")],
    ids=repr,
)
def test_js_number_prints_a_large_exact_int_like_the_equal_double(number: int, expected: str) -> None:
    """A lossless Python int above 2**53 is the same JS number as ``float(n)``, so it prints alike."""
    assert js_number(number) == js_number(float(number)) == expected


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda value: value != 0))
def test_js_number_round_trips_every_finite_double(number: float) -> None:
    rendered = js_number(number)
    assert float(rendered) == number
    assert float(json.loads(rendered)) == number  # integral digits may exceed 2**53: JS reads a double
    if number == int(number) and abs(number) < 1e21:
        assert "." not in rendered and "e" not in rendered
    assert "e-0" not in rendered and "e+0" not in rendered


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER))
def test_js_number_prints_safe_integers_as_plain_digits(number: int) -> None:
    assert js_number(number) == str(number)
    assert js_number(float(number)) == str(number)


# --- js_string (JSON.stringify for strings) ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", '"plain"'),
        ("", '""'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x00", '"\\u0000"'),
        ("\x01", '"\\u0001"'),
        ("\x0b", '"\\u000b"'),
        ("\x1b", '"\\u001b"'),
        ("\x1f", '"\\u001f"'),
        ("\x7f", '"\x7f"'),
        ("\x85", '"\x85"'),
        ("a/b</script>", '"a/b</script>"'),
        ("\u2028\u2029", '"\u2028\u2029"'),
        ("héllo ✓", '"héllo ✓"'),
        ("\U0001f600", '"\U0001f600"'),
        ("\ud800", '"\\ud800"'),
        ("\udfff", '"\\udfff"'),
        ("x\udc00y", '"x\\udc00y"'),
        ("\ud83d\ude00", '"\ud83d\ude00"'),
        ("\ude00\ud83d", '"\\ude00\\ud83d"'),
        ("\ud800\ud800\udc00", '"\\ud800\ud800\udc00"'),
        ("\ud800\udc00\udc00\n", '"\ud800\udc00\\udc00\\n"'),
    ],
    ids=repr,
)
def test_js_string_escapes_like_json_stringify(value: str, expected: str) -> None:
    assert js_string(value) == expected


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_js_string_matches_json_dumps_for_text_without_surrogates(value: str) -> None:
    assert js_string(value) == json.dumps(value, ensure_ascii=False)


def test_js_json_dumps_is_compact_json_stringify() -> None:
    value = snapshot_json({"n": [1.0, 1e21, 1e-7, -1.5], "s": "a\nb", "t": True, "z": None, "e": {}, "l": []})
    assert js_json_dumps(value) == '{"n":[1,1e+21,1e-7,-1.5],"s":"a\\nb","t":true,"z":null,"e":{},"l":[]}'


def _js_int(digits: str) -> int | float:
    """Read integral JSON digits the way JavaScript does (beyond 2**53 they name a double)."""
    number = int(digits)
    return number if abs(number) <= MAX_SAFE_INTEGER else float(digits)


# --- property round trips -------------------------------------------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda value: not (value == 0 and math.copysign(1, value) < 0)
    )
    | st.text()
)
lossless_values = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(lossless_values)
def test_snapshot_round_trips_lossless_values(value: Any) -> None:
    assert is_lossless_json(value)
    snapshot = snapshot_json(value)
    assert snapshot == value
    assert json.loads(json.dumps(snapshot)) == value
    assert thaw(snapshot) == value
    assert json.loads(js_json_dumps(snapshot), parse_int=_js_int) == value
    assert pickle.loads(pickle.dumps(snapshot)) == value


@settings(max_examples=200, deadline=None)
@given(lossless_values)
def test_tuples_snapshot_to_the_same_arrays_as_lists(value: Any) -> None:
    assert snapshot_json((value, [value])) == [value, [value]]
