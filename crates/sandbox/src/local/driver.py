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


def _run(code):
    global _count
    _count += 1
    buffer = io.StringIO()
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
    printed = buffer.getvalue() + _captured()
    output = printed + (text + "\n" if text else "")
    return {
        "success": error is None,
        "output": output.strip(),
        "error": error.strip() if error else None,
        "execution_count": _count,
        "text": text,
    }


def _captured():
    """What child processes wrote to descriptors 1 and 2 since the last call."""
    sys.__stdout__.flush()
    sys.__stderr__.flush()
    _capture.seek(0)
    raw = _capture.read()
    # Descriptors 1 and 2 share this file's offset: rewinding it rewinds them.
    _capture.seek(0)
    _capture.truncate()
    return raw.decode("utf-8", "replace")


def main():
    for line in _requests:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
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
