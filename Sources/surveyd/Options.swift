import Foundation

/// `--name value` and `--flag` arguments; every flag falls back to `SURVEYD_NAME` in the
/// environment (dashes become underscores).
struct Options {
    var positional: [String] = []
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    static let booleanFlags: Set<String> = ["demo", "help", "no-log"]

    init(_ args: [String]) throws {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a.hasPrefix("--") {
                var name = String(a.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    values[String(name[..<eq])] = String(name[name.index(after: eq)...])
                    name = ""
                } else if Self.booleanFlags.contains(name) {
                    flags.insert(name)
                } else {
                    guard i + 1 < args.count else { throw CLIError("--\(name) needs a value") }
                    values[name] = args[i + 1]
                    i += 1
                }
            } else {
                positional.append(a)
            }
            i += 1
        }
    }

    func value(_ name: String) -> String? {
        values[name] ?? ProcessInfo.processInfo.environment["SURVEYD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
    }

    func flag(_ name: String) -> Bool {
        if flags.contains(name) { return true }
        let env = ProcessInfo.processInfo.environment["SURVEYD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
        return env == "1" || env == "true"
    }

    func required(_ name: String) throws -> String {
        guard let v = value(name), !v.isEmpty else { throw CLIError("--\(name) is required") }
        return v
    }
}

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
