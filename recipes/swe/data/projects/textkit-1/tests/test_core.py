"""Tests of the package; generated with the expected values of its reference implementation."""

from textkit_lib.core import word_count, truncate, is_palindrome, caesar, run_length, wrap


def test_word_count():
    assert word_count("otter apple. Otter, cloud apple!") == {'otter': 2, 'apple': 2, 'cloud': 1}


def test_truncate_short():
    assert truncate("otter", 20) == 'otter'


def test_truncate_long():
    assert truncate("otterapplecloud", 10) == 'otterap...'


def test_palindrome_yes():
    assert is_palindrome("otter, " + "otter"[::-1] + "!") == True


def test_palindrome_no():
    assert is_palindrome("otterapplex") == False


def test_caesar():
    assert caesar("otter apple", 7) == 'vaaly hwwsl'
    assert caesar("cloud!", 26 - 7) == 'vehnw!'


def test_run_length():
    assert run_length("aaabotter") == '3a1b1o2t1e1r'
    assert run_length("") == ''


def test_wrap():
    assert wrap("otter apple cloud otter apple", 10) == ['otter', 'apple', 'cloud', 'otter', 'apple']
