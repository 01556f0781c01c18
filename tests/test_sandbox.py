"""Specification of the agent's sandbox client (``sandbox/``): the HTTP API, one lazily opened session per
run, a single reset per death under parallel callers, the token kept to the sandbox, classified failures,
deepagents' file operations over it, and the hosted providers' wiring.

Against the real sandbox service (``sandbox_service``: ``python -m dra_sandbox`` on loopback, bubblewrap);
a session is killed behind the agent's back with the service's own ``DELETE``. The ways other services
report a dead session (HTTP 500 or an exec's stderr saying "No such container") and the service's error
statuses come from a scripted transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import types
from collections.abc import Iterator
from unittest.mock import patch

import httpx
import pytest
from deepagents.backends.protocol import ExecuteResponse

from deep_research_agent.domain import sandbox_providers
from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.domain.names import SandboxProvider
from deep_research_agent.extensions.skills import load_skills, skill_helpers
from deep_research_agent.run import Run, close_run, current_run
from deep_research_agent.sandbox import hosted
from deep_research_agent.sandbox.backend import SandboxBackend
from deep_research_agent.sandbox.client import SessionGone, SidecarClient
from deep_research_agent.sandbox.connector import SandboxConnector
from deep_research_agent.sandbox.session import SandboxSession
from deep_research_agent.settings import ResearchConfig
from testkit.guard_calls import event_fields
from testkit.sandbox_service import SandboxService
from tests.conftest import EXTENSION_FIXTURES

pytestmark = pytest.mark.anyio

TOKEN = "sandbox-token-0123456789abcdef"
SESSION_ID = "0123456789abcdef"


class Sandbox:
    """The real service, with what the tests do to it behind the agent's back."""

    def __init__(self, service: SandboxService) -> None:
        self.service = service
        self.url = service.url
        self.token = service.token

    def kill(self, session: SandboxSession) -> str:
        session_id = session._remote.session_id  # type: ignore[union-attr]
        assert self.service.delete_session(session_id) == 200
        return session_id

    def alive(self, session_id: str) -> bool:
        return session_id in self.service.session_ids()


@pytest.fixture
def sandbox(sandbox_service: SandboxService) -> Sandbox:
    return Sandbox(sandbox_service)


def settings_for(url: str, token: str | None, **env: str) -> ResearchConfig:
    environ = {"OPENAI_API_KEY": "sk-test", "LLM_SANDBOX_URL": url, **env}
    if token is not None:
        environ["LLM_SANDBOX_TOKEN"] = token
    return ResearchConfig.resolve({}, environ)


def connector(sandbox: Sandbox, **env: str) -> SandboxConnector:
    settings = settings_for(sandbox.url, sandbox.token, **env)
    return SandboxConnector(settings, max_output_chars=settings.max_result_chars)


@pytest.fixture
def statuses() -> Iterator[list[dict]]:
    seen: list[dict] = []
    with patch("deep_research_agent.sandbox.session.emit", side_effect=lambda event: seen.append(event_fields(event))):
        yield seen


async def test_the_session_opens_on_first_use_and_runs_commands_and_file_transfers(sandbox, run):
    session = connector(sandbox).session(run.attachments)
    assert not session.is_open

    upload = await session.upload([("/workspace/data/prices.csv", b"day,price\n1,10\n2,14\n")])
    result = await session.execute(
        "python3 -c \"import csv;print(sum(float(r['price']) for r in csv.DictReader(open('data/prices.csv'))))\""
    )
    [download] = await session.download(["/workspace/data/prices.csv"])
    [missing] = await session.download(["/workspace/none.txt"])

    assert [u.error for u in upload] == [None]
    assert (result.output.strip(), result.exit_code) == ("24.0", 0)
    assert download.content == b"day,price\n1,10\n2,14\n" and missing.error == "file_not_found"
    assert session.opened == 1
    await session.close()


async def test_parallel_first_calls_open_one_session(sandbox, run):
    session = connector(sandbox).session(run.attachments)

    results = await asyncio.gather(*(session.execute(f"echo {n}") for n in range(6)))

    assert [r.output.strip() for r in results] == [str(n) for n in range(6)]
    assert session.opened == 1
    await session.close()


