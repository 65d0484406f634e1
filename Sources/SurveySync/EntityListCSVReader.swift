import Foundation

/// An entity list as the server sends it to devices, read from its CSV.
struct ServerEntityList: Sendable, Equatable {
    /// The list's properties, in the CSV's column order.
    let properties: [String]
    /// In the server's order (by id).
    let entities: [ServerEntity]
}

/// One entity of the server's copy. A property without a value is absent.
struct ServerEntity: Sendable, Equatable {
    let id: String
    let label: String
    let version: Int
    let properties: [String: String]
}

/// Reads `GET …/entity-lists/{name}/entities.csv` (RFC 4180: quoted fields, `""` inside quotes,
/// commas and line breaks inside quotes, CRLF or LF): `name,label,__version,__trunkVersion,__branchId`
/// then the properties. Anything else — a broken quote, a row of the wrong width, a version that
/// is not a number, a repeated id, bytes that are not UTF-8 — is refused whole, so a damaged
/// download never replaces a good copy.
enum EntityListCSVReader {
    struct Malformed: Error, Equatable, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The columns the server writes before the properties; `__trunkVersion` and `__branchId` are
    /// the phone's own (always empty from the server).
    static let reserved: Set<String> = ["name", "label", "__version", "__trunkVersion", "__branchId"]

    static func read(_ bytes: [UInt8]) throws(Malformed) -> ServerEntityList {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Malformed(reason: "the CSV is not UTF-8") }
        let rows = try records(text)
        guard let header = rows.first else { throw Malformed(reason: "the CSV has no header") }
        guard let nameAt = header.firstIndex(of: "name"), let labelAt = header.firstIndex(of: "label"),
              let versionAt = header.firstIndex(of: "__version") else {
            throw Malformed(reason: "the header lacks name, label or __version")
        }
        guard Set(header).count == header.count else { throw Malformed(reason: "the header repeats a column") }
        let propertyColumns = header.indices.filter { !reserved.contains(header[$0]) }
        var seen = Set<String>()
        var entities: [ServerEntity] = []
        for (number, row) in rows.dropFirst().enumerated() {
            let line = number + 2
            guard row.count == header.count else {
                throw Malformed(reason: "row \(line) has \(row.count) fields, the header \(header.count)")
            }
            let id = row[nameAt]
            guard !id.isEmpty, seen.insert(id).inserted else { throw Malformed(reason: "row \(line) has an empty or repeated name") }
            guard let version = Int(row[versionAt]), version >= 1 else { throw Malformed(reason: "row \(line) has no version") }
            var properties: [String: String] = [:]
            for column in propertyColumns where !row[column].isEmpty { properties[header[column]] = row[column] }
            entities.append(ServerEntity(id: id, label: row[labelAt], version: version, properties: properties))
        }
        return ServerEntityList(properties: propertyColumns.map { header[$0] }, entities: entities)
    }

    /// The records of `text`, each its fields. A last line break ends the last record (it does
    /// not start an empty one); empty lines elsewhere are records of one empty field.
    static func records(_ text: String) throws(Malformed) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var quoted = false      // inside a quoted field
        var afterQuote = false  // a quoted field just closed: only a separator may follow
        var atRecordStart = true
        var scalars = text.unicodeScalars[...]
        if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }  // a byte order mark is not data
        var iterator = scalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        func next() -> Unicode.Scalar? {
            if let p = pending { pending = nil; return p }
            return iterator.next()
        }
        while let c = next() {
            if quoted {
                if c == "\"" {
                    if let following = next() {
                        if following == "\"" { field.unicodeScalars.append("\"") } else { quoted = false; afterQuote = true; pending = following }
                    } else { quoted = false; afterQuote = true }
                } else {
                    field.unicodeScalars.append(c)
                }
                continue
            }
            switch c {
            case ",":
                record.append(field); field = ""; afterQuote = false; atRecordStart = false
            case "\r", "\n":
                if c == "\r" {
                    // CR only as part of CRLF: a lone CR is not a line break the server writes.
                    guard let following = next(), following == "\n" else { throw Malformed(reason: "a carriage return without a line feed") }
                }
                record.append(field); records.append(record)
                record = []; field = ""; afterQuote = false; atRecordStart = true
            case "\"":
                guard field.isEmpty, !afterQuote else { throw Malformed(reason: "a quote inside an unquoted field") }
                quoted = true; atRecordStart = false
            default:
                guard !afterQuote else { throw Malformed(reason: "text after a closing quote") }
                field.unicodeScalars.append(c); atRecordStart = false
            }
        }
        guard !quoted else { throw Malformed(reason: "a quoted field is not closed") }
        if !atRecordStart { record.append(field); records.append(record) }
        return records
    }
}
