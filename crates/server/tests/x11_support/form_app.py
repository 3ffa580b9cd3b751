#!/usr/bin/python3
"""A GTK 3 form the element tests change under the server's feet.

The server under test reaches it only as any GTK application: through the
toolkit's own bridge to the accessibility bus. The test drives the form
from outside, on this program's standard input, one command a line, each
answered with "ack <command>" once GTK has applied it:

    rename OLD NEW     the label of the field OLD reads NEW
    remove LABEL       the field and its label are gone
    swap A B           the fields A and B change places (rows reordered)
    insensitive LABEL  the field can no longer be edited or acted on
    rows N             N more labelled rows (a form larger than a walk's caps)
    values             prints "values A=a|B=b|..." (every field, in order)
    title NEW          the window's title reads NEW
    fill LABEL TEXT    the field LABEL holds TEXT, put there by the program
    twin TITLE         a second window of this process titled TITLE, with
                       the same fields, of the same size at the same place,
                       above the first (both are moved to 100,100)
    moveto X Y         the window is moved to X,Y
    twinvalues         prints "twinvalues A=a|..." (the second window's)
    tick N             the first field's label changes every 100 ms, N
                       times ("Tick 1", "Tick 2", ...), then the program
                       prints "ticked N"
    slow MS            from now on the main loop stalls MS ms whenever it
                       is idle (an application whose main loop is slow:
                       each answer it gives the bus waits up to MS ms), and
                       each change of a field's text prints "changed LABEL"

Usage: form_app.py TITLE FIELD... where a field is LABEL, or LABEL:secret
(a password entry), or LABEL:upper (the application rewrites what is put
in it in capitals: a value the application changes), or @menus (a menu
bar: File > Save, File > Recent > Report, File > Save as (disabled),
Edit > Clear; choosing an item prints "menu File>Save" and so on). The OK
button prints the values line and exits 0; Cancel exits 1 printing
nothing.
"""

import os
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

# The program's name, which is its Wayland app_id: ADK_FORM_APP_ID when set
# (a hostile window names itself as it likes).
GLib.set_prgname(os.environ.get("ADK_FORM_APP_ID", "adk-form"))


