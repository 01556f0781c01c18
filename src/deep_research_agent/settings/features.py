"""The feature settings sub-models that ``ResearchConfig`` is composed of: each feature's builder takes its own.

``ResearchConfig`` inherits every sub-model, so a field keeps its one declaration, env var, configurable key
and default, and ``ResearchConfig.part(SearchSettings)`` hands a builder only the settings of its feature.
The sub-models live here rather than beside their features because ``settings`` is below every feature.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ..domain.names import SandboxProvider
from ..domain.reader import AUTO_LANGUAGE, MAX_OUTLINE_SECTIONS, ReportStyle
from ..domain.url_policy import UrlPolicy
from .corpora import CorpusSpec
from .mcp_servers import McpServer
from .tiers import DEFAULT_BASE_URL, DEFAULT_TIER, ModelSpec


def _setting(
    default: Any,
    description: str,
    *,
    env: str | tuple[str, ...] | None = None,
    configurable: str | tuple[str, ...] | None = None,
    operator_only: bool = False,
    ceiling: bool = False,
    own_rules: bool = False,
) -> Any:
    """A field plus where it may come from; the README and .env.example tables are generated from this.

    A ``ceiling`` bounds a run: a value that cannot be read refuses the run instead of falling back to the
    default, which could lift or loosen the bound its sender meant to set. A field with ``own_rules`` is
    resolved by its own function after the others (its sources differ in shape and in trust), and its
    metadata only documents where it comes from.
    """
    envs = (env,) if isinstance(env, str) else tuple(env or ())
    keys = (configurable,) if isinstance(configurable, str) else tuple(configurable or ())
    return Field(
        default=default,
        description=description,
        json_schema_extra={
            "env": list(envs),
            "configurable": list(keys),
            "operator_only": operator_only,
            "ceiling": ceiling,
            "own_rules": own_rules,
        },
    )


class ModelSettings(BaseModel):
    """The model endpoint and how every model call is made (``modelcalls/models.py``)."""

    model_config = ConfigDict(frozen=True)

    openai_api_key: SecretStr | None = _setting(
        None,
        "Key sent as Bearer to the model endpoint.",
        env=("OPENAI_API_KEY", "OPENROUTER_API_KEY"),
        configurable="apiKeys.OPENAI_API_KEY",
    )
    base_url: str = _setting(
        DEFAULT_BASE_URL,
        "OpenAI-compatible endpoint for every model. A per-run value must be on DRA_ALLOWED_BASE_URLS.",
        env="OPENAI_BASE_URL",
        configurable="base_url",
    )
    allowed_base_urls: tuple[str, ...] = _setting(
        (),
        "Comma-separated extra base URLs a run may switch to (guards the key against exfiltration).",
        env="DRA_ALLOWED_BASE_URLS",
        operator_only=True,
    )
    model_tier: str = _setting(
        DEFAULT_TIER,
        "Named model package: extra-low | low | mid | high. Unknown names warn and use the default.",
        env="DRA_MODEL_TIER",
        configurable="model_tier",
    )
    request_timeout: float = _setting(
        180.0,
        "Seconds before one model request is abandoned.",
        env="DRA_REQUEST_TIMEOUT",
        configurable="request_timeout",
    )
    max_retries: int = _setting(
        3, "Retries per model call on transient errors; 0 disables.", env="DRA_MAX_RETRIES", configurable="max_retries"
    )
    temperature: float = _setting(
        0.3, "Sampling temperature of every model call.", env="DRA_TEMPERATURE", configurable="temperature"
    )
    max_output_tokens: int = _setting(
        16000,
        "Output cap per model call, never more than the model's context window leaves after the prompt; 0 means "
        "only that bound.",
        env="DRA_MAX_OUTPUT_TOKENS",
        configurable="max_output_tokens",
    )
    streaming: bool = _setting(
        True, "Token-by-token streaming from the model endpoint.", env="DRA_STREAMING", configurable="streaming"
    )
    streaming_denylist: tuple[str, ...] = _setting(
        ("deepseek-v4-flash",),
        "Comma-separated model-name substrings that never stream (off-spec streaming chunks).",
        env="DRA_STREAMING_DENYLIST",
        configurable="streaming_denylist",
    )

    def streams(self, spec: ModelSpec) -> bool:
        """Whether calls to ``spec``'s model stream: ``streaming`` is on and no denylisted name is in its slug."""
        return self.streaming and not any(s and s in spec.slug for s in self.streaming_denylist)


