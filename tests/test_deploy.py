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
