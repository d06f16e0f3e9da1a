"""The confirm fixtures carry no path of the machine that wrote them: not in the HLO text (source metadata,
FileNames tables) and not in the Mosaic kernel bodies (base64 MLIR bytecode, whose locations name the
source file too). fixtures/confirm/make_dumps.py records paths relative to the checkout."""

from __future__ import annotations

import base64
import re

from corpus import FIXTURES

CONFIRM = FIXTURES / "confirm"
# An absolute path under a directory that only exists on some machine (a checkout, a temp or home dir).
MACHINE_PATH = re.compile(rb"(?<![\w.])/(?:work|tmp|home|root|Users|private|var/folders|opt)/[\w.\-/]+")
_BODY = re.compile(rb'"body"\s*:\s*"([A-Za-z0-9+/=]+)"')


def machine_paths(data: bytes) -> list[bytes]:
    """Machine paths in a file's bytes and in every kernel body it holds, decoded."""
    found = MACHINE_PATH.findall(data)
    for body in _BODY.findall(data):
        found += MACHINE_PATH.findall(base64.b64decode(body))
    return found


def test_the_pattern_finds_a_path_in_text_and_in_a_kernel_body():
    body = base64.b64encode(b"\x00loc /work/wt-x/fixtures/confirm/make_dumps.py:3\x00").decode()
    text = f'1 "/tmp/x/a.py"\n backend_config={{"custom_call_config": {{"body":"{body}"}}}}'.encode()
    assert machine_paths(text) == [b"/tmp/x/a.py", b"/work/wt-x/fixtures/confirm/make_dumps.py"]
    assert machine_paths(b'1 "fixtures/confirm/make_dumps.py"') == []


def test_no_confirm_fixture_holds_a_machine_path():
    files = [p for p in sorted(CONFIRM.rglob("*")) if p.is_file() and p.suffix != ".py"]
    assert len(files) >= 6
    offenders = {str(p.relative_to(CONFIRM)): found[:2] for p in files if (found := machine_paths(p.read_bytes()))}
    assert not offenders
