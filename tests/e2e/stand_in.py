"""What the stand-in desktop services of the end-to-end tests share (tray-host.py and
notification-server.py import it from beside them): announcing on stdout, owning their name on
the session bus, and asking the bus which process is behind a connection.

Uses the system Python's GObject introspection (Debian: python3-gi, gir1.2-glib-2.0).
"""

import json
import sys

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402


def emit(message):
    """Writes `message` as one JSON line on stdout and flushes it: the test reads lines as they come."""
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def own_name(bus, name, loop, rival):
    """Owns `name` on `bus` without queueing for it: emits ``{"event":"ready"}`` once it is owned, or
    ``{"event":"error"}`` naming `rival` (what else would own it) and quits `loop` when it cannot be."""

    def on_acquired(_bus, owned):
        emit({"event": "ready", "name": owned})

    def on_lost(_bus, lost):
        emit({"event": "error", "message": f"could not own {lost} (another {rival} on this bus?)"})
        loop.quit()

    Gio.bus_own_name_on_connection(bus, name, Gio.BusNameOwnerFlags.DO_NOT_QUEUE, on_acquired, on_lost)


def connection_pid(bus, bus_name, timeout_ms, done):
    """Asks the bus daemon, without blocking, for the pid behind `bus_name`; then calls
    ``done(pid, None)``, or ``done(None, message)`` when it cannot tell (the connection left)."""

    def on_reply(bus, result, _data):
        try:
            (pid,) = bus.call_finish(result).unpack()
        except GLib.Error as error:
            done(None, error.message)
            return
        done(pid, None)

    bus.call(
        "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "GetConnectionUnixProcessID", GLib.Variant("(s)", (bus_name,)), GLib.VariantType("(u)"),
        Gio.DBusCallFlags.NONE, timeout_ms, None, on_reply, None,
    )