async def test_every_agent_of_a_run_shares_its_session_and_runs_do_not(sandbox):
    shared = connector(sandbox)
    a, b = Run(key="a"), Run(key="b")
    first, again = shared.session(a.attachments), shared.session(a.attachments)
    other = shared.session(b.attachments)

    assert first is again and other is not first


async def test_a_session_killed_behind_the_agents_back_is_replaced_once_under_parallel_callers(sandbox, run, statuses):
    session = connector(sandbox).session(run.attachments)
    await session.upload([("/workspace/mine.txt", b"gone soon")])
    dead = sandbox.kill(session)

    results = await asyncio.gather(*(session.execute(f"echo call-{n}; ls /workspace") for n in range(5)))

    assert [r.output.split()[0] for r in results] == [f"call-{n}" for n in range(5)]
    assert all("mine.txt" not in r.output for r in results)
    assert session.opened == 2 and session.resets == 1 and not sandbox.alive(dead)
    [reset] = statuses
    assert (
        reset["state"] == "sandbox_reset"
        and "HTTP 404" in reset["detail"]
        and "files written before are gone" in reset["detail"]
    )
    await session.close()


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(
            httpx.Response(404, json={"detail": "session 0123456789abcdef not found", "error": "session_not_found"}),
            id="404",
        ),
        pytest.param(
            httpx.Response(500, json={"detail": "Error response from daemon: No such container: sbx-1"}),
            id="500-no-such-container",
        ),
        pytest.param(
            httpx.Response(200, json={"stdout": "", "stderr": "Error: No such container: sbx-1", "exit_code": 1}),
            id="exec-stderr",
        ),
        pytest.param(httpx.Response(500, json={"detail": "container sbx-1 is not running"}), id="500-not-running"),
    ],
)
async def test_every_way_a_service_reports_a_dead_session_is_a_dead_session(answer):
    client = SidecarClient("http://127.0.0.1:1", TOKEN, transport=httpx.MockTransport(lambda request: answer))

    with pytest.raises(SessionGone):
        await client.exec(SESSION_ID, "true", timeout_s=5)
    await client.aclose()


async def test_a_failing_command_whose_output_mentions_a_container_is_no_dead_session():
    answer = httpx.Response(200, json={"stdout": "checking", "stderr": "No such container", "exit_code": 1})
    client = SidecarClient("http://127.0.0.1:1", TOKEN, transport=httpx.MockTransport(lambda request: answer))

    result = await client.exec(SESSION_ID, "docker ps", timeout_s=5)
    await client.aclose()

    assert result.exit_code == 1 and result.stdout == "checking"


async def test_each_agent_is_told_once_that_earlier_files_are_gone(sandbox, run, statuses):
    session = connector(sandbox).session(run.attachments)
    await session.execute("true")
    assert session.notice_for("task-a") is None

    sandbox.kill(session)
    await session.execute("true")

    notice = session.notice_for("task-a")
    assert notice and "Files written before then are gone" in notice
    assert session.notice_for("task-a") is None
    assert session.notice_for("task-b") == notice
    await session.close()


async def test_helpers_and_offloaded_files_come_back_in_the_replacement_session(sandbox, run, statuses):
    settings = settings_for(sandbox.url, sandbox.token)
    session = SandboxConnector(settings, [("/workspace/skills/demo/helper.py", b"VALUE = 7\n")]).session(
        run.attachments
    )
    await session.upload([("/workspace/data/big.json", b"[1, 2, 3]")])
    session.remember("/workspace/data/big.json", b"[1, 2, 3]")
    sandbox.kill(session)

    result = await session.execute(
        "cat /workspace/data/big.json; echo; cd /workspace/skills/demo && python3 -c 'import helper; print(helper.VALUE)'"
    )

    assert result.output.split() == ["[1,", "2,", "3]", "7"]
    assert "Offloaded results were uploaded again" in (session.notice_for("x") or "")
    await session.close()


