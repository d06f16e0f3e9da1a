"""Heap packing of a scheduled module's temporaries: fixed offsets leave holes the live peak does not see."""

from __future__ import annotations

from hloscan.analyses.hbm import packing
from hloscan.analyses.hbm.packing import Interval, packed_heap_bytes

MB = 2**20


def test_disjoint_lives_share_one_offset():
    assert packed_heap_bytes([Interval(0, 4, 8 * MB), Interval(5, 9, 8 * MB)]) == 8 * MB


def test_fixed_offsets_leave_a_hole_the_live_peak_does_not_see():
    # Biggest first: both 6 MB buffers at 0 (their lives are apart), A above the first at 6 MB. B, live with
    # A and with the second 6 MB buffer, fits neither below 6 MB nor beside A: it goes on top, at 11 MB.
    a, b = Interval(2, 5, 5 * MB), Interval(5, 6, 5 * MB)
    intervals = [a, Interval(2, 2, 6 * MB), Interval(6, 6, 6 * MB), b]
    live_peak = max(sum(i.size for i in intervals if i.start <= t <= i.end) for t in range(7))
    assert live_peak == 11 * MB
    assert packed_heap_bytes(intervals) == 16 * MB


def test_best_fit_takes_the_smallest_gap_that_holds_the_buffer():
    # While [4, 6] lives, two gaps are free: 8 MB at 0 and 3 MB at 12 MB. A 2 MB buffer takes the 3 MB one,
    # keeping the big gap whole (first fit would take 0).
    placed = [(0, 3, 0, 8 * MB), (0, 9, 8 * MB, 12 * MB), (0, 3, 12 * MB, 15 * MB), (0, 9, 15 * MB, 17 * MB)]
    assert packing._best_fit(Interval(4, 6, 2 * MB), placed) == 12 * MB
    assert packing._best_fit(Interval(4, 6, 5 * MB), placed) == 0
    assert packing._best_fit(Interval(0, 9, 1 * MB), placed) == 17 * MB  # no gap while everything lives


def test_past_the_limit_no_packing_is_claimed(monkeypatch):
    monkeypatch.setattr(packing, "MAX_PACKED_BUFFERS", 2)
    assert packed_heap_bytes([Interval(k, k, MB) for k in range(3)]) is None
