import CArchive
import Foundation
import SurveyDomain
import SurveyOperations
import SurveyStorage

/// The zip export, built with libarchive and sent as it is built: every attached file first
/// (`files/<responseId>/<questionId>-<clientUploadId>.<ext>` made safe, in row order), then
/// `responses.csv` (its file cells hold those paths), a `responses-<repeatId>.csv` per repeat of
/// the form (named by `RepeatTableNames`, the manifest's `tables` saying which is which), and
/// `manifest.json`. The CSV and the
/// manifest's file list go to temp files while the files stream, so memory stays flat however
/// many rows and files there are; a big file is sent a piece at a time.
public final class ZipProducer: ExportProducer {
    private let export: Export
    private let columns: ExportColumns
    private var writer: CSVRowWriter
    private let blobs: BlobStore
    private let now: Int64
    private let archive: OpaquePointer
    /// Where libarchive's write callback puts the bytes it produces (the caller's buffer).
    private let sink = Sink()
    private let csv: TempText
    /// A table per repeat, in `columns.repeats` order, and its entry's name; the next one to archive.
    private let repeatCSVs: [TempText]
    private let repeatEntries: [String]
    private var nextRepeatCSV = 0
    private let manifestFiles: TempText
    private var fileCount = 0
    private var rows = 0
    private enum Phase { case rows, csv, manifest, done }
    private var phase = Phase.rows
    /// A file being copied into the archive across calls.
    private var copying: (reader: any ByteReader, remaining: Int)?
    /// The current row's files, waiting for their turn in the archive.
    private var queued: [(path: String, sha256: String, size: Int)] = []
    /// The names given in the current row's directory, lowercased: a row's files are its
    /// directory's only entries, so names need to differ within a row alone.
    private var rowNames: Set<String> = []
    /// A failure met while a row's cells were made, thrown once the row is done.
    private var failure: (any Error)?
    private var closed = false

    final class Sink { var out: [UInt8] = [] }

    public init(_ export: Export, splitSelectMultiples: Bool, bom: Bool, blobs: BlobStore, tempDirectory: String,
                now: Int64) throws {
        self.export = export
        self.columns = export.columns(splitSelectMultiples: splitSelectMultiples)
        writer = CSVRowWriter(columns)
        self.blobs = blobs
        self.now = now
        csv = try TempText(directory: tempDirectory)
        repeatCSVs = try columns.repeats.map { _ in try TempText(directory: tempDirectory) }
        // Distinct even where case does not count: unpacked on Windows or macOS, `responses-members.csv`
        // and `responses-Members.csv` would be one file.
        repeatEntries = RepeatTableNames.zipEntries(columns.repeats.map(\.id))
        manifestFiles = try TempText(directory: tempDirectory)
        guard let a = archive_write_new() else { throw ApiError(.internalError, "The archive could not be created.") }
        archive = a
        archive_write_set_format_zip(a)
        archive_write_set_bytes_per_block(a, 0)  // pass bytes through as they come: no tape blocking
        let me = Unmanaged.passUnretained(sink).toOpaque()
        guard archive_write_open2(a, me, nil, { _, cls, buf, n in
            guard let cls, let buf else { return -1 }
            Unmanaged<Sink>.fromOpaque(cls).takeUnretainedValue().out += UnsafeRawBufferPointer(start: buf, count: n)
            return n
        }, nil, nil) == ARCHIVE_OK else { throw ApiError(.internalError, "The archive could not be opened.") }
        var header: [UInt8] = bom ? CSVEncoder.byteOrderMark : []
        CSVEncoder.line(columns.header, into: &header)
        try csv.append(header)
        for (t, names) in columns.repeatHeaders.enumerated() {
            var line: [UInt8] = bom ? CSVEncoder.byteOrderMark : []
            CSVEncoder.line(names, into: &line)
            try repeatCSVs[t].append(line)
        }
    }

