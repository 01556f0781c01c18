"""Typed run settings: the product's only configuration seam.

Every field resolves in one order: the run's ``configurable`` → the environment variable → the default.
Resolution never raises. A value that cannot be used keeps the default and is reported in
``ResearchConfig.warnings``; a setting that makes the run impossible (a refused ``base_url``, a missing
model key) lands in ``ResearchConfig.problems`` and the run ends with an ``error`` status that says
what to fix, instead of a traceback.

Models are chosen by tier name only (``tiers.MODEL_TIERS``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ..domain.charts import DEFAULT_MAX_CHARTS
from ..domain.names import SandboxProvider
from ..domain.reader import OutlineError, language_refusal, parse_outline, style_refusal
from ..domain.sandbox_providers import missing_package
from ..domain.url_policy import UrlPolicy
from .corpora import parse_declarations
from .features import (
    EMBEDDERS,
    SANDBOX_URLS,
    BudgetSettings,
    CorporaSettings,
    EmbeddingSettings,
    ExtensionSettings,
    KnowledgeSettings,
    McpSettings,
    ModelSettings,
    ReaderSettings,
    ResultSettings,
    SandboxSettings,
    ScheduleSettings,
    SearchSettings,
    _setting,
)
from .mcp_servers import resolve_servers
from .search import resolve_search_backends as _resolve_search_backends
from .tiers import DEFAULT_BASE_URL, DEFAULT_TIER, MODEL_TIERS, SLOTS, TIER_ORDER, ModelSpec, Tier

logger = logging.getLogger(__name__)

Part = TypeVar("Part", bound=BaseModel)

# Relative skills and custom-tools folders resolve against the project (the folder holding ``skills/`` and
# ``custom_tools/``), never the server's working directory, which ``langgraph dev`` may set anywhere.
PROJECT_ROOT = Path(__file__).resolve().parents[3]
_EXTENSION_DIRS = ("skills_dir", "custom_tools_dir")

# One limit now bounds every tool result (tools/results.py); a deployment that set an old one is told.
RETIRED_RESULT_LIMITS = {
    "DRA_MAX_FETCH_CHARS": "DRA_MAX_RESULT_CHARS",
    "DRA_CUSTOM_TOOL_MAX_CHARS": "DRA_MAX_RESULT_CHARS",
}

# The shared-deployment flag's first name, when it limited only MCP servers (DRA_SHARED_DEPLOYMENT now).
RETIRED_SHARED_FLAG = "DRA_MCP_ALLOWLIST_REQUIRED"

LEGACY_MODEL_KEYS = frozenset(
    {
        "research_model",
        "final_report_model",
        "compression_model",
        "summarization_model",
        "subagent_model",
        "utility_model",
        "coding_model",
        "model",
    }
)

CLAIM_JUDGE_MODES = ("auto", "on", "off")
AUTO_MODES = ("auto", "on", "off")
UNKNOWN_CONTEXT_WINDOW = 16_384
# Hosts that bill per token (an endpoint elsewhere, such as a local server, costs nothing unless priced).
PAID_HOSTS = (
    "openrouter.ai",
    "api.openai.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "api.deepseek.com",
    "api.mistral.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.fireworks.ai",
)
# Defaults a profile sets for the settings a run does not give (``DRA_PROFILE``).
PROFILES: dict[str, dict[str, Any]] = {
    "local": {
        "streaming": True,
        "streaming_denylist": (),
        "max_output_tokens": 1024,
        # A CPU server writes 15-30 tokens/s: half an hour ends a stuck run with what it found, not 45 minutes.
        "max_run_seconds": 1800.0,
        "request_timeout": 600.0,
        "compaction_tokens": 8000,
        "model_max_concurrency": 2,
        "prompt_caching": "off",
        "priced": "off",
    }
}
# Hosts that honour cache_control breakpoints.
CACHING_HOSTS = ("openrouter.ai", "api.anthropic.com")
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class ResearchConfig(
    ReaderSettings,
    ScheduleSettings,
    ExtensionSettings,
    ResultSettings,
    EmbeddingSettings,
    CorporaSettings,
    SandboxSettings,
    McpSettings,
    KnowledgeSettings,
    SearchSettings,
    BudgetSettings,
    ModelSettings,
):
    """Resolved settings of one run. Build it with ``ResearchConfig.resolve(runnable_config)``."""

    model_config = ConfigDict(frozen=True)

    model_rate_limit_max_wait: float = _setting(
        120.0,
        "Seconds a model call may spend backing off from 429/5xx before it gives up.",
        env="DRA_MODEL_RATE_LIMIT_MAX_WAIT",
        configurable="model_rate_limit_max_wait",
    )
    compaction_tokens: int = _setting(
        100_000,
        "Estimated context size at which an agent's older messages are summarized; 0 disables.",
        env="DRA_COMPACTION_TOKENS",
        configurable="compaction_tokens",
    )
    prompt_caching: str = _setting(
        "auto",
        "Send cache_control breakpoints on the system prompt and newest messages: auto (only to endpoints that "
        "honour them: OpenRouter, Anthropic) | on | off.",
        env="DRA_PROMPT_CACHING",
        configurable="prompt_caching",
    )
    domain_prompt: str = _setting(
        "",
        "Deployment guidance added to the orchestrator's and the research sub-agents' prompts as a DOMAIN CONTEXT block.",
        env="DRA_DOMAIN_PROMPT",
        configurable="domain_prompt",
    )
    domain_prompt_file: str = _setting(
        "",
        "File holding the domain prompt; inline DRA_DOMAIN_PROMPT wins.",
        env="DRA_DOMAIN_PROMPT_FILE",
        operator_only=True,
    )
    claim_judge: str = _setting(
        "auto",
        "Judge the report's claims that no figure, quote or name settles against their cited passages with the tier's "
        "utility model, in one or a few calls per report, counted in usage, budgets and cost: auto (on when the tier "
        "has a utility model) | on | off. A judge that fails leaves the deterministic verdicts and warns.",
        env="DRA_CLAIM_JUDGE",
        configurable="claim_judge",
    )
    max_charts: int = _setting(
        DEFAULT_MAX_CHARTS,
        "Charts a report may hold: ```chart blocks the orchestrator writes, each point checked against the text it "
        "cites and drawn by the server (docs/charts.md). 0 turns charts off: the orchestrator is not told of them "
        "and a chart block is left out of the report with a note.",
        env="DRA_MAX_CHARTS",
        configurable="max_charts",
    )
    public_url: str = _setting(
        "",
        "The address clients reach this server at, for the chart images the turn's last AI message links "
        "(a generic UI loads them from there) and a scheduled run's link to its report; langgraph dev sets "
        "LANGGRAPH_API_URL. Empty: the links are relative (/charts/..., /reports/...), which only the web UI "
        "resolves.",
        env=("DRA_PUBLIC_URL", "LANGGRAPH_API_URL"),
        operator_only=True,
    )
    shared_deployment: bool = _setting(
        False,
        "This server is shared by users who must not reach its network through it (./run.sh serve sets it): a run's "
        "own sandbox_url and MCP servers reach only the hosts the operator lists in DRA_SANDBOX_ALLOWED_HOSTS and "
        "DRA_MCP_ALLOWED_HOSTS, loopback and private addresses included (docs/operations.md, the URL policy).",
        env="DRA_SHARED_DEPLOYMENT",
        operator_only=True,
    )
    max_runs_per_user: int = _setting(
        0,
        "Runs one user may have in progress at once, counted across every server instance sharing the store; "
        "the run past it ends at once with error/too_many_runs. 0 means no limit (./run.sh serve sets 3).",
        env="DRA_MAX_RUNS_PER_USER",
        operator_only=True,
    )
    max_question_chars: int = _setting(
        200_000,
        "Longest question a run takes, in characters; a longer one (or an empty one) ends the run at once with "
        "error/invalid_question, and the MCP tools refuse it. 0 means no limit.",
        env="DRA_MAX_QUESTION_CHARS",
        operator_only=True,
    )
    clarify: bool = _setting(
        True,
        "Let the orchestrator ask clarifying questions (request_clarification) before it researches. Off is the "
        "non-interactive mode for callers that cannot answer (scripts, other agents, the MCP research tool): the "
        "tool is not offered and the orchestrator proceeds on assumptions it states in the report.",
        env="DRA_CLARIFY",
        configurable="clarify",
    )
    plan_review: bool = _setting(
        False,
        "Pause before the first research units start so the user approves, edits or rejects the plan (a LangGraph "
        "interrupt in langchain's human-in-the-loop format, with the units' briefs, expected sources and a cost "
        "estimate). Off: the units start at once.",
        env="DRA_PLAN_REVIEW",
        configurable="plan_review",
    )
    plan_review_timeout: float = _setting(
        3600.0,
        "Seconds a plan may wait for its review; an answer after that does not start it and the run ends "
        "error/plan_review_expired. 0 means no limit.",
        env="DRA_PLAN_REVIEW_TIMEOUT",
        configurable="plan_review_timeout",
    )
    plan_max_units: int = _setting(
        10,
        "Most research units a plan may have: a proposed plan with more goes back to the orchestrator, and an "
        "edited one is refused while the plan keeps waiting for its review. 0 means no limit.",
        env="DRA_PLAN_MAX_UNITS",
        configurable="plan_max_units",
        ceiling=True,
    )
    plan_unit_tokens: int = _setting(
        150_000,
        "Tokens one research unit is expected to spend, for the plan's cost estimate (the run's usage event says how "
        "far the actual cost ended from it, to tune this by).",
        env="DRA_PLAN_UNIT_TOKENS",
        configurable="plan_unit_tokens",
    )
    text_tool_calls: bool = _setting(
        True,
        "Run the tool calls a model writes as text (fenced or bare JSON, <tool_call> tags, [TOOL_CALLS], "
        "<|python_tag|>) when they name an offered tool and their arguments validate; a warning says so.",
        env="DRA_TEXT_TOOL_CALLS",
        configurable="text_tool_calls",
    )
    model_assist: str = _setting(
        "auto",
        "Help a small model follow the research loop (the line naming a unit's first call, the next step after search "
        "results and pages, example calls in nudges and bounces, a one-item list read as the list): auto (on under "
        "DRA_PROFILE=local and for the slots of small_model_slots or a known small model family; never for the tiers' "
        "hosted models) | on | off. The run_start event says, per agent, whether it is on and why.",
        env="DRA_MODEL_ASSIST",
        configurable="model_assist",
    )
    small_model_slots: tuple[str, ...] = _setting(
        (),
        "Comma-separated slots (research, subagent, utility, compaction, coding) whose model is small or has no native "
        "tool calling, so model_assist auto helps it.",
        env="DRA_SMALL_MODEL_SLOTS",
        configurable="small_model_slots",
    )
    model_research: str = _setting(
        "",
        "Model name of the research slot (the orchestrator), instead of the tier's: the name the server serves "
        "(vLLM --served-model-name, an Ollama tag, llama-server --alias). Priced 0 unless DRA_MODEL_PRICES names it.",
        env="DRA_MODEL_RESEARCH",
        configurable="model_research",
    )
    model_subagent: str = _setting(
        "",
        "Model name of the subagent slot (research sub-agents), instead of the tier's.",
        env="DRA_MODEL_SUBAGENT",
        configurable="model_subagent",
    )
    model_utility: str = _setting(
        "",
        "Model name of the utility slot (extract sub-agent, claim judge, digest translation), instead of the tier's.",
        env="DRA_MODEL_UTILITY",
        configurable="model_utility",
    )
    model_compaction: str = _setting(
        "",
        "Model name of the compaction slot (the summarizer), instead of the tier's.",
        env="DRA_MODEL_COMPACTION",
        configurable="model_compaction",
    )
    model_coding: str = _setting(
        "",
        "Model name of the coding slot (coding sub-agent), instead of the tier's.",
        env="DRA_MODEL_CODING",
        configurable="model_coding",
    )
    model_prices: tuple[str, ...] = _setting(
        (),
        "Comma-separated prices per model, name=input/output in $ per million tokens (my-model=0.1/0.4); they win "
        "over the tier's.",
        env="DRA_MODEL_PRICES",
        operator_only=True,
    )
    priced: str = _setting(
        "auto",
        "Price calls at the tier's prices: auto (only on a known paid provider: OpenRouter, OpenAI, Anthropic, "
        "Google, DeepSeek, Mistral, Groq, Together, Fireworks; any other endpoint costs 0) | on | off. "
        "DRA_MODEL_PRICES always applies.",
        env="DRA_PRICED",
        operator_only=True,
    )
    context_windows: tuple[str, ...] = _setting(
        (),
        "Comma-separated context windows per model, name=tokens (qwen2.5:7b=32768); compaction triggers at 80% of "
        f"its model's. A DRA_MODEL_<SLOT> model not listed gets {UNKNOWN_CONTEXT_WINDOW}.",
        env="DRA_CONTEXT_WINDOWS",
        configurable="context_windows",
    )
    triage: bool = _setting(
        True,
        "Route each fresh question through the pre-triage (one tiny call) that answers simple ones directly; "
        "off sends every question to the full research agent. A message that asks for sources, citations or research is "
        "always research (with the research model's assist on, so is one asking for a table or a comparison).",
        env="DRA_TRIAGE",
        configurable="triage",
    )
    model_max_concurrency: int = _setting(
        0,
        "Model calls in flight at once to the model server, all runs and agents of this server together; 0 means "
        "no cap. Set it to a local server's slots (llama-server --parallel).",
        env="DRA_MODEL_MAX_CONCURRENCY",
        operator_only=True,
    )
    run_model_max_concurrency: int = _setting(
        0,
        "Model calls in flight at once for one run, its orchestrator and all its sub-agents together; 0 means no "
        "cap. Keeps one run's parallel research units from taking every slot of a shared model server.",
        env="DRA_RUN_MODEL_MAX_CONCURRENCY",
        configurable="run_model_max_concurrency",
    )
    profile: str = _setting(
        "",
        "A set of defaults for a kind of model server: local (small models on llama.cpp, vLLM or Ollama: streaming "
        "on, a 1,024-token output cap, runs of at most 30 minutes, 600 s requests, compaction at 8,000 tokens, 2 "
        "model calls at once, no prompt caching, no pricing; model_assist auto helps every model that is not a tier's). "
        "Settings given explicitly win.",
        env="DRA_PROFILE",
        operator_only=True,
    )

    warnings: tuple[str, ...] = Field(default=(), exclude=True)
    problems: tuple[str, ...] = Field(default=(), exclude=True)

    @classmethod
    def resolve(
        cls, runnable_config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
    ) -> ResearchConfig:
        """Resolve every field from the run's configurable, then the environment, then the default."""
        environ = os.environ if environ is None else environ
        configurable = dict((runnable_config or {}).get("configurable") or {})
        warnings: list[str] = []
        problems: list[str] = []
        values: dict[str, Any] = {}

        for legacy in sorted(LEGACY_MODEL_KEYS & configurable.keys()):
            warnings.append(
                f"configurable.{legacy} is ignored: models are chosen by tier (model_tier / DRA_MODEL_TIER)."
            )
        for old, new in RETIRED_RESULT_LIMITS.items():
            if old in environ or old.removeprefix("DRA_").lower() in configurable:
                warnings.append(f"{old} is no longer read: {new} bounds every tool result, fetched pages included.")

        for name, field in cls.model_fields.items():
            extra = field.json_schema_extra
            if not isinstance(extra, dict) or extra.get("own_rules"):
                continue
            raw, origin = _lookup(configurable, environ, extra)
            if raw is None:
                continue
            try:
                values[name] = _coerce(field.annotation, raw, field.default)
            except ValueError as exc:
                if extra.get("ceiling"):
                    problems.append(
                        f"{origin}: {exc}. Fix the ceiling or leave it out to use the default {field.default!r}."
                    )
                else:
                    warnings.append(f"{origin}: {exc}; using the default {field.default!r}.")

        retired_shared = str(environ.get(RETIRED_SHARED_FLAG) or "").strip().lower() in _TRUE
        if retired_shared and not environ.get("DRA_SHARED_DEPLOYMENT"):
            # The old name of the flag must still close the deployment: dropping it would open it silently.
            values["shared_deployment"] = True
            warnings.append(
                f"{RETIRED_SHARED_FLAG} is now DRA_SHARED_DEPLOYMENT, which limits a run's sandbox_url too; read as it."
            )

        profile = str(values.get("profile", "")).strip().lower()
        if profile and profile not in PROFILES:
            warnings.append(f"DRA_PROFILE {profile!r} is unknown; no profile. Known profiles: {', '.join(PROFILES)}.")
            profile = ""
        values["profile"] = profile
        for name, default in PROFILES.get(profile, {}).items():
            values.setdefault(name, default)

        judge = str(values.get("claim_judge", "auto")).strip().lower()
        judge = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}.get(judge, judge)
        if judge not in CLAIM_JUDGE_MODES:
            warnings.append(f"claim_judge {judge!r} is not one of {', '.join(CLAIM_JUDGE_MODES)}; using 'auto'.")
            judge = "auto"
        values["claim_judge"] = judge
        for mode_name in ("prompt_caching", "priced", "model_assist"):
            mode = _auto_mode(values.get(mode_name, "auto"))
            if mode is None:
                warnings.append(
                    f"{mode_name} {values[mode_name]!r} is not one of {', '.join(AUTO_MODES)}; using 'auto'."
                )
                mode = "auto"
            values[mode_name] = mode
        for list_name in ("model_prices", "context_windows"):
            kept, bad = _model_numbers(values.get(list_name, ()), prices=list_name == "model_prices")
            values[list_name] = kept
            warnings.extend(
                f"{list_name}: {entry!r} is not name={'input/output' if list_name == 'model_prices' else 'tokens'}; ignored."
                for entry in bad
            )

        declared = tuple(str(slot).strip().lower() for slot in values.get("small_model_slots", ()))
        values["small_model_slots"] = tuple(dict.fromkeys(slot for slot in declared if slot in SLOTS))
        warnings.extend(
            f"small_model_slots: {slot!r} is not a slot; known slots: {', '.join(SLOTS)}."
            for slot in declared
            if slot not in SLOTS
        )

        tier = values.get("model_tier", DEFAULT_TIER)
        if tier not in MODEL_TIERS:
            warnings.append(
                f"Unknown model tier {tier!r}; using {DEFAULT_TIER!r}. Known tiers: {', '.join(TIER_ORDER)}."
            )
            values["model_tier"] = DEFAULT_TIER
        if profile == "local" and (unnamed := [s for s in SLOTS if not str(values.get(f"model_{s}", "")).strip()]):
            warnings.append(
                f"DRA_PROFILE=local, but no model is named in {', '.join(f'DRA_MODEL_{slot.upper()}' for slot in unnamed)}"
                ": a slot without one sends the tier's hosted model name, which vLLM and Ollama refuse and "
                "model_assist auto never helps. Name the model your server serves in each."
            )

        if (public_url := values.get("public_url")) and (problem := UrlPolicy("public URLs").refusal(public_url)):
            warnings.append(f"DRA_PUBLIC_URL {public_url!r}: {problem}; links to this server are relative.")
            values["public_url"] = ""

        if not values.get("domain_prompt") and values.get("domain_prompt_file"):
            path = Path(values["domain_prompt_file"]).expanduser()
            try:
                values["domain_prompt"] = path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                warnings.append(
                    f"DRA_DOMAIN_PROMPT_FILE {str(path)!r} cannot be read ({exc.strerror}); no domain prompt."
                )

        embedder = str(values.get("embeddings", "bundled")).strip().lower()
        if embedder not in EMBEDDERS:
            warnings.append(f"DRA_EMBEDDINGS {embedder!r} is not one of {', '.join(EMBEDDERS)}; using 'bundled'.")
            embedder = "bundled"
        values["embeddings"] = embedder

        values["corpora"], corpus_warnings = parse_declarations(environ.get("DRA_CORPORA", ""), base=PROJECT_ROOT)
        warnings.extend(corpus_warnings)
        values["corpus_names"], names_warning = _corpus_names(configurable.get("corpora"))
        if names_warning:
            warnings.append(names_warning)
        values["data_dir"] = str(_project_path(values.get("data_dir", "data")))

        _resolve_search_backends(values, warnings)
        _resolve_reader(values, configurable, environ, problems)

        values["mcp_servers"], mcp_warnings = resolve_servers(
            configurable,
            environ,
            label=values.get("mcp_label", "mcp"),
            bearer=values.get("mcp_bearer"),
            allowed_hosts=tuple(values.get("mcp_allowed_hosts", ())),
            shared=bool(values.get("shared_deployment", False)),
        )
        warnings.extend(mcp_warnings)

        operator_url = _normalise_url(environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        requested = configurable.get("base_url")
        if requested:
            allowed = {operator_url, *(_normalise_url(u) for u in values.get("allowed_base_urls", ()))}
            if _normalise_url(str(requested)) not in allowed:
                problems.append(
                    f"The run asked for base_url {str(requested)!r}, which is not on DRA_ALLOWED_BASE_URLS. "
                    "Add it there (operator setting) or drop base_url from the run's configurable."
                )
                values["base_url"] = operator_url
        values["base_url"] = _normalise_url(values.get("base_url", operator_url))

        _confine_extension_dirs(values, configurable, environ, problems)
        _confine_sandbox(values, configurable, environ, warnings, problems)

        if values.get("openai_api_key") is None:
            problems.append(
                "No API key for the model endpoint. Set OPENAI_API_KEY (or OPENROUTER_API_KEY) in .env, or pass "
                "configurable.apiKeys.OPENAI_API_KEY. Local servers that ignore keys accept any value."
            )

        for message in warnings:
            logger.warning("config: %s", message)
        return cls(**values, warnings=tuple(warnings), problems=tuple(problems))

    def part(self, model: type[Part]) -> Part:
        """This run's settings of one feature (a sub-model ``ResearchConfig`` is composed of), for its builder."""
        return model.model_construct(**{name: getattr(self, name) for name in model.model_fields})

    @cached_property
    def tier(self) -> Tier:
        """The run's tier with the ``model_<slot>`` names, the configured prices and context windows applied."""
        return fitted_tier(self)

    @property
    def caches_prompts(self) -> bool:
        """Whether requests carry cache breakpoints: ``on``, or ``auto`` on an endpoint that honours them."""
        if self.prompt_caching == "auto":
            return _host_in(self.base_url, CACHING_HOSTS)
        return self.prompt_caching == "on"

    @property
    def judges_claims(self) -> bool:
        """Whether the report gate's judge runs: ``on``, or ``auto`` with a utility model in the tier."""
        if self.claim_judge == "auto":
            return bool(self.tier.utility.slug)
        return self.claim_judge == "on"

    def secret_values(self) -> tuple[str, ...]:
        """Every secret this config holds, so emitters and loggers can scrub them."""
        keys = tuple(s.get_secret_value() for s in self._secrets().values() if s is not None and s.get_secret_value())
        return keys + tuple(value for server in self.mcp_servers for value in server.secret_values())

    def _secrets(self) -> dict[str, SecretStr | None]:
        return {
            name: getattr(self, name)
            for name, field in type(self).model_fields.items()
            if field.annotation == SecretStr | None
        }

    def cache_key(self) -> str:
        """A digest of everything that shapes the graph; secrets enter only as a hash."""
        payload = self.model_dump(mode="json")
        for name, secret in self._secrets().items():
            payload[name] = _digest(secret.get_secret_value()) if secret else None
        payload["mcp_servers"] = [server.fingerprint() for server in self.mcp_servers]
        payload["problems"] = list(self.problems)
        payload["warnings"] = list(self.warnings)
        return _digest(json.dumps(payload, sort_keys=True, default=str))


def fitted_tier(settings: ResearchConfig) -> Tier:
    """``settings``' tier, each slot with its ``model_<slot>`` name, its prices (0 off a paid endpoint unless
    ``model_prices`` names the model) and its context window (``context_windows``, else the tier's, else
    ``UNKNOWN_CONTEXT_WINDOW`` for a model the tier does not know)."""
    base = MODEL_TIERS[settings.model_tier]
    prices = {name: numbers for name, numbers in (_split_entry(entry) for entry in settings.model_prices)}
    windows = {name: numbers for name, numbers in (_split_entry(entry) for entry in settings.context_windows)}
    paid = settings.priced == "on" or (settings.priced == "auto" and _host_in(settings.base_url, PAID_HOSTS))
    slots: dict[str, ModelSpec] = {}
    for slot in SLOTS:
        spec = base.slot(slot)
        override = str(getattr(settings, f"model_{slot}") or "").strip()
        slug = override or spec.slug
        input_usd, output_usd = (spec.input_usd_per_mtok, spec.output_usd_per_mtok) if paid and not override else (0, 0)
        if slug in prices:
            input_usd, output_usd = prices[slug]
        window = windows.get(slug, (UNKNOWN_CONTEXT_WINDOW if override else spec.context_window,))[0]
        slots[slot] = ModelSpec(
            slug=slug, input_usd_per_mtok=input_usd, output_usd_per_mtok=output_usd, context_window=int(window)
        )
    return Tier(**slots)


def _split_entry(entry: str) -> tuple[str, tuple[float, ...]]:
    name, _, numbers = entry.rpartition("=")
    return name.strip(), tuple(float(n) for n in numbers.split("/"))


def _model_numbers(entries: tuple[str, ...], *, prices: bool) -> tuple[tuple[str, ...], list[str]]:
    """The well-formed ``name=numbers`` entries, and the others."""
    kept: list[str] = []
    bad: list[str] = []
    for entry in entries:
        try:
            name, numbers = _split_entry(str(entry))
        except ValueError:
            bad.append(str(entry))
            continue
        if not name or len(numbers) != (2 if prices else 1) or any(n < 0 or not math.isfinite(n) for n in numbers):
            bad.append(str(entry))
        elif not prices and numbers[0] < 1:
            bad.append(str(entry))
        else:
            kept.append(str(entry).strip())
    return tuple(kept), bad


def _auto_mode(raw: Any) -> str | None:
    text = str(raw).strip().lower()
    text = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}.get(text, text)
    return text if text in AUTO_MODES else None