class Form:
    def __init__(self, title, fields, listen=True):
        self.specs = list(fields)
        self.twin = None
        self.window = Gtk.Window(title=title)
        self.window.set_default_size(420, 200)
        self.window.connect("delete-event", lambda *_: self.finish(None))
        self.grid = Gtk.Grid(row_spacing=6, column_spacing=12, margin=12)
        self.rows = []  # [label widget, entry], in the form's order
        menus = "@menus" in fields
        fields = [f for f in fields if f != "@menus"]
        for spec in fields:
            name, _, kind = spec.partition(":")
            label = Gtk.Label(label=name, xalign=0)
            entry = Gtk.Entry()
            if kind == "secret":
                entry.set_visibility(False)
            if kind == "upper":
                entry.connect("changed", self.capitals)
            self.rows.append([label, entry])
        buttons = Gtk.Box(spacing=6)
        cancel = Gtk.Button(label="Cancel")
        cancel.connect("clicked", lambda *_: self.finish(None))
        ok = Gtk.Button(label="OK")
        ok.connect("clicked", lambda *_: self.finish(self.values()))
        buttons.pack_end(ok, False, False, 0)
        buttons.pack_end(cancel, False, False, 0)
        self.outer = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
        if menus:
            self.outer.pack_start(self.menu_bar(), False, False, 0)
        self.outer.pack_start(self.grid, True, True, 0)
        self.outer.pack_end(buttons, False, False, 0)
        self.window.add(self.outer)
        self.layout()
        self.window.show_all()
        if listen:
            GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, self.command)

    def menu_bar(self):
        def item(path, enabled=True):
            entry = Gtk.MenuItem(label=path[-1])
            entry.connect("activate", lambda *_: print("menu " + ">".join(path), flush=True))
            entry.set_sensitive(enabled)
            return entry

        def menu(title, entries):
            top = Gtk.MenuItem(label=title)
            inner = Gtk.Menu()
            for entry in entries:
                inner.append(entry)
            top.set_submenu(inner)
            return top

        bar = Gtk.MenuBar()
        recent = menu("Recent", [item(["File", "Recent", "Report"])])
        bar.append(menu("File", [
            item(["File", "Save"]),
            recent,
            item(["File", "Save as"], enabled=False),
        ]))
        bar.append(menu("Edit", [item(["Edit", "Clear"])]))
        return bar

    @staticmethod
    def capitals(entry):
        text = entry.get_text()
        if text != text.upper():
            entry.set_text(text.upper())

    def layout(self):
        for child in self.grid.get_children():
            self.grid.remove(child)
        for row, (label, entry) in enumerate(self.rows):
            self.grid.attach(label, 0, row, 1, 1)
            self.grid.attach(entry, 1, row, 1, 1)
        self.grid.show_all()

    def row(self, name):
        for row in self.rows:
            if row[0].get_text() == name:
                return row
        raise KeyError(name)

    def values(self):
        return "values " + "|".join(
            f"{label.get_text()}={entry.get_text()}" for label, entry in self.rows
        )

    def finish(self, line):
        if line is not None:
            print(line, flush=True)
        Gtk.main_quit()
        sys.exit(0 if line is not None else 1)

    def command(self, source, condition):
        line = source.readline()
        if not line:
            return False
        words = line.split()
        verb, args = words[0], words[1:]
        if verb == "rename":
            self.row(args[0])[0].set_text(args[1])
        elif verb == "remove":
            self.rows.remove(self.row(args[0]))
            self.layout()
        elif verb == "swap":
            a, b = self.rows.index(self.row(args[0])), self.rows.index(self.row(args[1]))
            self.rows[a], self.rows[b] = self.rows[b], self.rows[a]
            self.layout()
        elif verb == "insensitive":
            self.row(args[0])[1].set_sensitive(False)
        elif verb == "rows":
            start = len(self.rows)
            for i in range(int(args[0])):
                self.rows.append([Gtk.Label(label=f"Row {start + i}", xalign=0), Gtk.Entry()])
            self.layout()
        elif verb == "values":
            print(self.values(), flush=True)
        elif verb == "title":
            self.window.set_title(" ".join(args))
        elif verb == "twin":
            self.window.move(100, 100)
            self.twin = Form(" ".join(args), self.specs, listen=False)
            self.twin.window.move(100, 100)
        elif verb == "moveto":
            self.window.move(int(args[0]), int(args[1]))
        elif verb == "twinvalues":
            print("twin" + self.twin.values(), flush=True)
        elif verb == "spin":
            spinner = Gtk.Spinner()
            self.outer.pack_start(spinner, False, False, 0)
            spinner.show()
            spinner.start()
        elif verb == "widen":
            self.row(args[0])[1].set_size_request(int(args[1]), -1)
        elif verb == "fill":
            self.row(args[0])[1].set_text(" ".join(args[1:]))
        elif verb == "tick":
            self.ticks = (0, int(args[0]))
            GLib.timeout_add(100, self.tick)
        elif verb == "slow":
            self.stall = int(args[0]) / 1000
            GLib.timeout_add(20, self.stalled, priority=GLib.PRIORITY_LOW)
            for label, entry in self.rows:
                entry.connect(
                    "changed",
                    lambda _, label=label: print(f"changed {label.get_text()}", flush=True),
                )
        # Let GTK apply the change (and its bridge tell the bus) first.
        GLib.idle_add(self.ack, line.strip(), priority=GLib.PRIORITY_LOW)
        return True

    def tick(self):
        done, most = self.ticks
        done += 1
        self.rows[0][0].set_text(f"Tick {done}")
        self.ticks = (done, most)
        if done < most:
            return True
        print(f"ticked {done}", flush=True)
        return False

    def stalled(self):
        time.sleep(self.stall)
        return True

    def ack(self, line):
        print(f"ack {line}", flush=True)
        return False


if __name__ == "__main__":
    Form(sys.argv[1], sys.argv[2:])
    Gtk.main()
