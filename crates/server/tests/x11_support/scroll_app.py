#!/usr/bin/python3
"""A GTK 3 window of 30 buttons in a scrolled pane, for the cache attacks
(`x11_cache_attacks`): the test scrolls it from outside, on standard
input ("scroll Y": the pane's vertical adjustment set to Y, answered
"ack scroll Y" once GTK has applied it).

Usage: scroll_app.py TITLE POLICY  (POLICY: auto, external: the vertical
scroll bar shown when needed, or never shown while the pane still
scrolls)
"""
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

POLICY = {"auto": Gtk.PolicyType.AUTOMATIC, "external": Gtk.PolicyType.EXTERNAL}[sys.argv[2]]
window = Gtk.Window(title=sys.argv[1])
window.set_default_size(300, 200)
pane = Gtk.ScrolledWindow()
pane.set_policy(Gtk.PolicyType.NEVER, POLICY)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
for i in range(30):
    box.pack_start(Gtk.Button(label=f"Button {i}"), False, False, 0)
pane.add(box)
window.add(pane)
window.show_all()
window.move(100, 100)


def ack(line):
    print("ack", line, flush=True)
    return False


def command(source, condition):
    line = source.readline()
    if not line:
        Gtk.main_quit()
        return False
    line = line.strip()
    if line.startswith("scroll "):
        pane.get_vadjustment().set_value(float(line.split()[1]))
    GLib.idle_add(ack, line, priority=GLib.PRIORITY_LOW)
    return True


GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, command)
Gtk.main()
