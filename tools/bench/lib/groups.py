#!/usr/bin/env python3
"""How well airplayd keeps time with each kind of sender, in one run (tools/bench/groups).

Usage: groups.py AIRPLAY AIRPLAYD OWNTONE SECONDS [KIND ...]
Each kind gets fresh network namespaces: a sender's and one per room, joined by veth links
(sender 10.93.K.1, room K 10.93.K.2), every room an airplayd writing raw PCM to a FIFO.

  group kinds (two rooms; peers/fifo_clock.py times when each room played each second):
    airplay-buffered   airplay stream --mode buffered (PTP, type 103)
    airplay-realtime   airplay stream (AirPlay 2 realtime on NTP, flags-7 syncs)
    owntone-ap2        OwnTone 29.3 to two AirPlay 2 rooms (realtime on its PTP clock, 0xD7 anchors)
    owntone-ap1        OwnTone 29.3 to two AirPlay 1 rooms (RAOP, flags-7 syncs)
  promise kinds (one room; the sender knows when each frame is due and times the output):
    libraop-now        peers/raop_backdated_sender.py started at once (back-dated, burst)
    libraop-scheduled  the same given a start 4 s ahead (Music Assistant)
    ptp-realtime       peers/ptp_realtime_sender.py (pyatv's AirPlay 2 path, 0xD7 anchors on
                       `airplay ptp-master`'s clock)

Prints one line per kind: the rooms' per-second skew p50/p99/max (ms) or the per-second error
against the sender's promise p50/p99/max (ms), the share of the first room's output that is
the file bit for bit, and what the issue asks (skew p99 <= 1 ms, start error <= 5 ms).
"""
import json, os, subprocess, sys, tempfile, time, urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PEERS = os.path.join(ROOT, "Tests", "IntegrationTests", "peers")
PYTHON = os.path.join(ROOT, ".venv-peers", "bin", "python")
AVAHI_CONF = """[server]
allow-interfaces={interfaces}
use-ipv4=yes
use-ipv6=no
enable-dbus=yes
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
"""


