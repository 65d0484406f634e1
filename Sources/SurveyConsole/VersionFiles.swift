import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// A version's files for download from the survey page, through the session (never the API's
/// token): what it was published from — the XLSForm or XForm byte for byte, or the JSON
/// definition — and the XForm an app downloads (`FormSources.xform`, as the API serves it).
struct VersionFiles: Sendable {
    let console: Console
    var operations: Operations { console.operations }

    /// What the version was published from, named after its survey and number.
    func source(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (survey, version, source) = try operations.visibleVersionFile(request.parameter("surveyVersionId"), of: request.parameter("orgId"),
                                                                          by: try visit.member())
        let (type, bytes) = try FormSources.source(of: version, kept: source)
        return Self.download(bytes, type: type, name: Self.fileName(survey.title, version.number, ext: source.map(Self.fileExtension) ?? "json"))
    }

    /// The XForm: the uploaded one, the one pyxform made of the uploaded XLSForm, or the one
    /// written from a JSON definition (not found, saying why, for a definition no XForm can hold).
    func xform(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (survey, version, source) = try operations.visibleVersionFile(request.parameter("surveyVersionId"), of: request.parameter("orgId"),
                                                                          by: try visit.member())
        return Self.download(try FormSources.xform(of: version, kept: source), type: "application/xml",
                             name: Self.fileName(survey.title, version.number, ext: "xml"))
    }

    /// A file the version was published with, under its own name, streamed from its blob.
    func attachment(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let a = try operations.visibleVersionAttachment(request.parameter("surveyVersionId"), fileName: request.parameter("fileName"),
                                                        of: request.parameter("orgId"), by: try visit.member())
        let name = String(a.fileName.unicodeScalars.filter { $0 != "\"" && $0.isASCII && $0.value >= 0x20 }.map(Character.init))
        guard let r = HTTPResponse.storedFile(operations.blobs, sha256: a.sha256, size: a.size, headers: [
            ("Content-Type", a.contentType), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "private, no-store"),
            ("Content-Security-Policy", "default-src 'none'; sandbox"), ("Content-Disposition", "attachment; filename=\"\(name)\""),
        ]) else { throw ApiError(.storageUnavailable, "The file cannot be read now; try again.") }
        return r
    }

    /// The extension of a version's source file: `.xlsx`, `.xls` or `.xml`.
    static func fileExtension(of source: VersionSourceSummary) -> String {
        switch source.format {
        case FormSources.Format.xlsform.rawValue: source.contentType == FormSources.xlsType ? "xls" : "xlsx"
        default: "xml"
        }
    }

    static func fileExtension(of source: VersionSourceRecord) -> String {
        fileExtension(of: VersionSourceSummary(format: source.format, contentType: source.contentType))
    }

    /// `household-roster-v3.xlsx`: the survey's title in lower-case ASCII letters and digits
    /// joined by hyphens (at most 60 characters; "survey" when none is left), then the version.
    static func fileName(_ title: String, _ number: Int64, ext: String) -> String {
        var slug = ""
        for scalar in title.lowercased().unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                slug.unicodeScalars.append(scalar)
            } else if !slug.isEmpty, !slug.hasSuffix("-") {
                slug += "-"
            }
        }
        slug = String(slug.prefix(60))
        while slug.hasSuffix("-") { slug.removeLast() }
        return "\(slug.isEmpty ? "survey" : slug)-v\(number).\(ext)"
    }

    /// An attachment of this type and name, never shown in the console's own origin.
    static func download(_ bytes: [UInt8], type: String, name: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [
            ("Content-Type", type), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "private, no-store"),
            ("Content-Security-Policy", "default-src 'none'; sandbox"), ("Content-Disposition", "attachment; filename=\"\(name)\""),
        ], body: bytes)
    }
}