def _host_in(url: str, hosts: tuple[str, ...]) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return any(host == known or host.endswith("." + known) for known in hosts)


def _confine_extension_dirs(
    values: dict[str, Any], configurable: Mapping[str, Any], environ: Mapping[str, str], problems: list[str]
) -> None:
    """Make both extension folders absolute, and refuse a run's own folder outside the operator's roots.

    Custom tools are Python the server imports, so a client may only pick a folder the operator allows:
    the operator's own (environment or default) folder, or one under ``DRA_ALLOWED_EXTENSION_ROOTS``.
    A refused folder becomes a problem (the run ends with ``config_error``) and the operator's folder is
    kept, so nothing the client named is ever loaded.
    """
    roots = [_project_path(root) for root in values.get("allowed_extension_roots", ())]
    for name in _EXTENSION_DIRS:
        field = ResearchConfig.model_fields[name]
        envs = field.json_schema_extra["env"]  # type: ignore[index]
        operator = _project_path(next((environ[e] for e in envs if environ.get(e)), field.default))
        values[name] = str(_project_path(values.get(name, operator)))
        requested = configurable.get(name)
        if requested in (None, ""):
            continue
        path = Path(values[name])
        if path != operator and not any(path == root or root in path.parents for root in roots):
            problems.append(
                f"The run asked for {name} {str(requested)!r}, which is not under DRA_ALLOWED_EXTENSION_ROOTS. "
                "Add its folder there (operator setting) or drop it from the run's configurable."
            )
            values[name] = str(operator)