async def test_a_second_death_in_the_retried_call_is_a_transient_failure(run, statuses):
    class Deadly:
        def __init__(self) -> None:
            self.calls = 0

        async def execute(self, command: str, timeout_s: int) -> ExecuteResponse:
            self.calls += 1
            raise SessionGone("HTTP 404 (unknown session)")

        async def close(self) -> None:
            pass

    doomed = Deadly()

    async def opener() -> Deadly:
        return doomed

    session = SandboxSession(opener)  # type: ignore[arg-type]
    with pytest.raises(ToolFailure) as failure:
        await session.execute("true")

    assert failure.value.kind == "transient" and "died again" in failure.value.message
    assert doomed.calls == 2 and session.resets == 1


async def test_a_timeout_is_exit_124_with_a_note_and_long_output_is_cut(sandbox, run):
    session = connector(sandbox, DRA_MAX_RESULT_CHARS="100").session(run.attachments)

    slow = await session.execute("sleep 5", timeout_s=1)
    loud = await session.execute("yes | head -c 5000")

    assert slow.exit_code == 124 and "ran past its 1 s limit" in slow.output
    assert loud.output.startswith("y\ny\n") and "Output cut to 100 of 5,000 characters" in loud.output
    await session.close()


async def test_a_wrong_token_is_a_permanent_error_that_never_shows_a_token(sandbox, run):
    wrong = "wrong-token-abcdef0123456789"
    session = SandboxConnector(settings_for(sandbox.url, wrong)).session(run.attachments)

    with pytest.raises(ToolFailure) as failure:
        await session.execute("true")

    assert failure.value.kind == "permanent" and "LLM_SANDBOX_TOKEN must match" in failure.value.message
    assert wrong not in failure.value.message and sandbox.token not in failure.value.message


async def test_the_token_is_never_sent_to_another_address():
    sent: list[httpx.Request] = []
    client = SidecarClient(
        "http://127.0.0.1:1", TOKEN, transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(200))
    )

    with pytest.raises(ToolFailure, match="refused to send its token"):
        await client._http.get("http://127.0.0.2:1/sessions")
    await client._http.get("/healthz")
    await client.aclose()

    assert [(str(r.url), r.headers["authorization"]) for r in sent] == [
        ("http://127.0.0.1:1/healthz", f"Bearer {TOKEN}")
    ]


async def test_redirects_are_not_followed_so_the_token_cannot_be_led_away():
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        return httpx.Response(307, headers={"location": "http://127.0.0.2:1/sessions"})

    client = SidecarClient("http://127.0.0.1:1", TOKEN, transport=httpx.MockTransport(answer))
    with pytest.raises(ToolFailure):
        await client.create_session(timeout_s=10, network=False)
    await client.aclose()

    assert sent == ["http://127.0.0.1:1/sessions"]


async def test_an_unreachable_service_is_a_transient_error_and_the_next_call_tries_again(run):
    with socket_closed() as url:
        session = SandboxConnector(settings_for(url, TOKEN)).session(run.attachments)
        for _ in range(2):
            with pytest.raises(ToolFailure) as failure:
                await session.execute("true")
            assert failure.value.kind == "transient" and "cannot reach the sandbox service" in failure.value.message
    assert session.opened == 0


@contextlib.contextmanager
def socket_closed() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("status", "kind", "words"),
    [
        (401, "permanent", "refused the token"),
        (413, "permanent", "too large"),
        (422, "permanent", "refused the request"),
        (429, "transient", "busy"),
        (503, "transient", "failed (HTTP 503)"),
    ],
)
async def test_service_errors_are_classified(status, kind, words):
    client = SidecarClient(
        "http://127.0.0.1:1", TOKEN,
        transport=httpx.MockTransport(lambda r: httpx.Response(status, json={"detail": f"nope {TOKEN}"}, headers={"retry-after": "3"})),
    )  # fmt: skip
    with pytest.raises(ToolFailure) as failure:
        await client.exec("0123456789abcdef", "true", timeout_s=5)
    await client.aclose()

    assert failure.value.kind == kind and words in failure.value.message and TOKEN not in failure.value.message
    assert (failure.value.retry_after == 3) == (status == 429)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(httpx.Response(404, text="sink: nothing here"), id="404-text"),
        pytest.param(httpx.Response(404, json={"detail": "sink: nothing here"}), id="404-json"),
        pytest.param(httpx.Response(500, text="sink: nothing here"), id="500-text"),
        pytest.param(httpx.Response(400, html="<h1>sink: nothing here</h1>"), id="400-html"),
    ],
)
async def test_nothing_a_service_that_is_no_sandbox_answers_reaches_the_run(answer):
    client = SidecarClient("http://127.0.0.1:1", TOKEN, transport=httpx.MockTransport(lambda request: answer))

    with pytest.raises(ToolFailure) as failure:
        await client.create_session(timeout_s=10, network=False)
    await client.aclose()

    assert "sink" not in failure.value.message and f"HTTP {answer.status_code}" in failure.value.message


