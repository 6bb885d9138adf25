"""Tests of the package; generated with the expected values of its reference implementation."""

from textkit_core.core import word_count, truncate, is_palindrome, caesar, run_length, wrap


def test_word_count():
    assert word_count("apple lemon. Apple, pearl lemon!") == {'apple': 2, 'lemon': 2, 'pearl': 1}


def test_truncate_short():
    assert truncate("apple", 20) == 'apple'


def test_truncate_long():
    assert truncate("applelemonpearl", 8) == 'apple...'


def test_palindrome_yes():
    assert is_palindrome("apple, " + "apple"[::-1] + "!") == True


def test_palindrome_no():
    assert is_palindrome("applelemonx") == False


def test_caesar():
    assert caesar("apple lemon", 6) == 'gvvrk rksut'
    assert caesar("pearl!", 26 - 6) == 'jyulf!'


def test_run_length():
    assert run_length("aaabapple") == '3a1b1a2p1l1e'
    assert run_length("") == ''


def test_wrap():
    assert wrap("apple lemon pearl apple lemon", 8) == ['apple', 'lemon', 'pearl', 'apple', 'lemon']
