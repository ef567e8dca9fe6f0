"""Runs a command in a pseudo-terminal of COLUMNS x ROWS and prints, as JSON, the screen a
VT100 terminal (pyte) shows when it ends: what a person at that terminal would see.

Usage: pty_screen.py COLUMNS ROWS COMMAND [ARGS...]; the terminal is TERM=xterm, or
$PTY_TERM.
"""
import fcntl
import json
import os
import pty
import struct
import sys
import termios

import pyte

columns, rows, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
pid, fd = pty.fork()
size = struct.pack("HHHH", rows, columns, 0, 0)
if pid == 0:
    # The terminal's size is set before the command starts, so its first line knows it.
    fcntl.ioctl(1, termios.TIOCSWINSZ, size)
    os.environ["TERM"] = os.environ.get("PTY_TERM", "xterm")
    os.execvp(command[0], command)
fcntl.ioctl(fd, termios.TIOCSWINSZ, size)
output = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    output += chunk
_, status = os.waitpid(pid, 0)
screen = pyte.Screen(columns, rows)
stream = pyte.ByteStream(screen)
stream.feed(output)
print(json.dumps({
    "exit": os.waitstatus_to_exitcode(status),
    "lines": [line.rstrip() for line in screen.display],
    "raw": output.decode("utf-8", "replace"),
}))
