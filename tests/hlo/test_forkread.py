"""The forked reader (hloscan.hlo.forkread): a child cuts the later bodies of a big text into rows while the parent
reads the first ones. It may only change speed, never the IR, and must survive a child that fails."""

from __future__ import annotations

import os
import threading

import pytest

from hloscan.hlo import fastpath, forkread
from hloscan.hlo.fastpath import parse_module_fast

from corpus import CORPUS, require_path

# A 3.6 MB real dump with a few hundred computations (long operand lists, index comments, tuple shardings).
DUMP = CORPUS / "xla-host-offload" / "benchmarks__nv_maxtext_deepseek_1n4g_jit_train_step_before_optimization.hlo"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


@pytest.fixture
def text() -> str:
    return require_path(DUMP).read_text()


@pytest.fixture
def fork_everything(monkeypatch):
    monkeypatch.setattr(forkread, "MIN_FORK_CHARS", 0)
    monkeypatch.delenv("HLOSCAN_NO_FORK", raising=False)


def _without_fork(text: str, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv("HLOSCAN_NO_FORK", "1")
        return parse_module_fast(text)


def test_forked_parse_builds_the_same_ir_from_the_childs_rows(text, fork_everything, monkeypatch):
    served = []
    original = forkread.ForkedReader.rows

    def counting(self, text_, start, end, lines):
        from_child = self.received is not None and (start, end) in self.received
        rows = original(self, text_, start, end, lines)
        served.append(from_child and rows is not None)
        return rows

    monkeypatch.setattr(forkread.ForkedReader, "rows", counting)
    forked = parse_module_fast(text)
    # The child did the later part of the work, and the parent used it.
    assert sum(served) > len(served) // 4
    assert forked == _without_fork(text, monkeypatch)


def test_a_failing_child_costs_time_not_results(text, fork_everything, monkeypatch):
    parent = os.getpid()

    def rows_failing_in_child(text_, start, end, lines):
        if os.getpid() != parent:
            raise RuntimeError("child broke")
        return fastpath.body_rows(text_, start, end, lines)

    reader = forkread.ForkedReader(text, rows_failing_in_child)
    try:
        assert reader.pid is not None
        split = reader.split
        assert split is not None
        start = text.find("{\n", split) + 2
        end = text.find("\n}", start - 1)
        lines = text.count("\n", start, end + 1)
        # Nothing came from the child, yet the rows are there, computed by the parent.
        assert reader.rows(text, start, end, lines) == fastpath.body_rows(text, start, end, lines)
        assert reader.received == {}
    finally:
        reader.close()


def test_no_fork_for_small_texts_other_threads_or_when_turned_off(text, monkeypatch):
    monkeypatch.delenv("HLOSCAN_NO_FORK", raising=False)
    monkeypatch.setattr(forkread, "_cores", lambda: 2)
    assert not forkread.worth_forking(text)  # 3.6 MB is below the threshold
    monkeypatch.setattr(forkread, "MIN_FORK_CHARS", 0)
    assert forkread.worth_forking(text)
    monkeypatch.setenv("HLOSCAN_NO_FORK", "1")
    assert not forkread.worth_forking(text)
    monkeypatch.delenv("HLOSCAN_NO_FORK")
    stop = threading.Event()
    own = threading.Thread(target=stop.wait, name=forkread.OWN_THREAD_PREFIX + "progress")
    own.start()
    try:
        assert forkread.worth_forking(text)  # hloscan's own progress ticker holds nothing the child needs
        other = threading.Thread(target=stop.wait)
        other.start()
        assert not forkread.worth_forking(text)  # a user's thread: a fork would copy only this one
    finally:
        stop.set()
        own.join()
        other.join()
    monkeypatch.setattr(forkread, "_cores", lambda: 1)
    assert not forkread.worth_forking(text)


def test_rows_sent_in_many_small_frames_build_the_same_ir(text, fork_everything, monkeypatch):
    # Frames of a few bodies each: the parent loads them one by one as it reaches their bodies.
    monkeypatch.setattr(forkread, "FRAME_CHARS", 4096)
    loaded = []
    original = forkread.ForkedReader._load

    def counting(self, frame):
        loaded.append(len(frame))
        original(self, frame)

    monkeypatch.setattr(forkread.ForkedReader, "_load", counting)
    assert parse_module_fast(text) == _without_fork(text, monkeypatch)
    assert len(loaded) > 10


def test_frames_cut_short_end_the_frames():
    whole = b"".join(len(p).to_bytes(8, "little") + p for p in (b"abc", b"defgh"))
    assert [bytes(f) for f in forkread._frames(whole)] == [b"abc", b"defgh"]
    assert [bytes(f) for f in forkread._frames(whole[:-1])] == [b"abc"]
    assert [bytes(f) for f in forkread._frames(whole[:5])] == []