async def test_a_sandbox_host_name_that_does_not_resolve_is_a_transient_failure_before_any_request():
    sent: list[httpx.Request] = []
    client = SidecarClient(
        "http://no-such-sandbox.invalid:8900", TOKEN,
        transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(200, json={"session_id": SESSION_ID})),
    )  # fmt: skip

    with pytest.raises(ToolFailure) as failure:
        await client.create_session(timeout_s=10, network=False)
    await client.aclose()

    assert failure.value.kind == "transient" and "no-such-sandbox.invalid does not resolve" in failure.value.message
    assert sent == []


async def test_deepagents_file_operations_work_over_the_session(sandbox, run):
    backend = SandboxBackend(connector(sandbox))

    written = await backend.awrite("/workspace/task.py", "print('first')\n")
    edited = await backend.aedit("/workspace/task.py", "first", "second")
    read = await backend.aread("/workspace/task.py")
    ran = await backend.aexecute("python3 /workspace/task.py")
    listed = await backend.als("/workspace")

    assert written.error is None and edited.occurrences == 1
    assert "print('second')" in read.file_data["content"]
    assert ran.output.strip() == "second"
    assert [entry["path"] for entry in listed.entries] == ["/workspace/task.py"]
    with pytest.raises(NotImplementedError, match="async only"):
        backend.execute("true")
    await run.attachments.get(SandboxSession).close()  # type: ignore[union-attr]


async def test_a_closed_run_has_its_session_deleted(sandbox):
    sandboxes = connector(sandbox)
    run = current_run({"configurable": {"run_id": "run-closing"}})
    await sandboxes.session(run.attachments).execute("true")
    session_id = run.attachments.get(SandboxSession)._remote.session_id  # type: ignore[union-attr]

    close_run(run.key)
    for _ in range(100):
        if not sandbox.alive(session_id):
            break
        await asyncio.sleep(0.05)

    assert not sandbox.alive(session_id)


async def test_skill_helper_modules_are_uploaded_into_each_session(sandbox, run):
    skills = load_skills(EXTENSION_FIXTURES / "skills")
    helpers = skill_helpers(skills)
    session = SandboxConnector(settings_for(sandbox.url, sandbox.token), helpers).session(run.attachments)

    result = await session.execute(
        "cd /workspace/skills/cited-table && python3 -c 'import table_helpers; print(table_helpers.CITATION_STYLE)'"
    )

    assert [path for path, _ in helpers] == ["/workspace/skills/cited-table/table_helpers.py"]
    assert result.output.strip() == "[n]"
    await session.close()


# --------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------


def test_no_url_means_no_sandbox_and_the_defaults_follow_the_spec():
    settings = ResearchConfig.resolve({}, {"OPENAI_API_KEY": "sk-test"})

    assert not settings.sandbox_attached
    assert (settings.sandbox_network, settings.sandbox_session_timeout, settings.offload_dir) == (
        False,
        5400,
        "/workspace/data",
    )
    assert (settings.max_result_chars, settings.max_result_rows, settings.offload_results) == (60_000, 1_000, True)


