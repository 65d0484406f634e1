import SurveyDomain
import SurveyStorage
import SurveyXForm

/// A form as a team publishes it — a JSON definition, an XLSForm or an XForm — read into the
/// definition every version holds. One place, so that every door reads an upload alike: an
/// XLSForm goes through pyxform into an XForm, and an XForm through `XFormReader`.
public struct FormSources: Sendable {
    public enum Format: String, Sendable {
        case json, xlsform, xform
    }

    public let converter: XLSFormConverter

    /// A definition to publish, with the file it came from when that was not JSON, and the files
    /// its form names, staged for the version's transaction.
    public struct Published: Sendable {
        public let definition: JSONValue
        public let source: VersionSourceRecord?
        public let attachments: [FormUpload.Staged]
        /// The definition as parsed already, when the reading checked it.
        let parsed: SurveyDefinition?
        /// The form id and version its XForm names, read with the definition.
        let xformIdentity: (formId: String?, version: String?)?

        public init(definition: JSONValue, source: VersionSourceRecord? = nil, attachments: [FormUpload.Staged] = []) {
            self.definition = definition
            self.source = source
            self.attachments = attachments
            parsed = nil
            xformIdentity = nil
        }

        init(definition: JSONValue, source: VersionSourceRecord?, attachments: [FormUpload.Staged], parsed: SurveyDefinition?,
             xformIdentity: (formId: String?, version: String?)?) {
            self.definition = definition
            self.source = source
            self.attachments = attachments
            self.parsed = parsed
            self.xformIdentity = xformIdentity
        }
    }

    public init(converter: XLSFormConverter = XLSFormConverter(executable: XLSFormConverter.installedBesideExecutable)) {
        self.converter = converter
    }

    /// The format a `Content-Type` names (parameters ignored); nil for one no form comes in.
    public static func format(ofContentType header: String?) -> Format? {
        let type = (header ?? "").split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch type {
        case "application/json": return .json
        case xlsxType, xlsType: return .xlsform
        case "application/xml", "text/xml": return .xform
        default: return nil
        }
    }

    /// The format of an uploaded file: by its name's extension, else by its declared type (JSON
    /// when neither says more).
    public static func format(ofFileNamed name: String, contentType: String?) -> Format {
        let lower = name.lowercased()
        if lower.hasSuffix(".xlsx") || lower.hasSuffix(".xls") { return .xlsform }
        if lower.hasSuffix(".xml") { return .xform }
        if lower.hasSuffix(".json") { return .json }
        return format(ofContentType: contentType) ?? .json
    }

    public static let xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    public static let xlsType = "application/vnd.ms-excel"

    /// An XLSForm converted by pyxform: the source a version keeps (the XLSForm, pyxform's XForm
    /// and warnings). 422 / 1002 at `xlsform` with pyxform's own message, 415 / 1010 when this
    /// server cannot convert one. A form without a `form_id` setting gets `defaultFormId` (its
    /// survey's id), as a JSON definition does: pyxform would name it after the uploaded file,
    /// and two surveys' forms would then share an id.
    func xform(fromXLSForm bytes: [UInt8], contentType: String?, fileName: String, defaultFormId: String) throws -> VersionSourceRecord {
        let isXLS = (contentType ?? "").lowercased().hasPrefix(Self.xlsType) || fileName.lowercased().hasSuffix(".xls")
        let conversion: XLSFormConverter.Conversion
        do {
            conversion = try converter.convert(bytes, isXLS: isXLS, formName: defaultFormId)
        } catch {
            switch error {
            case .invalid(let message), .tooCostly(let message):
                throw ApiError(.validationFailed, "The XLSForm could not be converted.", errors: [FieldError(path: "xlsform", message: message)])
            case .unavailable(let message):
                throw ApiError(.unsupportedFileType, "This server cannot convert XLSForms: \(message).")
            case .busy(let message):
                throw ApiError(.tooManyPendingRequests, "The XLSForm was not converted: \(message). Nothing was published; send it again in a few seconds.",
                               retryAfterSeconds: 5)
            }
        }
        return VersionSourceRecord(format: Format.xlsform.rawValue, contentType: isXLS ? Self.xlsType : Self.xlsxType,
                                   source: bytes, xform: conversion.xform, warnings: conversion.warnings)
    }
}
