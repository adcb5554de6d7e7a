"""System commands: pwd, ifconfig, ip, log, logcat, answering as Android 14's toybox and logcat do.

Network: one Wi-Fi interface, wlan0 10.0.2.16/24 (an emulator's), and lo. `ifconfig wlan0`
is toybox's format (adbutils' wlan_ip() reads `inet addr:`), `ip addr show dev wlan0` iproute2's
(its fallback reads `inet A.B.C.D/24`).
"""

from __future__ import annotations

import re

from .logbuf import LEVELS, format_entry, matches
from .shell_base import Commands, Out, fail, ok

WLAN_IP = "10.0.2.16"
WLAN_MAC = "02:00:00:44:55:66"
FOLLOW_POLL_S = 0.2

_IFCONFIG = {
    "lo": ("lo        Link encap:Local Loopback \n"
           "          inet addr:127.0.0.1  Mask:255.0.0.0 \n"
           "          inet6 addr: ::1/128 Scope: Host\n"
           "          UP LOOPBACK RUNNING  MTU:65536  Metric:1\n"
           "          RX packets:0 errors:0 dropped:0 overruns:0 frame:0 \n"
           "          TX packets:0 errors:0 dropped:0 overruns:0 carrier:0 \n"
           "          collisions:0 txqueuelen:1000 \n"
           "          RX bytes:0 TX bytes:0 \n\n"),
    "wlan0": (f"wlan0     Link encap:Ethernet  HWaddr {WLAN_MAC}  Driver mac80211_hwsim\n"
              f"          inet addr:{WLAN_IP}  Bcast:10.0.2.255  Mask:255.255.255.0 \n"
              "          inet6 addr: fe80::ff:fe44:5566/64 Scope: Link\n"
              "          UP BROADCAST RUNNING MULTICAST  MTU:1500  Metric:1\n"
              "          RX packets:1523 errors:0 dropped:0 overruns:0 frame:0 \n"
              "          TX packets:1187 errors:0 dropped:0 overruns:0 carrier:0 \n"
              "          collisions:0 txqueuelen:1000 \n"
              "          RX bytes:1689127 TX bytes:183652 \n\n"),
}

_IP_ADDR = {
    "lo": ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n"
           "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
           "    inet 127.0.0.1/8 scope host lo\n"
           "       valid_lft forever preferred_lft forever\n"
           "    inet6 ::1/128 scope host \n"
           "       valid_lft forever preferred_lft forever\n"),
    "wlan0": ("7: wlan0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000\n"
              f"    link/ether {WLAN_MAC} brd ff:ff:ff:ff:ff:ff\n"
              f"    inet {WLAN_IP}/24 brd 10.0.2.255 scope global wlan0\n"
              "       valid_lft forever preferred_lft forever\n"
              "    inet6 fe80::ff:fe44:5566/64 scope link \n"
              "       valid_lft forever preferred_lft forever\n"),
}


class SystemCommands(Commands):
    def pwd(self, a: list[str], i: bytes) -> Out:
        return ok("/\n")     # adbd starts shells in /

    def ifconfig(self, a: list[str], i: bytes) -> Out:
        names = [x for x in a if not x.startswith("-")]
        if not names:
            return ok(_IFCONFIG["wlan0"] + _IFCONFIG["lo"])
        if names[0] not in _IFCONFIG:
            return fail(f"ifconfig: {names[0]}: No such device\n", 1)
        return ok(_IFCONFIG[names[0]])

    def ip(self, a: list[str], i: bytes) -> Out:
        words = [x for x in a if not x.startswith("-")]
        if words[:1] in (["addr"], ["address"], ["a"]) and words[1:2] in ([], ["show"], ["list"]):
            rest = words[2:]
            dev = rest[rest.index("dev") + 1] if "dev" in rest and rest.index("dev") + 1 < len(rest) else (
                rest[0] if rest else "")
            if not dev:
                return ok(_IP_ADDR["lo"] + _IP_ADDR["wlan0"])
            if dev not in _IP_ADDR:
                return fail(f'Device "{dev}" does not exist.\n', 1)
            return ok(_IP_ADDR[dev])
        if words[:1] == ["route"]:
            return ok(f"10.0.2.0/24 dev wlan0 proto kernel scope link src {WLAN_IP} \n")
        return fail(f'Object "{words[0] if words else ""}" is unknown, try "ip help".\n', 255)

    def log(self, a: list[str], i: bytes) -> Out:
        """toybox log [-p PRI] [-t TAG] MESSAGE...: PRI one of v d i w e f (default i), TAG "log"."""
        level, tag, k = "I", "log", 0
        while k < len(a) and a[k] in ("-p", "-t") and k + 1 < len(a):
            if a[k] == "-p":
                level = a[k + 1][:1].upper()
                if level not in LEVELS:
                    return fail(f"log: bad -p '{a[k + 1]}'\n", 1)
            else:
                tag = a[k + 1]
            k += 2
        self.w.log.write(level, tag, " ".join(a[k:]))
        return Out()

    def logcat(self, a: list[str], i: bytes) -> Out:
        fmt, dump, tail, clear = "threadtime", False, None, False
        specs: dict[str, str] = {}
        default = "V"
        k = 0
        while k < len(a):
            t = a[k]
            if t in ("-v", "--format") and k + 1 < len(a):
                fmt = a[k + 1]
                k += 2
                continue
            if t in ("-t", "-T") and k + 1 < len(a):
                tail, dump = int(a[k + 1]), dump or t == "-t"
                k += 2
                continue
            if t in ("-b", "--buffer") and k + 1 < len(a):
                k += 2
                continue
            if t in ("-c", "--clear"):
                clear = True
            elif t == "-d":
                dump = True
            elif t == "-s":
                default = "S"
            elif re.fullmatch(r"[^-][^:]*(:[VDIWEFS])?", t):
                tag, _, lvl = t.partition(":")
                specs[tag] = lvl or "V"
            k += 1
        buf = self.w.log
        if clear:
            buf.clear()
            return Out()
        entries, index = buf.since(0)
        shown = [e for e in entries if matches(e, specs, default)]
        if tail is not None:
            shown = shown[-tail:] if tail > 0 else []
        text = "--------- beginning of main\n" + "".join(format_entry(e, fmt) for e in shown)
        if dump or self.emit is None:
            return ok(text)
        # Without -d logcat follows the log until the client hangs up (Ctrl-C, a closed stream).
        self.emit(text.encode())
        while not self.hold(FOLLOW_POLL_S):
            new, index = buf.since(index)
            lines = "".join(format_entry(e, fmt) for e in new if matches(e, specs, default))
            if lines:
                self.emit(lines.encode())
        return Out(b"", b"", 130)
