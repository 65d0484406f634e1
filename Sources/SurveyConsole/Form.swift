import Foundation
import SurveyHTTP

/// A query-string value as a form writes it (`+` for a space, percent-escapes), or nil when
/// its escapes are broken. (Form bodies are decoded by libmicrohttpd's post processor.)
func formDecoded(_ s: Substring) -> String? {
    s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
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
}

/// Percent-encoding for a value inside a URL's query or path segment.
func urlEncoded(_ s: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
}