def _confine_sandbox(
    values: dict[str, Any],
    configurable: Mapping[str, Any],
    environ: Mapping[str, str],
    warnings: list[str],
    problems: list[str],
) -> None:
    """Apply the sandbox's trust rules to the resolved values.

    The operator's token goes only to the operator's sandbox: a run that names a sandbox_url of its own
    gets its own sandbox_token or none. A run may open the network only in its own sandbox. A URL that
    is not http(s), or points at a link-local or metadata address, or (a run's own, on a shared deployment
    or with DRA_SANDBOX_ALLOWED_HOSTS set) at a host the operator did not list, is refused: a run's is a
    problem (the run ends with config_error), the operator's disables code execution with a warning.
    """
    provider = str(values.get("sandbox_provider", SandboxProvider.SIDECAR)).strip().lower()
    if provider not in set(SandboxProvider):
        warnings.append(
            f"DRA_SANDBOX_PROVIDER {provider!r} is unknown; using the sandbox service. "
            f"Known providers: {', '.join(SandboxProvider)}."
        )
        provider = SandboxProvider.SIDECAR
    values["sandbox_provider"] = str(provider)
    if provider != SandboxProvider.SIDECAR:
        if package := missing_package(provider):
            problems.append(
                f"DRA_SANDBOX_PROVIDER={provider} needs the {package} package, which is not installed: "
                f"run `uv pip install {package}` (or add it to the project), or unset DRA_SANDBOX_PROVIDER."
            )
    operator_url = (environ.get("LLM_SANDBOX_URL") or "").strip().rstrip("/")
    url = str(values.get("sandbox_url") or "").strip().rstrip("/")
    requested = str(configurable.get("sandbox_url") or "").strip().rstrip("/")
    own_sandbox = bool(requested) and _normalise_url(requested) != _normalise_url(operator_url)
    policy = SANDBOX_URLS
    if own_sandbox:
        policy = UrlPolicy.for_run(
            "sandbox URLs",
            allow_env="DRA_SANDBOX_ALLOWED_HOSTS",
            allowed_hosts=values.get("sandbox_allowed_hosts", ()),
            shared=bool(values.get("shared_deployment", False)),
        )
    if url and (refusal := _sandbox_url_problem(url, policy)):
        if own_sandbox:
            problems.append(
                f"configurable.sandbox_url: {refusal}. Give the http(s) URL of a sandbox service this deployment allows, or "
                "leave it out."
            )
        else:
            warnings.append(f"LLM_SANDBOX_URL: {refusal}; code execution is disabled.")
        url = ""
    values["sandbox_url"] = _normalise_url(url) if url else ""
    if own_sandbox:
        run_token = _dig(configurable, "sandbox_token")
        values["sandbox_token"] = SecretStr(str(run_token)) if run_token not in (None, "") else None
    elif configurable.get("sandbox_network") not in (None, ""):
        operator_network = (environ.get("LLM_SANDBOX_NETWORK") or "").strip().lower() in _TRUE
        if values.get("sandbox_network", False) != operator_network:
            warnings.append(
                "configurable.sandbox_network is ignored: a run may change the sandbox's network only in a sandbox of "
                "its own (its own sandbox_url)."
            )
            values["sandbox_network"] = operator_network
    offload_dir = str(values.get("offload_dir") or "/workspace/data")
    if not offload_dir.startswith("/") or ".." in offload_dir.split("/"):
        warnings.append(f"offload_dir {offload_dir!r} is not an absolute sandbox path; using '/workspace/data'.")
        offload_dir = "/workspace/data"
    values["offload_dir"] = offload_dir.rstrip("/") or "/workspace/data"
    timeout = values.get("sandbox_session_timeout", 5400)
    run_seconds = values.get("max_run_seconds", 2700.0)
    attached = provider != SandboxProvider.SIDECAR or bool(values["sandbox_url"])
    if attached and run_seconds and timeout < run_seconds:
        warnings.append(
            f"The sandbox session lives {timeout} s but a run may take {run_seconds:g} s: its offloaded files can vanish "
            "before the run ends. Raise LLM_SANDBOX_SESSION_TIMEOUT above DRA_MAX_RUN_SECONDS."
        )


