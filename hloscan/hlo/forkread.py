"""Reading the later bodies of a big dump in a forked child while the parent reads the first ones.

The fast path spends its time on regex matching and per-line checks of computation bodies, which are
independent of each other. On a dump of tens of MB with a second core free, the parent forks once: the
child cuts the bodies of the text's last part into rows (`fastpath.body_rows`, the same function the parent
uses) and sends them through a pipe as `marshal` data (plain tuples of str/int: no pickling of IR objects,
which cost more than the parse). The parent reads the first part meanwhile, then takes the child's rows
for the bodies it reaches past the split and only builds the IR objects from them.

The rows go in frames of a few MB of text each, marshalled as soon as they are cut and loaded by the parent
only when it reaches them: neither process holds all the child's rows at once (150 MB for gpt48), which cost
more in page faults than marshalling them.

Nothing here can change a result: rows are keyed by the body's exact (start, end) offsets, the parent asks
for its own offsets, and whatever the child did not produce (another body cut, a form the rows do not
cover, a child that died) the parent computes itself. Forking is skipped where it is unsafe or useless:
one core, no fork, threads other than hloscan's own running (a fork copies only the calling thread), or a
small text.
"""

from __future__ import annotations

import marshal
import os
import threading
from collections import deque
from typing import Callable

# Below this many characters a fork costs about what it saves.
MIN_FORK_CHARS = 16 * 1024 * 1024
# The child takes this share of the text from the end: cutting rows is ~70% of the work, and the parent
# also builds the IR objects of the child's rows (measured on gpt48, 2 cores).
CHILD_SHARE = 0.57
# The text one frame of rows covers (see the module docstring).
FRAME_CHARS = 2 * 1024 * 1024
_LENGTH_BYTES = 8  # each frame is its length (little-endian) and then its marshal data

Rows = list  # body_rows' result: tuples of str/int/bool/None, marshal-able
RowsOf = Callable[[str, int, int, int], "Rows | None"]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# hloscan's own helper threads (the progress ticker) are named so; the child never touches what they hold.
OWN_THREAD_PREFIX = "hloscan-"


def _only_own_threads() -> bool:
    """No thread but this one and hloscan's own: a fork copies only the calling thread, and a lock some
    other thread (a user's, in a library call) held at that moment would stay locked in the child."""
    current = threading.current_thread()
    return all(t is current or t.name.startswith(OWN_THREAD_PREFIX) for t in threading.enumerate())


def worth_forking(text: str) -> bool:
    """Whether to fork for this text (HLOSCAN_NO_FORK=1 in the environment turns forking off)."""
    return (len(text) >= MIN_FORK_CHARS and hasattr(os, "fork") and not os.environ.get("HLOSCAN_NO_FORK")
            and _only_own_threads() and _cores() >= 2)


def split_offset(text: str) -> int | None:
    """The start of a line just after a computation's closing `}`, about CHILD_SHARE from the end."""
    at = text.find("\n}", int(len(text) * (1 - CHILD_SHARE)))
    if at < 0:
        return None
    after = text.find("\n", at + 1)
    return after + 1 if after >= 0 else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _frames(data: bytes) -> deque[memoryview]:
    """The frames of the child's data (a frame cut short, which a child that exited 0 never writes, ends them)."""
    out: deque[memoryview] = deque()
    view, pos = memoryview(data), 0
    while pos + _LENGTH_BYTES <= len(data):
        size = int.from_bytes(view[pos : pos + _LENGTH_BYTES], "little")
        pos += _LENGTH_BYTES
        if pos + size > len(data):
            break
        out.append(view[pos : pos + size])
        pos += size
    return out


def _bodies_from(text: str, offset: int):
    """(start, end) of each body after `offset` the way the parent cuts them: from the line after a header
    ending in `{` to the newline before the closing `}` line."""
    while True:
        brace = text.find("{\n", offset)
        if brace < 0:
            return
        start = brace + 2
        end = text.find("\n}", start - 1)
        if end < 0:
            return
        yield start, end
        offset = end + 2


class ForkedReader:
    """Rows of the bodies past `split`, computed by a child; `rows` computes them here for any body the
    child did not cover."""

    def __init__(self, text: str, rows_of: RowsOf):
        self.text = text
        self.rows_of = rows_of
        self.split = split_offset(text)
        self.pid: int | None = None
        self.fd: int | None = None
        self.received: dict[tuple[int, int], Rows | None] | None = None  # loaded from frames, not yet used
        self.frames: deque[memoryview] = deque()  # received, not yet loaded
        if self.split is not None:
            self._fork()

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any parent cleanup
            status = 1
            try:
                os.close(read_fd)
                self._send(write_fd)
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        self.pid, self.fd = pid, read_fd

    def _send(self, fd: int) -> None:
        """Cut every body past the split, then write the frames (the parent reads them once it gets there)."""
        text, rows_of = self.text, self.rows_of
        frames, batch, chars = [], {}, 0
        for start, end in _bodies_from(text, self.split):
            batch[(start, end)] = rows_of(text, start, end, text.count("\n", start, end + 1))
            chars += end - start
            if chars >= FRAME_CHARS:
                frames.append(marshal.dumps(batch))
                batch, chars = {}, 0
        if batch:
            frames.append(marshal.dumps(batch))
        for frame in frames:
            _write_all(fd, len(frame).to_bytes(_LENGTH_BYTES, "little"))
            _write_all(fd, frame)
        os.close(fd)

    def rows(self, text: str, start: int, end: int, lines: int) -> Rows | None:
        """body_rows(text, start, end, lines), from the child when it computed them."""
        if self.split is not None and start >= self.split:
            if self.received is None:
                self.received, self.frames = {}, self._receive()
            key = (start, end)
            while key not in self.received and self.frames:  # bodies come in text order: the next frame
                self._load(self.frames.popleft())
            if key in self.received:
                return self.received.pop(key)
        return self.rows_of(text, start, end, lines)

    def _receive(self) -> deque[memoryview]:
        """All the child's frames, unloaded; none when the child failed."""
        chunks = []
        try:
            while chunk := os.read(self.fd, 1 << 20):
                chunks.append(chunk)
            return _frames(b"".join(chunks)) if self._child_succeeded() else deque()
        except OSError:
            return deque()
        finally:
            self.close()

    def _load(self, frame: memoryview) -> None:
        try:
            self.received.update(marshal.loads(frame))
        except (ValueError, EOFError, TypeError):  # not what the child wrote: use none of the rest either
            self.frames.clear()

    def _child_succeeded(self) -> bool:
        pid, self.pid = self.pid, None
        return pid is not None and os.waitpid(pid, 0)[1] == 0

    def close(self) -> None:
        """Release the pipe and reap the child (also when the parse stopped early)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.pid is not None:
            pid, self.pid = self.pid, None
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
