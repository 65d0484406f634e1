import CMicroHTTPD

/// The C entry points libmicrohttpd calls: each finds its `HTTPServer` in `cls` and hands over.
// Callbacks are global constants, never closures in main.swift (those are main-actor isolated
// and trap when an MHD thread calls them).
let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadSize, state in
    guard let cls, let connection, let url, let method, let uploadSize, let state else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.handle(connection: connection, url: String(cString: url), method: String(cString: method),
                         uploadData: uploadData, uploadSize: uploadSize, state: state)
}

let completedHandler: MHD_RequestCompletedCallback = { cls, connection, state, code in
    guard let cls, let connection else { return }
    Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().completed(connection: connection, state: state, code: code)
}
