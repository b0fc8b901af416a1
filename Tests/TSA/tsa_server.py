#!/usr/bin/env python3
"""A real RFC 3161 time-stamping authority for recd's tests.

HTTP POST of an application/timestamp-query, answered by `openssl ts -reply` (Debian's openssl)
with the key and certificate the test made under its own test CA; everything else is 405/413.
The port is written to --ready once it listens (0 picks a free one; give the same port to come
back on it after a stop). Each answered query appends one line to --log.

    tsa_server.py --dir DIR --port 0 --ready DIR/port --log DIR/queries [--tls-cert PEM --tls-key PEM]
                  [--mode good|huge|slow|garbage]
DIR holds tsa.cnf (openssl ts's [tsa] section), tsa.key, tsa.pem, chain.pem and the serial file.
With --tls-cert and --tls-key it answers HTTPS only (Python's ssl module, the test CA's server
certificate). --mode makes it a hostile TSA: `huge` answers 200 with 1 MiB of bytes, `slow`
answers 200 and then one byte every half second for a minute, `garbage` answers 200 with 512
random bytes; each logs the query as `hostile MODE`.
"""
import argparse
import http.server
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time

MAX_QUERY = 64 * 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ready", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--mode", default="good", choices=["good", "huge", "slow", "garbage"])
    args = parser.parse_args()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_QUERY:
                self.send_error(413)
                return
            query = self.rfile.read(length)
            if args.mode != "good":
                self.hostile()
                return
            with tempfile.TemporaryDirectory() as scratch, lock:
                query_path = os.path.join(scratch, "query.tsq")
                reply_path = os.path.join(scratch, "reply.tsr")
                with open(query_path, "wb") as out:
                    out.write(query)
                made = subprocess.run(
                    ["openssl", "ts", "-reply", "-config", os.path.join(args.dir, "tsa.cnf"),
                     "-queryfile", query_path, "-inkey", os.path.join(args.dir, "tsa.key"),
                     "-signer", os.path.join(args.dir, "tsa.pem"), "-chain", os.path.join(args.dir, "chain.pem"),
                     "-out", reply_path],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=20)
                if made.returncode != 0:
                    sys.stderr.write(made.stderr.decode(errors="replace"))
                    self.send_error(500)
                    return
                with open(reply_path, "rb") as reply:
                    answer = reply.read()
                with open(args.log, "a") as log:
                    log.write("answered %d bytes\n" % len(answer))
            self.send_response(200)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def hostile(self):
            with lock, open(args.log, "a") as log:
                log.write("hostile %s\n" % args.mode)
            self.send_response(200)
            self.send_header("Content-Type", "application/timestamp-reply")
            try:
                if args.mode == "huge":
                    self.send_header("Content-Length", str(1 << 20))
                    self.end_headers()
                    self.wfile.write(b"\x30" * (1 << 20))
                elif args.mode == "garbage":
                    self.send_header("Content-Length", "512")
                    self.end_headers()
                    self.wfile.write(os.urandom(512))
                else:
                    self.send_header("Content-Length", "120")
                    self.end_headers()
                    for _ in range(120):
                        self.wfile.write(b"\x30")
                        self.wfile.flush()
                        time.sleep(0.5)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError) as error:
                with lock, open(args.log, "a") as log:
                    log.write("hostile %s: client went away (%s)\n" % (args.mode, type(error).__name__))

        def do_GET(self):
            self.send_error(405)

        def log_message(self, form, *values):
            sys.stderr.write("tsa: " + (form % values) + "\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(args.ready + ".tmp", "w") as ready:
        ready.write("%d\n" % server.server_address[1])
    os.rename(args.ready + ".tmp", args.ready)
    server.serve_forever()


if __name__ == "__main__":
    main()
