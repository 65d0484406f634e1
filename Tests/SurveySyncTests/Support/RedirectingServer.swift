import Foundation

/// Two loopback listeners in one Python process: the server address, and a recorder on
/// `localhost:<recorder port>` (another origin) that answers as surveyd would and writes down every
/// request it gets with its headers. Each writes down what it was asked.
final class RedirectingServer {
    struct Seen: Decodable {
        let request: String
        let headers: [String: String]
    }

    /// How the server address points at the recorder.
    enum Mode: String {
        /// Every request is answered with 307 to the same path on the recorder.
        case redirectEverything = "redirect"
        /// Answers as surveyd would, except that a tus creation's 201 gives a `Location` on the
        /// recorder (and no upload is known: `GET …/uploads/{id}` is 404).
        case uploadLocationElsewhere = "upload-location-elsewhere"
    }

    let redirectorPort: UInt16
    let recorderPort: UInt16
    private let logFile: URL
    private let child: KillableChild

    private static let script = #"""
import http.server, json, sys, threading

log_path = sys.argv[1]
mode = sys.argv[2]

def note(name, handler):
    with open(log_path + '.' + name, 'a') as f:
        f.write(json.dumps({'request': handler.requestline, 'headers': dict(handler.headers)}) + '\n')

def drain(handler):
    length = int(handler.headers.get('Content-Length') or 0)
    if length:
        handler.rfile.read(length)
    return length

def like_surveyd(handler, length):
    if handler.command in ('PATCH', 'HEAD'):
        # A tus chunk or offset query: accepted, so following the address would look like success.
        offset = int(handler.headers.get('Upload-Offset') or 0) + length
        handler.send_response(204 if handler.command == 'PATCH' else 200)
        handler.send_header('Tus-Resumable', '1.0.0')
        handler.send_header('Upload-Offset', str(offset))
        handler.send_header('Content-Length', '0')
        handler.end_headers()
        return
    body = b'{"items":[],"nextCursor":null,"status":"active"}' if handler.command == 'GET' else b'{"responseId":"r-1","reviewState":"submitted","revision":1}'
    handler.send_response(200 if handler.command == 'GET' else 201)
    handler.send_header('Content-Type', 'application/json')
    handler.send_header('Content-Length', str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)

class Recorder(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = drain(self)
        note('recorder', self)
        # What surveyd would answer, so following the redirect would look like success.
        like_surveyd(self, length)
    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = answer
    def log_message(self, *args):
        pass

recorder = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Recorder)

class Redirector(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = drain(self)
        note('redirector', self)
        elsewhere = 'http://localhost:%d%s' % (recorder.server_port, self.path)
        if mode == 'redirect':
            self.send_response(307)
            self.send_header('Location', elsewhere)
            self.send_header('Content-Length', '0')
            self.end_headers()
        elif self.command == 'POST' and self.path.endswith('/uploads/resumable'):
            self.send_response(201)
            self.send_header('Tus-Resumable', '1.0.0')
            self.send_header('Location', elsewhere + '/up-1')
            self.send_header('Content-Length', '0')
            self.end_headers()
        elif self.command == 'GET' and '/uploads/' in self.path:
            body = b'{"status":404,"errorCode":1005,"retryable":false}'
            self.send_response(404)
            self.send_header('Content-Type', 'application/problem+json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            like_surveyd(self, length)
    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = answer
    def log_message(self, *args):
        pass

redirector = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Redirector)
threading.Thread(target=recorder.serve_forever, daemon=True).start()
print('recorder on 127.0.0.1:%d' % recorder.server_port, flush=True)
print('redirector on 127.0.0.1:%d' % redirector.server_port, flush=True)
redirector.serve_forever()
"""#

    init(directory: URL, mode: Mode = .redirectEverything) throws {
        logFile = directory.appendingPathComponent("redirects")
        child = try KillableChild("/usr/bin/env", ["python3", "-c", Self.script, logFile.path, mode.rawValue])
        recorderPort = try child.waitForPort(after: "recorder on")
        redirectorPort = try child.waitForPort(after: "redirector on")
    }

    var base: String { "http://127.0.0.1:\(redirectorPort)" }
    /// Where the redirects and the upload `Location` point: another host name and another port.
    var target: String { "localhost:\(recorderPort)" }

    /// Requests the server address got (answered with its 307 when redirecting everything).
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
