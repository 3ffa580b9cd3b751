"""Prints, one JSON line, the text of every element of an application's
windows that offers AT-SPI's Text interface, read through pyatspi (the
Python client Orca and Accerciser use): an outside check of what an
application shows, written by none of this crate's code.

Usage: read_texts.py APP_NAME_SUBSTRING
"""
import json
import sys

import pyatspi

wanted = sys.argv[1].lower()
texts = []
for app in pyatspi.Registry.getDesktop(0):
    if app is None or wanted not in (app.name or "").lower():
        continue
    stack = [w for w in app]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        try:
            text = node.queryText()
            texts.append(text.getText(0, -1))
        except NotImplementedError:
            pass
        except Exception:
            pass
        stack.extend(c for c in node)
print(json.dumps(texts))
