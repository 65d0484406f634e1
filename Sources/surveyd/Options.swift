import Foundation

/// `--name value` and `--flag` arguments; every flag falls back to `SURVEYD_NAME` in the
/// environment (dashes become underscores).
struct Options {
    var positional: [String] = []
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    static let booleanFlags: Set<String> = ["demo", "help", "no-log", "quiet", "webhooks-allow-private"]
    /// Every option that takes a value. Anything else is refused before a command runs: a
    /// mistyped `--data-dri` must not start a server on the default data dir.
    static let valueOptions: Set<String> = [
        "data-dir", "host", "port", "synchronous", "max-body-bytes", "max-file-bytes", "max-unfinished-upload-bytes", "max-keyed-in-flight",
        "idempotency-retention-days", "entity-wait-days", "http-threads", "startup-check", "to", "name", "expires-at", "org", "until", "roles",
        "webhook-retry-schedule", "database-url", "from-data-dir", "to-database-url", "trusted-proxy", "max-form-bytes", "max-form-upload-bytes", "pyxform", "instance-name",
        "database-writers", "map-tiles", "map-attribution",
    ]

    init(_ args: [String]) throws {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a.hasPrefix("--") {
                // `--name value` or `--name=value`; a boolean flag takes neither.
                let spelled = a.dropFirst(2).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(spelled[0]), inline = spelled.count == 2 ? String(spelled[1]) : nil
                if Self.booleanFlags.contains(name) {
                    guard inline == nil else { throw CLIError("--\(name) takes no value") }
                    flags.insert(name)
                } else {
                    guard Self.valueOptions.contains(name) else { throw CLIError("unknown option --\(name) (surveyd help lists them)") }
                    if let inline {
                        values[name] = inline
                    } else {
                        // `--to --data-dir d` is a missing value, not a directory named "--data-dir".
                        guard i + 1 < args.count, !args[i + 1].hasPrefix("--") else { throw CLIError("--\(name) needs a value") }
                        values[name] = args[i + 1]
                        i += 1
                    }
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
