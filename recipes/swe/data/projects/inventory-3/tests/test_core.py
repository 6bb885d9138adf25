"""Tests of the package; generated with the expected values of its reference implementation."""

from inventory_utils.core import OutOfStock, Inventory


def _stock():
    stock = Inventory()
    stock.add("stone", 19, 20)
    stock.add("river", 29, 2)
    stock.add("apple", 34, 3)
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
    assert _stock().quantity("stone") == 19
    assert _stock().quantity("missing") == 0


def test_add_rejects_zero():
    assert _raises(lambda: Inventory().add("x", 0, 1), ValueError) == True


def test_remove_partial():
    assert _after_remove("stone", 1) == (18, True)


def test_remove_all():
    assert _after_remove("river", 29) == (0, False)


def test_remove_too_many():
    assert _raises(lambda: _stock().remove("stone", 19 + 1), OutOfStock) == True


def test_total_value():
    assert _stock().total_value() == 540


def test_low_stock():
    assert _stock().low_stock(34) == ['river', 'stone']


def test_bulk_price():
    assert _stock().bulk_price("stone", 34, 34) == 612
    assert _stock().bulk_price("stone", 34 - 1, 34) == 660
