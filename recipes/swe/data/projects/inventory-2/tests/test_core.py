"""Tests of the package; generated with the expected values of its reference implementation."""

from inventory_kit.core import OutOfStock, Inventory


def _stock():
    stock = Inventory()
    stock.add("maple", 5, 8)
    stock.add("pearl", 31, 15)
    stock.add("river", 38, 3)
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
    assert _stock().quantity("maple") == 5
    assert _stock().quantity("missing") == 0


def test_add_rejects_zero():
    assert _raises(lambda: Inventory().add("x", 0, 1), ValueError) == True


def test_remove_partial():
    assert _after_remove("maple", 1) == (4, True)


def test_remove_all():
    assert _after_remove("pearl", 31) == (0, False)


def test_remove_too_many():
    assert _raises(lambda: _stock().remove("maple", 5 + 1), OutOfStock) == True


def test_total_value():
    assert _stock().total_value() == 619


def test_low_stock():
    assert _stock().low_stock(38) == ['maple', 'pearl']


def test_bulk_price():
    assert _stock().bulk_price("maple", 38, 38) == 273
    assert _stock().bulk_price("maple", 38 - 1, 38) == 296
