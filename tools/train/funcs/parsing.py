"""Parsing small text formats."""

FUNCS = [
    dict(name="parse_pairs", blank='key, value = part.split("=", 1)', code=r'''
def parse_pairs(text):
    """Parse "key=value" pairs separated by semicolons into a dict, trimming blanks."""
    result = {}
    for part in text.split(";"):
        if "=" not in part:
            continue
        key, value = part.split("=", 1)
        result[key.strip()] = value.strip()
    return result
''', test=r'''
assert parse_pairs("a=1; b = two ;c=x=y") == {"a": "1", "b": "two", "c": "x=y"}
assert parse_pairs("junk;;k=v") == {"k": "v"}
assert parse_pairs("") == {}
'''),
    dict(name="split_csv_line", blank="quoted = not quoted", code=r'''
def split_csv_line(line):
    """Split one CSV line on commas; double-quoted fields may contain commas."""
    fields, current, quoted = [], "", False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            fields.append(current)
            current = ""
        else:
            current += ch
    fields.append(current)
    return fields
''', test=r'''
assert split_csv_line('a,"b,c",d') == ["a", "b,c", "d"]
assert split_csv_line("x,,y") == ["x", "", "y"]
assert split_csv_line("") == [""]
'''),
    dict(name="parse_duration", blank='number = ""', code=r'''
def parse_duration(text):
    """Parse a duration such as "1h30m", "45s" or "2h5s" into seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    total, number = 0, ""
    for ch in text:
        if ch.isdigit():
            number += ch
        else:
            total += int(number) * units[ch]
            number = ""
    return total
''', test=r'''
assert parse_duration("1h30m") == 5400
assert parse_duration("45s") == 45
assert parse_duration("2h5s") == 7205
assert parse_duration("1m1s") == 61
'''),
    dict(name="compare_versions", blank="pb += [0] * (length - len(pb))", code=r'''
def compare_versions(a, b):
    """Compare dotted version strings numerically: -1, 0 or 1; missing parts count as 0."""
    pa = [int(x) for x in a.split(".")]
    pb = [int(x) for x in b.split(".")]
    length = max(len(pa), len(pb))
    pa += [0] * (length - len(pa))
    pb += [0] * (length - len(pb))
    return (pa > pb) - (pa < pb)
''', test=r'''
assert compare_versions("1.10", "1.9") == 1
assert compare_versions("1.0", "1") == 0
assert compare_versions("2.0.1", "2.1") == -1
'''),
    dict(name="parse_query",
         blank="params.setdefault(unquote_plus(name), []).append(unquote_plus(value))",
         code=r'''
from urllib.parse import unquote_plus


def parse_query(query):
    """Parse a URL query string into {name: [values]}, decoding + and %XX escapes."""
    params = {}
    for part in query.lstrip("?").split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        params.setdefault(unquote_plus(name), []).append(unquote_plus(value))
    return params
''', test=r'''
assert parse_query("?q=hello+world&tag=a&tag=b%26c") == {
    "q": ["hello world"], "tag": ["a", "b&c"]}
assert parse_query("flag&&x=1") == {"flag": [""], "x": ["1"]}
assert parse_query("") == {}
'''),
    dict(name="tokenize", blank="tokens.append(int(number))", code=r'''
import re


def tokenize(expr):
    """Split an arithmetic expression into int and operator tokens; spaces are skipped."""
    tokens = []
    for number, op in re.findall(r"(\d+)|([-+*/()])", expr):
        if number:
            tokens.append(int(number))
        else:
            tokens.append(op)
    return tokens
''', test=r'''
assert tokenize("12 + (3*45)") == [12, "+", "(", 3, "*", 45, ")"]
assert tokenize("7") == [7]
assert tokenize("") == []
'''),
    dict(name="eval_rpn", blank="a = stack.pop()", code=r'''
def eval_rpn(tokens):
    """Evaluate reverse Polish notation given as strings: integers and + - *."""
    stack = []
    for tok in tokens:
        if tok in ("+", "-", "*"):
            b = stack.pop()
            a = stack.pop()
            stack.append(a + b if tok == "+" else a - b if tok == "-" else a * b)
        else:
            stack.append(int(tok))
    return stack.pop()
''', test=r'''
assert eval_rpn(["3", "4", "+", "2", "*"]) == 14
assert eval_rpn(["10", "3", "-"]) == 7
assert eval_rpn(["5"]) == 5
'''),
    dict(name="parse_ini", blank="section = line[1:-1].strip()", code=r'''
def parse_ini(text):
    """Parse INI text into {section: {key: value}}; keys before any section go under ""."""
    data = {"": {}}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            data.setdefault(section, {})
        elif "=" in line:
            key, _, value = line.partition("=")
            data[section][key.strip()] = value.strip()
    return data
''', test=r'''
text = "top = 1\n[server]\nhost = example\nport=80\n\n[ client ]\nretries = 3\n"
assert parse_ini(text) == {
    "": {"top": "1"}, "server": {"host": "example", "port": "80"}, "client": {"retries": "3"}}
assert parse_ini("") == {"": {}}
'''),
    dict(name="hex_to_rgb", blank='digits = "".join(ch * 2 for ch in digits)', code=r'''
def hex_to_rgb(color):
    """Convert "#rgb" or "#rrggbb" to an (r, g, b) tuple of ints."""
    digits = color.lstrip("#")
    if len(digits) == 3:
        digits = "".join(ch * 2 for ch in digits)
    return tuple(int(digits[i:i + 2], 16) for i in range(0, 6, 2))
''', test=r'''
assert hex_to_rgb("#ff8000") == (255, 128, 0)
assert hex_to_rgb("#fa0") == (255, 170, 0)
assert hex_to_rgb("102030") == (16, 32, 48)
'''),
    dict(name="balanced", blank="stack.append(ch)", code=r'''
def balanced(text):
    """Tell whether the brackets (), [] and {} in text are balanced and properly nested."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack.pop() != pairs[ch]:
                return False
    return not stack
''', test=r'''
assert balanced("f(a[1], {b: 2})")
assert balanced("")
assert not balanced("(]")
assert not balanced("((")
assert not balanced(")(")
'''),
    dict(name="expand_ranges", blank="numbers.extend(range(int(lo), int(hi) + 1))", code=r'''
def expand_ranges(spec):
    """Expand "1-3,7,10-11" into [1, 2, 3, 7, 10, 11]."""
    numbers = []
    for part in spec.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            numbers.extend(range(int(lo), int(hi) + 1))
        else:
            numbers.append(int(part))
    return numbers
''', test=r'''
assert expand_ranges("1-3,7,10-11") == [1, 2, 3, 7, 10, 11]
assert expand_ranges("5") == [5]
assert expand_ranges("4-4") == [4]
'''),
    dict(name="collapse_ranges",
         blank='parts.append(str(numbers[i]) if i == j else f"{numbers[i]}-{numbers[j]}")',
         code=r'''
def collapse_ranges(numbers):
    """Write sorted distinct ints compactly: [1, 2, 3, 7, 9, 10] -> "1-3,7,9-10"."""
    parts = []
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        parts.append(str(numbers[i]) if i == j else f"{numbers[i]}-{numbers[j]}")
        i = j + 1
    return ",".join(parts)
''', test=r'''
assert collapse_ranges([1, 2, 3, 7, 9, 10]) == "1-3,7,9-10"
assert collapse_ranges([4]) == "4"
assert collapse_ranges([]) == ""
'''),
    dict(name="parse_log", blank="date, level, module, message = match.groups()", code=r'''
import re

LINE = re.compile(r"(\d{4}-\d\d-\d\d) (\w+) \[(\w+)\] (.*)")


def parse_log(line):
    """Split a log line "DATE LEVEL [module] message" into a dict; None if it does not fit."""
    match = LINE.match(line)
    if not match:
        return None
    date, level, module, message = match.groups()
    return {"date": date, "level": level.lower(), "module": module, "message": message}
''', test=r'''
assert parse_log("2024-03-01 WARN [disk] almost full") == {
    "date": "2024-03-01", "level": "warn", "module": "disk", "message": "almost full"}
assert parse_log("no date here") is None
'''),
    dict(name="to_24h", blank="hours += 12", code=r'''
def to_24h(time):
    """Convert "h:mm AM" or "h:mm PM" to "HH:MM" on the 24-hour clock."""
    clock, period = time.split()
    hours, minutes = (int(x) for x in clock.split(":"))
    if period.upper() == "PM" and hours != 12:
        hours += 12
    if period.upper() == "AM" and hours == 12:
        hours = 0
    return f"{hours:02d}:{minutes:02d}"
''', test=r'''
assert to_24h("7:05 PM") == "19:05"
assert to_24h("12:30 AM") == "00:30"
assert to_24h("12:00 pm") == "12:00"
assert to_24h("9:15 am") == "09:15"
'''),
    dict(name="parse_size", blank="text = text.strip().upper()", code=r'''
def parse_size(text):
    """Parse sizes like "512", "4k", "1.5M" or "2G" (powers of 1024) into a number of bytes."""
    factors = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    text = text.strip().upper()
    if text and text[-1] in factors:
        return int(float(text[:-1]) * factors[text[-1]])
    return int(text)
''', test=r'''
assert parse_size("512") == 512
assert parse_size("4k") == 4096
assert parse_size(" 1.5M ") == 1572864
assert parse_size("2g") == 2 * 1024 ** 3
'''),
]
