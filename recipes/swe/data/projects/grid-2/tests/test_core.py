"""Tests of the package; generated with the expected values of its reference implementation."""

from grid_kit.core import transpose, neighbours, flood_size, manhattan, rotate, row_sums


def _grid():
    return [[1, 1, 1], [1, 0, 0], [1, 0, 0]]


def test_transpose():
    assert transpose([[29, 33, 35], [37, 0, 1]]) == [[29, 37], [33, 0], [35, 1]]


def test_neighbours_corner():
    assert neighbours(_grid(), 0, 0) == [(1, 0), (0, 1)]


def test_neighbours_middle():
    assert neighbours(_grid(), 1, 1) == [(0, 1), (2, 1), (1, 0), (1, 2)]


def test_flood_size():
    assert flood_size(_grid(), 0, 0) == 5
    assert flood_size(_grid(), 2, 2) == 4


def test_manhattan():
    assert manhattan((29, 33), (35, 37)) == 10


def test_rotate():
    assert rotate([[29, 33], [35, 37]]) == [[35, 29], [37, 33]]


def test_row_sums():
    assert row_sums(_grid()) == [3, 1, 1]
