"""Arithmetic and numbers."""

FUNCS = [
    dict(name="lcm_all", blank="result = result * v // a", code=r'''
def lcm_all(values):
    """Least common multiple of a list of positive integers."""
    result = 1
    for v in values:
        a, b = result, v
        while b:
            a, b = b, a % b
        result = result * v // a
    return result
''', test=r'''
assert lcm_all([4, 6]) == 12
assert lcm_all([2, 3, 5, 10]) == 30
assert lcm_all([7]) == 7
assert lcm_all([]) == 1
'''),
    dict(name="is_prime", blank="if n % i == 0:", code=r'''
def is_prime(n):
    """Tell whether n is a prime number."""
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True
''', test=r'''
assert [n for n in range(20) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19]
assert is_prime(7919)
assert not is_prime(7917)
'''),
    dict(name="digital_root", blank="total += n % 10", code=r'''
def digital_root(n):
    """Sum the decimal digits of n over and over until one digit remains."""
    while n >= 10:
        total = 0
        while n:
            total += n % 10
            n //= 10
        n = total
    return n
''', test=r'''
assert digital_root(942) == 6
assert digital_root(132189) == 6
assert digital_root(7) == 7
'''),
    dict(name="mean_std", blank="var = sum((v - mean) ** 2 for v in values) / n", code=r'''
import math


def mean_std(values):
    """Return the mean and the population standard deviation of values."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    return mean, math.sqrt(var)
''', test=r'''
assert mean_std([2, 4, 4, 4, 5, 5, 7, 9]) == (5.0, 2.0)
assert mean_std([3]) == (3.0, 0.0)
'''),
    dict(name="median", blank="return ordered[mid]", code=r'''
def median(values):
    """Return the median of a non-empty list of numbers."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
''', test=r'''
assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5
assert median([5]) == 5
'''),
    dict(name="fibonacci", blank="a, b = b, a + b", code=r'''
def fibonacci(n):
    """Return the first n Fibonacci numbers, starting 0, 1."""
    numbers = []
    a, b = 0, 1
    for _ in range(n):
        numbers.append(a)
        a, b = b, a + b
    return numbers
''', test=r'''
assert fibonacci(8) == [0, 1, 1, 2, 3, 5, 8, 13]
assert fibonacci(1) == [0]
assert fibonacci(0) == []
'''),
    dict(name="primes_below", blank="sieve[i * i::i] = [False] * len(range(i * i, n, i))", code=r'''
def primes_below(n):
    """Return the primes less than n (sieve of Eratosthenes)."""
    if n < 3:
        return []
    sieve = [True] * n
    sieve[0] = sieve[1] = False
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = [False] * len(range(i * i, n, i))
    return [i for i, is_p in enumerate(sieve) if is_p]
''', test=r'''
assert primes_below(30) == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
assert primes_below(3) == [2]
assert primes_below(2) == []
'''),
    dict(name="to_base", blank="out = digits[n % base] + out", code=r'''
def to_base(n, base):
    """Write the non-negative integer n in base 2 to 16, with lower-case digits."""
    digits = "0123456789abcdef"
    if n == 0:
        return "0"
    out = ""
    while n:
        out = digits[n % base] + out
        n //= base
    return out
''', test=r'''
assert to_base(255, 16) == "ff"
assert to_base(10, 2) == "1010"
assert to_base(0, 8) == "0"
assert to_base(64, 8) == "100"
'''),
    dict(name="from_roman", blank="total -= v", code=r'''
def from_roman(numeral):
    """Convert a Roman numeral (I, V, X, L, C, D, M, subtractive forms allowed) to an int."""
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, ch in enumerate(numeral):
        v = values[ch]
        if i + 1 < len(numeral) and values[numeral[i + 1]] > v:
            total -= v
        else:
            total += v
    return total
''', test=r'''
assert from_roman("MCMXCIV") == 1994
assert from_roman("IV") == 4
assert from_roman("LVIII") == 58
'''),
    dict(name="to_roman", blank="count, n = divmod(n, value)", code=r'''
def to_roman(n):
    """Write 1 <= n < 4000 as a Roman numeral."""
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = []
    for value, symbol in table:
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)
''', test=r'''
assert to_roman(1994) == "MCMXCIV"
assert to_roman(3888) == "MMMDCCCLXXXVIII"
assert to_roman(4) == "IV"
'''),
    dict(name="real_roots", blank="root = math.sqrt(disc)", code=r'''
import math


def real_roots(a, b, c):
    """Return the real roots of a*x**2 + b*x + c (a != 0), sorted; [] when there are none."""
    disc = b * b - 4 * a * c
    if disc < 0:
        return []
    if disc == 0:
        return [-b / (2 * a)]
    root = math.sqrt(disc)
    return sorted([(-b - root) / (2 * a), (-b + root) / (2 * a)])
''', test=r'''
assert real_roots(1, -3, 2) == [1.0, 2.0]
assert real_roots(1, 2, 1) == [-1.0]
assert real_roots(1, 0, 1) == []
assert real_roots(-1, 0, 4) == [-2.0, 2.0]
'''),
    dict(name="collatz_steps", blank="steps += 1", code=r'''
def collatz_steps(n):
    """Count the steps of the Collatz sequence from n down to 1."""
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps
''', test=r'''
assert collatz_steps(6) == 8
assert collatz_steps(27) == 111
assert collatz_steps(1) == 0
'''),
    dict(name="mat_mul", blank="result[i][j] += a[i][k] * b[k][j]", code=r'''
def mat_mul(a, b):
    """Multiply two matrices given as lists of rows."""
    rows, inner, cols = len(a), len(b), len(b[0])
    result = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        for j in range(cols):
            for k in range(inner):
                result[i][j] += a[i][k] * b[k][j]
    return result
''', test=r'''
assert mat_mul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]
assert mat_mul([[1, 2, 3]], [[1], [1], [1]]) == [[6]]
'''),
    dict(name="divisors", blank="large.append(n // d)", code=r'''
def divisors(n):
    """Return the positive divisors of n in increasing order."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
        d += 1
    return small + large[::-1]
''', test=r'''
assert divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]
assert divisors(13) == [1, 13]
assert divisors(1) == [1]
'''),
    dict(name="isqrt", blank="y = (x + n // x) // 2", code=r'''
def isqrt(n):
    """Return the largest integer r with r * r <= n, for n >= 0, by Newton's method."""
    if n < 2:
        return n
    x = n
    y = (x + 1) // 2
    while y < x:
        x = y
        y = (x + n // x) // 2
    return x
''', test=r'''
assert isqrt(16) == 4
assert isqrt(99) == 9
assert isqrt(1) == 1
assert isqrt(10 ** 20 + 5) == 10 ** 10
'''),
]
