/// A decoded form: every value of every name in order (a bulk form repeats `item`), and the file
/// parts by field name (their bytes on disk, not in memory).
public struct FormFields: Sendable {
    public private(set) var pairs: [(name: String, value: String)] = []
    public private(set) var files: [String: FormFile] = [:]
    /// Every file part in the order sent, with its field name (two parts may share a name).
    public private(set) var fileParts: [(name: String, file: FormFile)] = []

    public init() {}

    public subscript(_ name: String) -> String? { pairs.first { $0.name == name }?.value }
    public func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    mutating func append(_ name: String, _ value: String) { pairs.append((name, value)) }
    mutating func attach(_ name: String, _ file: FormFile) {
        files[name] = file
        fileParts.append((name, file))
    }
}
