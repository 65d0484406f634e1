"""A `surveyd serve --demo` of its own (a free port, a temporary data dir) for the Python tests
that drive surveyd with clients no one here wrote (python-odata, pyodk): started, its printed
tokens read, stopped with SIGTERM."""
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, prefix="surveyd-demo-"):
        binary = os.environ.get("SURVEYD_BIN") or os.path.join(ROOT, ".build", "debug", "surveyd")
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.url = f"http://127.0.0.1:{free_port()}"
        self.out = open(os.path.join(self.dir, "stdout.log"), "w+")
        self.proc = subprocess.Popen([binary, "serve", "--demo", "--port", self.url.rsplit(":", 1)[1], "--data-dir",
                                      os.path.join(self.dir, "data")], stdout=self.out, stderr=subprocess.STDOUT)
        self.env = {}
        deadline = time.time() + 30
        while time.time() < deadline:
            m = re.search(r"export (ORG=\S+.*)$", open(self.out.name).read(), re.M)
            if m:
                self.env = dict(p.partition("=")[::2] for p in m.group(1).split())
                return
            if self.proc.poll() is not None:
                raise RuntimeError("surveyd exited: " + open(self.out.name).read())
            time.sleep(0.1)
        raise RuntimeError("surveyd --demo printed no export line in 30 s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=15)