class BudgetSettings(BaseModel):
    """A run's ceilings: graph steps, tool calls, tokens, wall-clock time and dollars (``guards/``)."""

    model_config = ConfigDict(frozen=True)

    recursion_limit: int = _setting(
        4500,
        "LangGraph super-step ceiling of a run.",
        env="DRA_RECURSION_LIMIT",
        configurable="recursion_limit",
        ceiling=True,
    )
    max_tool_calls: int = _setting(
        200,
        "Tool-call ceiling of a run, all agents together.",
        env="DRA_MAX_TOOL_CALLS",
        configurable=("max_tool_calls", "max_react_tool_calls"),
        ceiling=True,
    )
    max_total_tokens: int = _setting(
        4_000_000,
        "Token ceiling of a run, all agents together; cached input counts at 0.1.",
        env="DRA_MAX_TOTAL_TOKENS",
        configurable="max_total_tokens",
        ceiling=True,
    )
    max_run_seconds: float = _setting(
        2700.0,
        "Wall-clock ceiling of a run; 0 means no cap.",
        env="DRA_MAX_RUN_SECONDS",
        configurable="max_run_seconds",
        ceiling=True,
    )
    max_cost_usd: float = _setting(
        0.0,
        "Dollar ceiling of a run at the tier's prices; 0 means no cap.",
        env="DRA_MAX_COST_USD",
        configurable="max_cost_usd",
        ceiling=True,
    )


class SearchSettings(BaseModel):
    """The web: ``web_search`` and its backends, ``web_fetch`` (``tools/search.py``, ``tools/fetch.py``)."""

    model_config = ConfigDict(frozen=True)

    tavily_api_key: SecretStr | None = _setting(
        None,
        "Tavily key for web_search; without one, Tavily's keyless access is used (rate-limited).",
        env="TAVILY_API_KEY",
        configurable="apiKeys.TAVILY_API_KEY",
    )
    tavily_api_base_url: str = _setting(
        "",
        "Tavily API endpoint (self-hosted or test); empty means Tavily's own.",
        env="TAVILY_API_BASE_URL",
        operator_only=True,
    )
    web_search: bool = _setting(
        True,
        "Give research sub-agents the web: web_search, and web_fetch unless DRA_WEB_FETCH is off. Off leaves only "
        "the corpora (and MCP and custom tools): a private-documents agent.",
        env="DRA_WEB_SEARCH",
        configurable="web_search",
    )
    search_max_results: int = _setting(
        6, "Results per web search.", env="DRA_SEARCH_MAX_RESULTS", configurable="search_max_results"
    )
    search_backends: tuple[str, ...] = _setting(
        (),
        "Comma-separated search backends web_search offers, the first the default: tavily, searxng, arxiv, wikipedia, "
        "pubmed, openalex (docs/search.md). Empty: tavily with a TAVILY_API_KEY, else searxng when SEARXNG_URL is "
        "set, else keyless tavily.",
        env="DRA_SEARCH_BACKENDS",
        configurable="search_backends",
    )
    searxng_url: str = _setting(
        "", "Base URL of your SearXNG instance (JSON format enabled); empty: no SearXNG.", env="SEARXNG_URL",
        operator_only=True,
    )  # fmt: skip
    arxiv_api_url: str = _setting(
        "https://export.arxiv.org/api/query", "arXiv Atom API endpoint.", env="ARXIV_API_URL", operator_only=True
    )
    wikipedia_api_url: str = _setting(
        "https://en.wikipedia.org/w/api.php",
        "MediaWiki action API endpoint (another language's or wiki's api.php works too).",
        env="WIKIPEDIA_API_URL",
        operator_only=True,
    )
    pubmed_api_url: str = _setting(
        "https://eutils.ncbi.nlm.nih.gov/entrez/eutils",
        "NCBI E-utilities base (esearch.fcgi, efetch.fcgi beneath it).",
        env="PUBMED_API_URL",
        operator_only=True,
    )
    openalex_api_url: str = _setting(
        "https://api.openalex.org", "OpenAlex API base (/works beneath it).", env="OPENALEX_API_URL", operator_only=True
    )
    search_contact_email: str = _setting(
        "",
        "Contact e-mail the scholarly APIs ask for: OpenAlex's mailto (its polite pool), NCBI's email, and the "
        "User-Agent sent to arXiv and Wikipedia.",
        env="DRA_SEARCH_CONTACT_EMAIL",
        operator_only=True,
    )
    web_fetch: bool = _setting(
        True,
        "Give research sub-agents the web_fetch full-page reader (only while web_search is on).",
        env="DRA_WEB_FETCH",
        configurable="web_fetch",
    )
    fetch_allow_hosts: tuple[str, ...] = _setting(
        (),
        "Comma-separated host[:port] that web_fetch may read although they are private addresses.",
        env="DRA_FETCH_ALLOW_HOSTS",
        operator_only=True,
    )
    fetch_cassette_url: str = _setting(
        "",
        "Evaluation only: the page endpoint of a cassette proxy (./run.sh eval cassette, its /page) that web_fetch "
        "reads every page through, to record or replay them; empty, web_fetch reads each page itself.",
        env="DRA_FETCH_CASSETTE_URL",
        operator_only=True,
    )


