"""The README is a map and the documentation stays true to the commands (issue 43, item 6).

The README is at most 400 lines and cites no path outside the repository; every link of the
README and of docs/ resolves; docs/cli.md is what ``docs/generate.py`` makes from the parser;
every sample output is what its command prints now (run again here, in a fresh folder); the
papers are cited by title, authors and arXiv id; the extras table starts with torch's CPU
build; every setting bnviz reads is documented.  ``.venv/bin/python docs/generate.py``
rewrites the generated parts when a test here says they differ.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def _generator():
    spec = importlib.util.spec_from_file_location("bnviz_docs_generate",
                                                  REPO / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GEN = _generator()
#: Every hand-written document (the generated cli.md and REPLICATION.md are checked apart).
WRITTEN = GEN.documents()
MARKDOWN = [README, *sorted((REPO / "docs").glob("*.md"))]


def test_the_readme_is_a_map():
    text = README.read_text()
    assert len(text.splitlines()) <= 400, len(text.splitlines())
    for command in ("make run", "make test"):  # the two commands stay at the top
        assert command in text.split("## A five-minute tour")[0], command
    for section in ("## The papers", "## Two commands", "## A five-minute tour",
                    "## How long things take", "## Where each thing is"):
        assert section in text, section


def test_every_doc_is_linked_from_the_readme():
    text = README.read_text()
    for path in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{path.name}" in text, path.name


# ---- no path outside the repository; every link resolves ---------------------------------

def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves_inside_the_repository(path):
    for link in _links(path):
        if re.match(r"[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.is_relative_to(REPO), (path.name, link)
        assert file.exists(), (path.name, link)
        if anchor and file.suffix == ".md":
            assert anchor in _anchors(file), (path.name, link)


def test_the_slug_is_githubs():
    assert _slug("Jitter (page `/jitter`): Figures 6 and 7") == \
        "jitter-page-jitter-figures-6-and-7"
    assert _slug("The BN paper's figures") == "the-bn-papers-figures"


@pytest.mark.parametrize("path", [*MARKDOWN, REPO / "docs" / "generate.py",
                                  *sorted((REPO / "docs" / "examples").glob("*.py"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_no_path_outside_the_repository(path):
    text = path.read_text()
    assert "shared/papers" not in text
    for absolute in ("/work/", "/root/", "/home/"):
        assert absolute not in text, absolute
    for up in re.findall(r"(?:\.\./)+[\w.\-/]*", text):  # every ../ path stays in the clone
        assert (path.parent / up).resolve().is_relative_to(REPO), (path.name, up)


# ---- the papers ---------------------------------------------------------------------------

PAPERS = {  # arXiv id: (words of its title, an author)
    "2209.14778": ("Batch Normalization Explained", "Balestriero"),
    "1805.11604": ("How Does Batch Normalization Help Optimization?", "Santurkar"),
    "1809.00846": ("Towards Understanding Regularization in Batch Normalization", "Luo"),
    "2103.01499": ("Demystifying Batch Normalization in ReLU Networks", "Ergen"),
    "2502.17913": ("Batch normalization does not improve initialization", "Dannemann"),
}


@pytest.mark.parametrize("arxiv", PAPERS)
def test_the_papers_are_cited_by_title_authors_and_arxiv_id(arxiv):
    title, author = PAPERS[arxiv]
    row = next((line for line in README.read_text().splitlines() if arxiv in line), "")
    assert title in row and author in row and f"https://arxiv.org/abs/{arxiv}" in row, arxiv


# ---- installing and times -----------------------------------------------------------------

def _table(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_extras_table_starts_with_torchs_cpu_build():
    rows = _table(README.read_text(), "| install |")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in rows[0], rows[0]
    assert all("download.pytorch.org/whl/cpu" in row for row in rows[:-1])
    assert "no CPU index" in rows[-1] and "CUDA" in rows[-1]  # the one that is not


def test_the_times_are_cold_and_warm_on_a_named_machine():
    text = README.read_text()
    section = text.split("## How long things take")[1].split("\n## ")[0]
    for words in ("2 CPU cores", "24 GB", "**Cold**", "**Warm**", "NUMBA_CACHE_DIR",
                  "BNVIZ_HOME", "median"):
        assert words in section, words
    table = section.split("<!-- times -->")[1].split("<!-- /times -->")[0]
    rows = [r for r in table.strip().splitlines()[2:]]
    assert len(rows) >= 5
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0].startswith("`bnviz ") and len(cells) == 3, row
        assert all(re.fullmatch(r"[\d.]+ s", c) for c in cells[1:]), row


def test_every_setting_is_documented():
    from bnviz.config import SETTINGS

    settings = (REPO / "docs" / "settings.md").read_text()
    read = set(SETTINGS)
    for path in [*REPO.glob("bnviz/**/*.py"), REPO / "app.py", REPO / "gunicorn.conf.py",
                 REPO / "docker-compose.yml", REPO / "Dockerfile"]:
        read |= set(re.findall(r"\bBNVIZ_[A-Z][A-Z_]*[A-Z]\b", path.read_text()))
    missing = sorted(name for name in read if f"`{name}`" not in settings)
    assert not missing, missing


# ---- generated: the CLI reference and the samples ----------------------------------------

def test_the_cli_reference_is_the_parsers_help():
    text = (REPO / "docs" / "cli.md").read_text()
    made = re.search(r"Python (\d+\.\d+)'s argparse", text).group(1)
    if made != f"{sys.version_info.major}.{sys.version_info.minor}":
        pytest.skip(f"docs/cli.md was made with Python {made}'s argparse, whose help differs")
    assert text == GEN.cli_markdown(), "run .venv/bin/python docs/generate.py cli"


def test_every_command_is_in_the_cli_reference():
    from bnviz.cli.commands import COMMANDS, JOB_COMMANDS

    text = (REPO / "docs" / "cli.md").read_text()
    for name in (*COMMANDS, *JOB_COMMANDS):
        assert f"\n## bnviz {name}\n" in text, name


def _shown() -> dict[str, list[Path]]:
    shown: dict[str, list[Path]] = {}
    for path in WRITTEN:
        for name in GEN.markers(path.read_text()):
            shown.setdefault(name, []).append(path)
    return shown


def test_every_sample_is_shown_and_every_marker_known():
    shown = _shown()
    assert set(shown) == set(GEN.SAMPLES), (set(shown) ^ set(GEN.SAMPLES))
    for path in WRITTEN:  # a marker the generator would not fill (a typo) is an error
        opened = re.findall(r"<!-- sample:([\w-]+) -->", path.read_text())
        assert len(opened) == len(GEN.markers(path.read_text())), path.name
    assert {"partition", "train", "claims", "replicate", "slice"} <= {
        name for name, paths in shown.items() if README in paths}


def _block(text: str, name: str) -> str:
    return next(m.group(3) for m in GEN.MARKER.finditer(text) if m.group(2) == name)


@pytest.mark.parametrize("name", list(GEN.SAMPLES))
def test_the_sample_is_what_the_command_prints_now(name, tmp_path):
    """Run again, in a fresh folder: the block in each document that shows it is the same."""
    work, env = GEN.sample_workdir(tmp_path)
    block = GEN.run_sample(name, work, env)
    for path in _shown().get(name, []):
        assert _block(path.read_text(), name) == block, (
            f"{path.relative_to(REPO)}: sample {name} differs from what its command prints "
            f"now; run .venv/bin/python docs/generate.py {name}\n{block}")


def test_a_drifted_sample_is_rewritten():
    """The generator's own mechanics: a block whose numbers drifted is replaced, the text
    around it kept, and a sample's output is wrapped, cut and masked as its step says."""
    text = "before\n<!-- sample:x -->\n```text\n449 regions\n```\n<!-- /sample -->\nafter\n"
    new = GEN.fill(text, {"x": "```text\n383 regions\n```\n"})
    assert new == text.replace("449", "383") and GEN.markers(new) == ["x"]
    step = GEN.Step("cmd", lines=2, mask=(GEN.SECONDS,))
    out = GEN._shown(step, b'{"a": 0.123456789, "seconds": 1.5}\n' + b"x\n" * 3, b"")
    assert out == ['{"a": 0.1235, "seconds": …}', "x", "… (2 more lines)"]
    long = GEN._shown(GEN.Step("cmd"), ("word " * 40).encode(), b"")
    assert len(long) > 1 and all(len(line) <= GEN.WIDTH for line in long)


def test_a_sample_whose_command_fails_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(GEN.SAMPLES, "broken", GEN.Sample((GEN.Step(
        ".venv/bin/bnviz partition --depth 0"),)))
    work, env = GEN.sample_workdir(tmp_path)
    with pytest.raises(GEN.SampleError, match="exited with 2"):
        GEN.run_sample("broken", work, env)
