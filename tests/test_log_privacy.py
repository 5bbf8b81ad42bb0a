"""The log files keep where a failure happened, never what was said: an exception is written as
its type and frames, its message (and its causes' messages) left out."""

from __future__ import annotations

import logging

import pytest

from memdesk.core.base.log_privacy import WITHHELD, PrivateFormatter, traceback_without_messages

SECRET = "Eva's diagnosis is in the blue folder"
GROUP_MESSAGE = "two lookups failed"


def _look_up_the_folder():
    raise KeyError(SECRET)


def _failing_tool():
    try:
        _look_up_the_folder()
    except KeyError as error:
        raise RuntimeError(f"the tool could not read {SECRET!r}") from error


def _caught(call):
    try:
        call()
    except BaseException as error:  # noqa: BLE001 - the failure is the subject
        return error
    raise AssertionError("expected a failure")


def test_a_traceback_keeps_types_and_frames_of_every_cause_but_no_message():
    error = _caught(_failing_tool)
    text = traceback_without_messages(error)
    assert SECRET not in text and "Eva" not in text
    assert "KeyError" in text and "RuntimeError" in text and WITHHELD in text
    assert "_look_up_the_folder" in text and "_failing_tool" in text  # where it failed
    assert "direct cause" in text


def test_an_exception_raised_while_handling_another_is_written_the_same_way():
    def handler():
        try:
            raise ValueError(SECRET)
        except ValueError:
            raise OSError(f"saving {SECRET} failed")  # noqa: B904 - the implicit context is the point

    text = traceback_without_messages(_caught(handler))
    assert SECRET not in text and "ValueError" in text and "OSError" in text and "During handling" in text


def test_the_members_of_an_exception_group_are_written_without_messages():
    def both_fail():
        raise ExceptionGroup(GROUP_MESSAGE, [ValueError(SECRET), KeyError(SECRET)])

    text = traceback_without_messages(_caught(both_fail))
    assert SECRET not in text and GROUP_MESSAGE not in text
    assert "ValueError" in text and "KeyError" in text and "ExceptionGroup" in text


@pytest.fixture
def file_log():
    """A logger writing through the log files' formatter, and a second handler with Python's own."""
    lines: list[str] = []
    plain: list[str] = []

    class Collect(logging.Handler):
        def __init__(self, sink, formatter):
            super().__init__()
            self.sink = sink
            self.setFormatter(formatter)

        def emit(self, record):
            self.sink.append(self.format(record))

    logger = logging.getLogger("memdesk.test.log_privacy")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    # Python's formatter first: it caches the traceback (messages included) on the record.
    handlers = [
        Collect(plain, logging.Formatter("%(message)s")),
        Collect(lines, PrivateFormatter("%(levelname)s %(message)s")),
    ]
    for handler in handlers:
        logger.addHandler(handler)
    yield logger, lines, plain
    for handler in handlers:
        logger.removeHandler(handler)


def test_a_logged_exception_keeps_the_line_and_the_frames_but_not_the_message(file_log):
    logger, lines, plain = file_log
    error = _caught(_failing_tool)
    logger.error("function %s raised", "diary", exc_info=error)
    logger.warning("graph extraction failed for queue item %s", 7, exc_info=(type(error), error, error.__traceback__))
    text = "\n".join(lines)
    assert "function diary raised" in text and "queue item 7" in text and "_look_up_the_folder" in text
    assert SECRET not in text
    assert SECRET in "\n".join(plain)  # the other handler is left as it was


def test_an_exception_passed_as_an_argument_or_as_the_message_gives_its_type_only(file_log):
    logger, lines, _plain = file_log
    logger.warning("window layout not saved: %s", ValueError(SECRET))
    logger.error(KeyError(SECRET))
    logger.info("saved %(count)s passages: %(why)s", {"count": 3, "why": OSError(SECRET)})
    text = "\n".join(lines)
    assert SECRET not in text
    assert (
        f"window layout not saved: ValueError {WITHHELD}" in text
        and f"KeyError {WITHHELD}" in text
        and "saved 3 passages" in text
    )