    public func produce(into out: inout [UInt8]) throws -> Bool {
        sink.out = out
        defer { out = sink.out }
        while sink.out.count < chunk {
            if let c = copying {
                try copy(c)
                continue
            }
            if !queued.isEmpty {
                let next = queued.removeFirst()
                let reader: any ByteReader
                do { reader = try blobs.reader(sha256: next.sha256) } catch {
                    throw ApiError(.storageUnavailable, "The file \(next.path) cannot be read.")
                }
                copying = (reader, next.size)
                try startEntry(next.path, size: next.size, compressed: false)
                continue
            }
            switch phase {
            case .rows:
                guard let r = try export.next() else {
                    export.close()
                    phase = .csv
                    try startEntry("responses.csv", size: csv.size, compressed: true)
                    copying = (FileByteReader(descriptor: try csv.reopen()), csv.size)
                    continue
                }
                rows += 1
                rowNames.removeAll(keepingCapacity: true)
                var line: [UInt8] = []
                let versionNumber = export.versionNumber(of: r.surveyVersionId), submitterName = export.submitterNames[r.submitter]
                let file = { self.attach(responseId: r.responseId, questionId: $0, clientUploadId: $1) }
                if columns.repeats.isEmpty {
                    writer.line(r, versionNumber: versionNumber, submitterName: submitterName, file: file, into: &line)
                } else {
                    // A form with repeats: its answers read once, for its row and its instances' rows.
                    let row = ExportRow(r, versionNumber: versionNumber, submitterName: submitterName)
                    CSVEncoder.line(columns.cells(row, file: file), into: &line)
                    var lines = [[UInt8]](repeating: [], count: repeatCSVs.count)
                    for (t, cells) in columns.repeatRows(row, file: file) { CSVEncoder.line(cells, into: &lines[t]) }
                    if let failure { throw failure }
                    for (t, bytes) in lines.enumerated() where !bytes.isEmpty { try repeatCSVs[t].append(bytes) }
                }
                if let failure { throw failure }
                try csv.append(line)
            case .csv where nextRepeatCSV < repeatCSVs.count:
                let t = nextRepeatCSV
                nextRepeatCSV += 1
                try startEntry(repeatEntries[t], size: repeatCSVs[t].size, compressed: true)
                copying = (FileByteReader(descriptor: try repeatCSVs[t].reopen()), repeatCSVs[t].size)
            case .csv:
                phase = .manifest
                let (head, tail) = manifestEnds()
                try startEntry("manifest.json", size: head.count + manifestFiles.size + tail.count, compressed: true)
                try data(head)
                copying = (FileByteReader(descriptor: try manifestFiles.reopen()), manifestFiles.size)
                manifestTail = tail
            case .manifest:
                try data(manifestTail)
                phase = .done
                guard archive_write_close(archive) == ARCHIVE_OK else { throw archiveError() }
                close()
                return false
            case .done:
                return false
            }
        }
        return true
    }

    private var manifestTail: [UInt8] = []

    /// A file answer: its upload is queued for the archive, listed in the manifest, and its
    /// cell holds the path. An answer whose upload is not there keeps its id. The name is made
    /// safe for every file system and unique in its directory (`ZipEntryName`).
    private func attach(responseId: String, questionId: String, clientUploadId: String) -> String {
        do {
            guard let upload = try export.upload(clientUploadId: clientUploadId) else { return clientUploadId }
            let name = ZipEntryName.unique(stem: ZipEntryName.safe("\(questionId)-\(clientUploadId)"),
                                           ext: Self.fileExtension(upload.contentType), taken: &rowNames)
            let path = "files/\(ZipEntryName.safe(responseId))/\(name)"
            queued.append((path, upload.sha256, Int(upload.size)))
            // The client's id too: the path's name is made safe and may differ from it.
            let entry: JSONValue = ["path": .string(path), "size": .number(Double(upload.size)), "sha256": .string(upload.sha256),
                                    "contentType": .string(upload.contentType), "clientUploadId": .string(clientUploadId)]
            try manifestFiles.append((fileCount == 0 ? [] : [UInt8(ascii: ",")]) + CanonicalJSON.encode(entry))
            fileCount += 1
            return path
        } catch {
            failure = error
            return clientUploadId
        }
    }

