"""Tests of the package; generated with the expected values of its reference implementation."""

from grid_core.core import transpose, neighbours, flood_size, manhattan, rotate, row_sums


def _grid():
    return [[1, 1, 0], [1, 0, 0], [1, 0, 0]]


def test_transpose():
    assert transpose([[6, 11, 18], [21, 0, 1]]) == [[6, 21], [11, 0], [18, 1]]


def test_neighbours_corner():
    assert neighbours(_grid(), 0, 0) == [(1, 0), (0, 1)]


def test_neighbours_middle():
    assert neighbours(_grid(), 1, 1) == [(0, 1), (2, 1), (1, 0), (1, 2)]


def test_flood_size():
    assert flood_size(_grid(), 0, 0) == 4
    assert flood_size(_grid(), 2, 2) == 5


def test_manhattan():
    assert manhattan((6, 11), (18, 21)) == 22


def test_rotate():
    assert rotate([[6, 11], [18, 21]]) == [[18, 6], [21, 11]]


def test_row_sums():
    assert row_sums(_grid()) == [2, 1, 1]
