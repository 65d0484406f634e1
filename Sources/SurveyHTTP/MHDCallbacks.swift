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

/// libmicrohttpd asks a streamed body for its next bytes.
let readStream: MHD_ContentReaderCallback = { cls, _, buf, max in
    guard let cls, let buf else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
    let box = Unmanaged<StreamBox>.fromOpaque(cls).takeUnretainedValue()
    do {
        let n = try box.source.read(into: UnsafeMutableRawBufferPointer(start: buf, count: max))
        return n > 0 ? n : -1  // MHD_CONTENT_READER_END_OF_STREAM
    } catch {
        return -2
    }
}

/// The streamed response is destroyed: sent, failed, or its client went away.
let freeStream: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    let box = Unmanaged<StreamBox>.fromOpaque(cls).takeRetainedValue()
    box.source.close()
}