def test_a_run_that_names_its_own_sandbox_gets_only_its_own_token():
    environ = {"OPENAI_API_KEY": "sk-test", "LLM_SANDBOX_URL": "http://10.0.0.5:8900", "LLM_SANDBOX_TOKEN": TOKEN}

    own = ResearchConfig.resolve({"configurable": {"sandbox_url": "http://127.0.0.1:8901"}}, environ)
    with_token = ResearchConfig.resolve(
        {"configurable": {"sandbox_url": "http://127.0.0.1:8901", "sandbox_token": "run-token-123456"}}, environ
    )
    operators = ResearchConfig.resolve({}, environ)

    assert own.sandbox_url == "http://127.0.0.1:8901" and own.sandbox_token is None
    assert with_token.sandbox_token.get_secret_value() == "run-token-123456"
    assert operators.sandbox_token.get_secret_value() == TOKEN
    assert TOKEN in operators.secret_values()


def test_a_run_may_open_the_network_only_in_a_sandbox_of_its_own():
    environ = {"OPENAI_API_KEY": "sk-test", "LLM_SANDBOX_URL": "http://10.0.0.5:8900"}

    operators = ResearchConfig.resolve({"configurable": {"sandbox_network": True}}, environ)
    own = ResearchConfig.resolve(
        {"configurable": {"sandbox_network": True, "sandbox_url": "http://127.0.0.1:8901"}}, environ
    )

    assert operators.sandbox_network is False and any("sandbox_network is ignored" in w for w in operators.warnings)
    assert own.sandbox_network is True


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "http://169.254.169.254/", "http://metadata.google.internal/", "http://user:pw@127.0.0.1:1"],
)
def test_a_runs_unusable_sandbox_url_ends_the_run_with_a_config_error(url):
    settings = ResearchConfig.resolve({"configurable": {"sandbox_url": url}}, {"OPENAI_API_KEY": "sk-test"})

    assert settings.problems and "sandbox_url" in settings.problems[0] and not settings.sandbox_attached


SHARED = {"OPENAI_API_KEY": "sk-test", "DRA_SHARED_DEPLOYMENT": "true"}


@pytest.mark.parametrize("url", ["http://127.0.0.1:8901", "http://10.0.0.5:8900", "https://sandbox.example"])
def test_on_a_shared_deployment_a_runs_own_sandbox_off_the_operators_list_ends_the_run_naming_the_list(url):
    settings = ResearchConfig.resolve({"configurable": {"sandbox_url": url}}, SHARED)

    [problem] = settings.problems
    assert problem.startswith(f"configurable.sandbox_url: refused {url}: this deployment allows a run's sandbox URLs")
    assert "DRA_SANDBOX_ALLOWED_HOSTS (none are listed)" in problem
    assert not settings.sandbox_attached


def test_on_a_shared_deployment_a_listed_sandbox_and_the_operators_own_are_used():
    listed = ResearchConfig.resolve(
        {"configurable": {"sandbox_url": "http://10.0.0.5:8900"}},
        {**SHARED, "DRA_SANDBOX_ALLOWED_HOSTS": "10.0.0.5:8900"},
    )
    operators = ResearchConfig.resolve({}, {**SHARED, "LLM_SANDBOX_URL": "http://127.0.0.1:8900"})
    asked_for_the_operators = ResearchConfig.resolve(
        {"configurable": {"sandbox_url": "http://127.0.0.1:8900"}},
        {**SHARED, "LLM_SANDBOX_URL": "http://127.0.0.1:8900"},
    )

    assert not listed.problems and listed.sandbox_url == "http://10.0.0.5:8900"
    assert not operators.problems and operators.sandbox_url == "http://127.0.0.1:8900"
    assert not asked_for_the_operators.problems


def test_on_langgraph_dev_a_runs_loopback_sandbox_is_used_unless_the_operator_lists_sandbox_hosts():
    own = {"configurable": {"sandbox_url": "http://127.0.0.1:8901"}}
    environ = {"OPENAI_API_KEY": "sk-test"}

    assert not ResearchConfig.resolve(own, environ).problems
    limited = ResearchConfig.resolve(own, {**environ, "DRA_SANDBOX_ALLOWED_HOSTS": "sandbox.internal"})
    assert limited.problems and "(sandbox.internal), and 127.0.0.1 is not one of them" in limited.problems[0]


def test_a_session_shorter_than_a_run_is_warned_about():
    settings = settings_for("http://127.0.0.1:1", TOKEN, LLM_SANDBOX_SESSION_TIMEOUT="600")

    assert any("Raise LLM_SANDBOX_SESSION_TIMEOUT" in w for w in settings.warnings)