class KnowledgeSettings(BaseModel):
    """The knowledge base in the LangGraph store (``knowledge/``)."""

    model_config = ConfigDict(frozen=True)

    knowledge_base: bool = _setting(
        True,
        "Give research sub-agents the knowledge base tools remember and query, over the server's LangGraph store, "
        "per user (the authenticated user, else configurable user_id, else anonymous) and dataset; a run is "
        "offered them when the dataset has entries or remember_findings is on.",
        env="DRA_KNOWLEDGE_BASE",
        configurable="knowledge_base",
    )
    knowledge_dataset: str = _setting(
        "main",
        "Dataset of the user's knowledge base that remember and query use (./run.sh kb --dataset names it too).",
        env="DRA_KNOWLEDGE_DATASET",
        configurable="knowledge_dataset",
    )
    remember_findings: bool = _setting(
        False,
        "Store each delivered report's quoted findings (quote, finding, source) in the knowledge base.",
        env="DRA_REMEMBER_FINDINGS",
        configurable="remember_findings",
    )


class McpSettings(BaseModel):
    """The MCP servers a run's research sub-agents use, and how their tools are called (``mcp/``)."""

    model_config = ConfigDict(frozen=True)

    mcp_servers: tuple[McpServer, ...] = _setting(
        (),
        "MCP servers whose tools the research sub-agents get: a JSON list of {label, url, headers?, transport?} "
        "(streamable_http or sse; a bare host gets /mcp). configurable.mcp_config is the compatibility form "
        "{url, tools?, auth_required?, headers?}, whose url is a base that gets /mcp. The first non-empty of "
        "mcp_servers, mcp_config, DRA_MCP_SERVERS, DRA_MCP_SERVERS_FILE (a file with that JSON), DRA_MCP_URL wins. "
        "Link-local and metadata hosts are refused. stdio servers ({label, command, args?, env?}) only from the "
        "operator's DRA_MCP_SERVERS or its file, never from a run.",
        env=("DRA_MCP_SERVERS", "DRA_MCP_SERVERS_FILE", "DRA_MCP_URL"),
        configurable=("mcp_servers", "mcp_config"),
        own_rules=True,
    )
    mcp_tools_ttl: float = _setting(
        600.0,
        "Seconds an MCP server's tool listing is reused by later runs; 0 lists on every run. Failures are never cached.",
        env="DRA_MCP_TOOLS_TTL",
        configurable="mcp_tools_ttl",
    )
    mcp_max_concurrency: int = _setting(
        10,
        "MCP calls a run makes at once, all sub-agents together; 0 means no cap.",
        env="DRA_MCP_MAX_CONCURRENCY",
        configurable="mcp_max_concurrency",
    )
    mcp_rate_limit_max_wait: float = _setting(
        120.0,
        "Seconds one MCP call may spend backing off from HTTP 429 (honouring Retry-After) before it gives up.",
        env="DRA_MCP_RATE_LIMIT_MAX_WAIT",
        configurable="mcp_rate_limit_max_wait",
    )
    mcp_call_timeout: float = _setting(
        60.0,
        "Seconds one MCP tool call may take (each try, not counting 429 waits) before it is cut off as a "
        "transient failure, so a server that hangs never holds a research unit; 0 means no limit.",
        env="DRA_MCP_CALL_TIMEOUT",
        configurable="mcp_call_timeout",
    )
    mcp_label: str = _setting("mcp", "Label of the DRA_MCP_URL server.", env="DRA_MCP_LABEL", operator_only=True)
    mcp_bearer: SecretStr | None = _setting(
        None,
        "Token sent as Authorization: Bearer to env-configured MCP servers without auth headers of their own; "
        "never to a run's servers.",
        env="DRA_MCP_BEARER",
        operator_only=True,
    )
    mcp_allowed_hosts: tuple[str, ...] = _setting(
        (),
        "Comma-separated host[:port] on which a run's own MCP servers (configurable mcp_servers or mcp_config) may "
        "be; when set, or on a shared deployment (DRA_SHARED_DEPLOYMENT), a run's server on any other host is "
        "refused with mcp_error. The operator's servers are not limited.",
        env="DRA_MCP_ALLOWED_HOSTS",
        operator_only=True,
    )
    mcp_prompt: str = _setting(
        "",
        "The deployment's guidance on its MCP tools, added to the orchestrator's and the research sub-agents' prompts.",
        env="DRA_MCP_PROMPT",
        configurable="mcp_prompt",
    )


