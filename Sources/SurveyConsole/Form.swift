import Foundation
import SurveyHTTP

/// A form's fields: `application/x-www-form-urlencoded` (every value of every name, in order — a
/// bulk form repeats `item`) or `multipart/form-data` (a file input's bytes in `files`).
struct Form {
    private let pairs: [(String, String)]
    /// multipart/form-data: each file part's bytes, by field name.
    let files: [String: [UInt8]]

    init(_ body: [UInt8], contentType: String? = nil) {
        if let contentType, contentType.lowercased().hasPrefix("multipart/form-data"),
           let b = contentType.range(of: "boundary=") {
            let boundary = contentType[b.upperBound...].split(separator: ";")[0].trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            (pairs, files) = Self.multipart(body, boundary: boundary)
            return
        }
        pairs = String(decoding: body, as: UTF8.self).split(separator: "&").compactMap { part in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(kv[0]) else { return nil }
            return (name, kv.count > 1 ? Self.decode(kv[1]) ?? "" : "")
        }
        files = [:]
    }

    subscript(_ name: String) -> String? { pairs.first { $0.0 == name }?.1 }
    func all(_ name: String) -> [String] { pairs.filter { $0.0 == name }.map(\.1) }

    /// RFC 7578: parts between `--boundary` lines, each with its headers; a part with a
    /// `filename` is a file.
    private static func multipart(_ body: [UInt8], boundary: String) -> ([(String, String)], [String: [UInt8]]) {
        let delimiter = Array(("\r\n--" + boundary).utf8)
        var data = [UInt8]("\r\n".utf8) + body  // the first delimiter has no CRLF before it
        var pairs: [(String, String)] = []
        var files: [String: [UInt8]] = [:]
        var starts: [Int] = []
        var i = 0
        while let at = find(delimiter, in: data, from: i) { starts.append(at); i = at + delimiter.count }
        for (n, start) in starts.enumerated() where n + 1 < starts.count {
            let part = Array(data[(start + delimiter.count)..<starts[n + 1]])
            guard let headEnd = find(Array("\r\n\r\n".utf8), in: part, from: 0) else { continue }
            let head = String(decoding: part[..<headEnd], as: UTF8.self)
            let content = Array(part[(headEnd + 4)...])
            guard let disposition = head.split(separator: "\r\n").first(where: { $0.lowercased().contains("content-disposition") }),
                  let name = Self.parameter("name", in: String(disposition)) else { continue }
            if Self.parameter("filename", in: String(disposition)) != nil {
                files[name] = content
            } else {
                pairs.append((name, String(decoding: content, as: UTF8.self)))
            }
        }
        data.removeAll()
        return (pairs, files)
    }

    private static func parameter(_ key: String, in header: String) -> String? {
        for piece in header.split(separator: ";") {
            let kv = piece.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == key {
                return kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            }
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard needle.count <= hay.count, from <= hay.count - needle.count else { return nil }
        var i = from
        while i <= hay.count - needle.count {
            if hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

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

    var form: Form { Form(body, contentType: header("content-type")) }
}

/// Percent-encoding for a value inside a URL's query or path segment.
func urlEncoded(_ s: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
}