def test_a_hosted_provider_whose_package_is_missing_is_a_config_error_that_names_the_install():
    sandbox_providers.missing_package.cache_clear()
    settings = ResearchConfig.resolve({}, {"OPENAI_API_KEY": "sk-test", "DRA_SANDBOX_PROVIDER": "e2b"})

    assert settings.problems == (
        "DRA_SANDBOX_PROVIDER=e2b needs the langchain-e2b package, which is not installed: run `uv pip install "
        "langchain-e2b` (or add it to the project), or unset DRA_SANDBOX_PROVIDER.",
    )


def test_an_unknown_provider_warns_and_uses_the_sandbox_service():
    settings = ResearchConfig.resolve({}, {"OPENAI_API_KEY": "sk-test", "DRA_SANDBOX_PROVIDER": "docker"})

    assert settings.sandbox_provider == "sidecar" and "DRA_SANDBOX_PROVIDER 'docker' is unknown" in settings.warnings[0]


# --------------------------------------------------------------------------
# Hosted providers, wired to stand-in SDK modules (the real services are out of reach offline)
# --------------------------------------------------------------------------


class FakeHostedBackend:
    """What a deepagents integration's BaseSandbox offers the session: async execute and file transfer."""

    def __init__(self, sandbox: object) -> None:
        self.sandbox = sandbox
        self.commands: list[tuple[str, int | None]] = []
        self.fail_with: Exception | None = None

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        if self.fail_with:
            raise self.fail_with
        self.commands.append((command, timeout))
        return ExecuteResponse(output="hosted ok", exit_code=0)

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        raise AssertionError("the session uses the async methods")

    async def aupload_files(self, files):
        return []

    async def adownload_files(self, paths):
        return []


@pytest.fixture
def fake_e2b(monkeypatch) -> types.SimpleNamespace:
    record = types.SimpleNamespace(created=[], killed=0, backends=[])

    class Sandbox:
        @classmethod
        def create(cls, **options):
            record.created.append(options)
            return cls()

        def kill(self) -> None:
            record.killed += 1

    def wrap(*, sandbox):
        backend = FakeHostedBackend(sandbox)
        record.backends.append(backend)
        return backend

    monkeypatch.setitem(sys.modules, "e2b", types.SimpleNamespace(Sandbox=Sandbox))
    monkeypatch.setitem(sys.modules, "langchain_e2b", types.SimpleNamespace(E2BSandbox=wrap))
    return record


async def test_a_hosted_sandbox_is_created_with_the_runs_lifetime_and_network_driven_and_killed(fake_e2b):
    remote = await hosted.open_hosted(SandboxProvider.E2B, timeout_s=5400, network=False)

    result = await remote.execute("echo hi", 30)
    await remote.close()

    assert fake_e2b.created == [{"timeout": 5400, "allow_internet_access": False}]
    assert result.output == "hosted ok" and fake_e2b.backends[0].commands == [("echo hi", 30)]
    assert fake_e2b.killed == 1


async def test_a_hosted_sandbox_that_is_gone_is_a_dead_session_and_other_errors_are_transient(fake_e2b):
    remote = await hosted.open_hosted(SandboxProvider.E2B, timeout_s=60, network=False)
    backend = fake_e2b.backends[0]

    backend.fail_with = RuntimeError("sandbox abc123 not found")
    with pytest.raises(SessionGone):
        await remote.execute("true", 5)
    backend.fail_with = RuntimeError(f"quota exceeded for key {TOKEN}")
    with pytest.raises(ToolFailure) as failure:
        await remote.execute("true", 5)

    assert failure.value.kind == "transient" and "the e2b sandbox failed" in failure.value.message


async def test_a_hosted_provider_without_its_sdk_is_a_permanent_error_naming_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "modal", None)

    with pytest.raises(ToolFailure) as failure:
        await hosted.open_hosted(SandboxProvider.MODAL, timeout_s=60, network=False)

    assert failure.value.kind == "permanent" and "langchain-modal" in failure.value.message
