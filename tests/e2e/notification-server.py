#!/usr/bin/python3
"""A stand-in desktop notification server for the end-to-end tests (tests/e2e/notifications.mjs
drives it).

Under Xvfb no desktop shell owns ``org.freedesktop.Notifications``, so the app's notifications
(tauri-plugin-notification, through notify-rust) would go nowhere. This process owns that name on
the test's private session bus and implements the server side of the Desktop Notifications
Specification 1.2 as far as a client can tell:

- ``Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout) -> id``
  records the notification and answers a fresh id (or ``replaces_id`` when it is non-zero);
- ``GetCapabilities`` (``body``; with ``--actions`` also ``actions``), ``GetServerInformation``;
- ``CloseNotification(id)`` emits ``NotificationClosed(id, 3)`` ("closed by a call to
  CloseNotification") for a notification it issued, as the spec asks.

Each recorded notification is announced on stdout, one JSON line,
``{"event":"notify","notification":{id, appName, replacesId, appIcon, summary, body, actions,
hints, expireTimeout, sender, pid}}``, where ``hints`` lists the hint names only (an image hint is
kilobytes of pixels) and ``pid`` is the process behind the sending connection, so a test can tell
the app's notifications from anyone else's. ``{"event":"closed","id":N}`` follows a
CloseNotification. ``{"event":"ready"}`` comes once the name is owned, ``{"event":"error"}`` if it
cannot be. SIGTERM or stdin closing stops it.

With ``--actions`` a user's click on a button can be played: a line ``{"invoke": ID, "action":
KEY}`` on stdin emits ``ActionInvoked(ID, KEY)`` and then ``NotificationClosed(ID, 2)``
("dismissed by the user"), as a server does when a button is clicked, and announces
``{"event":"invoked","id":ID,"action":KEY}``.

Uses the system Python's GObject introspection (Debian: python3-gi, gir1.2-glib-2.0).
"""

import json
import sys
import time

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

from stand_in import connection_pid, emit, own_name  # noqa: E402

SERVER_NAME = "org.freedesktop.Notifications"
SERVER_PATH = "/org/freedesktop/Notifications"
# What the spec says a notification the user dismissed (or clicked a button of) is closed with.
CLOSED_BY_USER = 2
# What the spec says CloseNotification closes a notification with.
CLOSED_BY_CALL = 3
# How long the pid lookup of a sender may take: the bus daemon answers at once, but a loaded CI
# machine can stall any process for seconds.
CALL_TIMEOUT_MS = 20_000

SERVER_XML = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="GetCapabilities"><arg type="as" name="capabilities" direction="out"/></method>
    <method name="Notify">
      <arg type="s" name="app_name" direction="in"/>
      <arg type="u" name="replaces_id" direction="in"/>
      <arg type="s" name="app_icon" direction="in"/>
      <arg type="s" name="summary" direction="in"/>
      <arg type="s" name="body" direction="in"/>
      <arg type="as" name="actions" direction="in"/>
      <arg type="a{sv}" name="hints" direction="in"/>
      <arg type="i" name="expire_timeout" direction="in"/>
      <arg type="u" name="id" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" name="id" direction="in"/></method>
    <method name="GetServerInformation">
      <arg type="s" name="name" direction="out"/>
      <arg type="s" name="vendor" direction="out"/>
      <arg type="s" name="version" direction="out"/>
      <arg type="s" name="spec_version" direction="out"/>
    </method>
    <signal name="ActionInvoked"><arg type="u" name="id"/><arg type="s" name="action_key"/></signal>
    <signal name="NotificationClosed"><arg type="u" name="id"/><arg type="u" name="reason"/></signal>
    <signal name="ActionInvoked"><arg type="u" name="id"/><arg type="s" name="action_key"/></signal>
  </interface>
