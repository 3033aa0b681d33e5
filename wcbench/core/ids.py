"""Case ids: the one rule every id obeys, and the one way a file is named from an id.

Ids come from files anyone can write (suite YAML, manifests) and name files on disk
(``cases/<id>.json``, ``videos/<id>.avi``, an export's ``<id>/`` folder), so an id is never
allowed to be a path: letters, digits, ``.``, ``_`` and ``-``, 1 to 120 of them, not starting
with a dot (no hidden files, no ``..``). The rule is matched whole (``re.fullmatch``: a trailing
newline fails, unlike ``$``), and checked where ids are read, before anything is written.
:func:`id_path` is the only place that turns an id into a path; it checks the id again and that
the path it makes stays inside its folder.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_ID_LENGTH = 120  # well under the 255 bytes a file name may have, with room for suffixes
ID_RULE = re.compile(rf"(?!\.)[A-Za-z0-9._-]{{1,{MAX_ID_LENGTH}}}")
ID_RULE_TEXT = (f"1 to {MAX_ID_LENGTH} letters, digits, '.', '_' or '-', not starting with '.' "
                "(ids name files, so they cannot hold slashes, spaces or other characters)")


class IdError(ValueError):
    """An id breaks :data:`ID_RULE`, or a path made from one would leave its folder."""


def id_problem(value: object) -> str | None:
    """Why ``value`` is not a valid id (None: it is one)."""
    if not isinstance(value, str):
        return f"id {value!r} is not text"
    if ID_RULE.fullmatch(value) is None:
        shown = value if len(value) <= 40 else value[:40] + f"... ({len(value)} characters)"
        return f"id {shown!r} must be {ID_RULE_TEXT}"
    return None


def check_id(value: object, where: str) -> str:
    """``value`` if it is a valid id; otherwise IdError "``where``: id ... must be ..."."""
    problem = id_problem(value)
    if problem:
        raise IdError(f"{where}: {problem}")
    return str(value)


def id_path(folder: str | Path, case_id: str, template: str = "{id}") -> Path:
    """``folder / template.format(id=case_id)`` (e.g. ``"videos/{id}.avi"``), after checking
    the id and that the resolved path lies inside ``folder``; IdError otherwise."""
    check_id(case_id, str(folder))
    folder = Path(folder)
    path = folder / template.format(id=case_id)
    root = folder.resolve()
    if not path.resolve().is_relative_to(root) or path.resolve() == root:
        raise IdError(f"{folder}: a file for id {case_id!r} ({template}) would lie outside the folder")
    return path


MAX_NAME_LENGTH = 80
# Model and submitter names go into results, board rows and Markdown tables: plain words, no
# markup (| < > * ` [ ]), no line breaks. Spaces, ':' '/' '(' ')' ',' '+' are fine
# ("videos:export", "tinywm (rl, seed 0)").
NAME_RULE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9 ._:/()+,-]{{0,{MAX_NAME_LENGTH - 1}}}")
NAME_RULE_TEXT = (f"1 to {MAX_NAME_LENGTH} letters, digits, spaces and . _ : / ( ) + , -, starting with a letter "
                  "or digit")


def check_name(value: object, what: str) -> str:
    """``value`` if it is a valid model or submitter name; otherwise IdError naming ``what``
    (e.g. "--model-name") and the rule."""
    if not isinstance(value, str) or NAME_RULE.fullmatch(value) is None or value != value.strip():
        raise IdError(f"{what} {value!r} must be {NAME_RULE_TEXT}")
    return value
