import Foundation
import SurveyHTTP

/// An `application/x-www-form-urlencoded` body: every value of every name, in order (a bulk
/// form repeats `item`).
struct Form {
    private let pairs: [(String, String)]

    init(_ body: [UInt8]) {
        pairs = String(decoding: body, as: UTF8.self).split(separator: "&").compactMap { part in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(kv[0]) else { return nil }
            return (name, kv.count > 1 ? Self.decode(kv[1]) ?? "" : "")
        }
    }

    subscript(_ name: String) -> String? { pairs.first { $0.0 == name }?.1 }
    func all(_ name: String) -> [String] { pairs.filter { $0.0 == name }.map(\.1) }

    static func decode(_ s: Substring) -> String? {
        s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

extension HTTPRequest {
    /// A cookie sent with the request.
    func cookie(_ name: String) -> String? {
        guard let header = header("cookie") else { return nil }
        for part in header.split(separator: ";") {
            let kv = part.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces) == name { return kv[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    var form: Form { Form(body) }
}

/// Percent-encoding for a value inside a URL's query or path segment.
func urlEncoded(_ s: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
}
