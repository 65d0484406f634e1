import Foundation

/// Two loopback listeners in one Python process: a redirector that answers every request with 307
/// to the same path on `localhost:<recorder port>` (another origin), and a recorder that answers
/// as surveyd would and writes down every request it gets with its headers.
final class RedirectingServer {
    struct Seen: Decodable {
        let request: String
        let headers: [String: String]
    }

    let redirectorPort: UInt16
    let recorderPort: UInt16
    private let logFile: URL
    private let child: KillableChild

    private static let script = #"""
import http.server, json, sys, threading

log_path = sys.argv[1]

def note(name, handler):
    with open(log_path + '.' + name, 'a') as f:
        f.write(json.dumps({'request': handler.requestline, 'headers': dict(handler.headers)}) + '\n')

def drain(handler):
    length = int(handler.headers.get('Content-Length') or 0)
    if length:
        handler.rfile.read(length)

class Recorder(http.server.BaseHTTPRequestHandler):
    def answer(self):
        drain(self)
        note('recorder', self)
        # What surveyd would answer, so following the redirect would look like success.
        body = b'{"items":[],"nextCursor":null,"status":"active"}' if self.command == 'GET' else b'{"responseId":"r-1","reviewState":"submitted","revision":1}'
        self.send_response(200 if self.command == 'GET' else 201)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer
    def log_message(self, *args):
        pass

recorder = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Recorder)

class Redirector(http.server.BaseHTTPRequestHandler):
    def answer(self):
        drain(self)
        note('redirector', self)
        self.send_response(307)
        self.send_header('Location', 'http://localhost:%d%s' % (recorder.server_port, self.path))
        self.send_header('Content-Length', '0')
        self.end_headers()
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer
    def log_message(self, *args):
        pass

redirector = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Redirector)
threading.Thread(target=recorder.serve_forever, daemon=True).start()
print('recorder on 127.0.0.1:%d' % recorder.server_port, flush=True)
print('redirector on 127.0.0.1:%d' % redirector.server_port, flush=True)
redirector.serve_forever()
"""#

    init(directory: URL) throws {
        logFile = directory.appendingPathComponent("redirects")
        child = try KillableChild("/usr/bin/env", ["python3", "-c", Self.script, logFile.path])
        recorderPort = try child.waitForPort(after: "recorder on")
        redirectorPort = try child.waitForPort(after: "redirector on")
    }

    var base: String { "http://127.0.0.1:\(redirectorPort)" }
    /// Where the redirects point: another host name and another port.
    var target: String { "localhost:\(recorderPort)" }

    /// Requests the redirector answered with its 307.
    var redirected: [Seen] { read("redirector") }
    /// Requests that reached the other origin: each would have carried what the client sent there.
    var followed: [Seen] { read("recorder") }

    private func read(_ name: String) -> [Seen] {
        let text = (try? String(contentsOfFile: logFile.path + "." + name, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Seen.self, from: Data($0.utf8)) }
    }

    func stop() { child.killNow() }

    deinit { stop() }
}