    /// The manifest around its file list.
    private func manifestEnds() -> ([UInt8], [UInt8]) {
        // `tables`: each repeat's table, as its name may differ from the repeat's id.
        let tables: [JSONValue] = zip(columns.repeats, repeatEntries).map { ["repeatId": .string($0.id), "path": .string($1)] }
        let meta: JSONValue = ["surveyId": .string(export.survey.surveyId), "exportCursor": .string(export.cursor),
                               "generatedAt": .string(Timestamp.format(now)), "filters": .object(export.described.mapValues { .string($0) }),
                               "rows": .number(Double(rows)), "files": [], "tables": .array(tables)]
        // Keys are sorted: `"files":[]` follows `exportCursor` (base64url, no quote), so its first
        // occurrence is the key's — split there.
        let text = CanonicalJSON.encode(meta)
        let marker = Array("\"files\":[".utf8)
        let at = (0...(text.count - marker.count)).first { Array(text[$0..<$0 + marker.count]) == marker }!
        return (Array(text[..<(at + marker.count)]), Array(text[(at + marker.count)...]))
    }

    private func copy(_ c: (reader: any ByteReader, remaining: Int)) throws {
        guard c.remaining > 0 else {  // an empty entry (a manifest without files): nothing to read
            c.reader.close()
            copying = nil
            return
        }
        var buffer = [UInt8](repeating: 0, count: min(c.remaining, chunk))
        let n = try buffer.withUnsafeMutableBytes { try c.reader.read(into: $0) }
        guard n > 0 else {
            c.reader.close()
            copying = nil
            throw ApiError(.storageUnavailable, "A file ended early while it was archived.")
        }
        try data(Array(buffer[0..<n]))
        if c.remaining - n == 0 {
            c.reader.close()
            copying = nil
        } else {
            copying = (c.reader, c.remaining - n)
        }
    }

    private func startEntry(_ path: String, size: Int, compressed: Bool) throws {
        // Files (photos, audio) are compressed already: stored as they are; text is deflated.
        _ = compressed ? archive_write_zip_set_compression_deflate(archive) : archive_write_zip_set_compression_store(archive)
        let entry = archive_entry_new()
        defer { archive_entry_free(entry) }
        archive_entry_set_pathname_utf8(entry, path)
        archive_entry_set_size(entry, Int64(size))
        archive_entry_set_filetype(entry, carchive_regular_file())
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_mtime(entry, time_t(now / 1000), 0)
        guard archive_write_header(archive, entry) == ARCHIVE_OK else { throw archiveError() }
    }

    private func data(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        let n = bytes.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw archiveError() }
    }

    private func archiveError() -> ApiError {
        ApiError(.internalError, "The archive failed: \(archive_error_string(archive).map { String(cString: $0) } ?? "unknown").")
    }

    public func close() {
        guard !closed else { return }
        closed = true
        export.close()
        if let c = copying { c.reader.close() }
        copying = nil
        archive_write_free(archive)
        csv.remove()
        for t in repeatCSVs { t.remove() }
        manifestFiles.remove()
    }

    static func fileExtension(_ contentType: String) -> String {
        switch contentType {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/gif": "gif"
        case "image/webp": "webp"
        case "image/heic": "heic"
        case "image/heif": "heif"
        case "application/pdf": "pdf"
        case "audio/mpeg": "mp3"
        case "audio/mp4", "audio/x-m4a": "m4a"
        case "audio/wav", "audio/x-wav": "wav"
        case "audio/ogg": "ogg"
        case "video/mp4": "mp4"
        case "text/plain": "txt"
        case "text/csv": "csv"
        default: "bin"
        }
    }
}

/// An append-only temp file (unlinked when removed), read back from its start.
final class TempText {
    let path: String
    private let fd: Int32
    private(set) var size = 0

    init(directory: String) throws {
        path = directory + "/export-" + UUID().uuidString
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ApiError(.storageUnavailable, "A temp file for the export could not be created.") }
    }

    func append(_ bytes: [UInt8]) throws {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw ApiError(.storageUnavailable, "The export's temp file could not be written (disk full?).") }
        size += n
    }

    /// A descriptor reading from the start (the caller closes it).
    func reopen() throws -> Int32 {
        let r = open(path, O_RDONLY | O_CLOEXEC)
        guard r >= 0 else { throw ApiError(.storageUnavailable, "The export's temp file could not be read.") }
        return r
    }

    func remove() {
        close(fd)
        unlink(path)
    }
}