# Every sandbox URL, the operator's too: http(s), never a link-local or metadata host (a run's own is limited further).
SANDBOX_URLS = UrlPolicy("sandbox URLs")


class SandboxSettings(BaseModel):
    """Code execution: where code runs and the sandbox session's limits (``sandbox/``)."""

    model_config = ConfigDict(frozen=True)

    sandbox_provider: str = _setting(
        "sidecar",
        "Where code runs: sidecar (the HTTP sandbox service at LLM_SANDBOX_URL) or a hosted deepagents sandbox "
        "integration: daytona, modal, e2b or runloop (install langchain-<name> and set that provider's own key).",
        env="DRA_SANDBOX_PROVIDER",
        operator_only=True,
    )
    sandbox_url: str = _setting(
        "",
        "The sandbox service (same HTTP API as llm-sandbox); when set, execute runs real shell and Python there and the "
        "coding and extract sub-agents are offered. Empty: code execution is disabled. Link-local and metadata hosts are "
        "refused; a run's own is limited like its MCP servers (DRA_SANDBOX_ALLOWED_HOSTS).",
        env="LLM_SANDBOX_URL",
        configurable="sandbox_url",
    )
    sandbox_allowed_hosts: tuple[str, ...] = _setting(
        (),
        "Comma-separated host[:port] on which a run's own sandbox_url may be; when set, or on a shared deployment "
        "(DRA_SHARED_DEPLOYMENT), a run naming any other host ends with config_error. LLM_SANDBOX_URL is not limited.",
        env="DRA_SANDBOX_ALLOWED_HOSTS",
        operator_only=True,
    )
    sandbox_token: SecretStr | None = _setting(
        None,
        "Bearer token for the sandbox service; it must match the service's LLM_SANDBOX_TOKEN. Sent only to the sandbox "
        "URL; a run that names its own sandbox_url gets only its own sandbox_token.",
        env="LLM_SANDBOX_TOKEN",
        configurable="sandbox_token",
    )
    sandbox_network: bool = _setting(
        False,
        "Allow outbound network from inside the sandbox. A run may turn it on only in a sandbox of its own (its own sandbox_url).",
        env="LLM_SANDBOX_NETWORK",
        configurable="sandbox_network",
    )
    sandbox_session_timeout: int = _setting(
        5400,
        "Lifetime in seconds of a run's sandbox session: it and every file offloaded into it are gone after this, "
        "so keep it above DRA_MAX_RUN_SECONDS.",
        env="LLM_SANDBOX_SESSION_TIMEOUT",
        configurable="sandbox_session_timeout",
    )
    sandbox_exec_timeout: int = _setting(
        120,
        "Seconds one execute may run when the model sets no timeout of its own; past it the command ends with exit code 124.",
        env="DRA_SANDBOX_EXEC_TIMEOUT",
        configurable="sandbox_exec_timeout",
    )

    @property
    def sandbox_attached(self) -> bool:
        """True when code can run: a hosted provider is chosen, or the sandbox service has a URL."""
        return self.sandbox_provider != SandboxProvider.SIDECAR or bool(self.sandbox_url)


