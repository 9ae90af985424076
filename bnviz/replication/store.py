"""Stored outcomes of the replication report: what ``bnviz replicate`` reads, in seconds.

Two layers, read in this order:

* ``$BNVIZ_HOME/replication/outcomes.json``: written by ``bnviz replicate --run ID`` on this
  machine (the newest outcome of each entry that was rerun here);
* ``bnviz/replication/outcomes.json``, shipped with the code: the outcomes the release was
  made with (``make replication`` reruns every entry into it and regenerates
  ``docs/REPLICATION.md``).

An outcome is a plain JSON object: ``id, paper, result, paper_value, ours, status, command``
plus ``ran_at`` (UTC, ISO 8601), ``seconds`` and ``device``; a ``command`` stored with the
flags of before issue 43 (``--n``, ``--seed``) is read with today's
(:func:`bnviz.params.renames.current_command`).  Files are written atomically
(a temporary file, then a rename), so a crash or a full disk leaves the old file whole; an
unreadable file is reported, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from bnviz.config import bnviz_home
from bnviz.params.renames import current_command

__all__ = ["SHIPPED", "STATUSES", "OutcomesError", "home_store", "read_outcomes",
           "write_outcomes"]

#: The outcomes shipped with the code.
SHIPPED = Path(__file__).with_name("outcomes.json")
#: What an outcome's ``status`` may say.
STATUSES: tuple[str, ...] = ("reproduced", "partly", "inconclusive", "not reproduced")


class OutcomesError(ValueError):
    """An outcomes file that cannot be read or written (one sentence, no traceback)."""


def home_store() -> Path:
    """Where ``bnviz replicate --run`` writes on this machine."""
    return bnviz_home() / "replication" / "outcomes.json"


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        raw = json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError):  # nothing stored there (yet)
        return {}
    except (OSError, ValueError) as exc:
        raise OutcomesError(f"cannot read the stored outcomes {path}: {exc}") from None
    outcomes = raw.get("results") if isinstance(raw, dict) else None
    if not isinstance(outcomes, list) or not all(isinstance(o, dict) and "id" in o
                                                 for o in outcomes):
        raise OutcomesError(f"{path} is not an outcomes file ({{\"results\": [{{\"id\": ...}}]}})")
    # a command stored with the flags of before issue 43 reads as today's (and is written so)
    return {str(o["id"]): o | {"command": current_command(o["command"])} if "command" in o
            else o for o in outcomes}


def read_outcomes(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Outcomes by id: those of ``path`` alone when given, else this machine's reruns over
    the shipped ones.  A damaged home file is skipped (the shipped outcomes stand) rather
    than hiding the whole report; a damaged given file raises :class:`OutcomesError`."""
    if path is not None:
        return _read(path)
    outcomes = _read(SHIPPED)
    try:
        outcomes.update(_read(home_store()))
    except OutcomesError:
        pass
    return outcomes


def write_outcomes(new: list[dict[str, Any]], path: Path | None = None) -> Path:
    """Merge ``new`` outcomes (by id) into ``path`` (default: :func:`home_store`) and write
    it atomically; returns the path."""
    path = path or home_store()
    merged = _read(path)
    merged.update({o["id"]: o for o in new})
    text = json.dumps({"results": sorted(merged.values(), key=lambda o: o["id"])}, indent=1,
                      allow_nan=False, default=float) + "\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OutcomesError(f"cannot write the outcomes to {path}: {exc.strerror or exc}") from None
    return path
