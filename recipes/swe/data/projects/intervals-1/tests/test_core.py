"""Tests of the package; generated with the expected values of its reference implementation."""

from intervals_kit.core import overlaps, merge, covered, contains, gaps, insert_sorted


def test_overlaps():
    assert overlaps((18, 26), (26, 28)) == True
    assert overlaps((18, 18), (26, 28)) == False


def test_merge_adjacent():
    assert merge([(18, 26), (26 + 1, 28)]) == [(18, 28)]


def test_merge_overlapping():
    assert merge([(26, 55), (18, 28), (100, 101)]) == [(18, 55), (100, 101)]


def test_covered():
    assert covered([(18, 26), (28, 55)]) == 37


def test_contains():
    assert contains([(18, 26)], 18) == True
    assert contains([(18, 26)], 26 + 1) == False


def test_gaps():
    assert gaps([(26, 28)], 0, 100) == [(0, 25), (29, 100)]


def test_insert_sorted():
    assert insert_sorted([18, 26, 28], 26) == [18, 26, 26, 28]
    assert insert_sorted([], 18) == [18]
    assert insert_sorted([18, 26], 1000) == [18, 26, 1000]
