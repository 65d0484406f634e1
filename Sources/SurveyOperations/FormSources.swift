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

        public init(definition: JSONValue, source: VersionSourceRecord? = nil, attachments: [FormUpload.Staged] = []) {
            self.definition = definition
            self.source = source
            self.attachments = attachments
            parsed = nil
        }

        init(definition: JSONValue, source: VersionSourceRecord?, attachments: [FormUpload.Staged], parsed: SurveyDefinition?) {
            self.definition = definition
            self.source = source
            self.attachments = attachments
            self.parsed = parsed
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

    /// The definition an XLSForm (`xlsType` for the older `.xls`) holds, with pyxform's warnings
    /// kept in its source: 422 / 1002 at `xlsform` with pyxform's own message, 415 / 1010 when
    /// this server cannot convert one.
    public func definition(fromXLSForm bytes: [UInt8], contentType: String?, fileName: String = "") throws -> Published {
        let converted = try xform(fromXLSForm: bytes, contentType: contentType, fileName: fileName)
        do {
            return Published(definition: try XFormReader.definition(from: converted.xform), source: converted)
        } catch {
            throw ApiError(.validationFailed, "The XLSForm converts into a form surveyd does not carry.",
                           errors: [FieldError(path: "xlsform", message: error.message)])
        }
    }

    /// An XLSForm converted by pyxform: the source a version keeps (the XLSForm, pyxform's XForm
    /// and warnings). 422 / 1002 at `xlsform` with pyxform's own message, 415 / 1010 when this
    /// server cannot convert one.
    func xform(fromXLSForm bytes: [UInt8], contentType: String?, fileName: String) throws -> VersionSourceRecord {
        let isXLS = (contentType ?? "").lowercased().hasPrefix(Self.xlsType) || fileName.lowercased().hasSuffix(".xls")
        let conversion: XLSFormConverter.Conversion
        do {
            conversion = try converter.convert(bytes, isXLS: isXLS)
        } catch {
            switch error {
            case .invalid(let message), .tooCostly(let message):
                throw ApiError(.validationFailed, "The XLSForm could not be converted.", errors: [FieldError(path: "xlsform", message: message)])
            case .unavailable(let message):
                throw ApiError(.unsupportedFileType, "This server cannot convert XLSForms: \(message).")
            }
        }
        return VersionSourceRecord(format: Format.xlsform.rawValue, contentType: isXLS ? Self.xlsType : Self.xlsxType,
                                   source: bytes, xform: conversion.xform, warnings: conversion.warnings)
    }

    /// The definition an XForm holds: 422 / 1002 at `xform`, naming what surveyd does not carry.
    public static func definition(fromXForm bytes: [UInt8]) throws -> Published {
        do {
            return Published(definition: try XFormReader.definition(from: bytes),
                             source: VersionSourceRecord(format: Format.xform.rawValue, contentType: "application/xml", source: bytes, xform: bytes))
        } catch {
            throw ApiError(.validationFailed, "The XForm cannot be published.", errors: [FieldError(path: "xform", message: error.message)])
        }
    }
}