def _resolve_reader(
    values: dict[str, Any], configurable: Mapping[str, Any], environ: Mapping[str, str], problems: list[str]
) -> None:
    """The report's language, style and outline, each checked: one that cannot be followed refuses the run
    (a report in the wrong language or shape is not what was asked for), its message listing the valid values.
    An env outline is a Markdown skeleton or a JSON list; a run's is a list or a skeleton."""
    # A refused value ends the run with config_error; the graph that says so is built with the default.
    language = str(values.get("report_language", "auto")).strip().lower().replace("_", "-")
    if refusal := language_refusal(language):
        problems.append(refusal + ".")
    values["report_language"] = "auto" if refusal else language
    style = str(values.get("report_style", "standard")).strip().lower()
    if refusal := style_refusal(style):
        problems.append(refusal + ".")
    values["report_style"] = "standard" if refusal else style
    raw, origin = _lookup(configurable, environ, {"configurable": ["report_outline"], "env": ["DRA_REPORT_OUTLINE"]})
    if isinstance(raw, str) and raw.strip().startswith("["):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(
                f"{origin}: not valid JSON ({exc.msg}); give a JSON list of headings or a Markdown skeleton."
            )
            return
    if raw is None or raw == []:
        return
    try:
        values["report_outline"] = parse_outline(raw)
    except OutlineError as exc:
        problems.append(f"{origin}: {exc}.")


