# wayline's Python session driver: one per local sandbox session. It reads one JSON request per
# line on stdin ({"code": "..."}), runs it in a namespace that persists between requests, and
# writes one JSON reply per line on stdout:
#   {"success": bool, "output": str, "error": str|null, "execution_count": int, "text": str}
# `output` is what the code printed plus, as a REPL shows it, the value of a last expression;
# `error` is the full traceback. The driver's own stdout is kept for replies: the code's prints
# go to a buffer. Timeouts are the host's job: it kills this process.
#
# The requests and replies travel on private copies of file descriptors 0 and 1: the code's
# child processes (`subprocess.run(["pip", ...])`) inherit 0, 1 and 2, so 0 reads nothing and
# 1 and 2 write to a capture file whose text joins the output, as a terminal would show it.
#
# A request may say `max_output` (bytes): `output`, `error` and `text` each keep that much, the
# rest counted and said in a last line, so a runaway print loop costs no memory here and no
# more than that in the reply.
import ast
import io
import json
import linecache
import os
import sys
import tempfile
import traceback

_requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
_reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
_capture = tempfile.TemporaryFile()
_devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(_devnull, 0)
os.dup2(_capture.fileno(), 1)
os.dup2(_capture.fileno(), 2)
_namespace = {"__name__": "__main__", "__builtins__": __builtins__}
_count = 0
_max_output = 4 * 1024 * 1024


def _cut_note(dropped):
    return "\n[%d more bytes of output were not kept: an execution keeps %d]" % (dropped, _max_output)


def _kept(text):
    """`text` within the cap, with a note of what was cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= _max_output:
        return text
    kept = data[:_max_output].decode("utf-8", "ignore")
    return kept + _cut_note(len(data) - _max_output)


class _Capped(io.TextIOBase):
    """A text stream that keeps the first `_max_output` bytes written and counts the rest."""

    def __init__(self):
        self._parts = []
        self._size = 0
        self.dropped = 0

    def writable(self):
        return True

    def write(self, text):
        data = text.encode("utf-8", "replace")
        room = _max_output - self._size
        if room > 0:
            self._parts.append(data[:room])
            self._size += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))
        return len(text)

    def getvalue(self):
        return b"".join(self._parts).decode("utf-8", "ignore")


def _run(code):
    global _count
    _count += 1
    buffer = _Capped()
    text = ""
    error = None
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buffer
    # Each execution is its own "file", known to linecache, so tracebacks show its lines.
    name = "<exec-%d>" % _count
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        tree = ast.parse(code, name, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), _namespace)
        if last is not None:
            value = eval(compile(last, name, "eval"), _namespace)
            if value is not None:
                text = repr(value)
                _namespace["_"] = value
    except BaseException as raised:  # the code's own exceptions, SystemExit included
        # Leave out the driver's own frames: the traceback starts in the user's code.
        tb = raised.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<exec-"):
            tb = tb.tb_next
        if isinstance(raised, SyntaxError) and tb is None:
            # Raised while compiling: no frame of the user's code, only where it went wrong.
            error = "".join(traceback.format_exception_only(type(raised), raised))
        else:
            error = "".join(traceback.format_exception(type(raised), raised, tb))
    finally:
        sys.stdout, sys.stderr = old_out, old_err
    captured, captured_dropped = _captured()
    printed = buffer.getvalue() + captured
    output = printed + (text + "\n" if text else "")
    dropped = buffer.dropped + captured_dropped
    output = _kept(output.strip())
    if dropped:
        output += _cut_note(dropped)
    return {
        "success": error is None,
        "output": output,
        "error": _kept(error.strip()) if error else None,
        "execution_count": _count,
        "text": _kept(text),
    }


def _captured():
    """What child processes wrote to descriptors 1 and 2 since the last call (at most the cap),
    and how many bytes more they wrote."""
    sys.__stdout__.flush()
    sys.__stderr__.flush()
    size = _capture.seek(0, os.SEEK_END)
    _capture.seek(0)
    raw = _capture.read(_max_output)
    # Descriptors 1 and 2 share this file's offset: rewinding it rewinds them.
    _capture.seek(0)
    _capture.truncate()
    return raw.decode("utf-8", "replace"), max(0, size - _max_output)


def main():
    global _max_output
    for line in _requests:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            _max_output = int(request.get("max_output", _max_output))
            reply = _run(request["code"])
        except Exception:  # a malformed request: say so, keep serving
            reply = {
                "success": False,
                "output": "",
                "error": "driver: " + traceback.format_exc(),
                "execution_count": _count,
                "text": "",
            }
        _reply.write(json.dumps(reply) + "\n")
        _reply.flush()


if __name__ == "__main__":
    main()
