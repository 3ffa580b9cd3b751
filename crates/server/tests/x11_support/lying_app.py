#!/usr/bin/python3
"""An application that lies to assistive technologies, for the server's
tests (`x11_lying_application`): its `GetAll` names a button other than its
`Get` does, a panel says it has no children and lists one, a button lists
500 empty action names, and in MODE=hang its frame never answers
`GetAttributes` (it calls itself Chromium, which the server reads the
attributes of), and in MODE=twofocus a second field reads `focused`
beside the one that holds the focus and its caret, and in MODE=cache it
has a check box, a field labelled by a label outside its window's tree,
a button and a node not shown, and obeys the commands a test appends to
the file named by $CTL (one a line; each logged "done CMD" once its
events are sent): it changes itself and sends the AT-SPI events a
toolkit would (or, for the lies, events that say less than happened).
It joins the accessibility bus's registry itself
(`Socket.Embed`), so no toolkit is needed, and logs each call that matters
to the file it is given.

Usage: lying_app.py TITLE TOOLKIT LOG  (environment: MODE=hang, twofocus,
cache (with CTL=FILE) or nothing)
"""
import sys, os, json
import dbus, dbus.service, dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
TITLE, TOOLKIT, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
MODE = os.environ.get("MODE", "")
sess = dbus.SessionBus()
addr = sess.get_object("org.a11y.Bus", "/org/a11y/bus").GetAddress(dbus_interface="org.a11y.Bus")
bus = dbus.bus.BusConnection(addr)
ME = bus.get_unique_name()

def log(*a):
    with open(LOG, "a") as f:
        f.write(" ".join(str(x) for x in a) + "\n")

BITS = lambda *b: dbus.Array([dbus.UInt32(sum(1 << x for x in b if x < 32)), dbus.UInt32(0)], signature="u")
SHOWN = (8, 24, 25, 30)
ACTIVE, CHECKED, EDITABLE, FOCUSABLE, FOCUSED = 1, 4, 7, 11, 12
ENABLED, SENSITIVE, SHOWING, VISIBLE, DEFUNCT = 8, 24, 25, 30, 6
ACC, COMP, ACT, APP = "org.a11y.atspi.Accessible", "org.a11y.atspi.Component", "org.a11y.atspi.Action", "org.a11y.atspi.Application"
TEXT, COLL = "org.a11y.atspi.Text", "org.a11y.atspi.Collection"
ROOT = "/org/a11y/atspi/accessible/root"
state = {"get_name_calls": 0, "do_action": [], "hidden_children": ["/hidden"]}

# path -> dict
N = {
  ROOT: dict(role="application", name="fake", kids=["/f"], ifaces=[ACC, APP]),
  "/f": dict(role="frame", name=TITLE, kids=["/b1", "/p1", "/many", "/weird", "/neg", "/t1", "/t2"], ifaces=[ACC, COMP, COLL], ext=(100, 100, 400, 300), states=SHOWN + (ACTIVE,)),
  # GetAll says Cancel, Get says Delete
  "/b1": dict(role="push button", name="Delete", allname="Cancel", kids=[], ifaces=[ACC, COMP, ACT], ext=(110, 110, 50, 20), actions=["click"]),
  # says it has no children, yet GetChildren lists one
  "/p1": dict(role="panel", name="Panel", kids=["/hidden"], count=0, ifaces=[ACC, COMP], ext=(110, 140, 100, 100)),
  "/hidden": dict(role="push button", name="Hidden", kids=[], ifaces=[ACC, COMP, ACT], ext=(120, 150, 50, 20), actions=["click"]),
  # 500 empty action names
  "/many": dict(role="push button", name="Many", kids=[], ifaces=[ACC, COMP, ACT], ext=(200, 110, 50, 20), actions=[""] * 500),
  # wrong types in GetAll: ChildCount as string, Name as int
  "/weird": dict(role="push button", name="Weird", kids=["/wk"], ifaces=[ACC, COMP], ext=(260, 110, 50, 20), count=dbus.String("zero"), allname=dbus.Int32(7)),
  "/wk": dict(role="label", name="WK", kids=[], ifaces=[ACC, COMP], ext=(260, 110, 10, 10)),
  # negative / huge child count
  "/neg": dict(role="panel", name="Neg", kids=["/nk"], ifaces=[ACC, COMP], ext=(320, 110, 50, 20), count=dbus.Int32(-5)),
  "/nk": dict(role="label", name="NK", kids=[], ifaces=[ACC, COMP], ext=(320, 110, 10, 10)),
  # a field that takes the focus and holds the caret, and one beside it
  # that reads focused too in MODE=twofocus
  "/t1": dict(role="text", name="Field", kids=[], ifaces=[ACC, COMP, TEXT], ext=(110, 260, 100, 20), states=SHOWN + (EDITABLE, FOCUSABLE, FOCUSED)),
  "/t2": dict(role="text", name="Other", kids=[], ifaces=[ACC, COMP, TEXT], ext=(220, 260, 100, 20),
              states=SHOWN + (EDITABLE, FOCUSABLE) + ((FOCUSED,) if MODE == "twofocus" else ())),
}

