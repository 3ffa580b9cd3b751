#!/usr/bin/python3
"""The baseline of the `trees` benchmark: one window's accessible tree read
with pyatspi (the Python client Orca and Accerciser use), reading for each
node what the server reads: its role, name, description, states, screen
extents (in a GTK window only of the nodes it shows, as the server), action
names, and the text of a text field.

Usage: pyatspi_walk.py PID TITLE
Prints one JSON line: {"nodes": N, "ms": T}, T the walk's wall time.
"""
import json
import sys
import time

import pyatspi

FIELDS = {"text", "entry", "password text", "combo box", "spin button", "slider"}


def frame(pid, title):
    for app in pyatspi.Registry.getDesktop(0):
        if app is None:
            continue
        try:
            if app.get_process_id() != pid:
                continue
        except Exception:
            continue
        windows = [w for w in app if w is not None]
        for window in windows:
            if window.name == title:
                return window
        # A frame with no name (gtk3-widget-factory's): the process's one.
        unnamed = [w for w in windows if not w.name]
        if len(unnamed) == 1:
            return unnamed[0]
    return None


def shown_rule(root):
    """Which nodes the server asks for their extents: in GTK 3 those
    `showing`, in GTK 4 those `showing` or `visible`, elsewhere every one."""
    app = root.getApplication()
    toolkit = (app.toolkitName or "").lower() if app is not None else ""
    version = (app.toolkitVersion or "") if app is not None else ""
    if toolkit.startswith("gtk"):
        if version.strip().startswith("4"):
            return lambda s: s.contains(pyatspi.STATE_SHOWING) or s.contains(pyatspi.STATE_VISIBLE)
        return lambda s: s.contains(pyatspi.STATE_SHOWING)
    return lambda s: True


def walk(root):
    asks_extents = shown_rule(root)
    nodes = 0
    stack = [root]
    while stack:
        node = stack.pop()
        nodes += 1
        try:
            role = node.getRoleName()
            _ = node.name
            _ = node.description
            states = node.getState()
            _ = states.getStates()
            if asks_extents(states):
                try:
                    _ = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
                except NotImplementedError:
                    pass
            try:
                action = node.queryAction()
                _ = [action.getName(i) for i in range(action.nActions)]
            except NotImplementedError:
                pass
            if role in FIELDS:
                try:
                    text = node.queryText()
                    _ = text.getText(0, text.characterCount)
                except NotImplementedError:
                    pass
            children = [node.getChildAtIndex(i) for i in range(node.childCount)]
        except Exception:
            continue
        stack.extend(c for c in reversed(children) if c is not None)
    return nodes


if __name__ == "__main__":
    pid, title = int(sys.argv[1]), sys.argv[2]
    root = frame(pid, title)
    if root is None:
        print(json.dumps({"error": "no such window"}))
        sys.exit(1)
    started = time.perf_counter()
    count = walk(root)
    print(json.dumps({"nodes": count, "ms": (time.perf_counter() - started) * 1000}))
