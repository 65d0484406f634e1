import CMicroHTTPD
import SurveyDomain

/// Decodes a form body as it streams in, with libmicrohttpd's post processor (urlencoded and
/// `multipart/form-data`): text fields collected, file parts written to disk as they arrive, the
/// limits enforced as it reads — never the whole body in memory, and no hand-written multipart.
public final class FormDecoder: FormBody {
    public struct Limits: Sendable {
        /// The whole body.
        public var maxBytes: Int
        public var maxFields: Int = 2_000
        /// One text field's value.
        public var maxValueBytes: Int = 256 << 10
        public var maxFiles: Int = 8
        public init(maxBytes: Int) { self.maxBytes = maxBytes }
    }

    enum Failure: Error {
        case notAForm, malformed, tooLarge(String), storage

        var error: ApiError {
            switch self {
            case .notAForm:
                ApiError.malformed("This form could not be read: send it as application/x-www-form-urlencoded, or as multipart/form-data with a boundary.")
            case .malformed:
                ApiError.malformed("This form could not be read: its body is not well-formed (cut short, or a part without its boundary).")
            case .tooLarge(let what): ApiError(.payloadTooLarge, "This form is too large: \(what).")
            case .storage: ApiError(.storageUnavailable, "The form's file could not be stored; nothing was changed. Try again.")
            }
        }
    }

    private let limits: Limits
    private let directory: String
    /// nil when the request has no Content-Type: then it must have no body either.
    private var processor: OpaquePointer?
    private(set) var fields = FormFields()
    private var text: (name: String, bytes: [UInt8])?
    private var file: FormFile?
    private var received = 0
    /// What file parts may still keep in memory (`FormFile`), for the whole form.
    private var memoryLeft = 1 << 20
    private var count = 0
    private var failure: Failure?

    /// Refuses a Content-Type that is not a form (or a multipart one without a usable boundary)
    /// before any of the body is read.
    init(connection: OpaquePointer, contentType: String?, limits: Limits, directory: String) throws(Failure) {
        self.limits = limits
        self.directory = directory
        guard contentType != nil else { return }
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let p = MHD_create_post_processor(connection, 16 * 1024, formIterator, me) else { throw .notAForm }
        processor = p
    }

    deinit { if let processor { _ = MHD_destroy_post_processor(processor) } }

    func write(_ chunk: UnsafeRawBufferPointer) throws(ApiError) {
        do throws(Failure) { try decode(chunk) } catch { throw error.error }
    }

    /// The fields, once the body has ended; a body cut short is malformed.
    func finish() throws(ApiError) -> FormFields {
        do throws(Failure) { return try close() } catch { throw error.error }
    }

    private func decode(_ chunk: UnsafeRawBufferPointer) throws(Failure) {
        received += chunk.count
        guard received <= limits.maxBytes else { throw .tooLarge("more than \(limits.maxBytes) bytes") }
        guard let processor else { throw .notAForm }
        let ok = chunk.withMemoryRebound(to: CChar.self) { MHD_post_process(processor, $0.baseAddress, $0.count) }
        if let failure { throw failure }
        guard ok == .YES else { throw .malformed }
    }

    private func close() throws(Failure) -> FormFields {
        if let processor {
            self.processor = nil
            let complete = MHD_destroy_post_processor(processor)
            if let failure { throw failure }
            guard complete == .YES else { throw .malformed }
        }
        closePart()
        return fields
    }

    /// One call of the post processor: the next bytes of the part named `key` (`offset` 0 starts
    /// a part).
    fileprivate func receive(key: String, fileName: String?, contentType: String?, data: UnsafeRawBufferPointer, offset: UInt64) -> Bool {
        do {
            if offset == 0 {
                closePart()
                count += 1
                guard count <= limits.maxFields else { throw Failure.tooLarge("more than \(limits.maxFields) fields") }
                if let fileName {
                    guard fields.files.count < limits.maxFiles else { throw Failure.tooLarge("more than \(limits.maxFiles) files") }
                    // Parts held in memory share one budget: past it, every part goes to disk.
                    let share = min(FormFile.partMemory, memoryLeft)
                    memoryLeft -= share
                    let part = FormFile(directory: directory, fileName: fileName, contentType: contentType ?? "application/octet-stream",
                                        memoryLimit: share)
                    file = part
                    fields.attach(key, part)
                } else {
                    text = (key, [])
                }
            }
            if let file {
                try file.append(data)
            } else if text != nil {
                guard (text?.bytes.count ?? 0) + data.count <= limits.maxValueBytes else {
                    throw Failure.tooLarge("the field \(key) is over \(limits.maxValueBytes) bytes")
                }
                text?.bytes.append(contentsOf: data)
            }
            return true
        } catch {
            failure = error as? Failure ?? .malformed
            return false
        }
    }

    private func closePart() {
        if let text { fields.append(text.name, String(decoding: text.bytes, as: UTF8.self)) }
        text = nil
        file = nil
    }
}

private let formIterator: MHD_PostDataIterator = { cls, _, key, fileName, contentType, _, data, offset, size in
    guard let cls, let key else { return .NO }
    let decoder = Unmanaged<FormDecoder>.fromOpaque(cls).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    return decoder.receive(key: String(cString: key), fileName: fileName.map { String(cString: $0) },
                           contentType: contentType.map { String(cString: $0) }, data: bytes, offset: offset) ? .YES : .NO
}
