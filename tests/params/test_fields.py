"""The field types of the parameter layer, and the one error they raise (bnviz.params.fields).

Raw values (what a page, a URL or a request sends) are read laxly, typed values (what code
passes) strictly; either way a bad value is an InputError with one line naming the field and
the allowed range, and nothing else is ever raised (hypothesis feeds every kind of junk).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import FrozenInstanceError, asdict, fields, replace

import pytest
from fuzzing import FUZZ, JUNK, TOO_BIG, _whole_in, assert_clear
from hypothesis import given
from hypothesis import strategies as st

from bnviz.messages import brief
from bnviz.params import (
    IMAGE_JOB_PARAMS,
    BNStatsParams,
    DensityPageParams,
    DensityParams,
    InputError,
    JitterParams,
    LandscapeParams,
    PartitionParams,
    TrainingJobParams,
    TrainingParams,
    parse,
)
from bnviz.params.fields import (
    choice,
    count_or_all,
    described,
    real,
    real_value,
    reals,
    whole,
    whole_or_none,
    whole_value,
)
from bnviz.params.model import (
    MAX_REFUSAL_CHARS,
    CheckInfo,
    field_check,
    json_schema,
    model_check,
    params_dataclass,
)


@params_dataclass
class Sample:
    """Every kind of field, with bounds that make each side of each bound testable."""

    count: whole(1, 12) = 4
    ratio: real(0.25, 4.0) = 1.0
    rate: real(0.0, 10.0, lo_open=True) = 0.5
    anything: real() = 0.0
    kind: choice(("relu", "abs")) = "relu"
    batch: count_or_all(2, 100) = None
    virtual: whole_or_none(2, 100) = None


# --------------------------------------------------------------------------- raw values


@pytest.mark.parametrize(("raw", "want"), [
    (1, 1), (12, 12), ("3", 3), (" 7 ", 7), (3.0, 3), ("3.0", 3), ("1e1", 10), ("12", 12),
])
def test_whole_reads_numbers_and_their_text(raw, want):
    value = parse(Sample, {"count": raw}).count
    assert value == want and type(value) is int


@pytest.mark.parametrize("raw", [0, 13, "0", "13", 2.5, "2.5", "nan", "inf", "-inf", math.nan,
                                 math.inf, "", " ", "x", None, True, False, [3], {"a": 3},
                                 10**400, -10**400, "1" * 500])
def test_whole_refuses_with_one_line_naming_the_field(raw):
    with pytest.raises(InputError) as info:
        parse(Sample, {"count": raw})
    text = str(info.value)
    assert text.startswith("count: enter a whole number from 1 to 12, got ")
    assert "\n" not in text and len(text) < 120


def test_an_integer_too_long_to_print_is_refused_by_name():
    with pytest.raises(InputError, match=r"^count: .*, got a number of thousands of digits$"):
        parse(Sample, {"count": 10**5000})


@pytest.mark.parametrize(("name", "lo", "hi", "outside"), [
    ("ratio", 0.25, 4.0, (0.2499999, 4.0000001)),
    ("rate", 1e-300, 10.0, (0.0, 10.0000001)),
])
def test_real_bounds_each_side(name, lo, hi, outside):
    assert getattr(parse(Sample, {name: lo}), name) == lo
    assert getattr(parse(Sample, {name: str(hi)}), name) == hi
    for raw in outside:
        with pytest.raises(InputError, match=f"^{name}: enter a number"):
            parse(Sample, {name: raw})


def test_open_lower_bound_reads_as_an_interval():
    with pytest.raises(InputError, match=r"^rate: enter a number in \(0, 10\], got 0$"):
        parse(Sample, {"rate": 0})


@pytest.mark.parametrize("raw", [math.nan, math.inf, "nan", "-inf", "1e400", 10**400, None,
                                 True, [1.0], "", "one"])
def test_any_finite_number_refuses_the_rest(raw):
    with pytest.raises(InputError, match=r"^anything: enter a finite number, got "):
        parse(Sample, {"anything": raw})
    assert parse(Sample, {"anything": -1e300}).anything == -1e300


def test_choice_is_exact():
    assert parse(Sample, {"kind": "abs"}).kind == "abs"
    for raw in ("ABS", " abs", "", None, 1, ["abs"], True):
        with pytest.raises(InputError, match=r"^kind: choose one of relu, abs, got "):
            parse(Sample, {"kind": raw})


def test_batch_sizes_all_or_a_count():
    for raw in (None, "", "all", " ALL ", "none", "Full"):
        assert parse(Sample, {"batch": raw}).batch is None
    assert parse(Sample, {"batch": "2"}).batch == 2 and parse(Sample, {"batch": 100}).batch == 100
    for raw in (1, "1", 101, 2.5, "some", math.nan, True, [4]):
        with pytest.raises(InputError, match=r"^batch: enter 'all' or a whole number from 2 "
                                             r"to the number of points, got "):
            parse(Sample, {"batch": raw})


def test_optional_whole():
    assert parse(Sample, {"virtual": None}).virtual is None
    assert parse(Sample, {"virtual": " "}).virtual is None
    assert parse(Sample, {"virtual": "2"}).virtual == 2
    for raw in (1, 101, "x", 2.5):
        with pytest.raises(InputError, match=r"^virtual: enter a whole number from 2 to 100 "
                                             r"\(or nothing\), got "):
            parse(Sample, {"virtual": raw})


def test_defaults_unknown_keys_and_labels():
    assert parse(Sample, {}) == Sample()
    assert parse(Sample, {"bogus": 1, "__class__": 2, 3: 4, "count": "5"}).count == 5
    with pytest.raises(InputError, match=r"^--count: enter a whole number"):
        parse(Sample, {"count": 0}, {"count": "--count"})
    for raw in (None, [("count", 3)], "count=3", 7):
        with pytest.raises(InputError, match=r"^expected named settings, got "):
            parse(Sample, raw)


def test_the_first_bad_field_is_named():
    with pytest.raises(InputError, match=r"^count:"):
        parse(Sample, {"kind": "x", "count": "x"})  # fields are checked in their order


def test_many_bad_fields_are_one_bounded_line():
    """Every field bad, each value's text long: the first refusals that fit in the line,
    then how many more (the jobs form's fuzz test found a 501-character alert)."""
    long = "x" * 150
    raw = {name: long for name in ("count", "ratio", "rate", "anything", "kind", "batch",
                                   "virtual")}
    with pytest.raises(InputError) as caught:
        parse(Sample, raw)
    text = str(caught.value)
    assert len(text) <= MAX_REFUSAL_CHARS and "\n" not in text
    assert text.startswith("count:") and re.search(r"; and [1-6] more$", text)
    shown = text.count("; ")  # the refusals shown: one "; " after each
    assert shown + int(re.search(r"and (\d) more$", text).group(1)) == len(raw)
    # a few bad fields are all named, in full
    with pytest.raises(InputError) as few:
        parse(Sample, {"count": "x", "kind": "y"})
    assert str(few.value).startswith("count:") and "; kind:" in str(few.value)
    assert "more" not in str(few.value)


# --------------------------------------------------------------------------- typed values


def test_code_is_strict_about_types():
    assert Sample(count=3, ratio=2, batch=5) == Sample(count=3, ratio=2.0, batch=5)
    for bad in ({"count": 3.0}, {"count": "3"}, {"ratio": "2"}, {"batch": 5.0},
                {"count": True}, {"ratio": math.nan}, {"kind": "ABS"}):
        with pytest.raises(InputError):
            Sample(**bad)


def test_construction_error_is_one_line_and_a_value_error():
    with pytest.raises(ValueError) as info:
        Sample(count=99)
    assert type(info.value) is InputError
    assert str(info.value) == "count: enter a whole number from 1 to 12, got 99"


def test_a_dataclass_frozen_hashable_and_revalidated_on_replace():
    s = Sample(count=3)
    assert [f.name for f in fields(Sample)][:2] == ["count", "ratio"]
    assert asdict(s)["count"] == 3 and hash(s) == hash(Sample(count=3))
    with pytest.raises(FrozenInstanceError):
        s.count = 4  # type: ignore[misc]
    assert replace(s, count=5).count == 5
    with pytest.raises(InputError):
        replace(s, count=13)


def test_json_schema_carries_the_bounds():
    props = json_schema(Sample)["properties"]
    assert (props["count"]["minimum"], props["count"]["maximum"]) == (1, 12)
    assert props["rate"]["exclusiveMinimum"] == 0.0 and props["rate"]["maximum"] == 10.0
    assert props["kind"]["enum"] == ["relu", "abs"]


# --------------------------------------------------------------------------- lists, help


@params_dataclass
class Lists:
    """A set of radii, an ordered list with an open lower bound, and a described field."""

    radii: reals(0.5, 2.0, count=(1, 3), distinct=True) = (1.0,)
    scales: reals(0.0, lo_open=True, count=(2, 2)) = (1.0, 1.0)
    size: described(whole(1, 9), "how many of them") = 3


@pytest.mark.parametrize(("raw", "want"), [
    ("2, 0.5", (0.5, 2.0)), ("1,1,1", (1.0,)), ([2, 1.5, 2], (1.5, 2.0)), (1, (1.0,)),
    ((0.5,), (0.5,)), ("1e0", (1.0,)), ([" 1 ", "2"], (1.0, 2.0)),
])
def test_reals_read_text_lists_and_a_lone_number(raw, want):
    got = parse(Lists, {"radii": raw}).radii
    assert got == want and all(type(v) is float for v in got)


@pytest.mark.parametrize("raw", [
    "", ",", "1,,2", "0.49", "2.01", "0.5,1,1.5,2", [0.5, 1, 1.5, 2], [], None, True, [True],
    [None], "nan", [math.inf], {"a": 1}, "x" * 2000, "1," * 10**4, [10**400]])
def test_reals_refuse_with_one_line(raw):
    with pytest.raises(InputError) as info:
        parse(Lists, {"radii": raw})
    text = assert_clear(str(info.value))
    assert text.startswith("radii: enter 1 to 3 comma-separated numbers (each from 0.5 to 2), "
                           "got "), text


def test_ordered_reals_keep_order_and_repeats():
    assert parse(Lists, {"scales": "3, 3"}).scales == (3.0, 3.0)
    assert Lists(scales=[2.0, 1]).scales == (2.0, 1.0)
    for raw in ("1", "1,2,3", "0,1", "-1,1"):
        with pytest.raises(InputError, match=r"^scales: enter 2 comma-separated numbers \(each "
                                             r"> 0\), got "):
            parse(Lists, {"scales": raw})
    with pytest.raises(InputError, match=r"^scales: enter 2 numbers \(each > 0\), got '1,2'$"):
        Lists(scales="1,2")  # code passes numbers, not a text


def test_described_fields_carry_their_help_to_the_schema():
    props = json_schema(Lists)["properties"]
    assert props["size"]["description"] == "how many of them"
    assert (props["size"]["minimum"], props["size"]["maximum"], props["size"]["default"]) == (
        1, 9, 3)
    assert props["radii"]["items"] == {"type": "number", "minimum": 0.5, "maximum": 2.0}
    assert (props["radii"]["minItems"], props["radii"]["maxItems"]) == (1, 3)
    assert props["scales"]["items"] == {"type": "number", "exclusiveMinimum": 0.0}
    with pytest.raises(InputError, match=r"^size: enter a whole number from 1 to 9, got 10$"):
        Lists(size=10)


def test_parse_of_typed_values_is_strict_and_labelled():
    labels = {"count": "count="}
    assert parse(Sample, {"count": 3}, labels, lax=False).count == 3
    for raw in ("3", 3.0, True):
        with pytest.raises(InputError, match=r"^count=: enter a whole number from 1 to 12"):
            parse(Sample, {"count": raw}, labels, lax=False)


def test_a_nested_models_field_is_named_by_its_path():
    @params_dataclass
    class Outer:
        inner: Lists | None = None

    assert parse(Outer, {"inner": {"size": "4"}}).inner == Lists(size=4)
    with pytest.raises(InputError, match=r"^the inner size: enter a whole number from 1 to 9, "
                                         r"got 0$"):
        parse(Outer, {"inner": {"size": 0}}, {"inner": "the inner"})


# --------------------------------------------------------------------------- single values


def test_single_value_readers():
    assert whole_value("4", 1, 5) == 4 and real_value("0.5", 0, 1) == 0.5
    with pytest.raises(InputError, match=r"^enter a whole number from 1 to 5, got 6$"):
        whole_value(6, 1, 5)
    with pytest.raises(InputError):
        whole_value("4", 1, 5, lax=False)
    assert brief(10**5000) == "a number of thousands of digits"
    assert len(brief("x" * 2000)) <= 40


# --------------------------------------------------------------------------- junk


@FUZZ
@given(raw=st.dictionaries(st.sampled_from([f.name for f in fields(Sample)]), JUNK,
                           max_size=4))
def test_junk_gives_a_model_or_one_clear_line(raw):
    try:
        s = parse(Sample, raw)
    except InputError as exc:
        assert_clear(str(exc))
        assert str(exc).split(":")[0] in {f.name for f in fields(Sample)}
        return
    assert 1 <= s.count <= 12 and 0.25 <= s.ratio <= 4 and 0 < s.rate <= 10
    assert math.isfinite(s.anything) and s.kind in ("relu", "abs")
    if "count" in raw:
        assert _whole_in(raw["count"], 1, 12)


@FUZZ
@given(value=st.one_of(JUNK, st.just(TOO_BIG)))
def test_single_values_raise_only_input_error(value):
    for read in (lambda v: whole_value(v, 0, 9), lambda v: real_value(v, 0.0, 9.0),
                 lambda v: real_value(v)):
        try:
            read(value)
        except InputError as exc:
            assert_clear(str(exc))


MODELS = [PartitionParams, JitterParams, TrainingParams, TrainingJobParams,
          DensityParams, DensityPageParams, BNStatsParams, LandscapeParams,
          *IMAGE_JOB_PARAMS.values()]


@st.composite
def junk_request(draw):
    """A model and up to four of its fields set to anything a request can send."""
    model = draw(st.sampled_from(MODELS))
    names = [f.name for f in fields(model)]
    return model, draw(st.dictionaries(st.sampled_from(names), JUNK, max_size=4))


@FUZZ
@given(request=junk_request())
def test_every_model_answers_junk_with_a_model_or_one_clear_line(request):
    model, raw = request
    try:
        got = parse(model, raw)
    except InputError as exc:
        text = assert_clear(str(exc))
        label = text.split(":")[0].replace(" ", "_")  # a nested model's field: "noisy r mu"
        named = any(label == f.name or label.startswith(f.name + "_") for f in fields(model))
        assert named or "over the cap" in text, text  # a field, or a cost cap over several
        return
    assert type(got) is model


# --------------------------------------------------------------------------- the layer


@params_dataclass
class Checked:
    """A model whose model hook refuses one value, and whose field hook clamps another."""

    a: whole(0, 9) = 0
    b: whole(0, 9) = 0

    @field_check("b", mode="after")
    @classmethod
    def _at_most_a(cls, value: int, info: CheckInfo) -> int:
        return min(value, info.data["a"])

    @model_check
    def _not_five(self) -> None:
        if self.a == 5:
            raise InputError("not 5", "a")


@params_dataclass
class Unchecked(Checked):
    """The same fields; its plain method of the model hook's name replaces the hook."""

    def _not_five(self) -> None:
        return None


def test_hooks_run_in_order_and_a_subclass_may_replace_one():
    assert Checked(a=3, b=7).b == 3 and parse(Checked, {"a": "4", "b": "9"}).b == 4
    with pytest.raises(InputError, match=r"^a: not 5$"):
        Checked(a=5)
    assert Unchecked(a=5, b=9) == Unchecked(a=5, b=5)
    with pytest.raises(ValueError, match="not 'wrap'"):
        field_check("a", mode="wrap")


def _logged(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)
    return wrapper


def _opaque(function):
    def wrapper(*args):  # no functools.wraps: no signature to read
        return function(*args)
    return wrapper


@params_dataclass
class Plainly:
    """Field checks written without @classmethod, wrapped by decorators, with and without
    ``info`` (issue 43: each failed with a raw TypeError from a sniffed argument count)."""

    a: whole(0, 9) = 0
    b: whole(0, 9) = 0
    c: whole(0, 9) = 0
    d: whole(0, 9) = 0

    @field_check("a", mode="after")
    def _double(cls, value: int) -> int:
        return 2 * value

    @field_check("b", mode="after")
    def _at_most_a(cls, value: int, info: CheckInfo) -> int:
        return min(value, info.data["a"])

    @field_check("c", mode="after")
    @classmethod
    @_logged
    def _plus_one(cls, value: int, info: CheckInfo) -> int:
        return value + 1

    @field_check("d", mode="after")
    @_opaque
    def _minus_one(cls, value: int, info: CheckInfo) -> int:
        return value - 1


def test_field_checks_need_no_classmethod_and_may_be_wrapped():
    got = Plainly(a=3, b=9, c=4, d=4)
    assert (got.a, got.b, got.c, got.d) == (6, 6, 5, 3)


@params_dataclass
class Returns:
    a: whole(0, 9) = 0

    @model_check
    def _returns_another(self) -> None:
        return dataclasses.replace(self, a=1) if self.a == 5 else None


def test_a_model_check_that_returns_a_model_is_a_programming_error():
    """Its return was thrown away silently while every check ended ``return self``."""
    assert Returns(a=4).a == 4
    with pytest.raises(TypeError, match="a model check returns nothing"):
        Returns(a=5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_plain_float_fields_are_finite(bad):
    @params_dataclass
    class Plain:
        x: float = 0.0

    assert Plain(x=2.5).x == 2.5
    with pytest.raises(InputError, match="x: expected a finite number"):
        Plain(x=bad)
    with pytest.raises(InputError, match="x: expected a finite number"):
        parse(Plain, {"x": bad})


def test_every_bad_field_is_named_in_one_line():
    """Checking went on past the first error only now: a page shows every bad value at
    once, and a check reading a refused field sees it absent (the branches for a refused
    depth in the density and partition models ran for the first time)."""
    from bnviz.params.density import DensityParams

    with pytest.raises(InputError) as info:
        parse(Checked, {"a": "x", "b": 99})
    assert str(info.value) == ("a: enter a whole number from 0 to 9, got 'x'; "
                               "b: enter a whole number from 0 to 9, got 99")
    with pytest.raises(InputError, match=r"^a: enter a whole number from 0 to 9, got 'x'$"):
        parse(Checked, {"a": "x", "b": 3})  # b's check reads a: a's refusal is the message
    with pytest.raises(InputError) as info:
        parse(DensityParams, {"depth": 0, "layers": "1,2", "grid": -1})
    message = str(info.value)
    assert message.count("\n") == 0 and message.startswith("depth: ")
    assert "grid: " in message and "layers" not in message  # the depth's refusal is why


def test_plain_fields_take_numpy_values_and_refuse_other_kinds():
    import numpy as np

    got = PartitionParams(widths=(np.int64(4), 5))
    assert got.widths == (4, 5) and all(type(w) is int for w in got.widths)
    for bad, says in (({"widths": (4, True)}, "widths: expected integer, got True"),
                      ({"widths": "4,4"}, "widths: expected a list, got '4,4'"),
                      ({"data_file": 1}, "data file: expected boolean, got 1")):
        with pytest.raises(InputError) as info:
            PartitionParams(**bad)
        assert str(info.value) == says


def test_each_json_schema_is_a_fresh_copy():
    json_schema(Lists)["properties"]["radii"]["items"]["minimum"] = 99
    assert json_schema(Lists)["properties"]["radii"]["items"]["minimum"] == 0.5
    noisy = json_schema(LandscapeParams)["properties"]["noisy"]
    assert noisy["anyOf"][1] == {"type": "null"} and "default" in noisy