def _sandbox_url_problem(url: str, policy: UrlPolicy = SANDBOX_URLS) -> str | None:
    """Why the agent must not call ``url`` as its sandbox under ``policy`` (the operator's: http(s), neither
    link-local nor a metadata endpoint, since the sandbox service usually lives on loopback or a private
    address), or None. A URL carrying user info is refused too: the token has its own setting."""
    if refusal := policy.refusal(url):
        return refusal
    parts = urlsplit(url)
    if parts.username or parts.password:
        return "the URL must not carry user info; put the token in sandbox_token"
    return None


def _corpus_names(raw: Any) -> tuple[tuple[str, ...], str | None]:
    """A run's ``corpora``: a list (or comma-separated string) of corpus names, never a directory."""
    if raw in (None, "", []):
        return (), None
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        return (), "configurable.corpora must be a list of corpus names; searching every corpus."
    return tuple(dict.fromkeys(item.strip() for item in items if item.strip())), None


def _project_path(raw: str) -> Path:
    """An absolute, symlink-free path; relative ones are taken from the project root."""
    return (PROJECT_ROOT / Path(str(raw)).expanduser()).resolve()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    return url.replace("://0.0.0.0", "://127.0.0.1")


def _lookup(configurable: Mapping[str, Any], environ: Mapping[str, str], extra: dict[str, Any]) -> tuple[Any, str]:
    if not extra.get("operator_only"):
        for key in extra.get("configurable", ()):
            value = _dig(configurable, key)
            if value not in (None, ""):
                return value, f"configurable.{key}"
    for env in extra.get("env", ()):
        value = environ.get(env)
        if value not in (None, ""):
            return value, env
    return None, ""


