"""JUnit XML (one test suite, one test case per input file, a failure per error or warning finding), which
Jenkins, GitLab, Azure Pipelines and CircleCI display. Every string from a dump is escaped by ElementTree."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from hloscan.lint.engine import ScanResult
from hloscan.lint.files import printable
from hloscan.lint.finding import Severity
from hloscan.reporters.concise import error_line, line


def _xml_text(text: str) -> str:
    """XML 1.0 allows no control characters but tab, LF and CR: dump text may hold any."""
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in printable(text))


def render(result: ScanResult, out: TextIO, colour: bool = False) -> None:
    by_file: dict[str, list] = {f.path: [] for f in result.files}
    for f in result.findings:
        by_file.setdefault(f.span.path, []).append(f)
    failures = sum(1 for f in result.findings if f.severity >= Severity.WARNING)
    suite = ET.Element("testsuite", name="hloscan", tests=str(len(by_file)), failures=str(failures),
                       errors=str(sum(1 for f in result.files if not f.ok)))
    failed = {f.path: f for f in result.files if f.error is not None}
    for path, findings in by_file.items():
        case = ET.SubElement(suite, "testcase", classname="hloscan", name=_xml_text(path))
        if path in failed:
            node = ET.SubElement(case, "error", type=failed[path].error.code,
                                 message=_xml_text(failed[path].error.message))
            node.text = _xml_text(error_line(failed[path]))
        for f in findings:
            tag = "failure" if f.severity >= Severity.WARNING else "system-out"
            node = ET.SubElement(case, tag)
            if tag == "failure":
                node.set("type", f.code)
                node.set("message", _xml_text(f.message))
            node.text = _xml_text(line(f) + (f"\nhint: {f.hint}" if f.hint else ""))
    out.write(ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True) + "\n")
