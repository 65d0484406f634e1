import Foundation

/// Answers kept by an app as JSON text, turned into the values `Outbox.captureResponse` takes.
public enum AnswersJSON {
    public static func decode(_ data: Data) throws -> [String: any Sendable] {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw OutboxError.invalidCapture("the answers are not a JSON object")
        }
        return object.mapValues(sendable)
    }

    private static func sendable(_ value: Any) -> any Sendable {
        switch value {
        case let s as String: return s
        case let n as NSNumber:
            #if canImport(ObjectiveC)
            if CFGetTypeID(n) == CFBooleanGetTypeID() { return n.boolValue }
            #else
            if type(of: n) == type(of: NSNumber(value: true)) && (n == NSNumber(value: true) || n == NSNumber(value: false)) { return n.boolValue }
            #endif
            if let i = Int(exactly: n.doubleValue), !"\(n)".contains(".") { return i }
            return n.doubleValue
        case let a as [Any]: return a.map(sendable)
        case let d as [String: Any]: return d.mapValues(sendable)
        default: return NSNull()
        }
    }
}