class CorporaSettings(BaseModel):
    """Local corpora: the declarations, the corpora a run chose, where indexes live (``corpora/``)."""

    model_config = ConfigDict(frozen=True)

    corpora: tuple[CorpusSpec, ...] = _setting(
        (),
        "Local document collections the research sub-agents search (corpus_search, corpus_read): a JSON object "
        "mapping a name to a directory or to {path, title?, description?, html?, exclude?} (html: docs or web), "
        "or the path of a file holding that JSON. Corpora added with ./run.sh corpus add are offered too. "
        "configurable.corpora is a list of names: the corpora this run searches (all when empty); a run can "
        "never add a directory.",
        env="DRA_CORPORA",
        configurable="corpora",
        own_rules=True,
    )
    corpus_names: tuple[str, ...] = Field(default=(), description="The corpora a run asked for (configurable.corpora).")
    data_dir: str = _setting(
        "data",
        "Folder of the corpus indexes (<data_dir>/corpora/<name>.sqlite); relative to the project.",
        env="DRA_DATA_DIR",
        operator_only=True,
    )
    corpus_max_results: int = _setting(
        8, "Passages per corpus search (at most 20).", env="DRA_CORPUS_MAX_RESULTS", configurable="corpus_max_results"
    )


EMBEDDERS = ("bundled", "endpoint", "off")


class EmbeddingSettings(BaseModel):
    """How corpus passages, knowledge-base entries and questions become vectors for search by meaning (``embeddings/``).

    Operator-only: a corpus index holds the vectors of one embedder, shared by every run of the server."""

    model_config = ConfigDict(frozen=True)

    embeddings: str = _setting(
        "bundled",
        "Embedder for search by meaning in corpora and the knowledge base: bundled (all-MiniLM-L6-v2 int8, installed "
        "with the project, runs offline) | endpoint (DRA_EMBEDDING_MODEL on DRA_EMBEDDING_BASE_URL's /v1/embeddings) "
        "| off (keyword search only). A corpus is embedded again on its next reindex after a change.",
        env="DRA_EMBEDDINGS",
        operator_only=True,
    )
    embedding_base_url: str = _setting(
        "",
        "OpenAI-compatible endpoint serving /v1/embeddings, e.g. http://localhost:8080/v1 (DRA_EMBEDDINGS=endpoint).",
        env="DRA_EMBEDDING_BASE_URL",
        operator_only=True,
    )
    embedding_model: str = _setting(
        "", "The embedding model's name on DRA_EMBEDDING_BASE_URL.", env="DRA_EMBEDDING_MODEL", operator_only=True
    )
    embedding_api_key: SecretStr | None = _setting(
        None,
        "Key sent as Bearer to DRA_EMBEDDING_BASE_URL (none when unset).",
        env="DRA_EMBEDDING_API_KEY",
        operator_only=True,
    )


class ResultSettings(BaseModel):
    """How much of one tool result enters a model's context, and where the rest goes (``tools/results.py``)."""

    model_config = ConfigDict(frozen=True)

    max_result_chars: int = _setting(
        60000,
        "Characters of one tool result (web_fetch, MCP, custom tools) above which it is offloaded to a file in the "
        "sandbox and the model gets a stub (path, rows, columns, 5-row preview); without a sandbox it is cut with a "
        "note. The whole text is kept as evidence. 0 means no cap.",
        env="DRA_MAX_RESULT_CHARS",
        configurable="max_result_chars",
    )
    max_result_rows: int = _setting(
        1000,
        "Rows (JSON list items, CSV lines) of one tool result above which it is offloaded (or cut) the same way; 0 means no cap.",
        env="DRA_MAX_RESULT_ROWS",
        configurable="max_result_rows",
    )
    offload_results: bool = _setting(
        True,
        "Offload large results, and every metric time series, to files in the sandbox instead of cutting them.",
        env="DRA_OFFLOAD_RESULTS",
        configurable="offload_results",
    )
    offload_dir: str = _setting(
        "/workspace/data",
        "Sandbox folder (an absolute path) that offloaded results are written to.",
        env="DRA_OFFLOAD_DIR",
        configurable="offload_dir",
    )


