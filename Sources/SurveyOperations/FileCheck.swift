import SurveyDomain

/// What a file's bytes show as they pass once — its first bytes and, for a text type, every
/// byte — and the verdict on them: the one check of a finished file, whichever door it came
/// through (a plain PUT as it streams, a resumable upload read back once complete).
public struct FileCheck: Sendable {
    public let contentType: String
    public private(set) var size = 0
    private var prefix: [UInt8] = []
    /// For text types: every byte is checked, not only the first ones.
    private var text: TextStreamCheck?

    public init(contentType: String) {
        self.contentType = contentType
        text = FileSignature.isTextType(contentType) ? TextStreamCheck() : nil
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if prefix.count < FileSignature.prefixLength { prefix += bytes.prefix(FileSignature.prefixLength - prefix.count) }
        text?.update(bytes)
        size += bytes.count
    }

    /// 1011 unless the bytes are a file of `contentType`.
    public func verdict() throws(ApiError) {
        guard FileSignature.matches(contentType: contentType, prefix: prefix, totalSize: size), text?.isValidText ?? true else {
            throw ApiError(.corruptFile, "The bytes are not a \(contentType) file.")
        }
    }
}
