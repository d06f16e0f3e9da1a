"""The HLO layer: text -> IR -> dataflow graph, and the facts every analysis reads. Imports nothing else of
hloscan.

    grammar.py, hlo.lark   the one grammar (lark LALR); errors.py: HLO001, positioned, with an excerpt
    parser.py              public parse API: the fast line path (fastpath.py) or the whole grammar (strict.py,
                           transform.py), then verification (validate.py); shapes.py parses lone shapes
    ir.py, attrs.py        the IR dataclasses; raw attribute text and the one bracket scanner
    loader.py              files, folders, .gz/.xz, lit splits -> modules (LoadedFile)
    graph.py               the networkx dataflow graph (Module.graph)
    layout.py, signature.py tiled byte sizes; entry signatures and their diffs
    source.py              metadata -> the user's Python file:line
"""
