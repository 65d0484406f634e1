import Foundation

/// Small JSON columns (headers, id lists, sentences) as text.
enum JSONText {
    static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "null"
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String?, default value: T) -> T {
        guard let text, let decoded = try? JSONDecoder().decode(type, from: Data(text.utf8)) else { return value }
        return decoded
    }
}