if MODE == "cache":
    N["/f"]["kids"] = N["/f"]["kids"] + ["/ck", "/lp", "/t3", "/mv", "/hn"]
    N.update({
      # a check box, checked
      "/ck": dict(role="check box", name="Agree", kids=[], ifaces=[ACC, COMP, ACT], ext=(110, 200, 60, 20), actions=["click"], states=SHOWN + (CHECKED,)),
      # a label in the tree, and one outside it (no node lists it)
      "/lp": dict(role="label", name="Pay", kids=[], ifaces=[ACC, COMP], ext=(180, 200, 30, 20)),
      "/lx": dict(role="label", name="", kids=[], ifaces=[ACC, COMP], ext=(0, 0, 0, 0)),
      # a field with no name of its own, labelled by both (the first
      # with a name is its label)
      "/t3": dict(role="text", name="", kids=[], ifaces=[ACC, COMP, TEXT], ext=(220, 200, 100, 20), states=SHOWN + (EDITABLE, FOCUSABLE),
                  rels=[(2, ["/lx", "/lp"])]),
      "/mv": dict(role="push button", name="Move", kids=[], ifaces=[ACC, COMP, ACT], ext=(330, 200, 50, 20), actions=["click"]),
      # a node GTK does not show (no `showing`): not asked its extents
      "/hn": dict(role="push button", name="Later", kids=[], ifaces=[ACC, COMP, ACT], ext=(390, 200, 50, 20), actions=["click"], states=(ENABLED, SENSITIVE, VISIBLE)),
    })

def ref(p): return dbus.Struct((ME, dbus.ObjectPath(p)), signature="so")

