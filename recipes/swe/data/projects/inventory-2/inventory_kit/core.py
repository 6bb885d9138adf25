"""A stock inventory with prices."""


class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, name, quantity, price):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        count, _ = self.items.get(name, (0, price))
        self.items[name] = (count + quantity, price)

    def remove(self, name, quantity):
        count, price = self.items.get(name, (0, 0))
        if quantity > count:
            raise OutOfStock(name)
        if count - quantity == 0:
            del self.items[name]
        else:
            self.items[name] = (count - quantity, price)

    def quantity(self, name):
        return self.items.get(name, (0, 0))[0]

    def total_value(self):
        total = 0
        for count, price in self.items.values():
            total += count * price
        return total

    def low_stock(self, threshold):
        return sorted(name for name, (count, _) in self.items.items() if count < threshold)

    def bulk_price(self, name, quantity, discount_from):
        _, price = self.items[name]
        cost = quantity * price
        if quantity >= discount_from:
            cost = cost * 9 // 10
        return cost
