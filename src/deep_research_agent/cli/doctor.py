"""``doctor``: check the local setup and print one table row per check.

Contract:
- It starts no server and changes nothing. It checks the Python and uv versions, ``.venv``, that the
  package imports, ``.env``, the model and Tavily keys, ``OPENAI_BASE_URL``, whether the agent server
  answers ``/ok`` (or Aegra's ``/health``) and whether the sandbox (``LLM_SANDBOX_URL``) answers
  ``/healthz``, and says in plain words what isolation this host can give a local sandbox
  (``dra_sandbox.isolation.probe()``). It loads the skills and custom tools the server would load (``DRA_SKILLS_DIR``, ``DRA_CUSTOM_TOOLS_DIR``) and names each skill or
  plugin file that would be skipped, with its error (a warning: the server runs without it). It lists the
  local corpora (``DRA_CORPORA`` and the indexes in ``DRA_DATA_DIR``) with their size, and warns about each
  one that cannot be searched yet, saying what to run. It names the search backends web_search offers
  (``DRA_SEARCH_BACKENDS``, warning about each setting that was left out) and asks each one but Tavily
  (where a search costs a credit) one small search, warning when it does not answer.
- It never prints a secret: a key is reported by where it is set (the environment or .env), never by its
  value, and the details taken from settings or errors (base URL, sandbox URL, import error) are redacted.
- Exit 1 only when something required is missing (a ``✖`` row); warnings (``!``) keep exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.box import SIMPLE
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..corpora.catalog import load_catalog
from ..domain.errors import ToolFailure
from ..domain.search import SearchBackendName
from ..domain.secrets import redact
from ..extensions import load_skills
from ..settings import (
    DEFAULT_BASE_URL,
    CorporaSettings,
    ExtensionSettings,
    ResearchConfig,
    ResultSettings,
    SearchSettings,
)
from ..settings.environment import read_dotenv
from ..tools.custom import load_custom_tools
from ..tools.results import ResultLimits
from ..tools.search_backends import build_backends
from .env import probe, project_root, server_answers

MODEL_KEY_ENVS = ("OPENAI_API_KEY", "OPENROUTER_API_KEY")
KEYLESS_SEARCH = "web search will use Tavily's keyless access, which is rate-limited"

OK, FAIL, WARN = "✔", "✖", "!"


@dataclass(frozen=True)
class Check:
    mark: str
    name: str
    detail: str


def _first_set(names: Sequence[str], environ: Mapping[str, str], dotenv: Mapping[str, str]) -> str | None:
    """Where the first of ``names`` is set (never its value)."""
    for name in names:
        if environ.get(name):
            return name
        if dotenv.get(name):
            return f"{name}, in .env"
    return None


def _check_tools() -> list[Check]:
    python = ".".join(map(str, sys.version_info[:3]))
    checks = [Check(OK if sys.version_info >= (3, 11) else FAIL, "Python", f"{python} ({sys.executable})")]
    uv = shutil.which("uv")
    if uv is None:
        checks.append(Check(FAIL, "uv", "not found — ./run.sh installs it with pip"))
    else:
        result = subprocess.run([uv, "--version"], capture_output=True, text=True, timeout=10, check=False)
        checks.append(Check(OK, "uv", result.stdout.strip() or uv))
    return checks


def _check_project(root: Path) -> list[Check]:
    venv = root / ".venv"
    checks = [Check(OK, ".venv", str(venv)) if venv.is_dir() else Check(FAIL, ".venv", "missing — run ./run.sh --sync")]
    try:
        importlib.import_module("deep_research_agent.graph")
        checks.append(Check(OK, "package", "deep_research_agent.graph imports"))
    except Exception as exc:  # noqa: BLE001 - any import failure is the finding
        checks.append(Check(FAIL, "package", redact(f"import failed: {type(exc).__name__}: {exc}")[:300]))
    dotenv = root / ".env"
    checks.append(
        Check(OK, ".env", str(dotenv))
        if dotenv.is_file()
        else Check(WARN, ".env", "not found — settings come from the environment only")
    )
    return checks


def _check_settings(environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[Check]:
    model_key = _first_set(MODEL_KEY_ENVS, environ, dotenv)
    tavily = _first_set(("TAVILY_API_KEY",), environ, dotenv)
    base_url = environ.get("OPENAI_BASE_URL") or dotenv.get("OPENAI_BASE_URL")
    return [
        Check(OK, "model API key", f"set ({model_key})")
        if model_key
        else Check(FAIL, "model API key", "not set — add OPENAI_API_KEY (or OPENROUTER_API_KEY) to .env"),
        Check(OK, "TAVILY_API_KEY", f"set ({tavily})")
        if tavily
        else Check(WARN, "TAVILY_API_KEY", f"not set — {KEYLESS_SEARCH}"),
        Check(OK, "OPENAI_BASE_URL", redact(base_url) if base_url else f"{DEFAULT_BASE_URL} (default)"),
    ]


def _check_extensions(environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[Check]:
    settings = ResearchConfig.resolve(None, environ={**dotenv, **environ})
    extensions = settings.part(ExtensionSettings)
    skills = load_skills(Path(extensions.skills_dir))
    tools = load_custom_tools(
        Path(extensions.custom_tools_dir),
        settings,
        timeout_s=extensions.custom_tool_timeout,
        results=ResultLimits.of(settings.part(ResultSettings), None),
    )
    names = ", ".join(s.name for s in skills.skills) or "none"
    checks = [Check(OK, "skills", f"{names} ({extensions.skills_dir})")]
    checks += [Check(WARN, "skills", warning) for warning in skills.warnings]
    checks.append(Check(OK, "custom tools", f"{', '.join(tools.names) or 'none'} ({extensions.custom_tools_dir})"))
    checks += [Check(WARN, "custom tools", redact(str(error))[:300]) for error in tools.errors]
    corpora = settings.part(CorporaSettings)
    catalog = load_catalog(corpora.data_dir, corpora.corpora)
    ready = [entry.describe().replace("`", "") for entry in catalog.ready()]
    checks.append(Check(OK, "corpora", "; ".join(ready) if ready else f"none ({corpora.data_dir})"))
    checks += [Check(WARN, "corpora", warning) for warning in settings.warnings if "DRA_CORPORA" in warning]
    checks += [Check(WARN, "corpora", entry.problem) for entry in catalog.entries if entry.problem]
    return checks


def _check_services(url: str, environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[Check]:
    server = (
        Check(OK, "agent server", f"up at {url}")
        if server_answers(url)
        else Check(WARN, "agent server", f"not running at {url} — start it with ./run.sh")
    )
    sandbox_url = (environ.get("LLM_SANDBOX_URL") or dotenv.get("LLM_SANDBOX_URL") or "").rstrip("/")
    if not sandbox_url:
        sandbox = Check(WARN, "sandbox", "not configured (code execution disabled)")
    elif probe(f"{sandbox_url}/healthz"):
        sandbox = Check(OK, "sandbox", f"reachable at {redact(sandbox_url)}")
    else:
        sandbox = Check(WARN, "sandbox", f"no answer from {redact(sandbox_url)}/healthz — code execution will fail")
    return [server, sandbox]


PROBE_TIMEOUT_S = 10.0


def _check_search(environ: Mapping[str, str], dotenv: Mapping[str, str]) -> list[Check]:
    """The configured search backends, and whether each (but Tavily) answers one small search."""
    settings = ResearchConfig.resolve(None, environ={**dotenv, **environ})
    search = settings.part(SearchSettings)
    if not search.web_search:
        return [Check(OK, "search", "web search is off (DRA_WEB_SEARCH)")]
    checks = [Check(OK, "search backends", ", ".join(search.search_backends))]
    checks += [Check(WARN, "search backends", w) for w in settings.warnings if w.startswith(_SEARCH_WARNINGS)]
    for backend in build_backends(search, timeout_s=PROBE_TIMEOUT_S):
        if backend.name == SearchBackendName.TAVILY:
            continue
        try:
            asyncio.run(backend.search("research", 1))
        except ToolFailure as failure:
            checks.append(Check(WARN, f"search: {backend.name}", redact(failure.message)[:300]))
        except Exception as exc:  # noqa: BLE001 - any failure of the probe is the finding
            checks.append(Check(WARN, f"search: {backend.name}", f"the probe failed ({type(exc).__name__})"))
        else:
            checks.append(Check(OK, f"search: {backend.name}", "answers"))
    return checks


_SEARCH_WARNINGS = (
    "search_backends",
    "SEARXNG_URL",
    "ARXIV_API_URL",
    "WIKIPEDIA_API_URL",
    "PUBMED_API_URL",
    "OPENALEX",
)


def _check_isolation() -> list[Check]:
    """The verdict of dra-sandbox's probe (a dev dependency), then one row per missing piece."""
    try:
        from dra_sandbox.isolation import probe as probe_isolation
    except ImportError:
        return [Check(WARN, "isolation", "dra-sandbox is not installed (./run.sh --sync) — cannot tell")]
    report = probe_isolation()
    return [
        Check(OK if report.level == "full" else WARN, "isolation", report.verdict()),
        *(Check(WARN, "isolation", f"missing: {gap}") for gap in report.missing()),
    ]


def run_doctor(url: str, root: Path, environ: Mapping[str, str]) -> list[Check]:
    dotenv = read_dotenv(root / ".env")
    return [
        *_check_tools(),
        *_check_project(root),
        *_check_settings(environ, dotenv),
        *_check_extensions(environ, dotenv),
        *_check_search(environ, dotenv),
        *_check_services(url, environ, dotenv),
        *_check_isolation(),
    ]


def cmd_doctor(args: argparse.Namespace, console: Console) -> int:
    checks = run_doctor(args.url.rstrip("/"), project_root(), os.environ)
    styles = {OK: "green", FAIL: "red", WARN: "yellow"}
    table = Table(box=SIMPLE, show_header=False)
    table.add_column(width=1)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for check in checks:
        table.add_row(Text(check.mark, styles[check.mark]), Text(check.name), Text(check.detail))
    console.print(table)
    failed = [c.name for c in checks if c.mark == FAIL]
    if failed:
        console.print(Text(f"Missing: {', '.join(failed)}.", "red"))
        return 1
    console.print(Text("Everything required is in place.", "green"))
    return 0
