"""Recursion."""

FUNCS = [
    dict(name="factorial", blank="return n * factorial(n - 1)", code=r'''
def factorial(n):
    """Return n! for n >= 0, recursively."""
    if n <= 1:
        return 1
    return n * factorial(n - 1)
''', test=r'''
assert factorial(0) == 1
assert factorial(5) == 120
assert factorial(10) == 3628800
'''),
    dict(name="subsets", blank="rest = subsets(items[1:])", code=r'''
def subsets(items):
    """Return all subsets of items as lists, each keeping the input order."""
    if not items:
        return [[]]
    rest = subsets(items[1:])
    return rest + [[items[0]] + s for s in rest]
''', test=r'''
assert sorted(subsets([1, 2, 3])) == [[], [1], [1, 2], [1, 2, 3], [1, 3], [2], [2, 3], [3]]
assert subsets([]) == [[]]
'''),
    dict(name="permutations", blank="result.append([first] + rest)", code=r'''
def permutations(items):
    """Return all orderings of the list items, in lexicographic order of positions."""
    if len(items) <= 1:
        return [list(items)]
    result = []
    for i, first in enumerate(items):
        for rest in permutations(items[:i] + items[i + 1:]):
            result.append([first] + rest)
    return result
''', test=r'''
assert permutations([1, 2, 3]) == [[1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2],
                                   [3, 2, 1]]
assert permutations(["x"]) == [["x"]]
'''),
    dict(name="depth", blank="return 1", code=r'''
def depth(value):
    """Return how deeply lists nest in value: 0 for a non-list, 1 for a flat list."""
    if not isinstance(value, list):
        return 0
    if not value:
        return 1
    return 1 + max(depth(item) for item in value)
''', test=r'''
assert depth(5) == 0
assert depth([]) == 1
assert depth([1, [2, [3, []]], 4]) == 4
assert depth([[], 1]) == 2
'''),
    dict(name="flatten", blank="flat.extend(flatten(item))", code=r'''
def flatten(value):
    """Flatten arbitrarily nested lists into one list of the non-list items."""
    if not isinstance(value, list):
        return [value]
    flat = []
    for item in value:
        flat.extend(flatten(item))
    return flat
''', test=r'''
assert flatten([1, [2, [3, [4]]], [], 5]) == [1, 2, 3, 4, 5]
assert flatten(7) == [7]
assert flatten([]) == []
'''),
    dict(name="hanoi", blank="moves += hanoi(n - 1, spare, target, source)", code=r'''
def hanoi(n, source="A", target="C", spare="B"):
    """Return the moves (from, to) that carry n disks from source to target."""
    if n == 0:
        return []
    moves = hanoi(n - 1, source, spare, target)
    moves.append((source, target))
    moves += hanoi(n - 1, spare, target, source)
    return moves
''', test=r'''
assert hanoi(1) == [("A", "C")]
assert hanoi(2) == [("A", "B"), ("A", "C"), ("B", "C")]
assert len(hanoi(5)) == 31
'''),
    dict(name="combinations",
         blank="with_first = [[items[0]] + c for c in combinations(items[1:], k - 1)]",
         code=r'''
def combinations(items, k):
    """Return all k-element combinations of the list items, in input order."""
    if k == 0:
        return [[]]
    if len(items) < k:
        return []
    with_first = [[items[0]] + c for c in combinations(items[1:], k - 1)]
    return with_first + combinations(items[1:], k)
''', test=r'''
assert combinations([1, 2, 3, 4], 2) == [[1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]]
assert combinations([1, 2], 3) == []
assert combinations([], 0) == [[]]
'''),
    dict(name="count_paths",
         blank="return count_paths(rows - 1, cols) + count_paths(rows, cols - 1)", code=r'''
def count_paths(rows, cols):
    """Count the lattice paths of right and down steps across a rows x cols grid."""
    if rows == 0 or cols == 0:
        return 1
    return count_paths(rows - 1, cols) + count_paths(rows, cols - 1)
''', test=r'''
assert count_paths(2, 2) == 6
assert count_paths(3, 3) == 20
assert count_paths(0, 4) == 1
'''),
    dict(name="tree_sum", blank="value, left, right = node", code=r'''
def tree_sum(node):
    """Sum the values of a binary tree of (value, left, right) tuples; None is the empty tree."""
    if node is None:
        return 0
    value, left, right = node
    return value + tree_sum(left) + tree_sum(right)
''', test=r'''
assert tree_sum((1, (2, None, None), (3, (4, None, None), None))) == 10
assert tree_sum(None) == 0
'''),
    dict(name="merge_sort", blank="left, right = merge_sort(items[:mid]), merge_sort(items[mid:])",
         code=r'''
def merge_sort(items):
    """Return a sorted copy of items (merge sort)."""
    if len(items) <= 1:
        return list(items)
    mid = len(items) // 2
    left, right = merge_sort(items[:mid]), merge_sort(items[mid:])
    merged = []
    while left and right:
        merged.append(left.pop(0) if left[0] <= right[0] else right.pop(0))
    return merged + left + right
''', test=r'''
assert merge_sort([5, 2, 9, 1, 5, 6]) == [1, 2, 5, 5, 6, 9]
assert merge_sort([]) == []
assert merge_sort([3, 2, 1]) == [1, 2, 3]
'''),
    dict(name="quicksort", blank="larger = [x for x in rest if x >= pivot]", code=r'''
def quicksort(items):
    """Return a sorted copy of items (quicksort with the first item as pivot)."""
    if len(items) <= 1:
        return list(items)
    pivot, rest = items[0], items[1:]
    smaller = [x for x in rest if x < pivot]
    larger = [x for x in rest if x >= pivot]
    return quicksort(smaller) + [pivot] + quicksort(larger)
''', test=r'''
assert quicksort([3, 6, 1, 8, 3, 2]) == [1, 2, 3, 3, 6, 8]
assert quicksort([1]) == [1]
assert quicksort([]) == []
'''),
    dict(name="edit_distance", blank="cost = 0 if a[i - 1] == b[j - 1] else 1", code=r'''
from functools import lru_cache


def edit_distance(a, b):
    """Levenshtein distance between the strings a and b."""
    @lru_cache(maxsize=None)
    def dist(i, j):
        if i == 0 or j == 0:
            return i + j
        cost = 0 if a[i - 1] == b[j - 1] else 1
        return min(dist(i - 1, j) + 1, dist(i, j - 1) + 1, dist(i - 1, j - 1) + cost)
    return dist(len(a), len(b))
''', test=r'''
assert edit_distance("kitten", "sitting") == 3
assert edit_distance("", "abc") == 3
assert edit_distance("same", "same") == 0
'''),
    dict(name="total_size", blank="total += total_size(value)", code=r'''
def total_size(tree):
    """Sum the integer leaves of nested dicts: {"a": 1, "b": {"c": 2}} -> 3."""
    total = 0
    for value in tree.values():
        if isinstance(value, dict):
            total += total_size(value)
        else:
            total += value
    return total
''', test=r'''
assert total_size({"a": 1, "b": {"c": 2, "d": {"e": 3}}}) == 6
assert total_size({}) == 0
'''),
]
