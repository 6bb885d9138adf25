"""Tests of the package; generated with the expected values of its reference implementation."""

from intervals_tools.core import overlaps, merge, covered, contains, gaps, insert_sorted


def test_overlaps():
    assert overlaps((4, 11), (11, 17)) == True
    assert overlaps((4, 4), (11, 17)) == False


def test_merge_adjacent():
    assert merge([(4, 11), (11 + 1, 17)]) == [(4, 17)]


def test_merge_overlapping():
    assert merge([(11, 46), (4, 17), (100, 101)]) == [(4, 46), (100, 101)]


def test_covered():
    assert covered([(4, 11), (17, 46)]) == 38


def test_contains():
    assert contains([(4, 11)], 4) == True
    assert contains([(4, 11)], 11 + 1) == False


def test_gaps():
    assert gaps([(11, 17)], 0, 100) == [(0, 10), (18, 100)]


def test_insert_sorted():
    assert insert_sorted([4, 11, 17], 11) == [4, 11, 11, 17]
    assert insert_sorted([], 4) == [4]
    assert insert_sorted([4, 11], 1000) == [4, 11, 1000]
