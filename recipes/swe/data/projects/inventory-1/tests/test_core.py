"""Tests of the package; generated with the expected values of its reference implementation."""

from inventory_core.core import OutOfStock, Inventory


def _stock():
    stock = Inventory()
    stock.add("tiger", 33, 5)
    stock.add("river", 39, 11)
    stock.add("maple", 43, 3)
    return stock


def _after_remove(name, quantity):
    stock = _stock()
    stock.remove(name, quantity)
    return (stock.quantity(name), name in stock.items)


def _raises(call, error):
    try:
        call()
    except error:
        return True
    return False


def test_add_and_quantity():
    assert _stock().quantity("tiger") == 33
    assert _stock().quantity("missing") == 0


def test_add_rejects_zero():
    assert _raises(lambda: Inventory().add("x", 0, 1), ValueError) == True


def test_remove_partial():
    assert _after_remove("tiger", 1) == (32, True)


def test_remove_all():
    assert _after_remove("river", 39) == (0, False)


def test_remove_too_many():
    assert _raises(lambda: _stock().remove("tiger", 33 + 1), OutOfStock) == True


def test_total_value():
    assert _stock().total_value() == 723


def test_low_stock():
    assert _stock().low_stock(43) == ['river', 'tiger']


def test_bulk_price():
    assert _stock().bulk_price("tiger", 43, 43) == 193
    assert _stock().bulk_price("tiger", 43 - 1, 43) == 210
