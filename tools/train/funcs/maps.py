"""Dicts and sets."""

FUNCS = [
    dict(name="invert", blank="keys.sort()", code=r'''
def invert(mapping):
    """Map each value of mapping to the sorted list of the keys that have it."""
    inverted = {}
    for key, value in mapping.items():
        inverted.setdefault(value, []).append(key)
    for keys in inverted.values():
        keys.sort()
    return inverted
''', test=r'''
assert invert({"b": 1, "a": 1, "c": 2}) == {1: ["a", "b"], 2: ["c"]}
assert invert({}) == {}
'''),
    dict(name="group_by_initial", blank="groups[word[0].lower()].append(word)", code=r'''
from collections import defaultdict


def group_by_initial(words):
    """Group words by their first letter, lower-cased; empty words are skipped."""
    groups = defaultdict(list)
    for word in words:
        if word:
            groups[word[0].lower()].append(word)
    return dict(groups)
''', test=r'''
assert group_by_initial(["apple", "Avocado", "", "banana"]) == {
    "a": ["apple", "Avocado"], "b": ["banana"]}
assert group_by_initial([]) == {}
'''),
    dict(name="merge_counts", blank="total[key] = total.get(key, 0) + n", code=r'''
def merge_counts(*counters):
    """Add up several {key: count} dicts into one."""
    total = {}
    for counter in counters:
        for key, n in counter.items():
            total[key] = total.get(key, 0) + n
    return total
''', test=r'''
assert merge_counts({"a": 1, "b": 2}, {"b": 3, "c": 4}) == {"a": 1, "b": 5, "c": 4}
assert merge_counts() == {}
'''),
    dict(name="deep_get", blank="node = node[key]", code=r'''
def deep_get(data, path, default=None):
    """Follow a dotted path like "a.b.c" through nested dicts; default when a key is missing."""
    node = data
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node
''', test=r'''
config = {"db": {"host": "localhost", "port": {"main": 5432}}}
assert deep_get(config, "db.port.main") == 5432
assert deep_get(config, "db.host") == "localhost"
assert deep_get(config, "db.user", "root") == "root"
assert deep_get(config, "db.host.name") is None
'''),
    dict(name="flatten_dict", blank="flat.update(flatten_dict(value, name))", code=r'''
def flatten_dict(data, prefix=""):
    """Flatten nested dicts into one dict with dotted keys."""
    flat = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            flat.update(flatten_dict(value, name))
        else:
            flat[name] = value
    return flat
''', test=r'''
assert flatten_dict({"a": 1, "b": {"c": 2, "d": {"e": 3}}}) == {"a": 1, "b.c": 2, "b.d.e": 3}
assert flatten_dict({}) == {}
'''),
    dict(name="top_k", blank="ranked = sorted(counts, key=lambda w: (-counts[w], w))", code=r'''
def top_k(words, k):
    """Return the k most frequent words, most frequent first, ties in alphabetical order."""
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    return ranked[:k]
''', test=r'''
assert top_k(["b", "a", "b", "c", "a", "b"], 2) == ["b", "a"]
assert top_k(["y", "x"], 5) == ["x", "y"]
'''),
    dict(name="dict_diff", blank="removed = sorted(old.keys() - new.keys())", code=r'''
def dict_diff(old, new):
    """Return (added keys, removed keys, changed keys), each sorted."""
    added = sorted(new.keys() - old.keys())
    removed = sorted(old.keys() - new.keys())
    changed = sorted(k for k in old.keys() & new.keys() if old[k] != new[k])
    return added, removed, changed
''', test=r'''
assert dict_diff({"a": 1, "b": 2, "c": 3}, {"b": 2, "c": 4, "d": 5}) == (["d"], ["a"], ["c"])
assert dict_diff({}, {}) == ([], [], [])
'''),
    dict(name="common_items", blank="common &= set(other)", code=r'''
def common_items(*lists):
    """Return the items present in every list, sorted."""
    if not lists:
        return []
    common = set(lists[0])
    for other in lists[1:]:
        common &= set(other)
    return sorted(common)
''', test=r'''
assert common_items([1, 2, 3, 4], [2, 4, 6], [4, 2, 0]) == [2, 4]
assert common_items([1, 2]) == [1, 2]
assert common_items() == []
'''),
    dict(name="first_unique", blank="return i", code=r'''
def first_unique(text):
    """Return the index of the first character that occurs once in text, or -1."""
    counts = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    for i, ch in enumerate(text):
        if counts[ch] == 1:
            return i
    return -1
''', test=r'''
assert first_unique("swiss") == 1
assert first_unique("aabbc") == 4
assert first_unique("aabb") == -1
'''),
    dict(name="two_sum", blank="seen[v] = j", code=r'''
def two_sum(values, target):
    """Return indices (i, j), i < j, of two values that add up to target, or None."""
    seen = {}
    for j, v in enumerate(values):
        if target - v in seen:
            return seen[target - v], j
        seen[v] = j
    return None
''', test=r'''
assert two_sum([2, 7, 11, 15], 9) == (0, 1)
assert two_sum([3, 2, 4], 6) == (1, 2)
assert two_sum([1, 2], 10) is None
'''),
    dict(name="symmetric_words", blank="words_b = set(b.lower().split())", code=r'''
def symmetric_words(a, b):
    """Return the words that appear in exactly one of two sentences, lower-cased and sorted."""
    words_a = set(a.lower().split())
    words_b = set(b.lower().split())
    return sorted(words_a ^ words_b)
''', test=r'''
assert symmetric_words("the red fox", "The blue fox") == ["blue", "red"]
assert symmetric_words("same words", "words same") == []
'''),
    dict(name="rename_keys", blank="result[new_key] = value", code=r'''
def rename_keys(data, renames):
    """Return a copy of data with keys renamed by the renames mapping; other keys kept."""
    result = {}
    for key, value in data.items():
        new_key = renames.get(key, key)
        result[new_key] = value
    return result
''', test=r'''
assert rename_keys({"fname": "Ada", "age": 36}, {"fname": "first_name"}) == {
    "first_name": "Ada", "age": 36}
assert rename_keys({}, {"a": "b"}) == {}
'''),
    dict(name="histogram", blank="bins[start] = bins.get(start, 0) + 1", code=r'''
def histogram(values, width):
    """Count values into bins of the given width: {start of bin: count}, in order of bins."""
    bins = {}
    for v in values:
        start = (v // width) * width
        bins[start] = bins.get(start, 0) + 1
    return dict(sorted(bins.items()))
''', test=r'''
assert histogram([1, 3, 12, 17, 25, 11], 10) == {0: 2, 10: 3, 20: 1}
assert list(histogram([30, 5], 10)) == [0, 30]
assert histogram([], 5) == {}
'''),
    dict(name="majority", blank="return v", code=r'''
def majority(values):
    """Return the value that makes up more than half of values, or None."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
        if counts[v] * 2 > len(values):
            return v
    return None
''', test=r'''
assert majority([3, 1, 3, 3, 2]) == 3
assert majority([1, 2, 1, 2]) is None
assert majority(["x"]) == "x"
'''),
]