class ExtensionSettings(BaseModel):
    """The deployment's skills and drop-in custom tools (``extensions/``, ``tools/custom.py``)."""

    model_config = ConfigDict(frozen=True)

    skills_dir: str = _setting(
        "skills",
        "Folder of skills (<name>/SKILL.md); relative to the project. A per-run value must lie under DRA_ALLOWED_EXTENSION_ROOTS.",
        env="DRA_SKILLS_DIR",
        configurable="skills_dir",
    )
    custom_tools_dir: str = _setting(
        "custom_tools",
        "Folder of drop-in *.py tools; relative to the project. A per-run value must lie under DRA_ALLOWED_EXTENSION_ROOTS.",
        env="DRA_CUSTOM_TOOLS_DIR",
        configurable="custom_tools_dir",
    )
    allowed_extension_roots: tuple[str, ...] = _setting(
        (),
        "Comma-separated folders under which a run's skills_dir or custom_tools_dir may point (custom tools are code the server imports).",
        env="DRA_ALLOWED_EXTENSION_ROOTS",
        operator_only=True,
    )
    custom_tool_timeout: float = _setting(
        30.0,
        "Seconds one custom tool call may take before it is cut off; 0 means no cap.",
        env="DRA_CUSTOM_TOOL_TIMEOUT",
        operator_only=True,
    )


class ReaderSettings(BaseModel):
    """The shape the reader asks the report to take: language, outline, length and depth (``delivery/reader.py``)."""

    model_config = ConfigDict(frozen=True)

    report_language: str = _setting(
        AUTO_LANGUAGE,
        "Language of the report, the clarifying questions and a task's digest: auto (the question's, told "
        "locally; an English question or one too short to tell leaves it to the model) or a language code (fr, "
        "ja, de, ...). Research units search in it, and in English too when the topic calls for it; quotes stay "
        "in their source's language. An unknown code refuses the run, listing the valid ones.",
        env="DRA_REPORT_LANGUAGE",
        configurable="report_language",
    )
    report_outline: tuple[str, ...] = _setting(
        (),
        "The report's sections, in order: a list of headings, or a Markdown skeleton whose ## headings are the "
        "sections (./run.sh ask --outline FILE). The plan covers them and the report gate sends a report missing "
        f"one back once, then delivers it with a note. 1 to {MAX_OUTLINE_SECTIONS} headings; empty: the model's "
        "choice.",
        env="DRA_REPORT_OUTLINE",
        configurable="report_outline",
        own_rules=True,
    )
    report_style: str = _setting(
        ReportStyle.STANDARD.value,
        "Length and depth of the report: brief (at most 2 research units, 300-600 words), standard (the model's "
        "judgement, typically 2-5 units, 800-2,000 words) or detailed (at most 8 units, 2,500-5,000 words). A brief "
        "report far over its length or a detailed one far under is sent back once. docs/configuration.md.",
        env="DRA_REPORT_STYLE",
        configurable="report_style",
    )


class ScheduleSettings(BaseModel):
    """Scheduled research (``schedules/``): what a schedule may ask of the server's cron engine."""

    model_config = ConfigDict(frozen=True)

    schedule_min_interval_s: int = _setting(
        3600,
        "Shortest time between two runs of a schedule, in seconds: a cron that would fire more often is refused.",
        env="DRA_SCHEDULE_MIN_INTERVAL_S",
        operator_only=True,
    )
    schedule_max_per_user: int = _setting(
        20,
        "Schedules one user may have (paused ones count); 0 means no limit.",
        env="DRA_SCHEDULE_MAX_PER_USER",
        operator_only=True,
    )
    webhook_allow_hosts: tuple[str, ...] = _setting(
        (),
        "Comma-separated host[:port] a webhook may post to although they are loopback or private addresses.",
        env="DRA_WEBHOOK_ALLOW_HOSTS",
        operator_only=True,
    )
