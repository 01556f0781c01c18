"""The settings' documentation, generated from ``ResearchConfig``'s fields so it cannot drift.

``python -m deep_research_agent.settings markdown`` prints the README's configuration table and
``python -m deep_research_agent.settings env-example`` the text of ``.env.example``; tests/test_docs.py
and tests/test_config.py fail when either file is stale.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .resolve import ResearchConfig


def settings_table() -> list[dict[str, str]]:
    """Rows of (env, configurable, default, description) for the README and .env.example."""
    rows = []
    for name, field in ResearchConfig.model_fields.items():
        extra = field.json_schema_extra
        if not isinstance(extra, dict):
            continue
        default = field.default
        if isinstance(default, tuple):
            default = ",".join(str(d) for d in default)
        elif isinstance(default, bool):
            default = str(default).lower()
        rows.append(
            {
                "field": name,
                "env": " / ".join(extra["env"]),
                "configurable": "—" if extra["operator_only"] else " / ".join(extra["configurable"]),
                "default": "" if default in (None, "") else str(default),
                "description": field.description or "",
            }
        )
    return rows


RUNNER_SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("DRA_HOST", "127.0.0.1", "Address ./run.sh serves the dev server on."),
    ("DRA_PORT", "2024", "Port of the dev server; ./run.sh stops with a message when it is taken."),
    ("DRA_JOBS", "10", "Runs the dev server executes at once (--n-jobs-per-worker)."),
    ("DRA_RELOAD", "0", "1 restarts the server on source changes (kills in-flight runs)."),
    ("DRA_URL", "", "Server URL for ./run.sh ask/smoke/doctor; defaults to http://DRA_HOST:DRA_PORT."),
    (
        "DRA_SELF_URL",
        "",
        "The server's own API as its routes (/reports, /steer, /mcp) call it, mount prefix included; unset, http:// on "
        "the address and port a request came in on (never from X-Forwarded-* headers). Set it when the server speaks TLS itself.",
    ),
    (
        "DRA_ENV_FILE",
        "",
        "File of KEY=VALUE settings the agent loads at start under the environment (which wins); default the project's .env.",
    ),
)

SERVE_SETTINGS: tuple[tuple[str, str, str], ...] = (
    (
        "DATABASE_URL",
        "",
        "Postgres for threads, checkpoints, the store and the run queue; unset, serve starts one whose data it "
        "keeps in DRA_DATA_DIR/serve.",
    ),
    (
        "REDIS_URL",
        "",
        "Redis for the job queue and streams shared by instances; unset, serve starts one whose append-only file "
        "it keeps in DRA_DATA_DIR/serve.",
    ),
    ("DRA_INSTANCES", "1", "Aegra instances ./run.sh serve starts on DRA_PORT, DRA_PORT+1, ..."),
    ("WORKER_COUNT", "3", "Worker loops per instance that take runs off the shared queue."),
    ("N_JOBS_PER_WORKER", "10", "Runs each worker loop executes at once."),
    (
        "DRA_AUTH_TOKENS",
        "",
        "user=token pairs (comma-separated) the server accepts as bearer tokens or x-api-key; unset, every caller is anonymous.",
    ),
    ("DRA_AUTH_TOKENS_FILE", "", "File of user=token lines, the same as DRA_AUTH_TOKENS."),
    ("DRA_SERVE_EPHEMERAL", "0", "1 starts a throwaway Postgres and Redis, deleted on exit (as --ephemeral does)."),
    ("DRA_SERVE_GRACE_S", "30", "Seconds runs in flight get to finish on SIGTERM before they are queued back."),
    ("DRA_SERVE_MAX_RESTARTS", "5", "Restarts of one instance per minute; past it the instance stays down."),
    (
        "DRA_WEBHOOK_POLL_S",
        "5",
        "Seconds between two looks of each instance's webhook outbox for finished scheduled runs to post.",
    ),
)

# The evaluation harness's judge (docs/evaluation.md): read by ./run.sh eval, never by the agent server.
EVAL_SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("DRA_EVAL_JUDGE_MODEL", "", "Model that judges ./run.sh eval reports (RACE and FACT scores); unset, no judge."),
    ("DRA_EVAL_JUDGE_BASE_URL", "", "The judge's OpenAI-compatible endpoint, apart from the researched model's."),
    ("DRA_EVAL_JUDGE_API_KEY", "", "Key for the judge's endpoint (never sent to the agent server)."),
)


def env_example() -> str:
    """The text of ``.env.example``: every environment variable, its default, one line on what it does."""
    lines = ["# deep-research-agent settings. Copy to .env; run.sh loads it. Per-run configurable keys override these."]
    for row in settings_table():
        for env in row["env"].split(" / "):
            lines += ["", f"# {row['description']}", f"{env}={row['default']}"]
    lines += ["", "# --- ./run.sh and the dev server ---"]
    for env, default, description in RUNNER_SETTINGS:
        lines += ["", f"# {description}", f"{env}={default}"]
    lines += ["", "# --- ./run.sh serve: Aegra with Postgres and Redis (README: Running for a team) ---"]
    for env, default, description in SERVE_SETTINGS:
        lines += ["", f"# {description}", f"{env}={default}"]
    lines += ["", "# --- ./run.sh eval: the evaluation judge (docs/evaluation.md) ---"]
    for env, default, description in EVAL_SETTINGS:
        lines += ["", f"# {description}", f"{env}={default}"]
    return "\n".join(lines) + "\n"


def markdown_table() -> str:
    """The README's configuration table."""
    lines = ["| Env var | Configurable key | Default | What it does |", "|---|---|---|---|"]
    for row in settings_table():
        env = " / ".join(f"`{e}`" for e in row["env"].split(" / "))
        keys = (
            row["configurable"]
            if row["configurable"] == "—"
            else " / ".join(f"`{k}`" for k in row["configurable"].split(" / "))
        )
        default = f"`{row['default']}`" if row["default"] else "—"
        description = row["description"].replace("|", "\\|")
        lines.append(f"| {env} | {keys} | {default} | {description} |")
    return "\n".join(lines) + "\n"


OUTPUTS = {"env-example": env_example, "markdown": markdown_table}


def main(argv: Sequence[str]) -> int:
    """Write the named document to stdout; 2 with a usage line for anything else."""
    if len(argv) != 1 or argv[0] not in OUTPUTS:
        print(f"usage: python -m deep_research_agent.settings {{{'|'.join(OUTPUTS)}}}", file=sys.stderr)
        return 2
    sys.stdout.write(OUTPUTS[argv[0]]())
    return 0
