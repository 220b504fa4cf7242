"""The functions of eval_funcs.py, written for that evaluation and published nowhere else.

Each entry: `name` (the function or class the code defines), `code` (what the model sees, with
any imports it needs), `test` (plain asserts; the harness runs them as the body of `test()`) and
`blank` (the text of the line that is blanked, without its indentation: it occurs once in
`code`, as the second or a later non-empty line of the body after the docstring). The category
is the module's name. The order is fixed and takes the categories in turn, so that the first
N (`--only N`) draw on all of them.
"""
from . import maps, numeric, objects, parsing, recursive, seqs, text


def _in_turn(modules):
    lists = [[dict(entry, category=m.__name__.rsplit(".", 1)[1]) for entry in m.FUNCS]
             for m in modules]
    return [entries[i] for i in range(max(map(len, lists)))
            for entries in lists if i < len(entries)]


FUNCS = _in_turn((text, seqs, maps, numeric, parsing, recursive, objects))
