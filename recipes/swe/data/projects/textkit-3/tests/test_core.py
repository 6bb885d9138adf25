"""Tests of the package; generated with the expected values of its reference implementation."""

from textkit_kit.core import word_count, truncate, is_palindrome, caesar, run_length, wrap


def test_word_count():
    assert word_count("tiger maple. Tiger, apple maple!") == {'tiger': 2, 'maple': 2, 'apple': 1}


def test_truncate_short():
    assert truncate("tiger", 20) == 'tiger'


def test_truncate_long():
    assert truncate("tigermapleapple", 11) == 'tigermap...'


def test_palindrome_yes():
    assert is_palindrome("tiger, " + "tiger"[::-1] + "!") == True


def test_palindrome_no():
    assert is_palindrome("tigermaplex") == False


def test_caesar():
    assert caesar("tiger maple", 23) == 'qfdbo jxmib'
    assert caesar("apple!", 26 - 23) == 'dssoh!'


def test_run_length():
    assert run_length("aaabtiger") == '3a1b1t1i1g1e1r'
    assert run_length("") == ''


def test_wrap():
    assert wrap("tiger maple apple tiger maple", 11) == ['tiger maple', 'apple tiger', 'maple']
