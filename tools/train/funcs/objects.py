"""Small classes."""

FUNCS = [
    dict(name="Stack", blank="self.items.append(item)", code=r'''
class Stack:
    """A last-in, first-out stack."""

    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()

    def __len__(self):
        return len(self.items)
''', test=r'''
s = Stack()
s.push(1)
s.push(2)
assert len(s) == 2
assert s.pop() == 2
assert s.pop() == 1
assert len(s) == 0
'''),
    dict(name="Tally", blank="self.counts[name] = self.counts.get(name, 0) + n", code=r'''
class Tally:
    """Counts named events."""

    def __init__(self):
        self.counts = {}

    def add(self, name, n=1):
        self.counts[name] = self.counts.get(name, 0) + n

    def most_common(self):
        return max(self.counts, key=self.counts.get) if self.counts else None
''', test=r'''
t = Tally()
assert t.most_common() is None
t.add("click")
t.add("view", 3)
t.add("click")
assert t.counts == {"click": 2, "view": 3}
assert t.most_common() == "view"
'''),
    dict(name="Vector", blank="return Vector(self.x * k, self.y * k)", code=r'''
class Vector:
    """A 2-D vector with addition, scaling and length."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)

    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)

    def length(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5
''', test=r'''
assert Vector(1, 2) + Vector(3, 4) == Vector(4, 6)
assert Vector(1, -2) * 3 == Vector(3, -6)
assert Vector(3, 4).length() == 5.0
'''),
    dict(name="Account", blank='raise ValueError("insufficient funds")', code=r'''
class Account:
    """A bank account that refuses withdrawals beyond its balance."""

    def __init__(self, balance=0):
        self.balance = balance

    def deposit(self, amount):
        self.balance += amount

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
''', test=r'''
a = Account(10)
a.deposit(5)
a.withdraw(12)
assert a.balance == 3
try:
    a.withdraw(4)
except ValueError:
    pass
else:
    raise AssertionError("overdraft allowed")
assert a.balance == 3
'''),
    dict(name="Queue", blank="self.inbox.append(item)", code=r'''
class Queue:
    """A first-in, first-out queue built from two lists used as stacks."""

    def __init__(self):
        self.inbox, self.outbox = [], []

    def put(self, item):
        self.inbox.append(item)

    def get(self):
        if not self.outbox:
            while self.inbox:
                self.outbox.append(self.inbox.pop())
        return self.outbox.pop()
''', test=r'''
q = Queue()
for x in (1, 2, 3):
    q.put(x)
assert q.get() == 1
q.put(4)
assert [q.get(), q.get(), q.get()] == [2, 3, 4]
'''),
    dict(name="Temperature", blank="self.celsius = (value - 32) * 5 / 9", code=r'''
class Temperature:
    """A temperature stored in Celsius, readable and settable in Fahrenheit."""

    def __init__(self, celsius):
        self.celsius = celsius

    @property
    def fahrenheit(self):
        return self.celsius * 9 / 5 + 32

    @fahrenheit.setter
    def fahrenheit(self, value):
        self.celsius = (value - 32) * 5 / 9
''', test=r'''
t = Temperature(100)
assert t.fahrenheit == 212
t.fahrenheit = 32
assert t.celsius == 0
t.fahrenheit = 212
assert t.celsius == 100
'''),
    dict(name="LRUCache", blank="self.data.popitem(last=False)", code=r'''
from collections import OrderedDict


class LRUCache:
    """A mapping that keeps at most capacity items, dropping the least recently used."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.data = OrderedDict()

    def get(self, key, default=None):
        if key in self.data:
            self.data.move_to_end(key)
        return self.data.get(key, default)

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.capacity:
            self.data.popitem(last=False)
''', test=r'''
c = LRUCache(2)
c.put("a", 1)
c.put("b", 2)
assert c.get("a") == 1
c.put("c", 3)
assert c.get("b") is None
assert c.get("a") == 1
assert c.get("c") == 3
assert len(c.data) == 2
'''),
    dict(name="Polynomial", blank="result = result * x + c", code=r'''
class Polynomial:
    """A polynomial given by its coefficients, lowest degree first."""

    def __init__(self, coeffs):
        self.coeffs = list(coeffs)

    def __call__(self, x):
        result = 0
        for c in reversed(self.coeffs):
            result = result * x + c
        return result

    def derivative(self):
        return Polynomial([i * c for i, c in enumerate(self.coeffs)][1:])
''', test=r'''
p = Polynomial([1, 0, 2])
assert p(3) == 19
assert p.derivative().coeffs == [0, 4]
assert p.derivative()(5) == 20
assert Polynomial([])(7) == 0
'''),
    dict(name="Rect", blank="return self.w * self.h", code=r'''
from dataclasses import dataclass


@dataclass
class Rect:
    """An axis-aligned rectangle given by its corner (x, y), width and height."""

    x: float
    y: float
    w: float
    h: float

    def area(self):
        return self.w * self.h

    def intersects(self, other):
        return (self.x < other.x + other.w and other.x < self.x + self.w
                and self.y < other.y + other.h and other.y < self.y + self.h)
''', test=r'''
a = Rect(0, 0, 4, 3)
assert a.area() == 12
assert a.intersects(Rect(3, 2, 5, 5))
assert not a.intersects(Rect(4, 0, 1, 1))
'''),
    dict(name="Inventory", blank="self.stock[name] = have - qty", code=r'''
class Inventory:
    """Stock levels by item name."""

    def __init__(self):
        self.stock = {}

    def add(self, name, qty):
        self.stock[name] = self.stock.get(name, 0) + qty

    def remove(self, name, qty):
        have = self.stock.get(name, 0)
        if qty > have:
            return False
        self.stock[name] = have - qty
        return True
''', test=r'''
inv = Inventory()
inv.add("bolt", 10)
assert inv.remove("bolt", 4)
assert not inv.remove("bolt", 7)
assert not inv.remove("nut", 1)
assert inv.stock == {"bolt": 6}
'''),
    dict(name="Emitter", blank="handler(*args)", code=r'''
class Emitter:
    """Calls the handlers registered for an event name, in the order they were registered."""

    def __init__(self):
        self.handlers = {}

    def on(self, event, handler):
        self.handlers.setdefault(event, []).append(handler)

    def emit(self, event, *args):
        for handler in self.handlers.get(event, []):
            handler(*args)
''', test=r'''
seen = []
e = Emitter()
e.on("save", lambda name: seen.append(("first", name)))
e.on("save", lambda name: seen.append(("second", name)))
e.emit("save", "a.txt")
e.emit("load", "b.txt")
assert seen == [("first", "a.txt"), ("second", "a.txt")]
'''),
    dict(name="Ratio", blank="g = gcd(num, den) or 1", code=r'''
from math import gcd


class Ratio:
    """A fraction kept in lowest terms with a positive denominator."""

    def __init__(self, num, den):
        if den < 0:
            num, den = -num, -den
        g = gcd(num, den) or 1
        self.num, self.den = num // g, den // g

    def __add__(self, other):
        return Ratio(self.num * other.den + other.num * self.den, self.den * other.den)

    def __eq__(self, other):
        return (self.num, self.den) == (other.num, other.den)
''', test=r'''
assert Ratio(2, 4) == Ratio(1, 2)
assert Ratio(1, -3).num == -1 and Ratio(1, -3).den == 3
assert Ratio(1, 6) + Ratio(1, 3) == Ratio(1, 2)
assert (Ratio(6, 8).num, Ratio(6, 8).den) == (3, 4)
'''),
]
