#!/usr/bin/python3
"""An order form in Qt (PyQt5 or PyQt6, the first argument), for the
element tests: a line edit labelled "Full name" (by a QFormLayout label),
a check box "Gift wrap" and a button "Send order". Pressing the button
prints what the form holds as one JSON line on standard output, the
application's own evidence of what it was given.

Usage: qt_form.py PyQt5|PyQt6 TITLE
"""
import importlib
import json
import sys

binding = sys.argv[1]
widgets = importlib.import_module(binding + ".QtWidgets")

app = widgets.QApplication(sys.argv[:1])
window = widgets.QWidget()
window.setWindowTitle(sys.argv[2])
layout = widgets.QFormLayout(window)
name = widgets.QLineEdit()
layout.addRow("Full name", name)
gift = widgets.QCheckBox("Gift wrap")
layout.addRow(gift)
send = widgets.QPushButton("Send order")
layout.addRow(send)


def sent():
    print(json.dumps({"name": name.text(), "gift": gift.isChecked()}), flush=True)


send.clicked.connect(sent)
window.resize(360, 160)
window.show()
sys.exit(app.exec() if hasattr(app, "exec") else app.exec_())
