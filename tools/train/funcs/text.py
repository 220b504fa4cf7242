"""String handling."""

FUNCS = [
    dict(name="reverse_words", blank="words.reverse()", code=r'''
def reverse_words(sentence):
    """Return sentence with the order of its words reversed, single-spaced."""
    words = sentence.split()
    words.reverse()
    return " ".join(words)
''', test=r'''
assert reverse_words("one two three") == "three two one"
assert reverse_words("  spaced   out ") == "out spaced"
assert reverse_words("") == ""
'''),
    dict(name="count_vowels", blank="count += 1", code=r'''
def count_vowels(text):
    """Count the vowels (a, e, i, o, u, either case) in text."""
    count = 0
    for ch in text.lower():
        if ch in "aeiou":
            count += 1
    return count
''', test=r'''
assert count_vowels("Education") == 5
assert count_vowels("rhythm") == 0
assert count_vowels("AEIOU xyz") == 5
'''),
    dict(name="is_palindrome", blank="return False", code=r'''
def is_palindrome(text):
    """Tell whether text reads the same both ways, ignoring case and anything but letters."""
    letters = [ch.lower() for ch in text if ch.isalpha()]
    left, right = 0, len(letters) - 1
    while left < right:
        if letters[left] != letters[right]:
            return False
        left += 1
        right -= 1
    return True
''', test=r'''
assert is_palindrome("Never odd or even")
assert is_palindrome("")
assert not is_palindrome("palindrome")
assert not is_palindrome("abca")
'''),
    dict(name="capitalize_words", blank="parts[i] = part[0].upper() + part[1:]", code=r'''
def capitalize_words(text):
    """Upper-case the first letter of every space-separated word, keeping the spacing."""
    parts = text.split(" ")
    for i, part in enumerate(parts):
        if part:
            parts[i] = part[0].upper() + part[1:]
    return " ".join(parts)
''', test=r'''
assert capitalize_words("hello  wide world") == "Hello  Wide World"
assert capitalize_words("x") == "X"
assert capitalize_words("") == ""
assert capitalize_words("already Done") == "Already Done"
'''),
    dict(name="run_length_encode", blank='out.append(f"{j - i}{text[i]}")', code=r'''
def run_length_encode(text):
    """Encode runs of equal characters as count and character: "aaab" -> "3a1b"."""
    out = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        out.append(f"{j - i}{text[i]}")
        i = j
    return "".join(out)
''', test=r'''
assert run_length_encode("aaabcc") == "3a1b2c"
assert run_length_encode("z") == "1z"
assert run_length_encode("") == ""
'''),
    dict(name="caesar_shift", blank="ch = chr((ord(ch) - base + shift) % 26 + base)", code=r'''
def caesar_shift(text, shift):
    """Shift each ASCII letter by shift places in the alphabet, keeping its case."""
    result = []
    for ch in text:
        if ch.isascii() and ch.isalpha():
            base = ord("a") if ch.islower() else ord("A")
            ch = chr((ord(ch) - base + shift) % 26 + base)
        result.append(ch)
    return "".join(result)
''', test=r'''
assert caesar_shift("Hello, World!", 3) == "Khoor, Zruog!"
assert caesar_shift("xyz", 2) == "zab"
assert caesar_shift("abc", -1) == "zab"
'''),
    dict(name="longest_common_prefix", blank="prefix = words[0]", code=r'''
def longest_common_prefix(words):
    """Return the longest string that every word in words starts with."""
    if not words:
        return ""
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
''', test=r'''
assert longest_common_prefix(["interview", "internet", "interval"]) == "inter"
assert longest_common_prefix(["same"]) == "same"
assert longest_common_prefix(["abc", "xyz"]) == ""
assert longest_common_prefix([]) == ""
'''),
    dict(name="is_anagram", blank='b = b.replace(" ", "").lower()', code=r'''
def is_anagram(a, b):
    """Tell whether a and b use the same letters equally often, ignoring case and spaces."""
    a = a.replace(" ", "").lower()
    b = b.replace(" ", "").lower()
    return sorted(a) == sorted(b)
''', test=r'''
assert is_anagram("Dormitory", "dirty room")
assert is_anagram("listen", "Silent")
assert not is_anagram("apple", "paper")
'''),
    dict(name="snake_to_camel",
         blank="rest = [p[:1].upper() + p[1:].lower() for p in parts[1:] if p]", code=r'''
def snake_to_camel(name):
    """Convert snake_case to camelCase: "read_file_now" -> "readFileNow"."""
    parts = name.split("_")
    first = parts[0].lower()
    rest = [p[:1].upper() + p[1:].lower() for p in parts[1:] if p]
    return first + "".join(rest)
''', test=r'''
assert snake_to_camel("read_file_now") == "readFileNow"
assert snake_to_camel("single") == "single"
assert snake_to_camel("MAX_VALUE") == "maxValue"
'''),
    dict(name="camel_to_snake", blank='out.append("_")', code=r'''
def camel_to_snake(name):
    """Convert camelCase or PascalCase to snake_case: every capital starts a new word."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
''', test=r'''
assert camel_to_snake("readFileNow") == "read_file_now"
assert camel_to_snake("Parser") == "parser"
assert camel_to_snake("getX") == "get_x"
'''),
    dict(name="truncate", blank="return text", code=r'''
def truncate(text, width):
    """Cut text to at most width characters, ending in "..." when it was cut."""
    if len(text) <= width:
        return text
    if width <= 3:
        return "." * width
    return text[:width - 3] + "..."
''', test=r'''
assert truncate("short", 10) == "short"
assert truncate("exactly", 7) == "exactly"
assert truncate("a longer sentence", 10) == "a longe..."
assert truncate("abcdef", 2) == ".."
'''),
    dict(name="strip_comment", blank="quote = ch", code=r'''
def strip_comment(line):
    """Remove a # comment from a line of code, unless the # is inside a quoted string."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i].rstrip()
    return line
''', test=r'''
assert strip_comment("x = 1  # one") == "x = 1"
assert strip_comment('s = "#hash"  # note') == 's = "#hash"'
assert strip_comment("t = '#' + u") == "t = '#' + u"
assert strip_comment("plain") == "plain"
'''),
    dict(name="wrap_words", blank="current = word", code=r'''
def wrap_words(text, width):
    """Greedily wrap the words of text into lines of at most width characters."""
    lines = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines
''', test=r'''
assert wrap_words("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]
assert wrap_words("a b c", 1) == ["a", "b", "c"]
assert wrap_words("", 5) == []
'''),
    dict(name="most_common_char", blank="best = ch", code=r'''
def most_common_char(text):
    """Return the most frequent non-space character of text; ties go to the one seen first."""
    counts = {}
    for ch in text:
        if ch != " ":
            counts[ch] = counts.get(ch, 0) + 1
    best = None
    for ch, n in counts.items():
        if best is None or n > counts[best]:
            best = ch
    return best
''', test=r'''
assert most_common_char("banana bread") == "a"
assert most_common_char("abab") == "a"
assert most_common_char("   ") is None
'''),
    dict(name="mask_card", blank="digits_seen += 1", code=r'''
def mask_card(number):
    """Mask all but the last four digits of a card number, keeping spaces and dashes."""
    digits_seen = 0
    out = []
    for ch in reversed(number):
        if ch.isdigit():
            digits_seen += 1
            if digits_seen > 4:
                ch = "*"
        out.append(ch)
    return "".join(reversed(out))
''', test=r'''
assert mask_card("1234 5678 9012 3456") == "**** **** **** 3456"
assert mask_card("12-34") == "12-34"
assert mask_card("987654") == "**7654"
'''),
    dict(name="count_overlapping", blank="count += 1", code=r'''
def count_overlapping(text, pattern):
    """Count the occurrences of pattern in text, overlapping ones included."""
    count = 0
    start = text.find(pattern)
    while start != -1:
        count += 1
        start = text.find(pattern, start + 1)
    return count
''', test=r'''
assert count_overlapping("aaaa", "aa") == 3
assert count_overlapping("abcabc", "abc") == 2
assert count_overlapping("abc", "x") == 0
'''),
]