def _dig(mapping: Mapping[str, Any], dotted: str) -> Any:
    current: Any = mapping
    for part in dotted.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def _coerce(annotation: Any, raw: Any, default: Any) -> Any:
    """Turn an env string or configurable value into the field's type, or raise ValueError with a reason."""
    kind = default.__class__ if default is not None else str
    if annotation == SecretStr | None:
        return SecretStr(str(raw))
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(f"{raw!r} is not a boolean (use true/1/yes/on or false/0/no/off)")
    if kind is int:
        try:
            number: float = int(str(raw).strip())
        except ValueError:
            raise ValueError(f"{raw!r} is not a whole number") from None
        return _not_negative(raw, number)
    if kind is float:
        try:
            number = float(str(raw).strip())
        except ValueError:
            raise ValueError(f"{raw!r} is not a number") from None
        if not math.isfinite(number):
            raise ValueError(f"{raw!r} is not a finite number")
        return _not_negative(raw, number)
    if kind is tuple:
        items = _as_list(raw)
        wants_objects = "dict" in str(annotation)
        if wants_objects and not all(isinstance(item, dict) for item in items):
            raise ValueError("expected a JSON list of objects")
        if not wants_objects and not all(isinstance(item, str) for item in items):
            raise ValueError("expected a comma-separated list")
        return tuple(items)
    return str(raw)


def _not_negative(raw: Any, number: float) -> Any:
    # Every numeric setting is a size, a duration, a count or a price.
    if number < 0:
        raise ValueError(f"{raw!r} is negative; use 0 or more")
    return number


def _as_list(raw: Any) -> list[Any]:
    if isinstance(raw, (list, tuple)):
        return list(raw)
    if isinstance(raw, dict):
        raise ValueError("expected a list, got a single object")
    text = str(raw).strip()
    if text.startswith(("[", "{")):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg})") from None
        if not isinstance(parsed, list):
            raise ValueError("expected a JSON list")
        return parsed
    return [part.strip() for part in text.split(",") if part.strip()]
