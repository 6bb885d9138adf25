"""Helpers for rectangular grids (lists of rows)."""


def transpose(grid):
    return [[grid[row][col] for row in range(len(grid))] for col in range(len(grid[0]))]


def neighbours(grid, row, col):
    found = []
    for d_row, d_col in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r, c = row + d_row, col + d_col
        if 0 <= r < len(grid) and 0 <= c < len(grid[0]):
            found.append((r, c))
    return found


def flood_size(grid, row, col):
    target = grid[row][col]
    seen = {(row, col)}
    stack = [(row, col)]
    while stack:
        r, c = stack.pop()
        for n_row, n_col in neighbours(grid, r, c):
            if (n_row, n_col) not in seen and grid[n_row][n_col] == target:
                seen.add((n_row, n_col))
                stack.append((n_row, n_col))
    return len(seen)


def manhattan(first, second):
    return abs(first[0] - second[0]) + abs(first[1] - second[1])


def rotate(grid):
    return [list(row) for row in zip(*grid[::-1])]


def row_sums(grid):
    return [sum(row) for row in grid]