class Obj(dbus.service.FallbackObject):
    SUPPORTS_MULTIPLE_OBJECT_PATHS = True
    def n(self, p): return N.get(p) or N["/wk"]
    @dbus.service.method(ACC, in_signature="", out_signature="s", rel_path_keyword="p")
    def GetRoleName(self, p): return self.n(p)["role"]
    @dbus.service.method(ACC, in_signature="", out_signature="u", rel_path_keyword="p")
    def GetRole(self, p): return dbus.UInt32(0)
    @dbus.service.method(ACC, in_signature="", out_signature="s", rel_path_keyword="p")
    def GetLocalizedRoleName(self, p): return self.n(p)["role"]
    @dbus.service.method(ACC, in_signature="", out_signature="au", rel_path_keyword="p")
    def GetState(self, p):
        log('GetState', p); return BITS(*self.n(p).get("states", SHOWN))
    @dbus.service.method(ACC, in_signature="", out_signature="as", rel_path_keyword="p")
    def GetInterfaces(self, p):
        log('GetInterfaces', p); return dbus.Array(self.n(p)["ifaces"], signature="s")
    @dbus.service.method(ACC, in_signature="", out_signature="a(so)", rel_path_keyword="p")
    def GetChildren(self, p):
        log("GetChildren", p)
        kids = state["hidden_children"] if p == "/p1" else self.n(p)["kids"]
        return dbus.Array([ref(k) for k in kids], signature="(so)")
    @dbus.service.method(ACC, in_signature="i", out_signature="(so)", rel_path_keyword="p")
    def GetChildAtIndex(self, i, p):
        kids = state["hidden_children"] if p == "/p1" else self.n(p)["kids"]
        return ref(kids[i])
    @dbus.service.method(ACC, in_signature="", out_signature="i", rel_path_keyword="p")
    def GetIndexInParent(self, p): return 0
    @dbus.service.method(ACC, in_signature="", out_signature="a(ua(so))", rel_path_keyword="p")
    def GetRelationSet(self, p):
        return dbus.Array([dbus.Struct((dbus.UInt32(kind), dbus.Array([ref(t) for t in targets], signature="(so)")), signature="ua(so)")
                           for kind, targets in self.n(p).get("rels", [])], signature="(ua(so))")
    @dbus.service.method(ACC, in_signature="", out_signature="a{ss}", rel_path_keyword="p", async_callbacks=("ok", "err"))
    def GetAttributes(self, p, ok, err):
        log("GetAttributes", p)
        if MODE == "hang":
            return  # never answers
        ok(dbus.Dictionary({}, signature="ss"))
    @dbus.service.method(ACC, in_signature="", out_signature="(so)", rel_path_keyword="p")
    def GetApplication(self, p): return ref(ROOT)
    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v", rel_path_keyword="p")
    def Get(self, iface, prop, p):
        n = self.n(p)
        log('Get', p, iface, prop)
        if iface == APP:
            return {"ToolkitName": TOOLKIT, "Version": "120.0", "AtspiVersion": "2.1", "Id": dbus.Int32(1)}[prop]
        if iface == TEXT and prop == "CaretOffset":
            return dbus.Int32(0 if p == "/t1" else -1)
        if iface == TEXT and prop == "CharacterCount":
            return dbus.Int32(0)
        if iface == ACT and prop == "NActions":
            return dbus.Int32(len(n.get("actions", [])))
        if prop == "Name": return n["name"]
        if prop == "Description": return ""
        if prop == "ChildCount": return dbus.Int32(len(n["kids"]))
        if prop == "Parent": return ref(ROOT)
        if prop == "Locale": return "C"
        if prop == "AccessibleId": return ""
        raise dbus.exceptions.DBusException("no such property")
    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="s", out_signature="a{sv}", rel_path_keyword="p")
    def GetAll(self, iface, p):
        n = self.n(p)
        log("GetAll", p)
        return dbus.Dictionary({"Name": n.get("allname", n["name"]), "Description": "",
                                "ChildCount": n.get("count", dbus.Int32(len(n["kids"]))),
                                "Parent": ref(ROOT)}, signature="sv")
    @dbus.service.method(COMP, in_signature="u", out_signature="(iiii)", rel_path_keyword="p")
    def GetExtents(self, coord, p):
        log('GetExtents', p, coord); e = self.n(p).get("ext", (0, 0, 0, 0)); return dbus.Struct([dbus.Int32(v) for v in e], signature="iiii")
    @dbus.service.method(COMP, in_signature="iiu", out_signature="(so)", rel_path_keyword="p")
    def GetAccessibleAtPoint(self, x, y, c, p): return ref(p)
    @dbus.service.method(COMP, in_signature="", out_signature="b", rel_path_keyword="p")
    def GrabFocus(self, p):
        log("GrabFocus", p); return True
    @dbus.service.method(TEXT, in_signature="ii", out_signature="s", rel_path_keyword="p")
    def GetText(self, start, end, p): return ""
    @dbus.service.method(COLL, in_signature="(aiia{ss}iaiiasib)uib", out_signature="a(so)", rel_path_keyword="p")
    def GetMatches(self, rule, sortby, count, traverse, p):
        log("GetMatches", p)
        focused = [k for k, n in N.items() if FOCUSED in n.get("states", ())]
        return dbus.Array([ref(k) for k in focused], signature="(so)")
    @dbus.service.method(ACT, in_signature="", out_signature="a(sss)", rel_path_keyword="p")
    def GetActions(self, p):
        return dbus.Array([dbus.Struct((a, "", ""), signature="sss") for a in self.n(p).get("actions", [])], signature="(sss)")
    @dbus.service.method(ACT, in_signature="i", out_signature="s", rel_path_keyword="p")
    def GetName(self, i, p):
        state["get_name_calls"] += 1
        log("GetName", p, i, "total", state["get_name_calls"])
        return "click" if i == 3 else ""
    @dbus.service.method(ACT, in_signature="i", out_signature="b", rel_path_keyword="p")
    def DoAction(self, i, p):
        log("DoAction", p, i); return True
    @dbus.service.method(APP, in_signature="", out_signature="s", rel_path_keyword="p")
    def GetApplicationBusAddress(self, p):
        raise dbus.exceptions.DBusException("no")

