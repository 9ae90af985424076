"""Shared pieces of the property tests (hypothesis): example budgets, the strategies for
junk values, and the checks that a message is one clear line and that the CLI answers cleanly
(one error line, strict JSON).  Used by tests/pages/test_fuzz_*.py, tests/params and
tests/cli."""

from __future__ import annotations

import base64
import json
import math
import os
import re
from contextvars import copy_context
from pathlib import Path
from typing import Any

from dash._callback_context import context_value
from dash._utils import AttributeDict
from dash.development.base_component import Component
from hypothesis import HealthCheck, currently_in_test_context, event, settings
from hypothesis import strategies as st

from bnviz.cli import main
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import ids as EIDS

#: Examples per test; BNVIZ_FUZZ_EXAMPLES=500 runs a deeper search (minutes, not seconds).
EXAMPLES = int(os.environ.get("BNVIZ_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.filter_too_much])
FEW = settings(FUZZ, max_examples=max(1, EXAMPLES * 5 // 8))  # the slower tests

#: The longest sound messages name a path under BNVIZ_DATA plus a download URL (~300-400
#: characters); anything longer echoes a long user value.
MAX_MESSAGE = 500
EXC_REPR = re.compile(r"\b\w*(Error|Exception|Warning)\(")
HUGE = 10**30  # far out of every range, but still a float
TOO_BIG = 10**400  # a JSON integer beyond float range (json parses it exactly)


# =========================================================================== helpers


def message_text(msg) -> str:
    """The text a user sees: a string, or the text inside an html/dbc component."""
    if msg is None:
        return ""
    if isinstance(msg, str):
        return msg
    if isinstance(msg, int | float):
        return str(msg)
    if isinstance(msg, list | tuple):
        return "".join(message_text(m) for m in msg)
    if isinstance(msg, Component):
        return message_text(getattr(msg, "children", None))
    raise AssertionError(f"unexpected message object {type(msg).__name__}")


def assert_clear(msg, home: Path | None = None) -> str:
    """A message for the user: one non-empty line, no traceback, no exception repr. Paths
    under ``home`` (a test's long temporary folder) count as a short one."""
    text = message_text(msg)
    if home is not None:
        text = text.replace(str(home), "~/.bnviz")
    assert text.strip(), "empty message"
    assert "\n" not in text and "\r" not in text, text[:300]
    assert "Traceback" not in text, text[:300]
    assert not EXC_REPR.search(text), text[:300]
    assert len(text) <= MAX_MESSAGE, (len(text), text[:200])
    return text


def in_callback(fn, prop_id: str, *args):
    """Run ``fn(*args)`` as dash runs a callback triggered by ``prop_id``."""
    def inner():
        context_value.set(AttributeDict(
            **{"triggered_inputs": [{"prop_id": prop_id, "value": None}]}))
        return fn(*args)
    return copy_context().run(inner)


def data_url(raw: bytes, mime: str = "text/csv") -> str:
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


def click(x, y, extra):
    return in_callback(ce.add_points, EIDS.CURSOR + ".data",
                       {"points": [{"x": x, "y": y}]}, None, None, None, extra)


def upload(contents, filename, extra):
    return in_callback(ce.add_points, EIDS.UPLOAD + ".contents", None, contents, 1, filename,
                       extra)


def alert_of(layout, alert_id: str):
    found = [c for c in layout._traverse() if getattr(c, "id", None) == alert_id]
    assert len(found) == 1
    return found[0]


def _number(value) -> float | None:
    """How float() reads a control value (None when it does not)."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _whole_in(value, lo: float, hi: float) -> bool:
    x = _number(value)
    return x is not None and math.isfinite(x) and x == int(x) and lo <= x <= hi


# =========================================================================== strategies

BOUNDARY = [math.nan, math.inf, -math.inf, -1, 0, -0.0, 0.5, -7.25, 1e-300, 1e300, HUGE,
            -HUGE, 2**63, 2**53 + 1, TOO_BIG, -TOO_BIG]
NUMBERS = st.one_of(st.sampled_from(BOUNDARY), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=True, allow_infinity=True))
SHORT_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
TEXTS = st.one_of(st.sampled_from(["", " ", "abc", "nan", "NaN", "inf", "-inf", "-1", "0",
                                   "1e400", str(HUGE), "0x10", "1_0", "2.5", "\u0663", "None",
                                   "null", "[]", "{}", "all", "'\"<b>", "1,2", "\n", "x" * 2000,
                                   "\u00e9\n" * 300]),
                  SHORT_TEXT)
CONTAINERS = st.one_of(
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=3), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=2))
#: Any JSON value a client can send for one control.
JUNK = st.one_of(st.none(), st.booleans(), NUMBERS, TEXTS, CONTAINERS)
HEX24 = st.text("0123456789abcdef", min_size=24, max_size=24)
HEX12 = st.text("0123456789abcdef", min_size=12, max_size=12)


def bad_number(lo: float, hi: float, junk=JUNK):
    """Junk that is not a valid whole number in [lo, hi], plus the nearest invalid ones."""
    return st.one_of(st.sampled_from([lo - 1, hi + 1, str(hi + 1), HUGE, -HUGE]),
                     junk.filter(lambda v: not _whole_in(v, lo, hi)))


def good(strategy):
    """A valid value, as a number or as the text a URL or a text box holds."""
    return st.one_of(strategy, strategy.map(str))


@st.composite
def mixed(draw, valid: dict, bad: dict):
    """Valid values for every key, then up to three keys replaced by bad ones."""
    out = {k: draw(s) for k, s in valid.items()}
    for k in draw(st.lists(st.sampled_from(sorted(bad)), max_size=3, unique=True)):
        out[k] = draw(bad[k])
    return out


def run_cli(capsysbinary, argv: list[str]) -> tuple[int, bytes, str]:
    capsysbinary.readouterr()
    rc = main(argv)
    captured = capsysbinary.readouterr()
    if currently_in_test_context():
        event(f"exit {rc}")
    return rc, captured.out, captured.err.decode("utf-8", "replace")


def assert_cli_outcome(rc: int, out: bytes, err: str, allowed=(0, 2)) -> None:
    assert rc in allowed, (rc, err[-2000:])
    assert "Traceback" not in err
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1, err[:2000]
        assert lines[0].startswith("bnviz: error: ") and lines[0][14:].strip(), err[:2000]
        assert not out


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name}")


def strict_json(text: str | bytes) -> dict[str, Any]:
    """Parse JSON as the standard defines it: NaN and Infinity are not JSON."""
    return json.loads(text, parse_constant=_reject_constant)


def assert_one_error_line(rc: int, out: bytes | str, err: str) -> None:
    """Exit code 2, nothing on stdout, exactly one non-empty 'bnviz: error:' line on stderr."""
    assert rc == 2, (rc, err)
    assert len(out) == 0, out[:200]
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bnviz: error:"), err
    assert lines[0][len("bnviz: error:"):].strip(), err
