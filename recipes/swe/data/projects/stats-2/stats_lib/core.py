"""Small statistics helpers."""


def mean(values):
    if not values:
        raise ValueError("mean of an empty list")
    total = 0
    for value in values:
        total += value
    return total / len(values)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def moving_average(values, window):
    averages = []
    for start in range(len(values) - window + 1):
        averages.append(sum(values[start:start + window]) / window)
    return averages


def histogram(values, bins, low, high):
    counts = [0] * bins
    width = (high - low) / bins
    for value in values:
        if value < low or value > high:
            continue
        index = int((value - low) / width)
        if index == bins:
            index = bins - 1
        counts[index] += 1
    return counts


def variance(values):
    center = mean(values)
    return sum((value - center) ** 2 for value in values) / (len(values) - 1)