</node>
"""


class NotificationServer:
    def __init__(self, loop, actions):
        self.actions = actions
        self.bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        self.last_id = 0
        self.issued = set()
        info = Gio.DBusNodeInfo.new_for_xml(SERVER_XML).interfaces[0]
        self.bus.register_object(SERVER_PATH, info, self.on_method, None, None)
        own_name(self.bus, SERVER_NAME, loop, "notification server")

    def on_method(self, _bus, sender, _path, _interface, method, params, invocation):
        if method == "Notify":
            self.notify(sender, params, invocation)
        elif method == "GetCapabilities":
            capabilities = ["actions", "body"] if self.actions else ["body"]
            invocation.return_value(GLib.Variant("(as)", (capabilities,)))
        elif method == "GetServerInformation":
            invocation.return_value(GLib.Variant("(ssss)", ("supercode-e2e-notifications", "supercode", "1", "1.2")))
        elif method == "CloseNotification":
            (notification_id,) = params.unpack()
            invocation.return_value(None)
            if notification_id in self.issued:
                self.issued.discard(notification_id)
                self.bus.emit_signal(None, SERVER_PATH, SERVER_NAME, "NotificationClosed",
                                     GLib.Variant("(uu)", (notification_id, CLOSED_BY_CALL)))
                emit({"event": "closed", "id": notification_id})
        else:
            invocation.return_dbus_error("org.freedesktop.DBus.Error.UnknownMethod", f"no method {method}")

    def notify(self, sender, params, invocation):
        # Read field by field: unpacking the hints would turn an image hint into a huge list.
        field = params.get_child_value
        replaces_id = field(1).get_uint32()
        if replaces_id:
            notification_id = replaces_id
        else:
            self.last_id += 1
            notification_id = self.last_id
        self.issued.add(notification_id)
        hints = field(6)
        notification = {
            # When it arrived, on CLOCK_MONOTONIC (the benchmark's clock, tests/e2e/agent-figures.mjs).
            "receivedAt": time.clock_gettime(time.CLOCK_MONOTONIC),
            "id": notification_id,
            "appName": field(0).get_string(),
            "replacesId": replaces_id,
            "appIcon": field(2).get_string(),
            "summary": field(3).get_string(),
            "body": field(4).get_string(),
            "actions": list(field(5).unpack()),
            "hints": sorted(hints.get_child_value(i).get_child_value(0).get_string() for i in range(hints.n_children())),
            "expireTimeout": field(7).get_int32(),
            "sender": sender,
            "pid": None,
        }
        invocation.return_value(GLib.Variant("(u)", (notification_id,)))
        connection_pid(self.bus, sender, CALL_TIMEOUT_MS, lambda pid, error: self.on_sender_pid(notification, pid, error))

    def invoke(self, notification_id, action):
        """What a click on button ``action`` of notification ``notification_id`` makes a server send."""
        self.bus.emit_signal(None, SERVER_PATH, SERVER_NAME, "ActionInvoked",
                             GLib.Variant("(us)", (notification_id, action)))
        if notification_id in self.issued:
            self.issued.discard(notification_id)
            self.bus.emit_signal(None, SERVER_PATH, SERVER_NAME, "NotificationClosed",
                                 GLib.Variant("(uu)", (notification_id, CLOSED_BY_USER)))
        emit({"event": "invoked", "id": notification_id, "action": action})

    def on_sender_pid(self, notification, pid, error):
        if error is None:
            notification["pid"] = pid
        else:
            # The sender may already have left the bus; the notification still counts.
            notification["pidError"] = error
        emit({"event": "notify", "notification": notification})


def main():
    loop = GLib.MainLoop()
    server = NotificationServer(loop, "--actions" in sys.argv[1:])

    def on_stdin(channel, condition):
        if condition & GLib.IO_IN:
            _status, line, _length, _end = channel.read_line()
            if line:
                request = json.loads(line)
                server.invoke(int(request["invoke"]), str(request["action"]))
                return True
        loop.quit()
        return False

    # stdin closing (the test runner went away) stops the server too; a line on it is a click.
    channel = GLib.IOChannel.unix_new(sys.stdin.fileno())
    GLib.io_add_watch(channel, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, on_stdin)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, loop.quit)  # SIGTERM: stop cleanly
    loop.run()


if __name__ == "__main__":
    main()