EV = "org.a11y.atspi.Event."
def emit(path, iface, member, kind="", d1=0, d2=0, value=None):
    m = dbus.lowlevel.SignalMessage(path, EV + iface, member)
    m.append(kind, dbus.Int32(d1), dbus.Int32(d2), value if value is not None else dbus.Int32(0, variant_level=1),
             dbus.Dictionary({}, signature="sv"), signature="siiva{sv}")
    bus.send_message(m)

def command(line):
    words = line.split()
    verb, args = words[0], words[1:]
    if verb == "lie_checked":
        # unchecked, announced as still checked (the value the tree holds)
        N["/ck"]["states"] = SHOWN
        emit("/ck", "Object", "StateChanged", "checked", 1)
    elif verb == "name_lx":
        # the label outside the tree takes a name, as AT-SPI says
        N["/lx"]["name"] = "Delete all"
        emit("/lx", "Object", "PropertyChange", "accessible-name", 0, 0, dbus.String("Delete all", variant_level=1))
    elif verb == "twin":
        # a second window of the same title at the same place, as a
        # toolkit announces it (on the application and the new window)
        N["/f2"] = dict(role="frame", name=TITLE, kids=["/b9"], ifaces=[ACC, COMP, COLL], ext=N["/f"]["ext"], states=SHOWN + (ACTIVE,))
        N["/b9"] = dict(role="push button", name="Erase everything", kids=[], ifaces=[ACC, COMP, ACT], ext=(110, 110, 50, 20), actions=["click"])
        N[ROOT]["kids"] = N[ROOT]["kids"] + ["/f2"]
        emit(ROOT, "Object", "ChildrenChanged", "add", 1, 0, dbus.Struct((ME, dbus.ObjectPath("/f2")), signature="so", variant_level=1))
        emit("/f2", "Window", "Create", "", 0, 0, dbus.String(TITLE, variant_level=1))
    elif verb == "show_hn":
        N["/hn"]["states"] = SHOWN
        emit("/hn", "Object", "StateChanged", "showing", 1)
    elif verb == "bounds_same":
        emit("/mv", "Object", "BoundsChanged", "", 0, 0, dbus.Struct([dbus.Int32(v) for v in N["/mv"]["ext"]], signature="iiii", variant_level=1))
    elif verb == "bounds_moved":
        N["/mv"]["ext"] = (330, 230, 50, 20)
        emit("/mv", "Object", "BoundsChanged", "", 0, 0, dbus.Struct([dbus.Int32(v) for v in N["/mv"]["ext"]], signature="iiii", variant_level=1))
    elif verb == "flood":
        # COUNT events, each on an object whose path is LEN characters long
        count, length = int(args[0]), int(args[1])
        for i in range(count):
            emit("/" + ("a" * length) + "/" + str(i), "Object", "StateChanged", "checked", 1)
    log("done", line)

CTL = os.environ.get("CTL")
ctl_seen = [0]
def poll():
    try:
        with open(CTL) as f:
            lines = f.read().splitlines()
    except OSError:
        return True
    for line in lines[ctl_seen[0]:]:
        ctl_seen[0] += 1
        if line.strip():
            command(line.strip())
    return True
if CTL:
    GLib.timeout_add(20, poll)

obj = Obj(bus, "/")
reg = bus.get_object("org.a11y.atspi.Registry", ROOT)
reg.Embed(ref(ROOT), dbus_interface="org.a11y.atspi.Socket")
log("embedded", ME, os.getpid())
GLib.MainLoop().run()
