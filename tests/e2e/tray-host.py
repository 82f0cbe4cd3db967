#!/usr/bin/python3
"""A minimal desktop tray host for the end-to-end tests (tests/e2e/tray.mjs drives it).

Under Xvfb there is no panel, so nothing would show the app's tray icon. This process plays the
panel's part on the session bus, as a real desktop's tray host does:

- it owns ``org.kde.StatusNotifierWatcher`` and implements the watcher interface of the
  StatusNotifierItem spec (RegisterStatusNotifierItem / RegisterStatusNotifierHost, the
  RegisteredStatusNotifierItems / IsStatusNotifierHostRegistered / ProtocolVersion properties and
  the Registered / Unregistered signals), recording which connection registered which item, and
  forgetting an item when its connection leaves the bus;
- on request it reads an item's org.kde.StatusNotifierItem properties, and reads and clicks its
  menu through com.canonical.dbusmenu (AboutToShow, GetLayout, Event "clicked").

Protocol: one JSON request per stdin line, ``{"id": N, "op": ..., ...}``; one JSON answer per stdout
line, starting with ``{"id":N,`` (``"ok": true, "result": ...`` or ``"ok": false, "error": ...``).
Unsolicited lines start with ``{"event":`` (``ready`` once the name is owned, ``registered`` and
``unregistered`` as items come and go). Every D-Bus call is asynchronous, so the watcher keeps
answering items while a request waits on one.

Uses the system Python's GObject introspection (Debian: python3-gi, gir1.2-glib-2.0).
"""

import hashlib
import json
import sys
import time

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

from stand_in import connection_pid, emit, own_name  # noqa: E402

WATCHER_NAME = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
ITEM_INTERFACE = "org.kde.StatusNotifierItem"
MENU_INTERFACE = "com.canonical.dbusmenu"
# The spec's default object path when an item registers with a bus name instead of a path.
DEFAULT_ITEM_PATH = "/StatusNotifierItem"
# One D-Bus call to the app may wait this long: a debug build on a loaded 2-core CI machine can
# be slow to answer while it starts a webview; a hang still ends in an error, not a stuck test.
CALL_TIMEOUT_MS = 20_000

WATCHER_XML = """
<node>
  <interface name="org.kde.StatusNotifierWatcher">
    <method name="RegisterStatusNotifierItem"><arg type="s" name="service" direction="in"/></method>
    <method name="RegisterStatusNotifierHost"><arg type="s" name="service" direction="in"/></method>
    <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
    <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
    <property name="ProtocolVersion" type="i" access="read"/>
    <signal name="StatusNotifierItemRegistered"><arg type="s" name="service"/></signal>
    <signal name="StatusNotifierItemUnregistered"><arg type="s" name="service"/></signal>
    <signal name="StatusNotifierHostRegistered"/>
    <signal name="StatusNotifierHostUnregistered"/>
  </interface>
</node>
"""


def digest(data):
    """Bytes as {bytes, sha256}: what a test compares (icons, images) without kilobytes of JSON."""
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def vardict_items(variant):
    """The (key, value) pairs of an a{sv} GVariant, each value still a GVariant: unpacked whole,
    PyGObject would turn every byte array in it into a list of ints."""
    for i in range(variant.n_children()):
        entry = variant.get_child_value(i)
        yield entry.get_child_value(0).get_string(), entry.get_child_value(1).get_variant()


