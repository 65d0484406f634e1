/// A decoded form: every value of every name in order (a bulk form repeats `item`), and the file
/// parts by field name (their bytes on disk, not in memory).
public struct FormFields: Sendable {
    public private(set) var pairs: [(name: String, value: String)] = []
    public private(set) var files: [String: FormFile] = [:]

    public init() {}

    public subscript(_ name: String) -> String? { pairs.first { $0.name == name }?.value }
    public func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    mutating func append(_ name: String, _ value: String) { pairs.append((name, value)) }
    mutating func attach(_ name: String, _ file: FormFile) { files[name] = file }
}
