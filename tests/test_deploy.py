"""The Aegra deployment's files agree with the dev server's, and its token auth refuses what it should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploy import auth

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def test_aegra_serves_the_same_graph_under_the_same_id_and_description_as_langgraph_json():
    dev = json.loads((ROOT / "langgraph.json").read_text())
    aegra = json.loads((DEPLOY / "aegra.json").read_text())

    assert aegra["graphs"].keys() == dev["graphs"].keys()
    for graph_id, entry in aegra["graphs"].items():
        assert entry["description"] == dev["graphs"][graph_id]["description"]
        path, _, export = entry["path"].partition(":")
        assert (DEPLOY / path).is_file() and f"import {export}" in (DEPLOY / path).read_text()
    for section in ("http", "auth"):
        key = "app" if section == "http" else "path"
        assert (DEPLOY / aegra[section][key].partition(":")[0]).is_file()
    assert aegra["http"]["enable_custom_route_auth"] is True, "the evidence routes would be open to anyone"


def test_the_aegra_environment_pins_the_version_it_was_tested_with():
    pyproject = (DEPLOY / "pyproject.toml").read_text()
    lock = (DEPLOY / "uv.lock").read_text()

    assert '"aegra-api==0.11.0"' in pyproject and 'requires-python = ">=3.12"' in pyproject
    assert 'name = "aegra-api"\nversion = "0.11.0"' in lock


def test_tokens_map_to_users_and_a_request_names_its_token_either_way():
    tokens = auth.parse_tokens("alice=alice-token-0123456789, bob=bob-token-0123456789abc")

    assert auth.user_for(auth.presented_token({"Authorization": "Bearer alice-token-0123456789"}), tokens) == "alice"
    assert auth.user_for(auth.presented_token({"x-api-key": "bob-token-0123456789abc"}), tokens) == "bob"
    assert auth.user_for(auth.presented_token({"authorization": "Basic alice-token-0123456789"}), tokens) is None
    assert auth.user_for(auth.presented_token({}), tokens) is None


def test_the_web_ui_session_cookie_names_a_token_too_and_a_header_wins_over_it():
    tokens = auth.parse_tokens("alice=alice-token-0123456789, bob=bob-token-0123456789abc")
    cookie = {"Cookie": "theme=dark; dra_token=alice-token-0123456789"}

    assert auth.user_for(auth.presented_token(cookie), tokens) == "alice"
    assert auth.presented_token({**cookie, "x-api-key": "bob-token-0123456789abc"}) == "bob-token-0123456789abc"
    assert auth.presented_token({"Cookie": "dra_token"}) == "" and auth.presented_token({"Cookie": '"'}) == ""


@pytest.mark.parametrize(
    "entry, why",
    [("alice=short", "shorter than 16"), ("alice", "not user=token"), ("=tok-0123456789abcdef", "not user=token")],
)
def test_a_guessable_or_malformed_token_refuses_the_start(entry, why):
    with pytest.raises(ValueError, match=why):
        auth.parse_tokens(entry)


def test_tokens_come_from_a_file_too_with_comments(tmp_path: Path):
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text("# the team\ncarol=carol-token-0123456789\n\n")

    assert auth.load_tokens({"DRA_AUTH_TOKENS_FILE": str(tokens_file)}) == {"carol-token-0123456789": "carol"}


def test_serve_refuses_a_taken_port_before_starting_anything(capsys):
    import socket

    from deploy import serve

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]

        assert serve.main({"DRA_PORT": str(port), "DRA_INSTANCES": "1"}) == 1

    assert f"port(s) {port} on 127.0.0.1 already in use" in capsys.readouterr().err


def test_serve_refuses_an_instance_count_that_is_not_a_number(capsys):
    from deploy import serve

    assert serve.main({"DRA_INSTANCES": "two"}) == 1
    assert "DRA_INSTANCES must be a whole number" in capsys.readouterr().err


class FakeInstance:
    """Stands in for an AegraInstance: dies when told, answers /health once launched."""

    pids = iter(range(1000, 2000))

    def __init__(self, port: int) -> None:
        self.port = port
        self.pid = 0
        self.returncode: int | None = None
        self.launched = self.terminated = False

    def launch(self) -> FakeInstance:
        self.launched, self.pid = True, next(self.pids)
        return self

    def alive(self) -> bool:
        return self.launched and self.returncode is None and not self.terminated

    def ready(self) -> bool:
        return self.alive()

    def terminate(self) -> None:
        self.terminated = True

    def kill(self) -> None:
        self.returncode = -9


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def supervised(ports: list[int], **knobs):
    from deploy.supervisor import Supervisor

    lines: list[str] = []
    started: list[FakeInstance] = []

    def start(port: int) -> FakeInstance:
        started.append(FakeInstance(port))
        return started[-1]

    clock = Clock()
    return Supervisor(start, ports, log=lines.append, clock=clock, **knobs), started, lines, clock


def test_a_killed_instance_is_restarted_after_its_backoff_with_its_exit_status_logged_and_the_other_left_alone():
    supervisor, started, lines, clock = supervised([2024, 2025], backoff_s=1.0)
    a, b = started

    a.returncode = -9
    supervisor.tick()
    assert len(started) == 2, "restarted before its backoff"
    clock.now = 1.0
    supervisor.tick()
    clock.now = 1.5
    supervisor.tick()

    assert f"the instance on port 2024 (pid {a.pid}) was killed by SIGKILL; restarting it in 1 s" in lines[0]
    assert [i.port for i in started] == [2024, 2025, 2024] and started[2].alive()
    assert b.alive() and not b.terminated
    assert lines[1:] == [
        f"restarted the instance on port 2024 (pid {started[2].pid})",
        f"the instance on port 2024 is serving again (pid {started[2].pid})",
    ]


def test_an_instance_that_keeps_dying_waits_longer_each_time_and_stays_down_past_the_cap_per_minute():
    supervisor, started, lines, clock = supervised([2024, 2025], backoff_s=1.0, max_restarts_per_minute=3)
    delays = []
    for _ in range(3):
        started_before = len(started)
        [i for i in started if i.port == 2024][-1].returncode = 3
        supervisor.tick()
        begun = clock.now
        while len(started) == started_before:
            clock.now += 0.5
            supervisor.tick()
        delays.append(clock.now - begun)
    [i for i in started if i.port == 2024][-1].returncode = 3
    supervisor.tick()

    assert delays == [1.0, 2.0, 4.0]
    assert "exited with status 3" in lines[0]
    assert "restarted 3 times in the last minute (at most 3), so it stays down; the others keep serving" in lines[-1]
    assert not supervisor.all_given_up and started[1].alive()
    clock.now += 100
    supervisor.tick()
    assert len([i for i in started if i.port == 2024]) == 4, "a given-up instance was started again"


def test_drain_sends_sigterm_to_every_instance_and_restarts_none(monkeypatch):
    supervisor, started, lines, clock = supervised([2024, 2025])
    monkeypatch.setattr("time.sleep", lambda _s: None)

    supervisor.drain(grace_s=0)
    started[0].returncode = 0
    supervisor.tick()

    assert all(i.terminated for i in started) and len(started) == 2


def test_delete_data_asks_first_and_refuses_while_a_serve_uses_the_data(tmp_path: Path, capsys):
    from deploy import serve, services

    env = {"DRA_DATA_DIR": str(tmp_path)}
    root = tmp_path / "serve"
    (root / "postgres").mkdir(parents=True)

    assert serve.delete_data(env, yes=False, answer="no") == 1 and root.exists()
    with services.DataLock(root):
        assert serve.delete_data(env, yes=True) == 1 and root.exists()
    assert serve.delete_data(env, yes=False, answer="delete") == 0 and not root.exists()
    out = capsys.readouterr()
    assert "This deletes every thread, checkpoint, knowledge-base entry and task" in out.out
    assert "another ./run.sh serve is using the data" in out.err and f"Deleted the serve data in {root}" in out.out


def test_the_start_message_never_shows_a_database_password():
    from deploy import serve

    assert serve.redacted("postgresql://team:s3cret@db:5432/aegra") == "postgresql://team:***@db:5432/aegra"
    assert serve.redacted("redis://cache:6379/0") == "redis://cache:6379/0"


@pytest.mark.parametrize(
    "host, url",
    [("127.0.0.1", "http://127.0.0.1:2024"), ("0.0.0.0", "http://127.0.0.1:2024"), ("::", "http://[::1]:2024")],
)
def test_serve_gives_the_chart_links_an_address_a_local_client_reaches(host: str, url: str):
    from deploy import serve

    assert serve.local_url(host, 2024) == url
