"""The agent's environment file: the settings a ``langgraph.json`` ``env`` would carry, loaded by the
product itself, because not every server honours that key (Aegra ignores it, ``langgraph dev`` reads it).

Contract:
- ``load_env_file`` reads ``$DRA_ENV_FILE``, else the project's ``.env``, once per process (the graph
  module calls it on import), and sets each variable that is not already set: the process environment
  wins, as it does in ``./run.sh``; it returns the names it set, never their values;
- a missing default file is no error (most deployments set real environment variables); a named
  ``DRA_ENV_FILE`` that cannot be read is logged as a warning and nothing is set;
- ``read_dotenv`` parses ``KEY=VALUE`` lines (comments, blank lines, ``export`` prefixes and matching
  quotes allowed); a missing file reads as empty.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from pathlib import Path

logger = logging.getLogger(__name__)

ENV_FILE_VARIABLE = "DRA_ENV_FILE"
PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_ENV_FILE = PROJECT_ROOT / ".env"


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a .env file (comments, blank lines and ``export`` prefixes allowed)."""
    values: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return values
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def load_env_file(environ: MutableMapping[str, str] | None = None) -> tuple[str, ...]:
    """Set the variables of the agent's env file that ``environ`` lacks; returns the names set."""
    environ = os.environ if environ is None else environ
    named = environ.get(ENV_FILE_VARIABLE, "").strip()
    path = Path(named).expanduser() if named else DEFAULT_ENV_FILE
    if named and not path.is_file():
        logger.warning(
            "%s names %s, which is not a readable file; no settings were loaded from it", ENV_FILE_VARIABLE, path
        )
        return ()
    values = read_dotenv(path)
    added = tuple(key for key in values if key and key not in environ)
    for key in added:
        environ[key] = values[key]
    if added:
        logger.info("loaded %d setting(s) from %s", len(added), path)
    return added
