"""The house rules of ARCHITECTURE.md, as tests: each "one X" claim there names its test here.

They read the source (its AST) rather than run it, so they hold for code no other test
reaches.  Where a rule has exceptions, each is listed here with why.
"""

from __future__ import annotations

import ast
import math
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from bnviz import params
from bnviz.params import InputError
from bnviz.params import model as param_model

#: bnviz's own code: the library, the web layer, the app (the benchmarks are scripts that
#: drive it from outside; they count for the import graph and the line limit only).
SOURCE = ("bnviz", "callbacks", "layouts")
REPO = Path(__file__).resolve().parents[1]
APP = REPO / "app.py"
#: The house rule: modules stay under ~400 lines (the longest today: 396).  tests/ is not
#: held to it (its longest files are 400-840 lines of cases).
MAX_LINES = 400


def _files(trees: tuple[str, ...] = SOURCE, app: bool = True) -> list[Path]:
    # bnviz/web/ names app.py, layouts/ and callbacks/ by symbolic links: each file once
    found = [p for tree in trees for p in sorted((REPO / tree).rglob("*.py"))
             if "__pycache__" not in p.parts and not p.is_symlink()]
    return found + ([APP] if app else [])


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _name(node: ast.AST) -> str:
    """``a.b.c`` of a Name/Attribute chain ("" for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _calls(path: Path) -> list[tuple[str, str, int]]:
    """(the function it is in, the called name, line) of every call in a file."""
    out: list[tuple[str, str, int]] = []

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else where
            if isinstance(child, ast.Call):
                out.append((where, _name(child.func), child.lineno))
            walk(child, inner)

    walk(_tree(path), "")
    return out


# --------------------------------------------------------------------------- the import graph
# The contracts themselves are configuration (.importlinter: layers, acyclic siblings,
# forbidden imports), checked by import-linter; these tests run it and show it can fail.

CONTRACTS = REPO / ".importlinter"


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "300"}  # one line a contract
    return subprocess.run([str(lint), "--config", str(CONTRACTS), "--no-cache"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    """No import cycle in bnviz (bnviz.web included); bnviz layered package by package, the web
    layer on top; in the web layer app, then the pages, then the callbacks; no Dash below the
    web layer; caps a leaf (``make lint`` runs the same)."""
    run = _lint_imports(REPO)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


#: Each plant with the contracts it breaks (an upward import is a cycle of siblings as well
#: wherever the lower package is imported by the upper one).
@pytest.mark.parametrize("plant, broken", [
    (("bnviz/core/bn.py", "def _planted():\n    import bnviz.cli\n"),
     {"bnviz is layered", "No import cycles"}),
    (("bnviz/caps.py", "def _planted():\n    import bnviz.config\n"), {"caps imports nothing"}),
    (("bnviz/views/style.py", "def _planted():\n    import dash\n"), {"imports no Dash"}),
    (("bnviz/service/cache.py", "def _planted():\n    import layouts.common\n"),
     {"imports no Dash"}),
    (("bnviz/views/style.py", "def _planted():\n    import bnviz.web.callbacks.explorer.ids\n"),
     {"bnviz is layered", "No import cycles"}),
    # upward in the web layer; layouts import callbacks, so this is a cycle of siblings too
    (("callbacks/explorer/ids.py", "def _planted():\n    import bnviz.web.layouts.common\n"),
     {"The web layer", "No import cycles"}),
    (("callbacks/explorer/ids.py", "def _planted():\n    from bnviz.web import app\n"),
     {"The web layer", "No import cycles"}),
    (("bnviz/core/arrays.py", "def _planted():\n    from bnviz.core import partition\n"),
     {"No import cycles"}),
])
def test_a_planted_import_breaks_its_contract(tmp_path, plant, broken):
    ignore = shutil.ignore_patterns("__pycache__", "*.json", "*.template")
    # bnviz/web's symbolic links are copied as links: they name the copies beside them
    shutil.copytree(REPO / "bnviz", tmp_path / "bnviz", symlinks=True, ignore=ignore)
    for tree in ("callbacks", "layouts"):
        shutil.copytree(REPO / tree, tmp_path / tree, ignore=ignore)
    shutil.copy(APP, tmp_path / "app.py")
    path, text = plant
    with open(tmp_path / path, "a") as f:
        f.write("\n\n" + text)
    run = _lint_imports(tmp_path)
    verdicts = {line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1] for line in
                run.stdout.splitlines() if line.endswith((" KEPT", " BROKEN"))}
    assert run.returncode != 0 and len(verdicts) == 5, run.stdout[-2000:]
    assert {name for name, v in verdicts.items() if v == "BROKEN"} == \
        {name for name in verdicts if any(b in name for b in broken)}, verdicts


def test_modules_stay_under_the_line_limit():
    long = {_rel(p): n for p in _files(SOURCE + ("bench",))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them): {long}"


# --------------------------------------------------------------------------- one cache

#: functools caches that hold one object per process (or per device, model, URL), not results.
ONE_OBJECT_CACHES = {
    ("bnviz/core/arrays.py", "_blas_controller"): "threadpoolctl's controller",
    ("bnviz/core/arrays.py", "torch_ops"): "the torch implementation, one per device",
    ("bnviz/params/model.py", "validator"): "a model's validator, one per model class",
    ("bnviz/service/memory.py", "_malloc_trim"): "the C library's function",
    ("bnviz/jobs/celery_app.py", "celery_app"): "the Celery app, one per broker URL",
    ("bnviz/data/glyphs.py", "glyph_arrays"): "the glyphs data set itself, made once from "
                                               "its one seed by the process that trains on it",
}


def test_one_byte_bounded_cache():
    """Results are cached in the process's one byte-bounded cache (bnviz.service.cache:
    memoize), never in a cache of their own that BNVIZ_CACHE_MB does not bound."""
    own, decorated = [], set()
    for path in _files():
        if _rel(path) == "bnviz/service/cache.py":
            continue
        for _where, name, line in _calls(path):
            if name.rsplit(".", 1)[-1].endswith("Cache") and name[:1].isupper() or \
                    name.startswith(("cachetools.", "diskcache.")):
                own.append(f"{_rel(path)}:{line} {name}")
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for deco in node.decorator_list:
                    name = _name(deco.func if isinstance(deco, ast.Call) else deco)
                    if name.rsplit(".", 1)[-1] in ("cache", "lru_cache"):
                        decorated.add((_rel(path), node.name))
    assert not own, f"caches of their own (use bnviz.service.cache.memoize): {own}"
    assert decorated <= set(ONE_OBJECT_CACHES), \
        f"functools caches of results (use memoize): {decorated - set(ONE_OBJECT_CACHES)}"
    assert set(ONE_OBJECT_CACHES) <= decorated, "stale entries in ONE_OBJECT_CACHES"


# --------------------------------------------------------------------------- one JSON reader

#: Who may call json.loads besides bnviz.service.guard.strict_json: JSON bnviz wrote itself.
TRUSTED_JSON = {
    "bnviz/records/sqlite_store.py": "the job store's own rows",
    "bnviz/records/redis_store.py": "the job store's own rows",
    "bnviz/replication/store.py": "outcome files bnviz writes (shipped, and this machine's)",
    "bnviz/replication/entries.py": "what bnviz's own commands print",
}
JSON_READS = ("json.loads", "json.load", "orjson.loads")


def _json_readers() -> set[str]:
    return {_rel(p) for p in _files() for where, name, _ in _calls(p)
            if name in JSON_READS and not (_rel(p) == "bnviz/service/guard.py"
                                           and where == "strict_json")}


def test_one_json_reader():
    """JSON from outside (request bodies, a link's state, uploaded files' metadata) is read
    by bnviz.service.guard.strict_json only: strict, and deep nesting a ValueError."""
    others = _json_readers() - set(TRUSTED_JSON)
    assert not others, f"JSON read without bnviz.service.guard.strict_json: {others}"


def test_the_one_json_reader_refuses_deep_nesting_and_constants():
    from bnviz.service.guard import strict_json

    for raw in ("[" * 100_000 + "]" * 100_000, '{"a": NaN}', "[Infinity]", b"\xff", ""):
        with pytest.raises(ValueError, match="not valid JSON"):
            strict_json(raw)
    assert strict_json(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}


# --------------------------------------------------------------------------- one InputError

JUNK = (None, "x", "", [1], {"a": 1}, math.nan, math.inf, 10**400, -(10**9), True)


def test_parse_raises_only_input_error():
    """Every parameter model, every field, junk values: parse raises InputError or nothing."""
    for model in params.warm_validators():
        for field in getattr(model, "__dataclass_fields__", {}):
            for junk in JUNK:
                try:
                    params.parse(model, {field: junk})
                except InputError:
                    pass


def test_the_bn_statistics_checks_raise_input_error():
    """bnmoments and bnsampling check the values they are given as the parameter layer does:
    InputError, one line (they raised plain ValueError before)."""
    import torch

    from bnviz.views import bnmoments, bnsampling

    for bad in (lambda: bnmoments.check_int("batch_size", 2.5, 2, 10),
                lambda: bnmoments.check_float("s2", math.nan),
                lambda: bnmoments.analytical_moments(0.0, 1.0, 0.5, 4),  # m4 < s2^2
                lambda: bnmoments.luo_moments(0.0, 0.0, 0.0, 4),
                lambda: bnmoments.unit_moments(np.array([])),
                lambda: bnsampling.noise_controlled(torch.zeros(2), torch.ones(2), 4, 1,
                                                    torch.ones(2), torch.ones(2),
                                                    torch.Generator())):  # B' < 2
        with pytest.raises(InputError) as info:
            bad()
        assert "\n" not in str(info.value)
    for module in ("bnmoments", "bnsampling"):
        tree = _tree(REPO / "bnviz" / "views" / f"{module}.py")
        raised = [_name(n.exc.func) for n in ast.walk(tree) if isinstance(n, ast.Raise)
                  and isinstance(n.exc, ast.Call)]
        assert set(raised) <= {"InputError"}, (module, raised)


# --------------------------------------------------------------------------- every cap in caps

#: MAX_* constants that are not caps on what a user asks for, and why they live elsewhere.
NOT_CAPS = {
    ("bnviz/records/job.py", "MAX_LOG_LINES"): "the log lines a job keeps: the store's retention",
    ("bnviz/params/model.py", "MAX_REFUSAL_CHARS"): "the length of one refusal line (a page's "
                                                    "alert, the CLI, the API)",
    ("bnviz/views/virtual_batch.py", "MAX_STRENGTH"): "the calibration's search bound",
    ("bnviz/views/virtual_batch.py", "MAX_EVALUATIONS"): "the calibration's search length",
    ("bnviz/lecture/qr.py", "MAX_URL_LENGTH"): "what a QR code on a slide holds legibly",
    ("callbacks/explorer/figures.py", "MAX_VECTOR_SEGMENTS"): "past it a figure's earlier "
                                                               "layers go as pictures",
    ("callbacks/explorer/training.py", "MAX_HISTORY"): "caps.TRAIN_LIMITS' frames, for the "
                                                       "browser's player",
}
def _max_constants() -> set[tuple[str, str]]:
    """Module-level MAX_* assignments outside bnviz/caps.py (an import is no
    definition: ``from bnviz.caps import MAX_X`` is how a module uses a cap)."""
    found = set()
    for path in _files():
        if _rel(path) == "bnviz/caps.py":
            continue
        for node in _tree(path).body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            found |= {(_rel(path), t.id) for t in targets
                      if isinstance(t, ast.Name) and t.id.startswith("MAX_")}
    return found


def test_every_cap_is_in_caps():
    """Every bound and cost cap on user input is defined in bnviz.caps; a MAX_*
    defined anywhere else is in NOT_CAPS (with why)."""
    found = _max_constants()
    assert found - set(NOT_CAPS) == set(), "caps outside bnviz.caps"
    assert set(NOT_CAPS) <= found, "stale entries in NOT_CAPS"


# --------------------------------------------------------------------------- warm_up


def test_warm_validators_builds_every_model():
    """bnviz.params.warm_validators builds the validator of every parameter model (each class
    decorated with params_dataclass in bnviz/params), so none is built by a first request."""
    declared = {node.name for path in (REPO / "bnviz" / "params").glob("*.py")
                for node in ast.walk(_tree(path)) if isinstance(node, ast.ClassDef)
                and any(_name(d) == "params_dataclass" for d in node.decorator_list)}
    built = params.warm_validators()
    # (the suite's own tests declare models too: only bnviz's count)
    assert {m.__name__ for m in built if m.__module__.startswith("bnviz.")} == declared
    misses = param_model.validator.cache_info().misses
    for model in built:
        param_model.validator(model)
    assert param_model.validator.cache_info().misses == misses  # every one built already


def test_app_warm_up_calls_warm_validators():
    warm_up = next(n for n in _tree(APP).body
                   if isinstance(n, ast.FunctionDef) and n.name == "warm_up")
    assert any(isinstance(n, ast.Call) and _name(n.func).endswith("warm_validators")
               for n in ast.walk(warm_up))


# --------------------------------------------------------------------------- names


def test_exception_names_are_distinct():
    """No two classes of bnviz and the web layer share a name (there were two StoreErrors,
    of the job store and of the replication outcomes, and two ServerBusys)."""
    names = Counter(n.name for p in _files() for n in ast.walk(_tree(p))
                    if isinstance(n, ast.ClassDef))
    assert not [n for n, k in names.items() if k > 1]


# --------------------------------------------------------------------------- one engine choice


def test_one_function_chooses_the_engine():
    """Only bnviz.core.cut decides between the compiled kernels and the vectorised cut
    (compiled_kernels; compiled_max_work, the same rule as a bound for the one-call path):
    nothing else reads kernels.ready or COMPILED_MAX_WORK."""
    readers = set()
    for path in _files(("bnviz",), app=False):
        rel = _rel(path)
        if rel == "bnviz/core/kernels.py":
            continue
        for where, name, _ in _calls(path):
            if name.endswith("kernels.ready"):
                readers.add((rel, where))
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Name | ast.Attribute) and \
                    (node.id if isinstance(node, ast.Name) else node.attr) == "COMPILED_MAX_WORK" \
                    and rel != "bnviz/core/cut.py":
                readers.add((rel, "COMPILED_MAX_WORK"))
    # the background loader asks whether to start loading, not which engine cuts
    assert readers == {("bnviz/core/cut.py", "compiled_kernels"),
                       ("bnviz/service/kernel_loading.py", "start_kernel_loading")}, readers


def test_the_engine_choice(monkeypatch):
    from bnviz.core import cut, kernels
    from bnviz.core.arrays import NUMPY

    module = kernels.require()
    assert cut.compiled_kernels(NUMPY, 10**9) is module  # every size on numpy
    assert cut.compiled_kernels(object(), 1) is None  # torch holds the mesh: vectorised
    monkeypatch.setattr(cut, "COMPILED_MAX_WORK", 5)
    assert cut.compiled_kernels(NUMPY, 6) is None and cut.compiled_kernels(NUMPY, 5) is module
    assert cut.compiled_max_work("cpu") == 5
    monkeypatch.setattr(kernels, "_module", None)  # not loaded yet: vectorised
    assert cut.compiled_kernels(NUMPY, 1) is None


# --------------------------------------------------------------------------- threads

#: What starts a thread (only bnviz.server, bnviz.service and bnviz.jobs may).
THREAD_STARTS = ("Thread", "Timer", "ThreadPoolExecutor", "ProcessPoolExecutor")


def _thread_starters() -> set[str]:
    found = set()
    for path in _files():
        rel = _rel(path)
        if rel.startswith(("bnviz/server/", "bnviz/service/", "bnviz/jobs/")):
            continue
        tree = _tree(path)
        calls = {name.rsplit(".", 1)[-1] for _, name, _ in _calls(path)}
        subclasses = {_name(b).rsplit(".", 1)[-1] for n in ast.walk(tree)
                      if isinstance(n, ast.ClassDef) for b in n.bases}
        if (calls | subclasses) & set(THREAD_STARTS):
            found.add(rel)
    return found


def test_background_threads_live_in_server_service_or_jobs():
    """Background work runs in bnviz.jobs (the workers), bnviz.server (a web process's
    precompute, the health report's probes) or bnviz.service (the kernels' loader, nginx's
    access log), nowhere else."""
    others = _thread_starters()
    assert not others, f"threads started outside bnviz.server, service and jobs: {others}"


# --------------------------------------------------------------------------- references


def test_every_cited_document_is_in_the_repository():
    """BN's conventions are cited as docs/conventions.md (issue 32: 41 docstrings cited a
    SPEC.md that the repository does not hold): every docs/*.md a source names exists, and
    nothing names the spec."""
    import re

    sources = [*_files(), *REPO.glob("*.md"), *(REPO / "docs").glob("*.md"),
               *(p for p in (REPO / "tests").rglob("*.py") if p != Path(__file__))]
    texts = {str(p.relative_to(REPO)): p.read_text() for p in sources}
    missing = {(where, name) for where, text in texts.items()
               for name in re.findall(r"\bdocs/[\w-]+\.md\b", text)
               if not (REPO / name).exists()}
    assert not missing, f"cited but not in the repository: {sorted(missing)}"
    assert not [where for where, text in texts.items() if "SPEC.md" in text]
    assert sum("docs/conventions.md" in text for text in texts.values()) > 20


# --------------------------------------------------------------------------- one renderer


@pytest.mark.parametrize("code,home", [
    ("2654435761", "bnviz/views/style.py"),  # the regions' colours (region_colour_index)
    ("norm.pdf", "bnviz/views/bnstats.py"),  # eq. 13's densities (analytical_density)
    ("gamma.pdf", "bnviz/views/bnstats.py"),
    ("def line_segments", "bnviz/views/render.py"),  # segments as matplotlib takes them
])
def test_each_picture_piece_is_written_once(code, home):
    """The pages' plotly figures, the CLI's pictures and the lecture's slides share one
    colouring of regions, one eq. 13 density and one segment layout (issue 32: they were
    written two and three times); Figure 6's picture is render.draw_jitter for both the
    CLI and the slides."""
    where = {_rel(p) for p in _files() if code in p.read_text()}
    assert where == {home}, where
