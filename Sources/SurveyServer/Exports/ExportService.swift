import Foundation
import SurveyConsole
import SurveyDomain
import SurveyExports
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto exports (`Exports`): `GET …/surveys/{surveyId}/responses.{csv,xlsx,geojson,zip}`,
/// the filters read from the query, the body streamed from the export's snapshot (XLSX: built
/// first, then sent — a workbook is a zip assembled when it is closed).
struct ExportService {
    let services: Services

    enum Format: String, CaseIterable {
        case csv, xlsx, geojson, zip
        var contentType: String {
            switch self {
            case .csv: "text/csv; charset=utf-8"
            case .xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
            case .geojson: "application/geo+json"
            case .zip: "application/zip"
            }
        }
    }

    func register(into router: inout Router) {
        for format in Format.allCases {
            // Blocking: an export appends its audit entry (a write) before it is sent.
            services.route(&router, "GET", "/v1/orgs/{orgId}/surveys/{surveyId}/responses.\(format.rawValue)",
                           Exports.access, runs: .blocking) { context, request in
                try export(format, context, request)
            }
        }
    }

    /// The console's download button (`…/download?format=csv&…`): the same export for the
    /// signed-in person. The form's dates become the day boundaries of `receivedFrom`/`receivedTo`;
    /// empty fields are no filter.
    func registerConsoleDownload(into router: inout Router, console: Console) {
        let service = self
        console.page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/download", Exports.access, runs: .blocking) { visit, request in
            guard let format = request.query["format"].flatMap(Format.init(rawValue:)) else {
                throw ApiError.malformed("Choose a format: csv, xlsx, geojson or zip.")
            }
            var query = request.query.filter { !$0.value.isEmpty && !["format", "from", "to"].contains($0.key) }
            if let d = request.query["from"], !d.isEmpty { query["receivedFrom"] = d + "T00:00:00Z" }
            if let d = request.query["to"], !d.isEmpty { query["receivedTo"] = d + "T00:00:00Z" }
            let h = request.head
            let head = RequestHead(method: h.method, path: h.path, route: h.route, pathParameters: h.pathParameters, query: query,
                                   headers: h.headers, clientAddress: h.clientAddress)
            return try service.export(format, visit.admission, HTTPRequest(head: head, body: []))
        }
    }

    /// The console map's points, for the signed-in member under the view's filters (RFC 3339
    /// times), a collector's own only, not audited as an export: `…/points.json?…` in the compact
    /// form the map page reads (`MapPointsEncoder`: a tenth of the bytes), `…/points.geojson?…`
    /// as the GeoJSON export's features (every answer as a property).
    func registerConsolePoints(into router: inout Router, console: Console) {
        let service = self
        @Sendable func points(_ visit: Visit, _ request: HTTPRequest, _ producer: (Export, ExportColumns, String) -> any ExportProducer,
                    _ type: String) throws -> HTTPResponse {
            let query = request.query.filter { !$0.value.isEmpty }
            let export = try service.services.operations.exports.openForView(orgId: visit.admission.orgId, surveyId: request.parameter("surveyId"),
                                                                              by: try visit.admission.member(), try Self.exportRequest("geojson", query))
            let columns = export.columns(splitSelectMultiples: false)
            guard let field = query["geoField"] ?? columns.firstGeopoint,
                  columns.questions.contains(where: { $0.id == field && $0.type == .geopoint }) else {
                export.close()
                throw ApiError(.validationFailed, "The survey has no such location (geopoint) question.")
            }
            return .stream(ExportStream(producer(export, columns, field)), headers: [
                ("Content-Type", type), ("Cache-Control", "private, no-store"), ("X-Content-Type-Options", "nosniff"),
            ])
        }
        // The map's clusters for one view, from the survey's points kept in memory (`MapPointLists`).
        let lists = MapPointLists()
        console.page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/clusters.json", DataViews.access,
                     runs: .blocking) { visit, request in
            try service.clusters(visit, request, lists)
        }
        console.page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/points.geojson", DataViews.access) { visit, request in
            try points(visit, request, { export, _, field in GeoJSONProducer(export, geoField: field) }, "application/geo+json")
        }
        console.page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/points.json", DataViews.access) { visit, request in
            try points(visit, request, { export, columns, field in
                MapPointsProducer(export, geoField: field,
                                  lineFields: columns.questions.filter { $0.type == .geotrace || $0.type == .geoshape }.map(\.id))
            }, "application/json")
        }
    }

    /// `…/clusters.json?geoField=…&<filters>&zoom=Z&bbox=west,south,east,north[&lines=true]`: the
    /// console map's clusters and single points of one view (`MapClusters`), for the signed-in
    /// member under the view's filters (RFC 3339 times), a collector's own only, not audited.
    /// The located responses are read into a `MapPointList` once and kept (`MapPointLists`); a
    /// request reads its snapshot's count and audit sequence and reads the responses again only
    /// when either moved. `Surveyd-Map-Points: kept` or `read` says which it was.
    func clusters(_ visit: Visit, _ request: HTTPRequest, _ lists: MapPointLists) throws -> HTTPResponse {
        let query = request.query
        let view = try MapView(zoom: query["zoom"], bbox: query["bbox"])
        let withLines = try Self.flag(query, "lines")
        let user = try visit.admission.member()
        let operations = services.operations
        let filters = query.filter { !$0.value.isEmpty && !["zoom", "bbox", "lines"].contains($0.key) }
        let export = try operations.exports.openForView(orgId: visit.admission.orgId, surveyId: request.parameter("surveyId"), by: user,
                                                        try Self.exportRequest("geojson", filters), settlingAudit: true)
        defer { export.close() }
        let columns = export.columns(splitSelectMultiples: false)
        guard let field = filters["geoField"] ?? columns.firstGeopoint,
              columns.questions.contains(where: { $0.id == field && $0.type == .geopoint }) else {
            throw ApiError(.validationFailed, "The survey has no such location (geopoint) question.")
        }
        let lineFields = columns.questions.filter { $0.type == .geotrace || $0.type == .geoshape }.map(\.id)
        let key = MapPointLists.Key(orgId: visit.admission.orgId, surveyId: request.parameter("surveyId"), geoField: field, lineFields: lineFields,
                                    filters: export.described, onlySubmitter: operations.seesAll(user) ? nil : user.userId)
        let mark = MapPointLists.Mark(rows: export.rows, sequence: try export.changeSequence())
        let list: MapPointList, kept: Bool
        if let found = lists.list(key, at: mark) {
            (list, kept) = (found, true)
        } else {
            var read = MapPointList(geoField: field, lineFields: lineFields)
            while let r = try export.next() { read.add(r) }
            lists.keep(read, key, at: mark)
            (list, kept) = (read, false)
        }
        let body = MapClusters(list, view).json(list, names: export.submitterNames, lines: withLines)
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "private, no-store"),
                                                   ("X-Content-Type-Options", "nosniff"), ("Surveyd-Map-Points", kept ? "kept" : "read")], body: body)
    }

    func export(_ format: Format, _ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let query = request.query
        let bom = try Self.flag(query, "bom")
        let split = try Self.flag(query, "splitSelectMultiples")
        let export = try services.operations.exports.open(orgId: context.orgId, surveyId: request.parameter("surveyId"),
                                                          by: try context.member(), try Self.exportRequest(format.rawValue, query))
        let headers = [
            ("Content-Type", format.contentType),
            ("Content-Disposition", "attachment; filename=\"\(Self.filename(export.survey.title, now: services.clock.nowMillis())).\(format.rawValue)\""),
            ("Surveyd-Export-Cursor", export.cursor),
            ("Cache-Control", "private, no-store"),
            ("X-Content-Type-Options", "nosniff"),
        ]
        let temp = services.blobs.layout.temp
        let producer: any ExportProducer
        switch format {
        case .csv:
            producer = CSVProducer(export, splitSelectMultiples: split, bom: bom)
        case .xlsx:
            defer { export.close() }
            let path = temp + "/export-" + UUID().uuidString + ".xlsx"
            defer { unlink(path) }  // the open descriptor keeps the bytes until they are sent
            _ = try XLSXWorkbook.write(export, splitSelectMultiples: split, to: path, tempDirectory: temp)
            guard let file = HTTPResponse.file(path: path, headers: headers) else { throw ApiError(.storageUnavailable, "The spreadsheet cannot be read.") }
            do { try export.audit() } catch {
                if let (fd, _) = file.file { close(fd) }
                throw error
            }
            return file
        case .zip:
            do {
                producer = try ZipProducer(export, splitSelectMultiples: split, bom: bom, blobs: services.blobs, tempDirectory: temp, now: services.clock.nowMillis())
            } catch {
                export.close()
                throw error
            }
        case .geojson:
            let columns = export.columns(splitSelectMultiples: false)
            let field = query["geoField"] ?? columns.firstGeopoint
            guard let field, columns.questions.contains(where: { $0.id == field && $0.type == .geopoint }) else {
                export.close()
                throw ApiError(.validationFailed, "geoField must name a geopoint question of the survey.",
                               errors: [FieldError(path: "geoField", message: field == nil ? "the survey has no geopoint question" : "not a geopoint question")])
            }
            producer = GeoJSONProducer(export, geoField: field)
        }
        // Audited only now that nothing refused it: its first bytes go out next.
        do { try export.audit() } catch {
            producer.close()
            throw error
        }
        return .stream(ExportStream(producer), headers: headers)
    }

    /// The filters; a value that cannot be read is 1031.
    static func exportRequest(_ format: String, _ query: [String: String]) throws -> ExportRequest {
        var r = ExportRequest(format: format)
        for key in ["reviewState", "surveyVersionId", "submittedBy", "fieldTaskId", "receivedFrom", "receivedTo", "afterCursor",
                    "bom", "splitSelectMultiples", "geoField"] {
            if let v = query[key] { r.described[key] = v }
        }
        if let states = query["reviewState"] {
            r.reviewStates = try states.split(separator: ",", omittingEmptySubsequences: false).map {
                guard let s = ReviewState(rawValue: String($0)) else {
                    throw ApiError.malformed("reviewState must be a comma-separated list of \(ReviewState.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                return s
            }
        }
        r.surveyVersionId = query["surveyVersionId"]
        r.submittedBy = query["submittedBy"]
        r.fieldTaskId = query["fieldTaskId"]
        r.receivedFrom = try time(query, "receivedFrom")
        r.receivedTo = try time(query, "receivedTo")
        r.afterCursor = query["afterCursor"]
        return r
    }

    static func time(_ query: [String: String], _ key: String) throws -> Int64? {
        guard let v = query[key] else { return nil }
        guard let t = Timestamp.parse(v) else { throw ApiError.malformed("\(key) must be an RFC 3339 date-time.") }
        return t
    }

    static func flag(_ query: [String: String], _ key: String) throws -> Bool {
        switch query[key] {
        case nil, "false": return false
        case "true": return true
        default: throw ApiError.malformed("\(key) must be true or false.")
        }
    }

    /// `<survey title>-<date>`, in characters safe in any file system and header.
    static func filename(_ title: String, now: Int64) -> String {
        var safe = String(title.unicodeScalars.map { s -> Character in
            s.isASCII && (CharacterSet.alphanumerics.contains(s) || s == "-" || s == "_") ? Character(s) : "_"
        })
        safe = String(safe.prefix(80))
        if safe.allSatisfy({ $0 == "_" }) { safe = "survey" }
        return safe + "-" + Timestamp.format(now).prefix(10)
    }
}

/// Hands an export's producer to libmicrohttpd as it asks for bytes.
final class ExportStream: BodySource, @unchecked Sendable {
    // @unchecked: libmicrohttpd asks one connection's body for bytes one call at a time.
    private let producer: any ExportProducer
    private var pending: [UInt8] = []
    private var offset = 0
    private var more = true

    init(_ producer: any ExportProducer) { self.producer = producer }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while offset == pending.count {
            guard more else { return 0 }
            pending.removeAll(keepingCapacity: true)
            offset = 0
            do { more = try producer.produce(into: &pending) } catch {
                // The client sees the body cut short (no last chunk); the log says why.
                StandardError.line("surveyd: an export stopped part-way: \(error)")
                throw error
            }
        }
        let n = min(buffer.count, pending.count - offset)
        pending.withUnsafeBytes { src in
            buffer.baseAddress!.copyMemory(from: src.baseAddress! + offset, byteCount: n)
        }
        offset += n
        return n
    }

    func close() { producer.close() }
}