class Hosts:
    """A sender namespace and `rooms` room namespaces, each with a veth link to the sender."""

    def __init__(self, tag, rooms, directory):
        self.tag, self.dir, self.procs = tag, directory, []
        self.sender = f"{tag}-s"
        self.rooms = [f"{tag}-{k}" for k in range(1, rooms + 1)]
        for ns in [self.sender] + self.rooms:
            run("ip", "netns", "add", ns)
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        self.links = []
        for k, room in enumerate(self.rooms, 1):
            here, there = f"{tag}s{k}", f"{tag}r{k}"
            run("ip", "link", "add", here, "type", "veth", "peer", "name", there)
            run("ip", "link", "set", here, "netns", self.sender)
            run("ip", "link", "set", there, "netns", room)
            run("ip", "netns", "exec", self.sender, "ip", "addr", "add", f"10.93.{k}.1/24", "dev", here)
            run("ip", "netns", "exec", room, "ip", "addr", "add", f"10.93.{k}.2/24", "dev", there)
            run("ip", "netns", "exec", self.sender, "ip", "link", "set", here, "up")
            run("ip", "netns", "exec", room, "ip", "link", "set", there, "up")
            self.links.append((here, there))

    def spawn(self, ns, args, env=None, name="proc"):
        log = open(os.path.join(self.dir, f"{ns}-{name}.log"), "w")
        proc = subprocess.Popen(["ip", "netns", "exec", ns] + args, stdout=log, stderr=subprocess.STDOUT,
                                env=dict(os.environ, **(env or {})))
        self.procs.append(proc)
        return proc

    def bus_and_avahi(self, ns, interfaces):
        """A private system bus and an avahi-daemon on `interfaces` of `ns`; returns the bus env."""
        base = os.path.join(self.dir, ns)
        os.makedirs(base + "/avahi-run", exist_ok=True)
        with open(base + "/avahi.conf", "w") as conf:
            conf.write(AVAHI_CONF.format(interfaces=",".join(interfaces)))
        address = f"unix:path={base}/bus"
        self.procs.append(subprocess.Popen(["dbus-daemon", "--system", "--nofork", "--nopidfile", f"--address={address}"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: os.path.exists(base + "/bus"), 10)
        env = {"DBUS_SYSTEM_BUS_ADDRESS": address}
        script = (f"mkdir -p /run/avahi-daemon && mount --bind {base}/avahi-run /run/avahi-daemon && "
                  f"rm -f /run/avahi-daemon/pid && exec avahi-daemon -f {base}/avahi.conf --no-drop-root --no-chroot --no-rlimits")
        self.spawn(ns, ["sh", "-c", script], env, "avahi")
        wait_for(lambda: "int32 2" in subprocess.run(["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.Avahi", "/",
                                                      "org.freedesktop.Avahi.Server.GetState"], env=dict(os.environ, **env),
                                                     capture_output=True, text=True).stdout, 15)
        return env

    def close(self):
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        for ns in [self.sender] + self.rooms:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else None


def exact_share(source, output):
    """The share of the source's frames found unchanged at one offset (aligned 1 s in)."""
    probe = source[4 * 44100:4 * 44100 + 64]
    at = output.find(probe)
    while at >= 0 and at % 4:
        at = output.find(probe, at + 1)
    if at < 0:
        return 0.0
    offset = at - 4 * 44100
    frames = len(source) // 4
    return sum(1 for f in range(frames) if 0 <= offset + 4 * f and output[offset + 4 * f:offset + 4 * f + 4] == source[4 * f:4 * f + 4]) / frames


def rooms_up(hosts, airplayd, fifos, airplay2=True, ptp=True, avahi=False):
    for k, room in enumerate(hosts.rooms):
        env = hosts.bus_and_avahi(room, [hosts.links[k][1]]) if avahi else {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"}
        hosts.spawn(room, [airplayd, "--name", f"Room {k + 1}", "--port", "7000", "--state-dir", f"{hosts.dir}/state{k}",
                           "--video", "off", "--airplay2", "on" if airplay2 else "off", "--ptp", "on" if ptp and airplay2 else "off",
                           "--audio-output", f"raw:{fifos[k]}"], env, "airplayd")
    time.sleep(2)


def group_kind(kind, airplay, airplayd, owntone, seconds, directory, tag, wav, flac, pcm):
    hosts = Hosts(tag, 2, directory)
    try:
        fifos = [f"{directory}/room{k}.fifo" for k in (1, 2)]
        for fifo in fifos:
            os.mkfifo(fifo)
        saved = f"{directory}/room1.pcm"
        reader = subprocess.Popen([PYTHON, os.path.join(PEERS, "fifo_clock.py"), "--save", saved] + fifos + [str(seconds + 60)],
                                  stdout=subprocess.PIPE, text=True, cwd=PEERS)
        owned = kind.startswith("owntone")
        rooms_up(hosts, airplayd, fifos, airplay2=kind != "owntone-ap1", avahi=owned)
        if owned:
            env = hosts.bus_and_avahi(hosts.sender, [here for here, _ in hosts.links])
            music = f"{directory}/music"
            os.makedirs(music + "/cache", exist_ok=True)
            os.link(flac, music + "/track.flac")
            with open(f"{directory}/owntone.conf", "w") as conf:
                conf.write(f'general {{ uid = "root" db_path = "{directory}/songs3.db" cache_dir = "{music}/cache" '
                           f'logfile = "{directory}/owntone.log" loglevel = info ipv6 = no speaker_autoselect = no }}\n'
                           f'library {{ name = "OwnTone" port = 3689 directories = {{ "{music}" }} }}\n'
                           'audio { type = "disabled" }\nmpd { port = 0 }\n')
            hosts.spawn(hosts.sender, [owntone, "-f", "-c", f"{directory}/owntone.conf", "--mdns-no-rsp", "--mdns-no-daap",
                                       "--mdns-no-cname", "--mdns-no-web"], env, "owntone")

            def api(method, path, body=None):
                args = ["ip", "netns", "exec", hosts.sender, "curl", "-s", "-m", "10", "-X", method, "http://127.0.0.1:3689" + path]
                if body:
                    args += ["-d", body]
                return subprocess.run(args, capture_output=True, text=True).stdout

            def outputs():
                try:
                    return [o for o in json.loads(api("GET", "/api/outputs")).get("outputs", []) if o["name"].startswith("Room")]
                except ValueError:
                    return []
            if not wait_for(lambda: len(outputs()) == 2 and '"songs": 1' in api("GET", "/api/library"), 40):
                return f"{kind}: OwnTone found {len(outputs())} rooms"
            ids = [o["id"] for o in outputs()]
            api("PUT", "/api/outputs/set", json.dumps({"outputs": ids}))
            for output in ids:
                api("PUT", f"/api/player/volume?volume=100&output_id={output}")
            api("POST", "/api/queue/items/add?clear=true&expression=" + urllib.parse.quote('path ends with "track.flac"'))
            api("PUT", "/api/player/play")
            time.sleep(seconds + 6)
            api("PUT", "/api/outputs/set", '{"outputs":[]}')
        else:
            mode = ["--mode", "buffered"] if kind == "airplay-buffered" else []
            hosts.spawn(hosts.sender, [airplay, "stream", flac, "--json", "--to", "10.93.1.2:7000", "--to", "10.93.2.2:7000"] + mode,
                        name="airplay").wait(seconds + 60)
        out, _ = reader.communicate(timeout=seconds + 90)
        report = json.loads(out.strip().split("\n")[-1][3:])
        skews = [abs(s) for s in report["skews_ms"]]
        exact = exact_share(pcm, open(saved, "rb").read()) if os.path.exists(saved) else 0
        ok = skews and percentile(skews, 0.99) <= 1
        return (f"{kind:18} group skew p50 {percentile(skews, 0.5)} p99 {percentile(skews, 0.99)} max {max(skews, default=None)} ms "
                f"({len(skews)} s), room 1 bit-exact {exact * 100:.2f} %  [goal p99 <= 1 ms: {'met' if ok else 'NOT met'}]")
    finally:
        hosts.close()


def promise_kind(kind, airplay, airplayd, seconds, directory, tag, wav):
    hosts = Hosts(tag, 1, directory)
    try:
        fifo = f"{directory}/room1.fifo"
        os.mkfifo(fifo)
        rooms_up(hosts, airplayd, [fifo])
        if kind == "ptp-realtime":
            log = f"{directory}/{hosts.rooms[0]}-airplayd.log"
            text = open(log).read()
            device = text.split("device.id=")[1].split()[0]
            features = text.split("features=")[1].split()[0]
            hosts.spawn(hosts.sender, [airplay, "ptp-master", "--to", "10.93.1.2", "--seconds", str(seconds + 60)], name="ptp")
            time.sleep(3)
            clock = open(f"{directory}/{hosts.sender}-ptp.log").read().split("serving PTP as ")[1].split()[0]
            args = [PYTHON, os.path.join(PEERS, "ptp_realtime_sender.py"), "10.93.1.2", "7000", device,
                    f"|cn=0,1|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68|ft={features}", "10.93.1.1", clock, wav, fifo]
            where = hosts.sender
        else:
            # This sender speaks on loopback: it runs beside the room, as a process on the box would.
            start_in = "4" if kind == "libraop-scheduled" else "0.25"
            args = [PYTHON, os.path.join(PEERS, "raop_backdated_sender.py"), "127.0.0.1", "7000", fifo, str(seconds), "2.55", start_in]
            where = hosts.rooms[0]
        result = subprocess.run(["ip", "netns", "exec", where] + args, capture_output=True, text=True, timeout=seconds + 120)
        line = result.stdout.strip().split("\n")[-1]
        if not line.startswith("OK "):
            return f"{kind}: {line} {result.stderr[-500:]}"
        report = json.loads(line[3:])
        errors = [abs(e) for e in report["errors_ms"]]
        ok = errors and max(errors) <= 5
        return (f"{kind:18} error against the promise p50 {percentile(errors, 0.5)} p99 {percentile(errors, 0.99)} "
                f"max {max(errors, default=None)} ms, first second {report['start_error_ms']} ms, bit-exact "
                f"{report['exact'] * 100:.2f} %  [goal <= 5 ms: {'met' if ok else 'NOT met'}]")
    finally:
        hosts.close()


def main():
    airplay, airplayd, owntone, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    kinds = sys.argv[5:] or ["airplay-buffered", "airplay-realtime", "owntone-ap2", "owntone-ap1",
                             "libraop-now", "libraop-scheduled", "ptp-realtime"]
    with tempfile.TemporaryDirectory(prefix="airplay-groups-") as base:
        wav, flac, pcm_path = f"{base}/sweep.wav", f"{base}/sweep.flac", f"{base}/sweep.pcm"
        expression = f"0.5*sin(2*PI*(100*t+4950*t*t/{seconds}))|0.4*sin(2*PI*(300*t+2350*t*t/{seconds}))"
        run("ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"aevalsrc={expression}:s=44100:d={seconds}",
            "-ac", "2", "-ar", "44100", "-c:a", "pcm_s16le", wav)
        run("ffmpeg", "-loglevel", "error", "-y", "-i", wav, "-c:a", "flac", "-metadata", "title=Groups Sweep", flac)
        run("ffmpeg", "-loglevel", "error", "-y", "-i", wav, "-f", "s16le", pcm_path)
        pcm = open(pcm_path, "rb").read()
        for index, kind in enumerate(kinds):
            directory = f"{base}/{kind}"
            os.makedirs(directory)
            tag = f"gr{os.getpid() % 10000}{index}"
            if kind in ("libraop-now", "libraop-scheduled", "ptp-realtime"):
                print(promise_kind(kind, airplay, airplayd, seconds, directory, tag, wav), flush=True)
            else:
                print(group_kind(kind, airplay, airplayd, owntone, seconds, directory, tag, wav, flac, pcm), flush=True)


if __name__ == "__main__":
    main()
