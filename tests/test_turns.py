"""Turn scoping: real user turns, harness messages, and a turn identity that survives compaction."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from deep_research_agent.domain.conversation import (
    harness_message,
    is_fresh_turn,
    is_user_turn,
    last_user_index,
    previous_turns,
    turn_key,
    turn_messages,
)


def call(call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "web_search", "args": {"query": call_id}, "id": call_id}])


def thread() -> list:
    """Two user turns; the second has a harness nudge after the user spoke."""
    return [
        HumanMessage("first question", id="u1"),
        call("c1"),
        ToolMessage("result", tool_call_id="c1", id="t1"),
        AIMessage("first answer", id="a1"),
        HumanMessage("second question", id="u2"),
        call("c2"),
        ToolMessage("result", tool_call_id="c2", id="t2"),
        harness_message("You are repeating yourself; try something else."),
    ]


def test_real_user_turn_is_a_human_message_the_harness_did_not_inject() -> None:
    assert is_user_turn(HumanMessage("hi"))
    assert not is_user_turn(harness_message("nudge"))
    assert not is_user_turn(AIMessage("hi"))
    assert not is_user_turn(ToolMessage("x", tool_call_id="c"))


def test_the_current_turn_starts_at_the_last_real_user_message_not_at_a_harness_message() -> None:
    messages = thread()
    assert last_user_index(messages) == 4
    assert [m.id for m in turn_messages(messages)][:1] == ["u2"]
    assert [m.id for m in previous_turns(messages)] == ["u1", None, "t1", "a1"]


def test_a_transcript_without_a_user_message_is_one_turn_from_the_start() -> None:
    messages = [harness_message("summary"), AIMessage("x")]
    assert turn_messages(messages) == messages
    assert last_user_index(messages) is None
    assert previous_turns(messages) == []
    assert not is_fresh_turn(messages)


def test_a_turn_is_fresh_until_the_model_has_answered_it() -> None:
    assert is_fresh_turn([HumanMessage("q", id="u1")])
    assert is_fresh_turn([*thread()[:4], HumanMessage("follow-up", id="u3")])
    assert is_fresh_turn([HumanMessage("q", id="u1"), harness_message("note")])
    assert not is_fresh_turn(thread())


def test_harness_messages_never_start_a_turn() -> None:
    messages = thread()[:7]
    assert turn_key([*messages, harness_message("nudge")]) == turn_key(messages) == "u2"


def test_a_new_turn_begins_when_the_user_speaks_again() -> None:
    follow_up = [*thread(), AIMessage("done"), HumanMessage("one more thing", id="u3")]
    assert turn_key(follow_up) == "u3"


def test_the_turn_survives_compaction_which_keeps_the_request_message() -> None:
    messages = thread()
    compacted = [harness_message("Summary of earlier work"), messages[4], *messages[5:]]
    assert turn_key(compacted) == turn_key(messages)
