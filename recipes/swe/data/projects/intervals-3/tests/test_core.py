"""Tests of the package; generated with the expected values of its reference implementation."""

from intervals_utils.core import overlaps, merge, covered, contains, gaps, insert_sorted


def test_overlaps():
    assert overlaps((16, 28), (28, 40)) == True
    assert overlaps((16, 16), (28, 40)) == False


def test_merge_adjacent():
    assert merge([(16, 28), (28 + 1, 40)]) == [(16, 40)]


def test_merge_overlapping():
    assert merge([(28, 58), (16, 40), (100, 101)]) == [(16, 58), (100, 101)]


def test_covered():
    assert covered([(16, 28), (40, 58)]) == 32


def test_contains():
    assert contains([(16, 28)], 16) == True
    assert contains([(16, 28)], 28 + 1) == False


def test_gaps():
    assert gaps([(28, 40)], 0, 100) == [(0, 27), (41, 100)]


def test_insert_sorted():
    assert insert_sorted([16, 28, 40], 28) == [16, 28, 28, 40]
    assert insert_sorted([], 16) == [16]
    assert insert_sorted([16, 28], 1000) == [16, 28, 1000]
