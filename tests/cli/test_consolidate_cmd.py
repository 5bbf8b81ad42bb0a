"""`memdesk consolidate`: review what idle-time passes proposed, from the terminal."""

from __future__ import annotations

from dataclasses import replace

from memdesk.app.agents import open_consolidator
from memdesk.cli.main import main
from memdesk.core.consolidation.prompt import FINISH
from memdesk.core.runtime.scripted import call, say


def propose(services, runtime, make_agent, *contents: str):
    agent = make_agent("ana", human="Lives in Portugal.")
    for text in ("My name is Ana and I moved to Porto last spring.", "I work night shifts at the children's hospital."):
        runtime.enqueue(say("Noted."))
        agent.send_user_message(text)
    runtime.enqueue(*[call("core_memory_append", "fact", label="human", content=c) for c in contents], call(FINISH))
    settings = replace(services.settings, consolidation="ask")
    open_consolidator(services, agent.record, runtime, settings=settings).run()
    return agent


def test_list_apply_and_reject_proposals(capsys, services, runtime, make_agent):
    agent = propose(services, runtime, make_agent, "Name: Ana.", "Works nights.", "Likes coffee.")
    assert main(["consolidate", "list", "--agent", "ana"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[2] for line in lines] == [
        "add to human: Name: Ana.",
        "add to human: Works nights.",
        "add to human: Likes coffee.",
    ]
    first, second, third = (int(line.split("\t")[0]) for line in lines)

    assert main(["consolidate", "apply", str(first), str(second), "--agent", "ana"]) == 0
    assert main(["consolidate", "reject", "--all", "--agent", "ana"]) == 0
    out = capsys.readouterr().out
    assert f"{first}\taccepted" in out and f"{third}\trejected" in out
    assert services.memory.core.get(agent.id, "human").value == "Lives in Portugal.\nName: Ana.\nWorks nights."

    assert main(["consolidate", "list", "--agent", "ana"]) == 0
    assert "No memory changes waiting for review." in capsys.readouterr().out
    assert main(["consolidate", "list", "--all", "--agent", "ana"]) == 0
    assert "[rejected] add to human: Likes coffee." in capsys.readouterr().out


def test_deciding_twice_or_nothing_is_a_clear_error(capsys, services, runtime, make_agent):
    propose(services, runtime, make_agent, "Name: Ana.")
    main(["consolidate", "list", "--agent", "ana"])
    change = int(capsys.readouterr().out.split("\t")[0])
    assert main(["consolidate", "reject", str(change), "--agent", "ana"]) == 0
    assert main(["consolidate", "apply", str(change), "--agent", "ana"]) == 1
    assert "already rejected" in capsys.readouterr().err
    assert main(["consolidate", "apply", "--agent", "ana"]) == 2


def test_run_with_consolidation_off_says_how_to_turn_it_on(capsys, services, make_agent):
    make_agent("ana")
    services.settings_store.set("consolidation", "off")
    assert main(["consolidate", "run", "--agent", "ana"]) == 1
    assert "memdesk settings consolidation ask" in capsys.readouterr().err


def test_the_terminal_chat_consolidates_while_the_user_is_idle(capsys, services, runtime, make_agent, monkeypatch):
    import time

    from memdesk.cli import chat_cmd
    from memdesk.session.idle import IdleIntervals

    agent = make_agent("ana", human="Lives in Portugal.")
    for text in (
        "My name is Ana and I moved to Porto last spring.",
        "I work night shifts.",
        "Green tea, never coffee.",
    ):
        runtime.enqueue(say("Noted."))
        agent.send_user_message(text)
    services.settings_store.set("consolidation", "apply")
    services.settings_store.set("consolidation_every_turns", 3)
    # The graph extractor catches up on these messages meanwhile, as in real use: its transactions
    # are short, and a pass that still meets its write lock runs at the next idle moment (it once
    # failed here with "database is locked" on a loaded machine).
    runtime.enqueue(call("core_memory_append", "fact", label="human", content="Name: Ana."), call(FINISH))
    monkeypatch.setattr(chat_cmd, "make_runtime", lambda settings: runtime)
    monkeypatch.setattr(IdleIntervals, "from_settings", classmethod(lambda cls, settings: cls(consolidation=0.05)))

    def idle_user(_prompt=""):
        deadline = time.monotonic() + 60  # an upper bound: the loop ends as soon as the change is in
        while "Name: Ana." not in services.memory.core.get(agent.id, "human").value and time.monotonic() < deadline:
            time.sleep(0.05)  # the user is away from the keyboard
        time.sleep(0.2)
        raise EOFError

    monkeypatch.setattr("builtins.input", idle_user)
    assert main(["chat", "--agent", "ana", "--no-login"]) == 0
    assert services.memory.core.get(agent.id, "human").value == "Lives in Portugal.\nName: Ana."
    assert "Consolidation finished: 1 change(s) applied" in capsys.readouterr().err
