#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal and types keys at given times, as a user would.

Usage: pty_keys.py SECONDS=KEYS [SECONDS=KEYS …] -- COMMAND [ARGS …]
Each SECONDS=KEYS types KEYS that many seconds after the start (\\s is a space). The terminal's
output goes to stdout; the exit status is the command's (124 if it outlives 120 s).
"""
import os, pty, select, sys, time

split = sys.argv.index("--")
plan = sorted((float(t), k.replace("\\s", " ")) for t, k in (a.split("=", 1) for a in sys.argv[1:split]))
command = sys.argv[split + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)
start, output = time.monotonic(), b""
while True:
    now = time.monotonic() - start
    while plan and plan[0][0] <= now:
        os.write(fd, plan.pop(0)[1].encode())
    if now > 120:
        os.kill(pid, 9)
        sys.stdout.write(output.decode(errors="replace"))
        sys.exit(124)
    ready, _, _ = select.select([fd], [], [], 0.05)
    if ready:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            break
        output += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(output.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