def plain(value):
    """A GVariant (already unpacked by PyGObject) as JSON-friendly data; byte arrays are hashed."""
    if isinstance(value, (bytes, bytearray)):
        return digest(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def pixmaps(variant):
    """IconPixmap (a(iiay)) as [{width, height, bytes, sha256}] without unpacking ay to lists."""
    result = []
    for i in range(variant.n_children()):
        entry = variant.get_child_value(i)
        data = entry.get_child_value(2).get_data_as_bytes().get_data()
        result.append({
            "width": entry.get_child_value(0).get_int32(),
            "height": entry.get_child_value(1).get_int32(),
            **digest(data),
        })
    return result


def layout_node(variant):
    """One dbusmenu layout node, (ia{sv}av), as {id, properties, children}."""
    item_id = variant.get_child_value(0).get_int32()
    properties = {}
    for key, value in vardict_items(variant.get_child_value(1)):
        if value.get_type_string() == "ay":
            properties[key] = digest(value.get_data_as_bytes().get_data())
        else:
            properties[key] = plain(value.unpack())
    children_variant = variant.get_child_value(2)
    children = [layout_node(children_variant.get_child_value(i).get_variant()) for i in range(children_variant.n_children())]
    return {"id": item_id, "properties": properties, "children": children}


class TrayHost:
    def __init__(self, loop):
        self.loop = loop
        self.bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        self.items = []  # [{service, bus, path, pid}] in registration order
        self.hosts = set()
        info = Gio.DBusNodeInfo.new_for_xml(WATCHER_XML).interfaces[0]
        self.bus.register_object(WATCHER_PATH, info, self.on_method, self.on_get_property, None)
        self.bus.signal_subscribe(
            "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
            None, Gio.DBusSignalFlags.NONE, self.on_name_owner_changed,
        )
        if "--menu-updates" in sys.argv[1:]:
            # For the benchmark (tests/e2e/agent-figures.mjs): when each menu change reached the
            # host, on the clock the driver reads too (CLOCK_MONOTONIC).
            for signal in ("LayoutUpdated", "ItemsPropertiesUpdated"):
                self.bus.signal_subscribe(
                    None, "com.canonical.dbusmenu", signal, None, None, Gio.DBusSignalFlags.NONE, self.on_menu_update,
                )
        own_name(self.bus, WATCHER_NAME, loop, "tray host")

    # ---- the watcher ------------------------------------------------------------------------

    def on_method(self, _bus, sender, _path, _interface, method, params, invocation):
        (service,) = params.unpack()
        if method == "RegisterStatusNotifierItem":
            # The spec allows a bus name or an object path (libayatana-appindicator sends its path).
            if service.startswith("/"):
                bus_name, path = sender, service
            else:
                bus_name, path = service, DEFAULT_ITEM_PATH
            key = bus_name + path
            self.items = [item for item in self.items if item["service"] != key]
            item = {"service": key, "bus": bus_name, "path": path, "pid": None}
            self.items.append(item)
            invocation.return_value(None)
            connection_pid(self.bus, bus_name, CALL_TIMEOUT_MS, lambda pid, error: self.on_registered_pid(item, pid, error))
        elif method == "RegisterStatusNotifierHost":
            self.hosts.add(service)
            invocation.return_value(None)
            self.bus.emit_signal(None, WATCHER_PATH, WATCHER_NAME, "StatusNotifierHostRegistered", None)
        else:
            invocation.return_dbus_error("org.freedesktop.DBus.Error.UnknownMethod", f"no method {method}")

    def on_registered_pid(self, item, pid, error):
        if error is None:
            item["pid"] = pid
        else:
            item["pid_error"] = error
        self.bus.emit_signal(None, WATCHER_PATH, WATCHER_NAME, "StatusNotifierItemRegistered", GLib.Variant("(s)", (item["service"],)))
        self.items_changed()
        emit({"event": "registered", "item": item})

    def on_get_property(self, _bus, _sender, _path, _interface, name):
        if name == "RegisteredStatusNotifierItems":
            return GLib.Variant("as", [item["service"] for item in self.items])
        if name == "IsStatusNotifierHostRegistered":
            # This process is the host: it is what reads and clicks the menus.
            return GLib.Variant("b", True)
        if name == "ProtocolVersion":
            return GLib.Variant("i", 0)
        return None

    def on_menu_update(self, _bus, sender, path, _interface, signal, _params):
        emit({"event": "menu-update", "signal": signal, "sender": sender, "path": path, "at": time.clock_gettime(time.CLOCK_MONOTONIC)})

    def items_changed(self):
        changed = {"RegisteredStatusNotifierItems": GLib.Variant("as", [item["service"] for item in self.items])}
        self.bus.emit_signal(
            None, WATCHER_PATH, "org.freedesktop.DBus.Properties", "PropertiesChanged",
            GLib.Variant("(sa{sv}as)", (WATCHER_NAME, changed, [])),
        )

    def on_name_owner_changed(self, _bus, _sender, _path, _interface, _signal, params):
        name, _old, new = params.unpack()
        if new:
            return
        gone = [item for item in self.items if item["bus"] == name]
        if not gone:
            return
        self.items = [item for item in self.items if item["bus"] != name]
        for item in gone:
            self.bus.emit_signal(None, WATCHER_PATH, WATCHER_NAME, "StatusNotifierItemUnregistered", GLib.Variant("(s)", (item["service"],)))
            emit({"event": "unregistered", "item": item})
        self.items_changed()

    # ---- requests from the test -------------------------------------------------------------

    def on_stdin(self, channel, condition):
        if condition & (GLib.IO_HUP | GLib.IO_ERR):
            self.loop.quit()
            return False
        line = channel.readline()
        if not line:
            self.loop.quit()
            return False
        line = line.strip()
        if line:
            self.handle(line)
        return True

    def handle(self, line):
        try:
            request = json.loads(line)
        except ValueError as error:
            emit({"event": "error", "message": f"not JSON: {error}"})
            return
        request_id = request.get("id")

        def reply(result=None, error=None):
            if error is None:
                emit({"id": request_id, "ok": True, "result": result})
            else:
                emit({"id": request_id, "ok": False, "error": error})

        op = request.get("op")
        try:
            if op == "items":
                reply(self.items)
            elif op == "properties":
                self.call(request["bus"], request["path"], "org.freedesktop.DBus.Properties", "GetAll",
                          GLib.Variant("(s)", (ITEM_INTERFACE,)), "(a{sv})", reply, self.properties_result)
            elif op == "layout":
                bus, path = request["bus"], request["path"]
                # A host says the menu is about to be shown first; the answer (whether the layout
                # needs an update) does not matter, GetLayout comes next either way.
                def about_to_show_done(_result=None, error=None):
                    self.call(bus, path, MENU_INTERFACE, "GetLayout", GLib.Variant("(iias)", (0, -1, [])),
                              "(u(ia{sv}av))", reply,
                              lambda v: {"revision": v.get_child_value(0).get_uint32(), "root": layout_node(v.get_child_value(1))})
                self.call(bus, path, MENU_INTERFACE, "AboutToShow", GLib.Variant("(i)", (0,)), "(b)", about_to_show_done, lambda v: v.unpack())
            elif op == "click":
                timestamp = int(GLib.get_monotonic_time() // 1000) & 0xFFFFFFFF
                self.call(request["bus"], request["path"], MENU_INTERFACE, "Event",
                          GLib.Variant("(isvu)", (int(request["item"]), "clicked", GLib.Variant("i", 0), timestamp)),
                          "()", reply, lambda _v: True)
            else:
                reply(error=f"unknown op {op!r}")
        except (KeyError, TypeError, ValueError) as error:
            reply(error=f"bad request: {error!r}")

    def properties_result(self, variant):
        result = {}
        for key, value in vardict_items(variant.get_child_value(0)):
            result[key] = pixmaps(value) if value.get_type_string() == "a(iiay)" else plain(value.unpack())
        return result

    def call(self, bus_name, path, interface, method, params, reply_type, reply, convert):
        def done(bus, result, _data):
            try:
                variant = bus.call_finish(result)
            except GLib.Error as error:
                reply(error=f"{interface}.{method}: {error.message}")
                return
            try:
                reply(convert(variant))
            except Exception as error:  # noqa: BLE001 - any conversion bug goes back to the test
                reply(error=f"{interface}.{method}: unexpected reply: {error!r}")

        self.bus.call(bus_name, path, interface, method, params, GLib.VariantType(reply_type),
                      Gio.DBusCallFlags.NONE, CALL_TIMEOUT_MS, None, done, None)


def main():
    loop = GLib.MainLoop()
    host = TrayHost(loop)
    channel = GLib.IOChannel.unix_new(sys.stdin.fileno())
    GLib.io_add_watch(channel, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, host.on_stdin)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, loop.quit)  # SIGTERM: stop cleanly
    loop.run()


if __name__ == "__main__":
    main()
