#!/bin/sh
# DebianPackageTests: the package in a fresh root, as a box's owner meets it.
#
#   unshare --mount --net --pid --fork sh package-root.sh WORK DEB ATVREMOTE SWEEP CHECK
#
# The root is an overlay over this system whose upper layer is a tmpfs in WORK, so nothing the
# package, apt or systemd does reaches the real system (systemd-tmpfiles empties /tmp at boot:
# here that is the overlay's /tmp). Steps: apt-get install the package; boot a real systemd in
# the root (PID 1 of its own PID and cgroup namespaces) and run CHECK under it, which starts the
# units the package installed; then remove and purge the package and look for what is left.
set -eu
work=$1 deb=$2 atvremote=$3 sweep=$4 check=$5
root=$work/root
fail() { echo "FAIL $*"; exit 1; }

mount --make-rprivate /
mount -t tmpfs tmpfs "$work"
mkdir "$work/upper" "$work/work" "$root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/work" "$root"
mount -t tmpfs tmpfs "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
cp "$deb" "$root/airplayd.deb"
cp "$check" "$root/check.sh"
cp "$sweep" "$root/sweep.flac"
ip link set lo up

# The root as apt sees it: this system's /dev, /proc and /sys.
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
chroot "$root" /bin/sh -eu -c '
    export DEBIAN_FRONTEND=noninteractive
    for path in /usr/bin/airplayd /usr/bin/airplay /etc/airplayd /lib/systemd/system/airplayd.service; do
        [ ! -e $path ] || { echo "FAIL the root already has $path"; exit 1; }
    done
    apt-get install -y -q /airplayd.deb > /tmp/apt-install.log 2>&1 || { cat /tmp/apt-install.log; echo "FAIL apt-get install"; exit 1; }
    echo "airplayd --version: $(airplayd --version)"
    echo "airplay --version: $(airplay --version)"
    for path in /lib/systemd/system/airplayd.service /lib/systemd/system/airplayd.socket /lib/systemd/system/airplayd@.service \
                /etc/airplayd/airplayd.toml /usr/share/dbus-1/system.d/airplayd.conf /usr/share/man/man8/airplayd.8.gz \
                /usr/share/man/man1/airplay.1.gz /usr/share/man/man5/airplayd.toml.5.gz /usr/lib/sysusers.d/airplayd.conf \
                /usr/share/bash-completion/completions/airplay /usr/share/zsh/vendor-completions/_airplayd \
                /usr/share/fish/vendor_completions.d/airplay.fish \
                /etc/systemd/system/multi-user.target.wants/airplayd.service /etc/systemd/system/sockets.target.wants/airplayd.socket; do
        [ -e $path ] || { echo "FAIL not installed: $path"; exit 1; }
    done
    grep -q "^ExecStart=/usr/bin/airplayd " /lib/systemd/system/airplayd.service || { echo "FAIL ExecStart"; exit 1; }
    dpkg-query -W -f "\${Conffiles}\n" airplayd | grep -q /etc/airplayd/airplayd.toml || { echo "FAIL conffile"; exit 1; }
    getent group render > /dev/null || { echo "FAIL postinst did not create the group render the units name"; exit 1; }
'
rm -f "$root/tmp/apt-install.log"
umount -R "$root/dev" "$root/sys" "$root/proc"

# The box as it boots: no sound card (the audio goes to a file in the state directory), a
# pyatv and a sweep to play (the root's /tmp is its own), and the check as a unit of a target of its own (the system's own
# services stay off; the package's are started by their names).
cat >> "$root/etc/airplayd/airplayd.toml" <<'EOF'
audio_output = "raw:/var/lib/airplayd/out.pcm"
video_sink = "fakesink sync=true"
EOF
cat > "$root/etc/systemd/system/package-check.target" <<'EOF'
[Unit]
Description=The package test: the package's units and the check
Wants=airplayd.socket airplayd.service package-check.service
EOF
cat > "$root/etc/systemd/system/package-check.service" <<EOF
[Unit]
Description=The package test's check
After=airplayd.service
[Service]
Type=oneshot
Environment=ATVREMOTE=$atvremote SWEEP=/sweep.flac
ExecStart=/bin/sh /check.sh
StandardOutput=file:/check.log
StandardError=inherit
EOF

# A /dev of its own (device nodes bound from this system's), a read-only sysfs of the network
# namespace, and a cgroup of its own: systemd sees the cgroup namespace's root as the whole.
mount -t tmpfs -o mode=755 tmpfs "$root/dev"
for node in null zero full random urandom tty; do
    touch "$root/dev/$node"
    mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs tmpfs "$root/dev/shm"
touch "$work/console.log" "$root/dev/console"
mount --bind "$work/console.log" "$root/dev/console"
mount -t sysfs -o ro sysfs "$root/sys"
unified=/sys/fs/cgroup
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || unified=/sys/fs/cgroup/unified
cgroup=$unified/airplay-package-test-$$
mkdir "$cgroup"
echo $$ > "$cgroup/cgroup.procs"
booted=0
timeout --signal=KILL 150 unshare --cgroup --pid --fork --kill-child /bin/sh -c '
    mount -t cgroup2 cgroup2 "$1/sys/fs/cgroup"
    mount -t proc proc "$1/proc"
    exec chroot "$1" /usr/bin/env -i container=airplay-test /lib/systemd/systemd --unit=package-check.target
' sh "$root" > "$work/systemd.out" 2>&1 || booted=$?
echo $$ > "$unified/cgroup.procs"
find "$cgroup" -depth -type d -exec rmdir {} \; 2>/dev/null || true
cat "$root/check.log" 2>/dev/null || true
if ! grep -q "^OK under systemd" "$root/check.log" 2>/dev/null; then
    echo "--- systemd (exit $booted)"; tail -c 4000 "$work/systemd.out"; tail -c 4000 "$work/console.log"
    fail "the units under systemd"
fi

# Remove and purge with systemd gone, as on a box where it is not running.
umount "$root/proc" 2>/dev/null || true
mount -t proc proc "$root/proc"
chroot "$root" /bin/sh -eu -c '
    export DEBIAN_FRONTEND=noninteractive
    apt-get remove -y -q airplayd > /dev/null 2>&1 || { echo "FAIL apt-get remove"; exit 1; }
    [ -e /etc/airplayd/airplayd.toml ] || { echo "FAIL remove took the conffile"; exit 1; }
    [ -e /var/lib/airplayd ] || [ -e /var/lib/private/airplayd ] || { echo "FAIL remove took the state"; exit 1; }
    apt-get purge -y -q airplayd > /dev/null 2>&1 || { echo "FAIL apt-get purge"; exit 1; }
    left=$(ls -d /usr/bin/airplay* /etc/airplayd /var/lib/airplayd* /var/lib/private/airplayd* /var/cache/airplayd* \
                 /var/cache/private/airplayd* /lib/systemd/system/airplayd* \
                 /etc/systemd/system/*/airplayd* /usr/share/man/man8/airplayd.8.gz /usr/share/doc/airplayd \
                 /usr/lib/sysusers.d/airplayd.conf 2>/dev/null || true)
    [ -z "$left" ] || { echo "FAIL left behind: $left"; exit 1; }
    if dpkg-query -W airplayd > /dev/null 2>&1; then echo "FAIL dpkg still knows airplayd"; exit 1; fi
'
echo "OK installed, played under systemd, purged"
