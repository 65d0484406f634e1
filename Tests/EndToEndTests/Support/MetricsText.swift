import Foundation

/// `/metrics` as tests read it: every series carries the `process` label of the process that
/// counted it; without it a test can look for `name value` or `name{route="…"} value`.
enum MetricsText {
    static func withoutProcess(_ text: String) -> String {
        text.replacingOccurrences(of: #"\{process="(?:[^"\\]|\\.)*"\}"#, with: "", options: .regularExpression)
            .replacingOccurrences(of: #"\{process="(?:[^"\\]|\\.)*","#, with: "{", options: .regularExpression)
    }
}
