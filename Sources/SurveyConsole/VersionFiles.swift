import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// A version's files for download from the survey page, through the session (never the API's
/// token): what it was published from — the XLSForm or XForm byte for byte, or the JSON
/// definition — and the XForm an app downloads, for a version that has one.
struct VersionFiles: Sendable {
    let console: Console
    var operations: Operations { console.operations }

    /// What the version was published from, named after its survey and number.
    func source(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (survey, version, source) = try operations.visibleVersionFile(request.parameter("surveyVersionId"), of: request.parameter("orgId"),
                                                                          by: try visit.member())
        guard let source else {
            return Self.download(Array(version.definition.utf8), type: "application/json",
                                 name: Self.fileName(survey.title, version.number, ext: "json"))
        }
        return Self.download(source.source, type: source.contentType,
                             name: Self.fileName(survey.title, version.number, ext: Self.fileExtension(of: source)))
    }

    /// The XForm: the uploaded one, or the one pyxform made of the uploaded XLSForm. A version
    /// published as JSON has none (the page offers no link; asked all the same, not found).
    func xform(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (survey, version, source) = try operations.visibleVersionFile(request.parameter("surveyVersionId"), of: request.parameter("orgId"),
                                                                          by: try visit.member())
        guard let source else {
            throw ApiError(.notFound, "This version was published as JSON; XForms are kept for versions published as an XLSForm or an XForm.")
        }
        return Self.download(source.xform, type: "application/xml", name: Self.fileName(survey.title, version.number, ext: "xml"))
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
