#!/bin/sh
# DebianPackageTests, under the systemd booted in the fresh root (package-root.sh): the units the
# package installed, started by systemd as a box starts them. airplayd.service takes PTP's ports
# from airplayd.socket and plays a pyatv stream; then the zone template airplayd@kitchen binds
# them itself and serves, and reloads. Ends systemd with the result; `OK under systemd` last.
set -u
fail() {
    echo "FAIL $*"
    systemctl --no-pager status airplayd.socket airplayd.service 'airplayd@*' 2>&1 | tail -40
    journalctl --no-pager -n 60 -u airplayd.service -u 'airplayd@*' 2>&1
    systemctl --no-block exit 1
    exit 1
}
active() { # UNIT: waits up to 20 s for it to be active
    for _ in $(seq 1 100); do systemctl is-active -q "$1" && return 0; sleep 0.2; done
    return 1
}
log() { journalctl --no-pager -o cat -u "$1" 2>/dev/null; }

echo "systemd $(systemctl --version | head -1 | cut -d' ' -f2) is $(systemctl is-system-running 2>/dev/null || true)"
active airplayd.socket || fail "airplayd.socket is not active"
active airplayd.service || fail "airplayd.service is not active"
for _ in $(seq 1 50); do log airplayd.service | grep -q "airplayd: ready" && break; sleep 0.2; done
log airplayd.service | grep -q "sockets from systemd count=4" || fail "airplayd did not take PTP's four sockets from airplayd.socket"
user=$(ps -o user= -p "$(systemctl show -P MainPID airplayd.service)")
[ "$user" != root ] || fail "airplayd runs as root"
echo "airplayd.service: active, as $user, PTP's sockets from airplayd.socket"
echo "exposure airplayd.service: $(systemd-analyze security --no-pager airplayd.service 2>/dev/null | tail -1)"

id=$(tr -d ':\n' < /var/lib/airplayd/device-id)
"$ATVREMOTE" --storage none --manual --address 127.0.0.1 --port 7000 --protocol raop --id "$id" \
    --service-properties "|cn=0|et=0,1|md=0,1,2|sf=0x4|am=airplayd1,1|tp=UDP|vn=65537|vs=220.68" \
    "stream_file=$SWEEP" > /tmp/atvremote.log 2>&1 || { cat /tmp/atvremote.log; fail "pyatv"; }
for _ in $(seq 1 50); do log airplayd.service | grep -q "audio session ended" && break; sleep 0.1; done
log airplayd.service | grep "audio session ended" | grep -q "lost=0" || fail "the stream"
echo "played $(stat -c %s /var/lib/airplayd/out.pcm) bytes through airplayd.service"
airplay doctor --browse-seconds 0 --json > /tmp/doctor.json || true
grep -q '"code":"reachable"' /tmp/doctor.json || { cat /tmp/doctor.json; fail "doctor"; }
grep -q '"code":"ptp-off"' /tmp/doctor.json && { cat /tmp/doctor.json; fail "doctor: PTP is off"; }

# The zone template: its own file, port and state; PTP's ports bound with its one capability.
systemctl stop airplayd.service airplayd.socket
cat > /etc/airplayd/kitchen.toml <<'EOF'
name = "Kitchen"
port = 7010
audio_output = "raw:/var/lib/airplayd-kitchen/out.pcm"
video_sink = "fakesink sync=true"
EOF
systemctl start airplayd@kitchen.service || fail "airplayd@kitchen did not start"
active airplayd@kitchen.service || fail "airplayd@kitchen is not active"
airplay doctor 127.0.0.1:7010 --browse-seconds 0 --json > /tmp/doctor-kitchen.json || true
grep -q '"name":"Kitchen"' /tmp/doctor-kitchen.json || { cat /tmp/doctor-kitchen.json; fail "doctor of the zone"; }
grep -q '"code":"ptp-off"' /tmp/doctor-kitchen.json && { cat /tmp/doctor-kitchen.json; fail "the zone has no PTP"; }
[ -s /var/lib/airplayd-kitchen/device-id ] || fail "the zone's state is not in /var/lib/airplayd-kitchen"
cmp -s /var/lib/airplayd/device-id /var/lib/airplayd-kitchen/device-id && fail "the zone shares the box's device id"
echo "airplayd@kitchen: active on 7010 with PTP, state in /var/lib/airplayd-kitchen"
echo "exposure airplayd@kitchen.service: $(systemd-analyze security --no-pager airplayd@kitchen.service 2>/dev/null | tail -1)"
# A reload (SIGHUP) re-reads the zone's file: video off applies at once, a new name on restart.
printf 'video = false\n' >> /etc/airplayd/kitchen.toml
sed -i 's/^name = "Kitchen"/name = "Kitchen Two"/' /etc/airplayd/kitchen.toml
systemctl reload airplayd@kitchen.service || fail "reload"
for _ in $(seq 1 50); do log airplayd@kitchen.service | grep -q "configuration reloaded" && break; sleep 0.1; done
log airplayd@kitchen.service | grep -q "configuration reloaded" || fail "the zone did not reload"
log airplayd@kitchen.service | grep "needs a restart" | grep -q name || fail "the reload did not say the name needs a restart"
systemctl stop airplayd@kitchen.service
systemctl is-failed -q airplayd@kitchen.service && fail "airplayd@kitchen failed on stop"
# The zone's file is the owner's, not the package's: a purge leaves it (Debian policy).
rm /etc/airplayd/kitchen.toml
echo "airplayd@kitchen: reloaded, stopped cleanly"
echo "OK under systemd"
systemctl --no-block exit 0
